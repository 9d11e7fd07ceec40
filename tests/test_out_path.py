"""A script's --out is made ready before it measures (scripts/out_path.py): its
folder created, a bad place refused in one line, never after the work."""

import json
import re

import pytest

from scripts.out_path import ready_file, ready_folder
from tests.helpers import ROOT, run_cli


def test_ready_file_creates_the_folders_above_it(tmp_path):
    target = tmp_path / "a" / "b" / "figures.json"
    assert ready_file(str(target), "bench") == target
    assert target.parent.is_dir() and not target.exists()          # the folder, not the file


def test_ready_folder_creates_it_and_its_parents(tmp_path):
    assert ready_folder(tmp_path / "a" / "b", "bench") == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir()


@pytest.mark.parametrize("where, expected", [
    ("", "{path}: a folder; give a file name"),
    ("plain/figures.json", "{plain}: {plain} is a file, not a folder; choose another --out"),
    ("plain/deeper/figures.json", "{plain}/deeper: cannot create the folder (Not a directory); choose another --out"),
])
def test_ready_file_refuses_a_bad_place_in_one_line(tmp_path, where, expected):
    (tmp_path / "plain").write_text("x")
    path = tmp_path / where if where else tmp_path
    with pytest.raises(SystemExit) as stop:
        ready_file(path, "bench")
    assert stop.value.code == "bench: --out " + expected.format(path=path, plain=tmp_path / "plain")


def test_ready_folder_refuses_a_file(tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(SystemExit, match=r"^bench: --out .*plain: .*plain is a file, not a folder; choose another"):
        ready_folder(tmp_path / "plain", "bench")


def test_make_folder_names_a_config_key_or_an_option(tmp_path):
    """nmt.base.folders.make_folder, shared by nmt.train (hydra.run.dir, cache_dir), nmt.translate
    (--plot-attention), nmt_study (--out) and the scripts: one NmtError line either way."""
    from nmt.base.errors import NmtError
    from nmt.base.folders import make_folder

    (tmp_path / "plain").write_text("x")
    assert make_folder(tmp_path / "a" / "b", "cache_dir") == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()
    with pytest.raises(NmtError) as key:
        make_folder(tmp_path / "plain", "cache_dir")
    assert str(key.value) == f"cache_dir={tmp_path / 'plain'}: {tmp_path / 'plain'} is a file, not a folder; " \
                             "choose another cache_dir"
    with pytest.raises(NmtError) as option:
        make_folder(tmp_path / "plain" / "x", "--plot-attention")
    assert str(option.value) == (f"--plot-attention {tmp_path / 'plain' / 'x'}: cannot create the folder "
                                 "(Not a directory); choose another --plot-attention")


def test_every_script_with_an_out_option_makes_it_ready_first():
    """The class, not one script: each script that writes to args.out (or args.out_json, ...)
    calls ready_file or ready_folder."""
    writes_out = [p for p in sorted((ROOT / "scripts").rglob("*.py")) if re.search(r"\bargs\.out(_\w+)?\b", p.read_text())]
    unready = [p.name for p in writes_out if not re.search(r"\bready_(file|folder)\(", p.read_text())]
    assert len(writes_out) >= 18 and unready == [], unready


def test_a_long_script_refuses_a_bad_out_before_it_trains(tmp_path):
    """commit_equivalence trains for minutes at each commit: an --out it could not write is
    one line at the start (it was a traceback after the training)."""
    record = {"name": "toy-check", "seed": 1, "common": [], "overrides": ["experiment=quickstart"]}
    (tmp_path / "seed1.json").write_text(json.dumps(record))
    (tmp_path / "plain").write_text("x")
    done = run_cli("scripts.benchmarks.commit_equivalence", "--record", str(tmp_path / "seed1.json"), "--commit", "HEAD",
                   "--commit", "HEAD", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "plain" / "eq.json"),
                   timeout=120)
    stderr = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in stderr, stderr
    assert stderr.strip().startswith("commit_equivalence: --out ") and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "work").exists()                            # nothing was started


def test_bench_train_refuses_a_file_as_its_out_folder(tmp_path):
    (tmp_path / "plain").write_text("x")
    done = run_cli("scripts.benchmarks.bench_train", "--preset", "quickstart", "--out", str(tmp_path / "plain"), timeout=120)
    stderr = done.stderr.decode()
    assert done.returncode == 1 and stderr.strip().splitlines() == [
        f"bench_train: --out {tmp_path / 'plain'}: {tmp_path / 'plain'} is a file, not a folder; "
        "choose another --out"], stderr
