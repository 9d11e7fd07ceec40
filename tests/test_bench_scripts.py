"""The benchmark scripts of the README on the toy task, and JoeyNMT's log and config by hand."""

import importlib
import json
import os
import tempfile
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli


@pytest.fixture(autouse=True)
def cores_given_back():
    """The scripts' --core pins the process that runs them: here, the test worker.
    Each test pins to a core the worker may use, and the worker gets its cores back."""
    allowed = os.sched_getaffinity(0)
    yield
    os.sched_setaffinity(0, allowed)


def load_script(name: str):
    """scripts/FOLDER/NAME.py (benchmarks, peers or docs), imported as `python -m scripts.FOLDER.NAME` runs it."""
    (path,) = (ROOT / "scripts").glob(f"*/{name}.py")
    return importlib.import_module(f"scripts.{path.parent.name}.{name}")


def test_bench_train_on_the_toy_task(tmp_path, cache_dir, monkeypatch):
    bench = load_script("bench_train")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))         # where the Trainer's run folder goes
    figures = bench.main(["--preset", "quickstart", "--steps", "2", "--warmup", "1", "--flop-batches", "1",
                          "--ceiling-seconds", "0.3", "--profile-steps", "1", "--out", str(tmp_path),
                          f"cache_dir={cache_dir}"])
    saved = json.loads((tmp_path / "bench_train_quickstart.json").read_text())
    assert saved["tgt_tokens_per_s"] == figures["tgt_tokens_per_s"] > 0
    assert saved["src_tgt_tokens_per_s"] > saved["tgt_tokens_per_s"]
    assert saved["matmul_flops_per_tgt_token"] > 0 and saved["matmul_ceiling_gflops"] > 0
    assert 0 < saved["share_of_ceiling"]
    assert 0 <= saved["padding_measured_batches"] < 1
    # every src and tgt position, pads included: at least the real tokens, at most / (1 - padding)
    real = saved["src_tgt_tokens_per_s"]
    assert real <= saved["padded_positions_per_s"] <= real / (1 - saved["padding_measured_batches"]) * 1.5
    assert saved["command"].startswith("python -m scripts.benchmarks.bench_train --preset quickstart")
    assert "aten::" in (tmp_path / "bench_train_quickstart_profile.txt").read_text()
    assert not [p for p in scratch.iterdir() if p.name.startswith("bench_train_")]    # the run folder is removed after


def test_bench_train_in_bf16_has_a_bf16_ceiling_and_counts_flops_when_compiled(tmp_path, cache_dir):
    bench = load_script("bench_train")
    figures = bench.main(["--preset", "quickstart", "--steps", "1", "--warmup", "1", "--flop-batches", "1",
                          "--ceiling-seconds", "0.3", "--profile-steps", "0", "--out", str(tmp_path),
                          f"cache_dir={cache_dir}", "trainer.precision=bf16", "trainer.compile=true"])
    assert figures["precision"] == "bf16" and figures["matmul_flops_per_tgt_token"] > 0
    assert figures["matmul_ceiling_bf16_gflops"] > 0
    assert figures["share_of_bf16_ceiling"] == pytest.approx(
        figures["achieved_gflops"] / figures["matmul_ceiling_bf16_gflops"], rel=1e-2)
    # the ceiling is the product the model's layers call: a share, not a multiple of it
    assert 0 < figures["share_of_bf16_ceiling"] <= 1
    plain = bench.main(["--preset", "quickstart", "--steps", "1", "--warmup", "1", "--flop-batches", "1",
                        "--ceiling-seconds", "0", "--profile-steps", "0", "--out", str(tmp_path),
                        f"cache_dir={cache_dir}"])
    assert "share_of_bf16_ceiling" not in plain and plain["precision"] == "fp32"
    # the same batch's FLOPs, counted on the eager model: compiling does not hide them
    assert plain["matmul_flops_per_tgt_token"] == figures["matmul_flops_per_tgt_token"]


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


def test_bench_validation_times_a_run_s_own_validation_at_two_versions_of_beam_search(tmp_path, toy_checkpoint):
    bench = load_script("bench_validation")
    figures = bench.main(["--checkpoint", str(toy_checkpoint), "--before", "HEAD", "--beams", "1,2",
                          "--rounds", "2", "--out", str(tmp_path / "validation.json")])
    assert figures == json.loads((tmp_path / "validation.json").read_text())
    assert figures["valid_sentences"] == 20 and figures["batch_tokens"] == 1024   # the run's val_max_sentences
    assert [row["beam"] for row in figures["rows"]] == [1, 2]
    for row in figures["rows"]:
        assert [len(row["seconds"][v]) for v in ("now", "before")] == [2, 2] and row["before_over_now"] > 0
        assert 0 <= row["bleu"] <= 100


def test_bench_validation_stops_when_the_versions_translate_differently(tmp_path, toy_checkpoint, monkeypatch):
    bench = load_script("bench_validation")
    from nmt.core.beam_search import beam_search

    def shortened(*args, **kwargs):          # not the same search: every output empty (eos only)
        return [[hyp._replace(tokens=[], attention=hyp.attention[-1:]) for hyp in hyps]
                for hyps in beam_search(*args, **kwargs)]

    monkeypatch.setattr(bench, "beam_search_at", lambda revision: shortened)
    with pytest.raises(SystemExit, match="at beam 2 the versions' hypotheses differ: not the same search"):
        bench.main(["--checkpoint", str(toy_checkpoint), "--before", "HEAD", "--beams", "1,2", "--rounds", "1"])


def test_bench_validation_on_bad_input_is_one_line(tmp_path, toy_checkpoint):
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    for args in (["--checkpoint", str(broken)], ["--checkpoint", str(toy_checkpoint), "--before", "no-such-rev"]):
        done = run_cli("scripts.benchmarks.bench_validation", *(["--before", "HEAD"] if "--before" not in args else []), *args,
                       "--beams", "2", "--rounds", "1", timeout=120)
        stderr = done.stderr.decode()
        assert done.returncode == 1 and "Traceback" not in stderr, stderr
        assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("bench_validation: "), stderr


def test_no_script_leaves_a_scratch_folder_behind():
    """A script's scratch space is a tempfile.TemporaryDirectory (removed when done or at exit),
    never tempfile.mkdtemp, which stays in /tmp after every run."""
    leaving = [path.name for path in sorted((ROOT / "scripts").rglob("*.py")) if "mkdtemp(" in path.read_text()]
    assert leaving == []


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


def test_eole_config_matches_transformer_small(tmp_path):
    compare = load_script("compare_eole")
    cfg = compare.eole_config(tmp_path, {"vocab": tmp_path / "vocab.txt"}, updates=30)
    model, training = cfg["model"], cfg["training"]
    assert (model["layers"], model["hidden_size"], model["heads"], model["transformer_ff"]) == (3, 256, 4, 1024)
    assert (model["add_qkvbias"], model["add_ffnbias"], model["add_final_linear_bias"]) == (True, True, True)
    assert (model["generator_bias"], model["share_decoder_embeddings"], model["share_embeddings"]) == \
        (False, True, False)
    assert (training["batch_size"], training["batch_type"], training["normalization"]) == (4096, "tokens", "tokens")
    assert (training["adam_beta1"], training["adam_beta2"], training["max_grad_norm"]) == (0.9, 0.98, 1.0)
    assert (training["train_steps"], training["num_workers"], training["compute_dtype"]) == (30, 0, "fp32")
    assert training["label_smoothing"] == 0.1 and cfg["data"]["corpus_1"]["transforms"] == []
    bf16 = compare.eole_config(tmp_path, {"vocab": tmp_path / "vocab.txt"}, updates=30, precision="bf16")
    assert bf16["training"]["compute_dtype"] == "bf16" and {**bf16["training"], "compute_dtype": "fp32"} == training
    assert compare.parse_args([]).precision == "fp32" and compare.parse_args(["--precision", "bf16"]).precision == "bf16"
    with pytest.raises(SystemExit):
        compare.parse_args(["--precision", "fp16"])


def test_eole_sides_are_a_label_and_overrides():
    compare = load_script("compare_eole")
    args = compare.parse_args(["--side", "fast:trainer.matmul=openblas data.sort_by=target", "--side", "plain:"])
    assert args.side == [("fast", ["trainer.matmul=openblas", "data.sort_by=target"]), ("plain", [])]
    assert compare.parse_args([]).side == [("torch", [])]
    for bad in ("no-colon", ":trainer.matmul=openblas", "x:not-an-override"):
        with pytest.raises(SystemExit):
            compare.parse_args(["--side", bad])
    with pytest.raises(SystemExit):        # one label twice would keep only one of the two sides
        compare.parse_args(["--side", "a:trainer.matmul=openblas", "--side", "a:data.sort_by=target"])


def test_eole_figures_by_hand():
    compare = load_script("compare_eole")
    # two updates: 2 s and 3 s; 40 + 60 positions, 80 of them real; 30 + 45 target labels
    steps = [{"seconds": 2.0, "positions": 40, "real_positions": 36, "tgt_tokens": 30},
             {"seconds": 3.0, "positions": 60, "real_positions": 44, "tgt_tokens": 45}]
    row = compare.figures(steps, parameters=9626624, command="eole train")
    assert row["tgt_tokens_per_s"] == 15.0 and row["padded_positions_per_s"] == 20.0
    assert row["padding"] == 0.2 and row["tgt_tokens_per_step"] == 37.5 and row["seconds"] == 5.0
    eole = {"tgt_tokens_per_s": 10, "padded_positions_per_s": 20, "padding": 0.1}
    rounds = [{"nmt/torch": {"tgt_tokens_per_s": 12, "padded_positions_per_s": 30, "padding": 0.05},
               "nmt/openblas": {"tgt_tokens_per_s": 14, "padded_positions_per_s": 28, "padding": 0.05}, "eole": eole},
              {"nmt/torch": {"tgt_tokens_per_s": 15, "padded_positions_per_s": 24, "padding": 0.04},
               "nmt/openblas": {"tgt_tokens_per_s": 16, "padded_positions_per_s": 32, "padding": 0.04}, "eole": eole},
              {"nmt/torch": {"tgt_tokens_per_s": 13, "padded_positions_per_s": 26, "padding": 0.06},
               "nmt/openblas": {"tgt_tokens_per_s": 15, "padded_positions_per_s": 30, "padding": 0.06}, "eole": eole}]
    table = compare.summarise(rounds)
    torch_tgt, blas_tgt = table["nmt/torch tgt_tokens_per_s"], table["nmt/openblas tgt_tokens_per_s"]
    assert torch_tgt["ratios"] == [1.2, 1.5, 1.3] and torch_tgt["median_ratio"] == 1.3 and torch_tgt["nmt"] == 13
    assert blas_tgt["ratios"] == [1.4, 1.6, 1.5] and blas_tgt["median_ratio"] == 1.5 and blas_tgt["eole"] == 10
    assert table["nmt/torch padded_positions_per_s"]["median_ratio"] == 1.3
    assert table["nmt/openblas padded_positions_per_s"]["median_ratio"] == 1.5
    assert table["padding"] == {"nmt/torch": 0.05, "nmt/openblas": 0.05, "eole": 0.1}


# time_to_quality.py: JoeyNMT's log, nmt's run folder and the crossing minute by hand

JOEY_LOG_EXCERPT = """\
2026-11-24 22:00:05,000 - INFO - joeynmt.training - EPOCH 1
2026-11-24 22:01:00,000 - INFO - joeynmt.training - Epoch   1, Step:       99, Batch Loss:     5.100000, \
Batch Acc: 0.100000, Tokens per Sec:      830, Lr: 0.000124
2026-11-24 22:01:02,000 - INFO - joeynmt.training - Epoch   1, Step:      100, Batch Loss:     5.000000, \
Batch Acc: 0.110000, Tokens per Sec:      840, Lr: 0.000125
2026-11-24 22:01:02,010 - INFO - joeynmt.prediction - Predicting 1014 example(s)... (Greedy decoding with \
min_output_length=1, max_output_length=100, return_prob='none', generate_unk=True, repetition_penalty=-1, \
no_repeat_ngram_size=-1)
2026-11-24 22:01:32,000 - INFO - joeynmt.prediction - Generation took 29.9900[sec].
2026-11-24 22:01:33,000 - INFO - joeynmt.metrics - nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0
2026-11-24 22:01:33,000 - INFO - joeynmt.prediction - Evaluation result (greedy): bleu:   3.25, loss:   5.01, \
ppl: 150.12, acc:   0.11, 0.0500[sec]
2026-11-24 22:01:33,100 - INFO - joeynmt.training - Hooray! New best validation result [bleu]!
2026-11-24 22:03:32,000 - INFO - joeynmt.training - Epoch   1, Step:      200, Batch Loss:     4.000000, \
Batch Acc: 0.200000, Tokens per Sec:      845, Lr: 0.000250
2026-11-24 22:04:02,000 - INFO - joeynmt.metrics - nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0
2026-11-24 22:04:03,000 - INFO - joeynmt.prediction - Evaluation result (greedy): bleu:  12.50, loss:   4.02, \
ppl:  55.70, acc:   0.20, 0.0400[sec]
"""


def test_time_to_quality_reads_joeynmt_validations_by_hand():
    from datetime import datetime

    ttq = load_script("time_to_quality")
    start = datetime(2026, 11, 24, 22, 0, 0)
    points = ttq.joey_points(JOEY_LOG_EXCERPT, start)
    # 22:01:33 is 93 s = 1.55 min after the start; 22:04:03 is 243 s = 4.05 min
    assert [(p.step, p.bleu) for p in points] == [(100, 3.25), (200, 12.5)]
    assert [p.minutes for p in points] == pytest.approx([1.55, 4.05])
    assert ttq.joey_signature(JOEY_LOG_EXCERPT) == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    assert ttq.joey_generation_seconds(JOEY_LOG_EXCERPT) == {100: 29.99}   # step 200 logged none


def test_time_to_quality_reads_an_nmt_run_folder_by_hand(tmp_path):
    from datetime import datetime

    ttq = load_script("time_to_quality")
    (tmp_path / "train.log").write_text(
        "[2026-11-24 22:00:20,000][nmt.data][INFO] - multi30k-de-en: 29000 training pairs\n"
        "[2026-11-24 22:03:00,000][nmt.train][INFO] - validation step 100 epoch 0 | loss 3.5 ppl 33.1 | "
        "BLEU 10.00 chrF 30.00 | lr 1.25e-04 | 2000 tok/s | new best\n"
        "[2026-11-24 22:06:30,000][nmt.train][INFO] - validation step 200 epoch 0 | loss 2.9 ppl 18.2 | "
        "BLEU 20.00 chrF 40.00 | lr 2.50e-04 | 2000 tok/s | new best\n")
    records = [{"step": 100, "bleu": 10.004, "train_seconds": 150.0},
               {"step": 200, "bleu": 20.004, "train_seconds": 300.0},
               {"step": 300, "bleu": 25.0, "train_seconds": 450.0}]     # not in the log (yet): left out
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    points = ttq.nmt_points(tmp_path, datetime(2026, 11, 24, 22, 0, 0))
    # 22:03:00 is 3 min after the start, 22:06:30 6.5 min; BLEU at full precision from metrics.jsonl
    assert points == [ttq.Point(100, 3.0, 10.004), ttq.Point(200, 6.5, 20.004)]
    # not training: 3.0 - 2.5 = 0.5 min before step 100 (start-up, validation), (6.5 - 3.0) - 2.5 = 1.0 after
    outside = ttq.outside_training(points, {r["step"]: r["train_seconds"] / 60 for r in records})
    assert outside == pytest.approx({100: 0.5, 200: 1.0})
    assert "    200     6.50  20.00          1.00" in ttq.table("nmt", points, outside)


def test_time_to_quality_crossing_by_hand():
    ttq = load_script("time_to_quality")
    P = ttq.Point
    joey = [P(100, 10.0, 15.0), P(200, 30.0, 22.0), P(300, 44.0, 21.0), P(400, 46.0, 30.0)]
    # within 45 min: 15, 22, 21 -> 22.0 at 30 min (46 min's 30.0 is past the budget)
    target = ttq.best_within(joey, 45)
    assert target == P(200, 30.0, 22.0)
    nmt = [P(100, 3.0, 12.0), P(200, 6.0, 21.9), P(300, 9.0, 22.0), P(400, 12.0, 25.0)]
    # 21.9 < 22.0; the first at or above is 22.0 at 9 min (no interpolation)
    assert ttq.first_reaching(nmt, target.bleu) == P(300, 9.0, 22.0)
    assert ttq.first_reaching(nmt, 25.1) is None
    assert ttq.best_within(joey, 5) is None


def test_time_to_quality_cadence_and_machine_by_hand():
    ttq = load_script("time_to_quality")
    # 3 min = 180 s: at 1.64 s per update 109.8 -> 110 updates, at 2.1 s 85.7 -> 86
    assert (ttq.updates_in(3, 1.64), ttq.updates_in(3, 2.1)) == (110, 86)
    assert ttq.updates_in(0.001, 5.0) == 1
    cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n"
    assert ttq.cpu_description(cpuinfo) == "Intel(R) Xeon(R) CPU @ 2.20GHz"     # nmt's one reading of it


def test_joeynmt_config_for_time_to_quality(tmp_path):
    compare = load_script("compare_joeynmt")
    plain = compare.joey_config("transformer_small", tmp_path, tmp_path / "spm.model", tmp_path / "v.txt", 7)
    assert plain["training"]["scheduling"] == "exponential" and plain["training"]["validation_freq"] == 10 ** 9
    cfg = compare.joey_config("transformer_small", tmp_path, tmp_path / "spm.model", tmp_path / "v.txt", 7,
                              validation_freq=86, same_schedule=True, dev=tmp_path / "val_first50")
    training = cfg["training"]
    # configs/experiment/transformer_small.yaml: inverse_sqrt, warm-up 800, peak 0.001
    assert (training["scheduling"], training["learning_rate_warmup"], training["learning_rate"]) == \
        ("warmupinversesquareroot", 800, 0.001)
    assert training["validation_freq"] == 86 and cfg["data"]["dev"] == str(tmp_path / "val_first50")


def test_compare_joeynmt_summarises_each_nmt_side_by_hand():
    compare = load_script("compare_joeynmt")
    row = lambda tps, seconds, tokens, params: {"tgt_tokens_per_s": tps, "seconds": seconds,
                                                "tgt_tokens_per_step": tokens, "parameters": params}
    runs = {"transformer_small": {
        "ours": [row(2000, 30, 3300, 9), row(1800, 33, 3300, 9)],
        "ours trainer.precision=bf16": [row(3000, 20, 3300, 9), row(2700, 22, 3300, 9)],
        "joeynmt": [row(800, 40, 1760, 7), row(900, 36, 1760, 7)]}}
    table = compare.summarise(runs, steps=20)["transformer_small"]
    assert list(table) == ["ours", "ours trainer.precision=bf16"]
    # per-round ratios 2000/800 = 2.5 and 1800/900 = 2.0, mean 2.25; bf16 3000/800 = 3.75, 2700/900 = 3.0
    assert table["ours"]["ratios_per_round"] == [2.5, 2.0] and table["ours"]["ratio"] == pytest.approx(2.25)
    assert table["ours trainer.precision=bf16"]["ratio"] == pytest.approx(3.375)
    assert table["ours"]["joeynmt"] == 850 and table["ours"]["ours"] == 1900
    # seconds per update: (30 + 33) / 2 / 20 = 1.575 and (40 + 36) / 2 / 20 = 1.9
    assert table["ours"]["seconds_per_update"] == pytest.approx([1.575, 1.9])
    assert table["ours"]["parameters"] == [9, 7]


def test_time_to_quality_takes_the_cadence_of_the_variant_it_runs(tmp_path):
    ttq = load_script("time_to_quality")
    speeds = tmp_path / "speeds.json"
    side = lambda seconds: [{"seconds": seconds}]
    speeds.write_text(json.dumps({"steps": 10, "runs": {"transformer_small": {
        "ours": side(16.0), "ours trainer.precision=bf16": side(10.0), "joeynmt": side(21.0)}}}))
    assert ttq.seconds_per_update(speeds) == (1.6, 2.1)
    assert ttq.seconds_per_update(speeds, ["trainer.precision=bf16"], "bf16") == (1.0, 2.1)
    with pytest.raises(SystemExit, match="no nmt side timed with trainer.compile=true"):
        ttq.seconds_per_update(speeds, ["trainer.compile=true"])
    # a side timed in fp32 (a record without a precision is fp32) does not
    # set the cadence of a run in bf16 (the presets' auto on a bf16 CPU), the bf16 side does
    assert ttq.seconds_per_update(speeds, [], "bf16") == (1.0, 2.1)
    assert ttq.seconds_per_update(speeds, ["trainer.precision=fp32"], "fp32") == (1.6, 2.1)   # 'ours' is it
    speeds.write_text(json.dumps({"steps": 10, "runs": {"transformer_small": {
        "ours": side(16.0), "joeynmt": side(21.0)}}}))
    with pytest.raises(SystemExit, match="'ours' was timed in fp32, but this run trains in bf16; "
                                         "pass --nmt-override trainer.precision=fp32"):
        ttq.seconds_per_update(speeds, [], "bf16")
    speeds.write_text(json.dumps({"steps": 10, "runs": {"transformer_small": {
        "ours": [{"seconds": 10.0, "precision": "bf16"}], "joeynmt": side(21.0)}}}))
    assert ttq.seconds_per_update(speeds, [], "bf16") == (1.0, 2.1)      # newer records say their precision
    with pytest.raises(SystemExit, match="timed in bf16, but this run trains in fp32"):
        ttq.seconds_per_update(speeds, [], "fp32")
    assert ttq.run_precision(["trainer.precision=fp32"]) == "fp32"
    assert ttq.run_precision(["trainer.precision=bf16"]) == "bf16"
    command = ttq.nmt_command(Path("/d"), 45, 110, tmp_path / "run", None, ["trainer.precision=bf16"])
    assert command[-1] == "trainer.precision=bf16" and "trainer.val_every=110" in command


JOEY_INTERRUPTED_LOG = """\
2026-11-25 13:19:58,000 - INFO - joeynmt.training - Epoch   3, Step:      612, Batch Loss:     3.100000, \
Batch Acc: 0.400000, Tokens per Sec:      530, Lr: 0.000765
2026-11-25 13:20:01,123 - INFO - joeynmt.training - Interrupt at epoch 3, step 612.
2026-11-25 13:20:02,000 - INFO - joeynmt.training - Checkpoint saved in /w/model_transformer_small/612.ckpt.
"""


def test_time_to_quality_scores_joeynmt_where_sigint_stopped_it(tmp_path):
    ttq = load_script("time_to_quality")
    # the step and minute come from the "Interrupt" line, not from the last "Step:" line before it
    assert ttq.joey_interrupt(JOEY_INTERRUPTED_LOG) == ("2026-11-25 13:20:01,123", 612)
    assert ttq.joey_interrupt(JOEY_LOG_EXCERPT) is None            # a run that was not interrupted
    assert ttq.minutes_since("2026-11-25 13:20:01,123", datetime(2026, 11, 25, 12, 35, 0)) == \
        pytest.approx(45 + 1.123 / 60)
    compare = load_script("compare_joeynmt")
    train = compare.joey_config("transformer_small", tmp_path, tmp_path / "spm.model", tmp_path / "v.txt", 7,
                                same_schedule=True)
    scoring = ttq.joey_test_config(train, tmp_path / "612.ckpt")
    # greedy, on the dev set alone, with the checkpoint named; the training config is left as it was
    assert scoring["testing"]["beam_size"] == 1 and scoring["testing"]["load_model"] == str(tmp_path / "612.ckpt")
    assert "test" not in scoring["data"] and scoring["data"]["dev"] == train["data"]["dev"]
    assert train["testing"]["beam_size"] == 5 and "test" in train["data"]
    assert scoring["testing"]["sacrebleu_cfg"] == {"tokenize": "13a"} and scoring["model"] == train["model"]


def test_time_to_quality_lets_joeynmt_validate_only_when_asked():
    ttq = load_script("time_to_quality")
    args = ttq.parse_args(["--nmt-val-every", "60"])
    assert ttq.cadences(args) == (60, None, None)                 # JoeyNMT: no validation during the race
    args = ttq.parse_args(["--nmt-val-every", "60", "--joey-val-every", "500"])
    assert ttq.cadences(args) == (60, None, 500)
    args = ttq.parse_args(["--nmt-save-every", "20"])            # nmt: checkpoints, scored after the race
    assert ttq.cadences(args) == (None, 20, None)


def test_time_to_quality_nmt_saves_without_validating(tmp_path):
    ttq = load_script("time_to_quality")
    command = ttq.nmt_command(Path("/d"), 45, None, tmp_path / "run", None, ["schedule.warmup_steps=400"],
                              save_every=20)
    assert {"trainer.val_every=1000000", "trainer.save_every=20", "trainer.keep_last=1000000"} <= set(command)
    assert command[-1] == "schedule.warmup_steps=400" and "trainer.max_minutes=45" in command
    # the schema takes the values as they are passed
    from nmt.config_schema import validate
    from tests.helpers import make_config

    validate(make_config("experiment=transformer_small", *[c for c in command if c.startswith("trainer.")]))


def test_time_to_quality_reads_nmt_checkpoints_by_hand(tmp_path):
    import os

    import torch

    ttq = load_script("time_to_quality")
    start = datetime(2026, 11, 25, 15, 0, 0)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    # written 3.0, 6.5 and 46.0 minutes after the start; 46.0 is past a 45-minute budget
    for step, minute, trained in ((20, 3.0, 150.0), (40, 6.5, 300.0), (60, 46.0, 2500.0)):
        path = folder / f"step_{step}.pt"
        torch.save({"progress": {"step": step, "train_seconds": trained}, "model": {}}, path)
        stamp = start.timestamp() + 60 * minute
        os.utime(path, (stamp, stamp))
    torch.save({"progress": {"step": 99}}, folder / "last.pt")        # not a step checkpoint
    saved = ttq.saved_checkpoints(tmp_path, start, 45)
    assert [(c.step, c.train_minutes) for c in saved] == [(20, 2.5), (40, 5.0)]
    assert [c.minutes for c in saved] == pytest.approx([3.0, 6.5])


def test_time_to_quality_scores_every_fourth_checkpoint_then_the_crossing():
    ttq = load_script("time_to_quality")
    saved = [ttq.Saved(10 * i, float(i), float(i), Path(f"step_{10 * i}.pt")) for i in range(1, 11)]
    scored = {}
    first = ttq.to_score(saved, 4, scored, None)
    assert [c.step for c in first] == [40, 80, 100]           # every 4th, and the last
    scored.update({40: 5.0, 80: 12.0, 100: 15.0})
    # target 11.6: 40 is below, 80 above: 50, 60, 70 between them
    assert [c.step for c in ttq.to_score(saved, 4, scored, 11.6)] == [50, 60, 70]
    assert ttq.to_score(saved, 4, scored, 20.0) == []         # never reached
    # reached by the first scored one: all before it
    assert [c.step for c in ttq.to_score(saved, 4, scored, 4.0)] == [10, 20, 30]
    scored.update({50: 11.0, 60: 11.7, 70: 12.5})
    points = [ttq.Point(c.step, c.minutes, scored[c.step]) for c in saved if c.step in scored]
    assert ttq.first_reaching(points, 11.6) == ttq.Point(60, 6.0, 11.7)


def test_time_to_quality_scores_a_checkpoint_as_nmt_validates(tmp_path, cache_dir):
    """score_checkpoint's BLEU of a tiny run's last validated checkpoint is the BLEU its
    final validation logged; validation_pairs are the pairs it validated on."""
    from tests.helpers import train

    ttq = load_script("time_to_quality")
    trainer = train(tmp_path, "experiment=quickstart", "model.encoder.embed_dim=16",
                    "model.encoder.hidden_size=32", "model.decoder.embed_dim=16", "model.decoder.hidden_size=32",
                    "trainer.max_steps=6", "trainer.val_every=6", "trainer.val_max_sentences=20",
                    "trainer.heatmap_sentences=0", "trainer.keep_last=1", cache_dir=cache_dir)
    (tmp_path / ".hydra").mkdir()
    from omegaconf import OmegaConf

    OmegaConf.save(OmegaConf.create(trainer.checkpoint_info["config"]), tmp_path / ".hydra" / "config.yaml")
    pairs = ttq.validation_pairs(tmp_path, 20)
    assert pairs == trainer.valid_pairs
    bleu, signature = ttq.score_checkpoint(tmp_path / "checkpoints" / "step_6.pt", pairs)
    record = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert bleu == pytest.approx(record["bleu"], abs=1e-9) and signature == record["bleu_signature"]


def test_time_to_quality_gives_joeynmt_sigint_back_even_when_started_ignoring_it():
    """A background job (`cmd &`) starts with SIGINT ignored and passes that on, so a stopped
    race would lose JoeyNMT's weights. The child must turn SIGINT into KeyboardInterrupt."""
    import subprocess
    import sys

    parent = """
import signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)              # as a background job starts
from scripts.benchmarks import time_to_quality as ttq
child = "import time\\ntry:\\n    time.sleep(30)\\nexcept KeyboardInterrupt:\\n    print('stopped')"
for fix in (None, ttq.default_sigint):
    p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, preexec_fn=fix)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        print(p.communicate(timeout=5)[0].strip() or "nothing")
    except subprocess.TimeoutExpired:
        p.kill(); p.wait(); print("ignored")
"""
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.split() == ["ignored", "stopped"], out.stderr[-2000:]


def test_quality_in_budget_trains_tests_and_records(tmp_path, cache_dir):
    """A tiny preset for a few seconds: the record holds the curve, the test scores of
    best.pt and the averages (the steps they hold from summary.json), the machine and the
    command; the same name again is refused in one line, the record left as it was."""
    quality = load_script("quality_in_budget")
    core = str(min(os.sched_getaffinity(0)))
    args = ["--preset", "quickstart", "--data", "none", "--name", "tiny", "--minutes", "0.05", "--val-every", "5",
            "--beam-size", "2", "--core", core, "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "out"),
            "--", f"cache_dir={cache_dir}", "trainer.max_steps=12", "trainer.val_max_sentences=20",
            "trainer.heatmap_sentences=0"]
    record = quality.main(args)
    written = json.loads((tmp_path / "out" / "tiny.json").read_text())
    assert written == record
    assert "trainer.max_minutes=0.05" in record["train_command"] and f"taskset -c {core}" in record["train_command"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert record["updates"] == summary["step"] and [r["step"] for r in record["validation"]][-1] == summary["step"]
    assert set(record["test"]) == {"best.pt", "averaged.pt", "averaged_best.pt"}
    assert record["test"]["averaged.pt"]["steps"] == summary["averaged_steps"]
    assert record["test"]["averaged_best.pt"]["steps"] == summary["averaged_best_steps"]
    assert record["test_sentences"] == 200 and record["beam_size"] == 2
    for scores in record["test"].values():
        assert 0 <= scores["bleu"] <= 100 and scores["bleu_signature"].startswith("nrefs:1|case:mixed")
    # the test BLEU of best.pt: its beam-2 translations of the toy test set, scored by sacreBLEU
    pairs = quality.run_pairs(tmp_path / "run", "test")
    assert len(pairs) == 200 and pairs[0] != pairs[1]
    from nmt.translator import Translator

    outputs = Translator.from_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt", device="cpu").translate(
        [s for s, _ in pairs], beam_size=2)
    import sacrebleu

    assert record["test"]["best.pt"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu([o.text for o in outputs], [[t for _, t in pairs]]).score, abs=1e-9)
    with pytest.raises(SystemExit) as refused:
        quality.main(args)
    assert "exists" in str(refused.value) and "\n" not in str(refused.value)
    assert json.loads((tmp_path / "out" / "tiny.json").read_text()) == record


def test_quality_in_budget_resumes_a_run_a_stop_cut_short(tmp_path, cache_dir, monkeypatch, capsys):
    """A run stopped at step 6 of 12 (last.pt written, no summary.json, as SIGTERM leaves it)
    continues with --resume and the settings it started with; once trained, --resume only tests."""
    import subprocess

    quality = load_script("quality_in_budget")
    run, out = tmp_path / "run", tmp_path / "out"
    where = ["--name", "tiny", "--core", str(min(os.sched_getaffinity(0))), "--run-dir", str(run), "--out", str(out)]
    settings = ["--preset", "quickstart", "--data", "none", "--minutes", "5", "--val-every", "5", "--beam-size", "2"]
    overrides = ["--", f"cache_dir={cache_dir}", "trainer.max_steps=12", "trainer.val_max_sentences=20",
                 "trainer.heatmap_sentences=0"]
    real_run = subprocess.run

    def stopped_at_step_6(command, **kwargs):
        real_run([*command, "trainer.max_steps=6"], **kwargs)
        (run / "summary.json").unlink()
        return subprocess.CompletedProcess(command, 143)

    monkeypatch.setattr(quality.subprocess, "run", stopped_at_step_6)
    with pytest.raises(SystemExit) as failed:
        quality.main([*where, *settings, *overrides])
    assert "--name tiny --resume" in str(failed.value) and list(out.iterdir()) == []     # made ready, no record
    monkeypatch.setattr(quality.subprocess, "run", real_run)

    with pytest.raises(SystemExit):                  # the settings are the run's own
        quality.main([*where, "--resume", "--minutes", "9"])
    assert "leave out --minutes" in capsys.readouterr().err
    record = quality.main([*where, "--resume"])
    assert record["updates"] == 12 and record["minutes"] == 5 and record["preset"] == "quickstart"
    assert record["command"].endswith(" ".join(overrides[1:])) and "--resume" not in record["command"]
    assert [r["command"].split()[-1] for r in record["resumed"]] == ["--resume"]
    assert "trainer.resume=auto" in record["train_command"]
    assert "resumed from" in (run / "train.log").read_text()
    assert [r["step"] for r in record["validation"]] == [5, 6, 10, 12]
    assert json.loads((out / "tiny.json").read_text()) == record

    again = quality.main([*where, "--resume"])      # trained already: the tests alone
    assert "testing only" in capsys.readouterr().out
    assert again["updates"] == 12 and len(again["resumed"]) == 2
    assert again["test"]["best.pt"]["bleu"] == record["test"]["best.pt"]["bleu"]


def test_time_to_quality_finds_joeynmts_signature_in_its_test_log(tmp_path):
    ttq = load_script("time_to_quality")
    train_log = tmp_path / "train.log"
    train_log.write_text(JOEY_INTERRUPTED_LOG)                       # no validation: no signature
    assert ttq.joey_bleu_signature(train_log) is None
    (tmp_path / "test.log").write_text(
        "2026-11-25 16:15:05,677 - INFO - joeynmt.metrics - nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0\n")
    assert ttq.joey_bleu_signature(train_log) == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def test_average_sweep_chooses_on_validation_and_tests_the_choice(tmp_path, cache_dir):
    """Each average is scored as the trainer validates: the newest checkpoint alone scores its
    own validation record; the choice is the highest validation BLEU, and only it (and best.pt)
    is translated from the test set."""
    from tests.helpers import run_cli

    run = tmp_path / "run"
    trained = run_cli("nmt.train", "experiment=quickstart", "trainer.max_steps=12", "trainer.val_every=4",
                      "trainer.keep_last=10", "trainer.heatmap_sentences=0", f"cache_dir={cache_dir}",
                      f"hydra.run.dir={run}", env={"OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"})
    assert trained.returncode == 0, trained.stderr[-2000:]
    sweep = load_script("average_sweep")
    record = sweep.main([str(run), "--last", "1", "3", "--best", "2", "--beam-size", "2",
                         "--core", str(min(os.sched_getaffinity(0)))])
    assert json.loads((run / "average_sweep.json").read_text()) == record
    assert [(c["kind"], c["n"], c["steps"]) for c in record["choices"]] == [
        ("last", 1, [12]), ("last", 3, [4, 8, 12]), ("best", 2, record["choices"][2]["steps"])]
    validated = {r["step"]: r["bleu"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}
    assert record["choices"][0]["valid_bleu"] == pytest.approx(validated[12], abs=1e-6)
    assert sorted(record["choices"][2]["steps"]) == sorted(sorted(validated, key=lambda s: (validated[s], s))[-2:])
    best = max(record["choices"], key=lambda c: c["valid_bleu"])
    assert record["chosen"] == {"kind": best["kind"], "n": best["n"]}
    assert set(record["test"]) == {"chosen", "best.pt"} and record["test"]["chosen"]["steps"] == best["steps"]
    assert record["test_sentences"] == 200


def test_bench_heatmaps_times_a_validation_with_and_without_its_cards(tmp_path, cache_dir, capsys):
    bench = load_script("bench_heatmaps")
    out = tmp_path / "heatmaps.json"
    figures = bench.main(["--steps", "1", "--repeats", "1", "--sentences", "1", "--cache-dir", str(cache_dir),
                          "--out", str(out)])
    assert figures["cards_per_validation"] == 15                 # 3 layers x (head mean + 4 heads)
    assert 0 < figures["blocking_s"] <= figures["drained_s"]
    assert figures["pause_ratio"] == (figures["validate_s"] + figures["blocking_s"]) / figures["validate_s"]
    printed = capsys.readouterr().out
    assert "pause with heatmaps / without" in printed and "command: python -m scripts.benchmarks.bench_heatmaps" in printed
    assert json.loads(out.read_text())["command"] == figures["command"]


def test_bench_startup_against_another_tree_alternates_and_takes_the_ratio(monkeypatch, tmp_path):
    bench = importlib.import_module("scripts.benchmarks.bench_startup")
    with pytest.raises(SystemExit):                                   # not a checkout: refused before any run
        bench.parse_args(["--checkpoint", "best.pt", "--against", str(tmp_path)])
    (tmp_path / "nmt").mkdir()
    (tmp_path / "nmt" / "translate.py").write_text("")
    calls, seconds = [], iter([9.0, 9.0, 2.0, 4.0, 3.0, 5.0, 2.5, 6.0])   # 2 warming runs, then ours/theirs pairs
    monkeypatch.setattr(bench, "timed_run", lambda command, sentence, cwd=None: (calls.append(cwd), (next(seconds), "x"))[1])
    found = bench.alternated("best.pt", bench.parse_args(["--checkpoint", "best.pt", "--runs", "3",
                                                         "--against", str(tmp_path)]))
    assert calls == [bench.ROOT, tmp_path] * 4
    assert found["ours_warm_s"] == [2.0, 3.0, 2.5] and found["theirs_warm_s"] == [4.0, 5.0, 6.0]
    assert found["ours_median_s"] == 2.5 and found["theirs_median_s"] == 5.0 and found["ratio"] == 0.5


def test_bench_startup_times_import_torch_alone_beside_a_command_that_imports_torch(monkeypatch, tmp_path):
    """The floor row: `python -c "import torch"` warm and cold, as the checkpoint's row, only where that imports torch."""
    bench = importlib.import_module("scripts.benchmarks.bench_startup")
    commands = []
    monkeypatch.setattr(bench, "timed_run", lambda command, sentence, cwd=None: (commands.append(command), (1.5, "y"))[1])
    monkeypatch.setattr(bench, "drop_caches", lambda: True)
    for imports, expected in ((True, 1.5), (False, None)):
        monkeypatch.setattr(bench, "imports_torch", lambda command, sentence: imports)
        commands.clear()
        record = bench.main(["--checkpoint", "best.pt", "--runs", "2", "--out", str(tmp_path / "s.json")])
        floor = record["import_torch_alone"]
        assert (floor and floor["cold_median_s"]) == expected
        torch_only = [c for c in commands if c[1:] == ["-c", "import torch"]]
        assert len(torch_only) == (5 if imports else 0)              # one warming run, 2 warm, 2 cold
    assert json.loads((tmp_path / "s.json").read_text())["rows"][0]["warm_median_s"] == 1.5


def test_commit_equivalence_trains_a_record_at_each_commit_and_compares(tmp_path):
    """The same commit twice, two updates each, on the toy task: equal weights and validation."""
    bench = importlib.import_module("scripts.benchmarks.commit_equivalence")
    with pytest.raises(SystemExit):                                   # no record: refused before any worktree
        bench.parse_args(["--record", str(tmp_path / "none.json"), "--commit", "HEAD", "--commit", "HEAD"])
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(SystemExit, match="is not a study record"):
        bench.main(["--record", str(tmp_path / "other.json"), "--commit", "HEAD", "--commit", "HEAD"])
    record = {"name": "toy-check", "seed": 3, "commit": "abc", "cpu": "x",
              "common": ["data.n_train=200", "data.n_valid=10", "data.n_test=10", "trainer.max_steps=999",
                         "trainer.heatmap_sentences=0", "cache_dir=/nowhere"],
              "overrides": ["experiment=quickstart", "model.encoder.hidden_size=16", "model.decoder.hidden_size=16"]}
    (tmp_path / "seed3.json").write_text(json.dumps(record))
    argv = ["--record", str(tmp_path / "seed3.json"), "--commit", "HEAD", "--commit", "HEAD", "--steps", "2",
            "--out", str(tmp_path / "new" / "eq.json"), "--work", str(tmp_path / "work")]   # its folder made
    overrides = bench.train_overrides(record, 2, tmp_path / "run", tmp_path / "cache", None)
    assert "trainer.max_steps=999" not in overrides and "cache_dir=/nowhere" not in overrides
    assert overrides[-5:] == ["trainer.seed=3", "trainer.max_steps=2", "trainer.val_every=2",
                              f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path / 'run'}"]
    found = bench.main(argv)
    assert found["all_equal"] and [r["same_weights_as_first"] for r in found["runs"]] == [True, True]
    assert found["runs"][0]["validation"]["step"] == 2 and "train_seconds" not in found["runs"][0]["validation"]
    assert json.loads((tmp_path / "new" / "eq.json").read_text())["record"] == "toy-check"
    assert str(tmp_path / "work") not in bench.git("worktree", "list")      # the worktrees are removed
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["cache-0", "cache-1", "run-0-" + found["runs"][0]["resolved"],
                                                                     "run-1-" + found["runs"][1]["resolved"]]


def test_commit_equivalence_stopped_by_a_signal_stops_its_runs_and_removes_its_worktrees(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    record = {"name": "toy-check", "seed": 1, "common": ["data.n_valid=10", "trainer.heatmap_sentences=0"],
              "overrides": ["experiment=quickstart", "model.encoder.hidden_size=16", "model.decoder.hidden_size=16"]}
    (tmp_path / "seed1.json").write_text(json.dumps(record))
    work = tmp_path / "work"
    child = subprocess.Popen([sys.executable, "-m", "scripts.benchmarks.commit_equivalence", "--record", str(tmp_path / "seed1.json"),
                              "--commit", "HEAD", "--commit", "HEAD", "--steps", "100000", "--work", str(work), "--jobs", "1"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS="1"))
    deadline = time.monotonic() + 120
    while not list(work.glob("run-0-*/train.log")):         # the training run has started
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.2)
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 1
    assert stderr.strip().splitlines() == ["commit_equivalence: stopped by SIGTERM; its training runs were "
                                           "stopped and its worktrees removed"]
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True).stdout
    assert str(work) not in worktrees and not list(work.glob("tree-*"))
    running = subprocess.run(["pgrep", "-f", f"hydra.run.dir={work}"], capture_output=True, text=True).stdout
    assert not running.strip()                              # its training run ended too


def test_bench_checkpoint_writes_alternates_three_files_and_one_linked(tmp_path, toy_checkpoint):
    bench = importlib.import_module("scripts.benchmarks.bench_checkpoint_writes")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("x")
    with pytest.raises(SystemExit):                      # a folder with files of its own: refused
        bench.parse_args(["--checkpoint", str(toy_checkpoint), "--dir", str(tmp_path / "full")])
    with pytest.raises(SystemExit):                      # no such checkpoint, or a file where the folder goes
        bench.parse_args(["--checkpoint", str(tmp_path / "none.pt"), "--dir", str(tmp_path / "w")])
    with pytest.raises(SystemExit):
        bench.parse_args(["--checkpoint", str(toy_checkpoint), "--dir", str(tmp_path / "full" / "mine.txt")])
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit, match=r"^bench_checkpoint_writes: checkpoint .*broken.pt is truncated or not a checkpoint"):
        bench.main(["--checkpoint", str(tmp_path / "broken.pt"), "--dir", str(tmp_path / "w")])
    assert not (tmp_path / "w").exists()
    found = bench.main(["--checkpoint", str(toy_checkpoint), "--dir", str(tmp_path / "w"), "--rounds", "2",
                        "--out", str(tmp_path / "w.json")])
    assert len(found["three_files_s"]) == len(found["linked_s"]) == 2 and found["checkpoint_bytes"] > 100_000
    assert found["ratio"] == found["linked_median_s"] / found["three_files_median_s"]
    assert not (tmp_path / "w").exists() and (tmp_path / "full" / "mine.txt").exists()
    assert json.loads((tmp_path / "w.json").read_text())["command"].startswith("python -m scripts.benchmarks.bench_checkpoint_writes")


def test_commit_equivalence_starts_no_run_once_it_is_stopping(tmp_path):
    """A stop that lands while a worktree is being made: that run never starts, and its worktree goes."""
    from argparse import Namespace

    bench = importlib.import_module("scripts.benchmarks.commit_equivalence")
    record = {"name": "toy-check", "seed": 1, "common": [], "overrides": ["experiment=quickstart"]}
    bench.STOPPING.set()
    try:
        with pytest.raises(SystemExit, match="stopped"):
            bench.train_at(0, "HEAD", 0, record, Namespace(steps=2, data_path=None), tmp_path)
    finally:
        bench.STOPPING.clear()
    assert not bench.RUNNING and not list(tmp_path.glob("tree-*")) and not list(tmp_path.glob("run-*"))
    assert str(tmp_path) not in bench.git("worktree", "list")


# bench_gemm.py: every product of the update timed on both backends, the overall ratio from them

def test_bench_gemm_times_each_product_on_both_backends(tmp_path):
    from nmt.speedups.openblas_linear import openblas_controller

    if openblas_controller() is None:
        pytest.skip("numpy here is not on OpenBLAS")
    gemm = load_script("bench_gemm")
    out = tmp_path / "gemm" / "figures.json"
    figures = gemm.main(["--rows", "64", "--repeats", "1", "--window", "0.01", "--out", str(out)])
    assert json.loads(out.read_text()) == figures
    assert [(r["layer"], r["product"]) for r in figures["products"]] == [
        (layer, product) for layer in gemm.SHAPES for product in ("forward", "input", "weight")]
    assert all(r["torch_gflops"] > 0 and r["numpy_gflops"] > 0 for r in figures["products"])
    # the update's time on each backend: each product's FLOPs over its rate, times its count
    seconds = {side: sum(r["count"] * 2 * 64 * r["shape"][1] * r["shape"][2] / r[f"{side}_gflops"]
                         for r in figures["products"]) for side in ("torch", "numpy")}
    assert figures["overall_ratio"] == round(seconds["torch"] / seconds["numpy"], 3)


def test_module_at_reads_the_first_path_a_commit_has():
    """The benchmarks' code-before-a-change import: the first path the revision has, its
    names usable; a revision with none of the paths is one SystemExit line naming them."""
    from scripts.benchmarks.module_at import module_at

    # HEAD has the core's search and no nmt/decoding/beam.py: the missing first path falls through
    assert callable(module_at("bench", "HEAD", "nmt/decoding/beam.py", "nmt/core/beam_search.py").beam_search)
    assert module_at("bench", "HEAD", "nmt/core/beam_search.py").__name__ == "before_beam_search"
    with pytest.raises(SystemExit, match="^bench: git cannot show nmt/a.py or nmt/b.py at HEAD: "):
        module_at("bench", "HEAD", "nmt/a.py", "nmt/b.py")


def test_explain_aer_scores_the_shipped_model(tmp_path):
    """--model NAME reads a model shipped with nmt; its record says which, and every row's AER
    follows from its own counts (AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|); counts [|A|, |S|, |A∩S|, |A∩P|, ...])."""
    from tests.helpers import MULTI30K

    aer = load_script("explain_aer")
    record = aer.main(["--model", "multi30k-de-en", "--data", str(MULTI30K), "--limit", "3",
                       "--methods", "value-norm", "--out", str(tmp_path / "aer.json")])
    assert record["checkpoint"] == "--model multi30k-de-en" and record["pairs"] + record["skipped"] == 3
    assert [row["method"] for row in record["rows"]] == ["attention", "value-norm"]
    for row in record["rows"]:
        a, s, a_s, a_p, _ = row["counts"]
        assert row["aer"] == pytest.approx(1 - (a_s + a_p) / (a + s))
    assert json.loads((tmp_path / "aer.json").read_text())["rows"] == record["rows"]


def test_explain_aer_refuses_an_unknown_model_in_one_line(tmp_path):
    result = run_cli("scripts.benchmarks.explain_aer", "--model", "nope", "--out", str(tmp_path / "aer.json"))
    assert result.returncode == 1 and not (tmp_path / "aer.json").exists()
    assert result.stderr.decode().strip().splitlines() == [
        "explain_aer: no pretrained model is named 'nope'; the models shipped with nmt are: multi30k-de-en"]
