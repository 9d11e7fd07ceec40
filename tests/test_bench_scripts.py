"""The benchmark scripts of the README on the toy task, and JoeyNMT's log and config by hand."""

import importlib.util
import json
from pathlib import Path

import pytest

from tests.helpers import ROOT


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_train_on_the_toy_task(tmp_path, cache_dir):
    bench = load_script("bench_train")
    figures = bench.main(["--preset", "quickstart", "--steps", "2", "--warmup", "1", "--flop-batches", "1",
                          "--ceiling-seconds", "0.3", "--profile-steps", "1", "--out", str(tmp_path),
                          f"cache_dir={cache_dir}"])
    saved = json.loads((tmp_path / "bench_train_quickstart.json").read_text())
    assert saved["tgt_tokens_per_s"] == figures["tgt_tokens_per_s"] > 0
    assert saved["src_tgt_tokens_per_s"] > saved["tgt_tokens_per_s"]
    assert saved["matmul_flops_per_tgt_token"] > 0 and saved["matmul_ceiling_gflops"] > 0
    assert 0 < saved["share_of_ceiling"]
    assert 0 <= saved["padding_measured_batches"] < 1
    assert saved["command"].startswith("python scripts/bench_train.py --preset quickstart")
    assert "aten::" in (tmp_path / "bench_train_quickstart_profile.txt").read_text()


def test_padding_by_hand():
    import torch

    from nmt.data.batching import Batch

    bench = load_script("bench_train")
    src = torch.tensor([[5, 6, 0], [7, 0, 0]])           # 3 real of 6
    tgt = torch.tensor([[2, 5, 3, 0], [2, 3, 0, 0]])     # 5 real of 8
    # padding = 1 - (3 + 5) / (6 + 8) = 6 / 14
    assert bench.padding([Batch(src, tgt, 3, 3)]) == pytest.approx(6 / 14)


def test_bench_decode_on_a_toy_checkpoint(tmp_path, toy_checkpoint):
    bench = load_script("bench_decode")
    data = tmp_path / "data"
    data.mkdir()
    (data / "test_2016_flickr.de").write_text("the third of may nineteen ninety\nmonday the first of june\n")
    (data / "test_2016_flickr.en").write_text("1 9 9 0 - 0 5 - 0 3\n0 6 - 0 1 mon\n")
    rows = bench.main(["--checkpoint", str(toy_checkpoint), "--data", str(data), "--batch-sizes", "1,2",
                       "--devices", "cpu", "--out", str(tmp_path / "decode.json")])
    assert [(r["beam"], r["batch_size"]) for r in rows] == [(1, 1), (1, 2), (5, 1), (5, 2)]
    assert all(r["sentences_per_s"] > 0 and r["tokens_per_s"] > 0 for r in rows)
    assert json.loads((tmp_path / "decode.json").read_text())["sentences"] == 2


def test_plot_learning_curve(tmp_path, toy_checkpoint):
    plot = load_script("plot_learning_curve")
    out = tmp_path / "curve.png"
    plot.main([str(Path(toy_checkpoint).parent.parent), "--out", str(out)])
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_plot_learning_curves_of_several_runs(tmp_path, toy_checkpoint, capsys):
    plot = load_script("plot_learning_curve")
    run = Path(toy_checkpoint).parent.parent
    out = tmp_path / "curves.png"
    plot.main([str(run), str(tmp_path), "--out", str(out)])     # tmp_path: a run with no validation
    printed = capsys.readouterr().out
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert f"{tmp_path}: no validation in metrics.jsonl yet; left out" in printed
    assert printed.count("BLEU") >= 1


def test_joeynmt_speed_from_its_log_by_hand():
    compare = load_script("compare_joeynmt")
    line = "{} - INFO - joeynmt.training - Epoch   1, Step: {:>8}, Batch Loss: 1.0, Batch Acc: 0.1, " \
           "Tokens per Sec: {:>8}, Lr: 0.001000"
    log = "\n".join([
        "2026-11-23 08:00:00,000 - INFO - joeynmt.model - Total params: 7,577,600",
        line.format("2026-11-23 08:00:01,000", 1, 999),
        line.format("2026-11-23 08:00:03,000", 2, 100),    # 2 s at 100/s: 200 tokens
        line.format("2026-11-23 08:00:04,000", 3, 400),    # 1 s at 400/s: 400 tokens
    ])
    speed, seconds, params = compare.joey_speed(log, warmup=1, steps=2)
    # (200 + 400) tokens / 3 s; step 1 is warm-up
    assert speed == pytest.approx(200.0) and seconds == pytest.approx(3.0) and params == 7577600


@pytest.mark.parametrize("preset", ["transformer_small", "rnn_bahdanau"])
def test_joeynmt_config_matches_the_preset(tmp_path, preset):
    compare = load_script("compare_joeynmt")
    cfg = compare.joey_config(preset, tmp_path, tmp_path / "spm.model", tmp_path / "vocab.txt", updates=7)
    training = cfg["training"]
    assert (training["batch_size"], training["batch_type"], training["updates"]) == (4096, "token", 7)
    assert cfg["data"]["src"]["tokenizer_cfg"]["model_file"] == str(tmp_path / "spm.model")
    assert cfg["data"]["src"]["voc_file"] == cfg["data"]["trg"]["voc_file"]
    encoder = cfg["model"]["encoder"]
    if preset == "transformer_small":
        assert (encoder["num_layers"], encoder["hidden_size"], encoder["num_heads"], encoder["ff_size"]) == \
            (3, 256, 4, 1024)
    else:
        assert (encoder["rnn_type"], encoder["hidden_size"], encoder["bidirectional"]) == ("gru", 256, True)
        assert cfg["model"]["decoder"]["attention"] == "bahdanau"
