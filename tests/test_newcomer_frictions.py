"""What a newcomer's mistakes and interruptions are told (issue 63, point 6): an empty
input says so, a scope or normaliser given as an attention names its key, a resume
that drops an override names it and prints the run's command, a stop prints the whole
command to continue, and unequal parallel files are said before torch is imported."""

import gzip

import pytest
import yaml

from nmt.base.cli import runnable
from nmt.training.run_command import continue_command
from tests.helpers import one_thread, run_cli  # noqa: F401 - one_thread: a fixture
from tests.test_fast_errors import run_with_importtime

ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def error_lines(stderr: bytes) -> list[str]:
    text = stderr.decode()
    assert "Traceback" not in text, text
    return [line for line in text.splitlines() if line.startswith("nmt: error: ")]


def test_an_empty_input_translates_to_an_empty_output_and_says_so(tmp_path, toy_checkpoint):
    source, output = tmp_path / "empty.de", tmp_path / "out.en"
    source.write_bytes(b"")
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", str(source),
                   "--output", str(output), env=ONE_THREAD)
    assert done.returncode == 0, done.stderr.decode()
    assert output.read_bytes() == b""
    assert done.stderr.decode() == (f"nmt: the input ({source}) has no lines: nothing to translate, "
                                    f"so {output} is empty too\n")
    piped = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), input=b"", env=ONE_THREAD)
    assert piped.returncode == 0 and piped.stdout == b""
    assert piped.stderr.decode() == ("nmt: the input (standard input) has no lines: nothing to translate, "
                                     "so the output is empty too\n")


@pytest.mark.parametrize("value, key", [("local_p", "model.attention.scope"), ("hard", "model.attention.scope"),
                                        ("local_m", "model.attention.scope"), ("global", "model.attention.scope"),
                                        ("sparsemax", "model.attention.normaliser"),
                                        ("entmax15", "model.attention.normaliser")])
def test_a_scope_or_normaliser_as_an_attention_names_its_key(value, key):
    done = run_cli("nmt.train", f"model/attention={value}", timeout=120)
    assert done.returncode == 1
    (line,) = error_lines(done.stderr)
    assert line.startswith(f"nmt: error: model/attention={value}: {value} is not a model/attention but a value "
                           f"of {key}; set it with {key}={value}, beside any model/attention (bahdanau, ")


def test_the_continue_command_is_the_runs_whole_command(tmp_path):
    run = tmp_path / "my run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(
        ["experiment=first_run", "model/attention=luong_general", "trainer.resume=auto", "data.path=my data"]))
    assert continue_command(run) == (f"{runnable('nmt.train', 'nmt-train')} experiment=first_run "
                                     f"model/attention=luong_general 'data.path=my data' trainer.resume=auto "
                                     f"'hydra.run.dir={run}'")
    assert continue_command(tmp_path / "elsewhere").endswith(f" trainer.resume=auto hydra.run.dir={tmp_path}/elsewhere")


TINY = ["trainer.max_steps=2", "trainer.val_every=2", "trainer.val_max_sentences=2", "trainer.heatmap_sentences=0",
        "trainer.test_max_sentences=2"]


def test_a_resume_without_the_runs_experiment_names_it_and_prints_the_runs_command(tmp_path, cache_dir):
    run = tmp_path / "run"
    first = ["experiment=quickstart", *TINY, f"cache_dir={cache_dir}"]
    done = run_cli("nmt.train", *first, f"hydra.run.dir={run}", env=ONE_THREAD)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    # the same command less experiment=quickstart, and one more step
    again = run_cli("nmt.train", *TINY[1:], "trainer.max_steps=3", f"cache_dir={cache_dir}", "trainer.resume=auto",
                    f"hydra.run.dir={run}", env=ONE_THREAD, timeout=120)
    assert again.returncode == 1
    (line,) = error_lines(again.stderr)
    assert len(line) < 1200
    # what differs, checkpoint against config (four settings, the rest counted), the override
    # left out with the run's own command, and the way past the check: all on one line
    assert line.startswith(
        f"nmt: error: cannot resume from {run}/checkpoints/last.pt: it was trained on other data or another "
        "vocabulary (checkpoint: data.hub_id=unset, data.kind=toy, data.max_len=32, data.n_test=200, "
        "8 other data settings, tokenizer ")
    assert "; this config: data.hub_id=bentrevett/multi30k, data.kind=multi30k, data.max_len=100, " in line
    assert line.endswith(
        "); this command lacks experiment=quickstart; has trainer.max_steps=3 where the run had trainer.max_steps=2 "
        f"(the run's command, kept in {run}/.hydra/overrides.yaml); continue it with: "
        f"{continue_command(run, first)}, or set trainer.resume_force=true to continue anyway with this command's "
        "data")


def torch_in(imported: list[str]) -> bool:
    """Whether torch or a module of it was imported (`-X importtime` may list torch's
    own modules, torch._utils, ..., without a line for `torch`)."""
    return any(name == "torch" or name.startswith("torch.") for name in imported)


def test_unequal_parallel_files_are_said_before_torch_is_imported(tmp_path):
    (tmp_path / "train.de").write_text("ein\nzwei\ndrei\n")
    with gzip.open(tmp_path / "train.en.gz", "wt") as f:
        f.write("one\ntwo")                              # no final newline: still two lines
    (tmp_path / "valid.de").write_text("\ufeffeins\n")
    (tmp_path / "valid.en").write_text("")
    code, line, imported = run_with_importtime(
        "nmt.train", "data=files", "data.train_src=train.de", "data.train_tgt=train.en.gz", "data.valid_src=valid.de",
        "data.valid_tgt=valid.en", f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert code == 1
    assert line == ("nmt: error: train.de has 3 lines but train.en.gz has 2; parallel files must have one "
                    "translation per line")
    assert not torch_in(imported)
    (tmp_path / "train.de").write_text("ein\nzwei\n")
    code, line, imported = run_with_importtime(
        "nmt.train", "data=files", "data.train_src=train.de", "data.train_tgt=train.en.gz", "data.valid_src=valid.de",
        "data.valid_tgt=valid.en", f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert line == "nmt: error: valid.en is empty; expected one sentence a line" and not torch_in(imported)


@pytest.mark.parametrize("data", [b"", b"\xef\xbb\xbf", b"a", b"a\n", b"a\r\nb", b"\n\n", b"\xef\xbb\xbfa\nb\n"])
def test_count_lines_agrees_with_read_lines(tmp_path, data):
    from nmt.data.readers import count_lines, read_lines

    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert count_lines(path) == len(read_lines(path))


def log_patterns(page: str) -> list:
    """The log lines quoted in the page's 'Reading the log' section, numbers as wildcards."""
    import re

    section = page.split("## Reading the log", 1)[1].split("\n## ", 1)[0]
    quoted = [line[4:] for line in section.splitlines() if line.startswith("    ") and not line.startswith("     ")]
    quoted = [line for line in quoted if not line.startswith(("python ", "nmt-"))]
    patterns = []
    for line in quoted:
        parts = re.split(r"\d[\d.,]*(?:e[+-]\d+)?", line)
        pattern = r"[\d.,]+(?:e[+-]\d+)?".join(re.escape(part) for part in parts)
        patterns.append(re.compile(pattern.replace(r"\(trained\)", r"\((?:trained|cached)\)")))  # a warm cache
    return patterns


def test_the_log_the_quick_start_page_reads_is_the_log_a_run_writes(tmp_path, cache_dir):
    from tests.helpers import ROOT

    patterns = log_patterns((ROOT / "docs" / "getting-started" / "quick-start.md").read_text(encoding="utf-8"))
    assert len(patterns) >= 10 and any("(?:trained|cached)" in p.pattern for p in patterns)
    done = run_cli("nmt.train", "experiment=quickstart", "trainer.max_steps=40", "trainer.val_every=20",
                   "trainer.log_every=20", "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0",
                   f"cache_dir={cache_dir}", f"hydra.run.dir={tmp_path}/run", env=ONE_THREAD, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    lines = [line.split("] - ", 1)[-1] for line in (tmp_path / "run" / "train.log").read_text().splitlines()]
    missing = [p.pattern for p in patterns if not any(p.fullmatch(line) for line in lines)]
    assert not missing, lines
