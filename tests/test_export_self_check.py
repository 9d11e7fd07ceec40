"""nmt.export's self-check of a lossy export: measured against float32 on the
checkpoint's validation sentences, reported, and refused past a limit with
its remedy. Nothing here depends on which CPU runs it: the weaker int8 path
is forced (CTranslate2's CT2_USE_MKL and CT2_FORCE_CPU_ISA) and what the
export reports is checked against an independent count."""

import json
import os
import platform
import re
import subprocess
import sys

import pytest
import torch

from nmt.base.errors import NmtError
from tests.helpers import run_cli
from tests.test_export import exported, toy_pair, toy_transformer  # noqa: F401 - fixtures

pytest.importorskip("ctranslate2")
from nmt.deploy.self_check import Agreement, check_agreement, measure  # noqa: E402 - needs ctranslate2

WEAK_INT8 = {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX2", "OMP_NUM_THREADS": "1"}   # oneDNN's u8s8 path
x86_only = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="CT2's AVX2 path is x86's")

# Translates the stored samples with nmt (float32) and with the export, as a user would, and
# prints how many have identical subwords: the independent count the report must equal.
COUNT = """
import sys, torch
from nmt.deploy.engine import CTranslate2Translator
from nmt.translator import Translator
state = torch.load(sys.argv[1], weights_only=True)
nmt = Translator.from_checkpoint(sys.argv[1], device="cpu")
ct2 = CTranslate2Translator(sys.argv[2], threads=1, max_len_ratio=nmt.max_len_ratio, max_len_extra=nmt.max_len_extra)
ours, theirs = nmt.translate(state["samples"]), ct2.translate(state["samples"])
print(sum(a.tokens == b.tokens for a, b in zip(ours, theirs)), len(ours))
"""


def test_the_limits_by_hand():
    # 9 of 10 agree and BLEU drops 0.5: within both limits and above the warning's 90 %
    assert check_agreement(Agreement(9, 10, 30.0, 29.5), "int8", 0.5, 1.0) is None
    # 6 of 10: accepted (>= 0.5) but said
    assert "6 of 10" in check_agreement(Agreement(6, 10, 30.0, 29.5), "int8", 0.5, 1.0)
    # 4 of 10 < 0.5: refused; 10 of 10 but 30.0 - 28.9 = 1.1 > 1.0 BLEU: refused
    for agreement in (Agreement(4, 10, 30.0, 30.0), Agreement(10, 10, 30.0, 28.9)):
        with pytest.raises(NmtError) as refused:
            check_agreement(agreement, "int8", 0.5, 1.0)
        assert "--quantization float32" in str(refused.value) and "\n" not in str(refused.value)


def test_an_export_that_translates_otherwise_is_measured_and_refused(toy_pair, tmp_path, monkeypatch):
    nmt, _ = toy_pair
    state = {name: value.clone() for name, value in nmt.model.state_dict().items()}
    try:
        with torch.no_grad():                       # another model under the export's name
            for name, weight in nmt.model.named_parameters():
                if "norm" not in name:
                    weight.add_(torch.randn_like(weight))
        exported(nmt, tmp_path / "other")
    finally:
        nmt.model.load_state_dict(state)
    sources = ["the first of may nineteen ninety", "monday the third of june twenty twenty"]
    found = measure(nmt, tmp_path / "other", sources, ["1 9 9 0 - 0 5 - 0 1", "2 0 2 0 - 0 6 - 0 3 mon"])
    assert found.total == 2 and found.same < 2
    monkeypatch.delenv("CT2_USE_MKL", raising=False)
    with pytest.raises(NmtError, match="CT2_USE_MKL=1"):
        check_agreement(found, "int8", 1.0, 1.0)


def report(stdout: bytes) -> tuple[int, int]:
    same, total = re.search(rb"translates (\d+) of (\d+) of the checkpoint", stdout).groups()
    return int(same), int(total)


@x86_only
def test_on_the_weaker_int8_path_the_export_reports_the_truth_and_refuses_past_the_limit(toy_transformer, tmp_path):
    kept = tmp_path / "kept"
    accepted = run_cli("nmt.export", "--checkpoint", str(toy_transformer), "--output", str(kept), "--quantization",
                       "int8", "--min-agreement", "0", "--max-bleu-drop", "100", env=WEAK_INT8)
    assert accepted.returncode == 0, accepted.stderr.decode()
    same, total = report(accepted.stdout)
    counted = subprocess.run([sys.executable, "-c", COUNT, str(toy_transformer), str(kept)], capture_output=True,
                             env=dict(os.environ, **WEAK_INT8), timeout=300)
    assert counted.returncode == 0, counted.stderr.decode()
    assert counted.stdout.split() == [str(same).encode(), str(total).encode()] and total > 0
    # --min-agreement 1: refused unless every sentence agreed; an existing export is kept as it was
    before = (kept / "model.bin").read_bytes()
    strict = run_cli("nmt.export", "--checkpoint", str(toy_transformer), "--output", str(kept), "--quantization",
                     "int8", "--force", "--min-agreement", "1", env=WEAK_INT8)
    if same == total:
        assert strict.returncode == 0, strict.stderr.decode()
        return
    lines = strict.stderr.decode().splitlines()
    assert strict.returncode == 1 and len(lines) == 1 and lines[0].startswith("nmt: error: int8 export refused")
    assert f"{same} of {total}" in lines[0] and "CT2_USE_MKL=1" in lines[0] and "float32" in lines[0]
    assert (kept / "model.bin").read_bytes() == before
    assert json.loads((kept / "nmt_export.json").read_text())["quantization"] == "int8"
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]             # no hidden work folder left


def test_float32_is_not_self_checked_and_options_are_bounded(toy_transformer, tmp_path):
    done = run_cli("nmt.export", "--checkpoint", str(toy_transformer), "--output", str(tmp_path / "f32"))
    assert done.returncode == 0 and b"self-check" not in done.stdout
    for option, value in (("--min-agreement", "1.5"), ("--max-bleu-drop", "-1"), ("--max-bleu-drop", "nan")):
        bad = run_cli("nmt.export", "--checkpoint", str(toy_transformer), "--output", str(tmp_path / "x"),
                      option, value)
        assert bad.returncode == 2 and option.encode() in bad.stderr and b"Traceback" not in bad.stderr
