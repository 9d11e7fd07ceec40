"""The attention study: its metrics by hand, and the README's command end to end on the toy task."""

import csv
import json
import re
import shutil

import numpy as np
import pytest

from nmt.base.errors import NmtError
from nmt_study.__main__ import parse_args
from nmt_study.configs import FAMILIES, select, study_configs
from nmt_study.metrics import entropy, steps_to_target
from nmt_study.tables import aggregate, seed_spread
from tests.helpers import run_cli


def test_entropy_by_hand():
    w = np.array([[1.0, 0.0, 0.0, 0.0],      # one-hot: 0
                  [0.25, 0.25, 0.25, 0.25],  # uniform over 4: ln 4 = 1.3863
                  [0.5, 0.5, 0.0, 0.0]])     # two halves: ln 2 = 0.6931
    assert np.allclose(entropy(w), [0.0, 1.3863, 0.6931], atol=1e-4)


def test_steps_to_target():
    records = [{"step": 25, "bleu": 40.0}, {"step": 50, "bleu": 95.0}, {"step": 75, "bleu": 99.0}]
    assert steps_to_target(records, 95.0) == 50 and steps_to_target(records, 99.5) is None


def test_configurations_cover_the_issue():
    names = {c.name for c in study_configs("multi30k")}
    for score in ("bahdanau", "luong_dot", "luong_general", "luong_concat", "luong_location",
                  "scaled_dot", "cosine", "multihead"):
        assert score in names
    for score in ("luong_general", "bahdanau"):
        assert {f"{score}-local_m", f"{score}-local_p", f"{score}-hard"} <= names
    assert "lstmn" in names
    assert {f"bridge-{b}" for b in ("mean", "zero", "zhou", "han", "structured")} <= names
    assert {f"transformer-{p}" for p in ("sinusoidal", "learned", "relative", "rotary", "none")} <= names
    assert {c.family for c in study_configs("toy")} == set(FAMILIES)
    assert [c.name for c in select(study_configs("toy"), "bridge,lstmn")] == [
        "lstmn", "bridge-mean", "bridge-zero", "bridge-zhou", "bridge-han", "bridge-structured"]


def test_study_overrides_on_the_command_line():
    args = parse_args(["study.budget_minutes=1", "study.seeds=2", "trainer.device=cpu"])
    assert (args.budget_minutes, args.seeds, args.overrides) == (1.0, 2, ["trainer.device=cpu"])
    toy = parse_args(["--data", "toy"])       # the toy profile's measured defaults
    assert (toy.budget_steps, toy.val_every, toy.seeds, toy.target_bleu) == (600, 25, 3, 95.0)
    with pytest.raises(SystemExit):
        parse_args(["--budget-minutes", "1", "--budget-steps", "5"])


def test_multi30k_budget_is_updates_not_minutes():
    from nmt_study.__main__ import common_overrides

    common = common_overrides(parse_args(["--data-path", "/data"]))
    assert "trainer.max_steps=1600" in common                     # updates decide, not the wall clock:
    assert not [o for o in common if o.startswith("trainer.max_minutes")]   # a hang is caught by progress
    minutes = common_overrides(parse_args(["--data-path", "/data", "--budget-minutes", "3"]))
    assert "trainer.max_minutes=3.0" in minutes
    assert parse_args(["--data-path", "/data"]).transformer_budget_steps == 1000   # slower per update
    assert parse_args(["--data-path", "/data", "--budget-steps", "50"]).transformer_budget_steps is None
    assert parse_args(["--data", "toy"]).transformer_budget_steps is None
    with pytest.raises(SystemExit):
        parse_args(["--budget-minutes", "3", "--transformer-budget-steps", "5"])


def test_transformer_runs_get_their_own_update_budget(tmp_path, monkeypatch):
    """run_one hands a Transformer configuration --transformer-budget-steps and
    every other configuration the study's budget."""
    import nmt_study.runner as runner
    from nmt_study.__main__ import common_overrides, run_one

    args = parse_args(["--data-path", "/data", "--runs-dir", str(tmp_path)])
    seen = {}
    monkeypatch.setattr(runner, "train",
                        lambda config, seed, run_dir, common, *a, **k: seen.update({config.name: common}))
    configs = {c.name: c for c in study_configs("multi30k")}
    for name in ("transformer-rotary", "bahdanau"):
        run_one(configs[name], 1, args, common_overrides(args), [], None, [])
    assert "trainer.max_steps=1000" in seen["transformer-rotary"] and "trainer.max_steps=1600" not in seen["transformer-rotary"]
    assert "trainer.max_steps=1600" in seen["bahdanau"]


def test_a_record_names_the_commit_that_trained_its_folder(tmp_path, monkeypatch):
    """A finished run folder trained by other code on another processor is
    evaluated, and its record names the training commit and processor; a rerun
    at the final commit (--reproduce) trains such a folder again, here."""
    import nmt_study.__main__ as study_main
    import nmt_study.metrics as metrics
    import nmt_study.runner as runner

    trained = []

    def fake_training(command, log_path, env, timeout_s, stall_s, progress=(), append=False):
        run_dir = log_path.parent                  # what nmt.train leaves: a summary and a best checkpoint
        (run_dir / "checkpoints").mkdir()
        (run_dir / "checkpoints" / "best.pt").write_bytes(b"")
        (run_dir / "summary.json").write_text("{}")
        trained.append(run_dir)
        return 0, "finished"

    monkeypatch.setattr(runner, "run_watched", fake_training)
    monkeypatch.setattr(runner, "git_commit", lambda *folders: "final")
    monkeypatch.setattr(study_main, "git_commit", lambda *folders: "final")
    monkeypatch.setattr(runner, "cpu_fingerprint", lambda: "this cpu")
    monkeypatch.setattr(study_main, "cpu_fingerprint", lambda: "this cpu")
    monkeypatch.setattr(metrics, "evaluate_run", lambda *a, **k: {"eval": {"test_bleu": 30.0}})
    bahdanau = next(c for c in study_configs("multi30k") if c.name == "bahdanau")
    for reproduce, folder in ((None, "study"), ("bahdanau:1", "rerun")):
        args = parse_args(["--data-path", "/data", "--runs-dir", str(tmp_path / folder)]
                          + (["--reproduce", reproduce] if reproduce else []))
        run_dir = runner.run_dir_of(args.runs_dir, "bahdanau", 1)      # a folder trained earlier, by other code
        run_dir.mkdir(parents=True)
        fake_training(None, run_dir / "study_train.out", {}, None, 0)
        (run_dir / runner.TRAINED).write_text('{"commit": "earlier", "cpu": "that cpu"}')
        trained.clear()
        record = study_main.run_one(bahdanau, 1, args, [], [], None, [])
        assert record["status"] == "finished"
        if reproduce:       # trained again, at the final commit
            assert trained == [run_dir] and record["commit"] == "final" and "evaluated_at" not in record
            assert runner.trained_stamp(run_dir) == {"commit": "final", "cpu": "this cpu"}
            assert record["cpu"] == "this cpu" and "evaluated_on" not in record
        else:               # evaluated as it is: the record says which code and processor trained it
            assert trained == [] and (record["commit"], record["evaluated_at"]) == ("earlier", "final")
            assert (record["cpu"], record["evaluated_on"]) == ("that cpu", "this cpu")


@pytest.mark.parametrize("case", ["killed", "sigterm", "study killed", "failed", "other commit",
                                  "other cpu", "other command", "no last.pt", "broken last.pt"])
def test_an_interrupted_run_continues_from_its_last_checkpoint(tmp_path, monkeypatch, toy_checkpoint, case):
    """A run stopped from outside (a signal, or the study itself killed) continues
    from its own last.pt with trainer.resume=auto when the same commit, processor
    and command started it; anything else is moved aside and trained from the start."""
    import nmt_study.runner as runner

    calls = []

    def fake_training(command, log_path, env, timeout_s, stall_s, progress=(), append=False):
        calls.append((command, append, log_path.read_text() if log_path.exists() else None))
        (log_path.parent / "checkpoints").mkdir(exist_ok=True)
        (log_path.parent / "checkpoints" / "best.pt").write_bytes(b"")
        (log_path.parent / "summary.json").write_text("{}")
        return 0, "finished"

    monkeypatch.setattr(runner, "run_watched", fake_training)
    monkeypatch.setattr(runner, "cpu_fingerprint", lambda: "this cpu")
    config = next(c for c in study_configs("toy") if c.name == "luong_dot")
    run_dir = tmp_path / "luong_dot" / "seed1"
    command = runner.train_command(config, 1, run_dir, ["data=toy"])
    (run_dir / "checkpoints").mkdir(parents=True)
    shutil.copyfile(toy_checkpoint, run_dir / "checkpoints" / "last.pt")
    step = runner.last_step(run_dir)
    assert step == 60                                   # the toy checkpoint's own update
    (run_dir / "study_train.out").write_text("the first 60 updates\n")
    (run_dir / runner.TRAINED).write_text(json.dumps(
        {"commit": "other" if case == "other commit" else "here",
         "cpu": "that cpu" if case == "other cpu" else "this cpu"}))
    started_with = [*command[1:], "trainer.seed=2"] if case == "other command" else command[1:]
    (run_dir / "study_command.json").write_text(json.dumps(started_with))
    reason = {"killed": "exit status -9 after 900 s: killed", "sigterm": "exit status 143 after 900 s: stopped",
              "failed": "exit status 1 after 3 s: nmt: error: no such option"}.get(case)
    if reason:
        (run_dir / runner.FAILED).write_text(reason + "\n")
    if case == "no last.pt":
        (run_dir / "checkpoints" / "last.pt").unlink()
    if case == "broken last.pt":
        (run_dir / "checkpoints" / "last.pt").write_bytes(b"PK not a checkpoint")

    assert runner.train(config, 1, run_dir, ["data=toy"], None, commit="here")
    [(ran, appended, log_before)] = calls
    if case in ("killed", "sigterm", "study killed"):
        assert ran == [*command, "trainer.resume=auto"] and appended
        assert log_before == "the first 60 updates\n"                  # the log goes on
        assert runner.trained_stamp(run_dir) == {"commit": "here", "cpu": "this cpu",
                                                 "continued_from_updates": [60]}
        note = (run_dir / "study_interruptions.txt").read_text()
        assert note == f"{reason if reason else 'the study was stopped'}; " \
                       "continued from checkpoints/last.pt at update 60\n"
        assert not (run_dir / runner.FAILED).exists() and not run_dir.with_name("seed1.previous1").exists()
    else:                                                # moved aside, nothing removed, a fresh start
        assert ran == command and not appended and log_before is None
        assert (run_dir.with_name("seed1.previous1") / "study_train.out").read_text() == "the first 60 updates\n"
        assert runner.trained_stamp(run_dir) == {"commit": "here", "cpu": "this cpu"}
        assert json.loads((run_dir / "study_command.json").read_text()) == command[1:]


def test_seed_spread_pools_the_variances():
    runs = [{"name": n, "family": "score", "eval": {"test_bleu": b, "final_step": 10}} for n, b in
            [("a", 10.0), ("a", 12.0), ("b", 5.0), ("b", 5.0), ("c", 1.0)]]
    table = aggregate(runs)
    assert table["a"]["stats"]["test_bleu"] == (11.0, pytest.approx(2 ** 0.5))
    spread, names = seed_spread(table)
    # variances 2 and 0 -> pooled sqrt(1) = 1; c has one seed and does not count
    assert spread == pytest.approx(1.0) and names == ["a", "b"]


def test_study_on_the_toy_task_stops_and_resumes(tmp_path, cache_dir):
    """The README's command, cut to two configurations and a tiny budget: stopped
    after one run (--max-runs 1), then continued without training that run again."""
    out, runs = tmp_path / "report" / "toy", tmp_path / "runs"
    common = ["--data", "toy", "--budget-steps", "20", "--val-every", "10", "--val-sentences", "20",
              "--test-sentences", "30", "--seeds", "1", "--spread", "luong_dot",
              "--only", "luong_dot,transformer-sinusoidal",
              "--out", str(out), "--runs-dir", str(runs), "--cache-dir", str(cache_dir)]
    result = run_cli("nmt_study", *common, "--max-runs", "1", timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "3 runs, 0 already finished (not rerun); 1 run ×" in result.stdout.decode()
    first = out / "records" / "luong_dot" / "seed1.json"
    assert first.exists() and not (out / "records" / "luong_dot" / "seed2.json").exists()
    trained = (runs / "luong_dot" / "seed1" / "study_train.out").stat().st_mtime_ns
    record = first.read_bytes()

    result = run_cli("nmt_study", *common, "--jobs", "2", timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "3 runs, 1 already finished (not rerun); 2 runs ×" in result.stdout.decode()
    assert "luong_dot seed 1" not in result.stdout.decode()                     # not trained again
    assert (runs / "luong_dot" / "seed1" / "study_train.out").stat().st_mtime_ns == trained
    assert first.read_bytes() == record

    readme = (out / "README.md").read_text()
    assert "--max-runs 1" in readme and "--jobs 2" in readme                    # both sessions
    assert "1 job: " in readme and "(1 run to train)" in readme and "1 jobs" not in readme
    assert "nrefs:1" in readme and "toy_alignment" in readme
    assert "| luong_dot | 2 |" in readme and " ± " in readme                    # mean ± sd of 2 seeds
    assert "updates to target" in readme
    assert "## Transformer heads" in readme and ("L2 H" in readme or "L1 H" in readme)
    for picture in ("gallery_score.png", "curves_score.png", "gallery_positional.png"):
        assert (out / picture).read_bytes()[:4] == b"\x89PNG"
    rows = list(csv.DictReader(open(out / "results.csv", encoding="utf-8")))
    assert [(r["configuration"], r["seed"], r["status"]) for r in rows] == [
        ("luong_dot", "1", "finished"), ("luong_dot", "2", "finished"),
        ("transformer-sinusoidal", "1", "finished")]
    for row in rows:
        assert 0.0 <= float(row["aer"]) <= 1.0 and float(row["entropy"]) >= 0.0
        assert int(row["final_step"]) <= 20
    saved = json.loads((out / "records" / "transformer-sinusoidal" / "seed1.json").read_text())
    assert len(saved["eval"]["aer_heads"]) == 2 and len(saved["eval"]["aer_heads"][0]) == 4
    assert len(saved["hypotheses"]) == 30 and len(saved["gallery"]) == 5
    index = (out.parent / "README.md").read_text()
    assert "What the papers found, and what we find" in index and "### On Multi30k de→en" in index

    # --report-only rebuilds the page from the records alone: the run folders may be gone.
    (out / "README.md").unlink()
    shutil.rmtree(runs)
    result = run_cli("nmt_study", "--report-only", "--data", "toy", "--out", str(out),
                     "--cache-dir", str(cache_dir), "--test-sentences", "30", timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "| luong_dot | 2 |" in (out / "README.md").read_text()


def test_a_failing_configuration_is_reported(tmp_path, cache_dir):
    out, runs = tmp_path / "report", tmp_path / "runs"
    result = run_cli("nmt_study", "--data", "toy", "--budget-steps", "5", "--only", "luong_general",
                     "--seeds", "1", "--out", str(out), "--runs-dir", str(runs), "--cache-dir",
                     str(cache_dir), "--test-sentences", "10", "+model.attention.no_such_option=1",
                     timeout=120)
    assert result.returncode == 1, result.stderr.decode()[-2000:]      # the report is written, then the count
    assert result.stderr.decode().strip().splitlines() == [
        "nmt: error: 1 of 1 runs failed (each reason is in its record and in its run folder's study_failed.txt); "
        "the finished runs keep their records"]
    readme = (out / "README.md").read_text()
    assert "0 of 1 finished" in readme and "| luong_general (base: bi-GRU, bridge last) | 0 | exit status 1" in readme
    assert "- luong_general seed 1: exit status 1" in readme
    assert (runs / "luong_general" / "seed1" / "study_failed.txt").exists()
    assert json.loads((out / "records" / "luong_general" / "seed1.json").read_text())["status"] == "failed"


def test_the_records_folder_is_not_ignored_by_git():
    """The records are what is committed; a .gitignore rule such as `runs/` once hid them."""
    import subprocess

    from nmt_study.runner import record_path_of
    from tests.helpers import ROOT

    path = record_path_of(ROOT / "benchmarks" / "attention_study" / "toy", "bahdanau", 1)
    ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT)
    assert ignored.returncode == 1, f"{path} is ignored by .gitignore"


def test_guided_runs_take_the_training_links_given(tmp_path):
    """Multi30k's guided runs are supervised with --train-links (an aligner's
    links of the training pairs); without them the study stops before training."""
    from argparse import Namespace

    from nmt_study.__main__ import train_alignments

    guided = [c for c in study_configs("multi30k") if c.family == "guided"]
    assert [c.name for c in guided] == ["luong_general-guided", "bahdanau-guided", "transformer-sinusoidal-guided"]
    assert all(c.needs_alignments for c in guided)
    with pytest.raises(NmtError, match="give --train-links FILE"):
        train_alignments(Namespace(data="multi30k", train_links=None, runs_dir=tmp_path))
    with pytest.raises(NmtError, match="no such file"):
        train_alignments(Namespace(data="multi30k", train_links=str(tmp_path / "absent"), runs_dir=tmp_path))
    links = tmp_path / "train.links"
    links.write_text("0-0 1-1\n")
    assert train_alignments(Namespace(data="multi30k", train_links=str(links), runs_dir=tmp_path)) == links


def test_study_runs_log_without_a_progress_bar(tmp_path):
    """The study's runs write to a log file and set TQDM_DISABLE=1: no
    progress-bar redraws fill it, with or without that variable (output that
    is not a terminal never gets a bar), and the plain step lines are there."""
    quick = ("experiment=quickstart", "trainer.max_steps=4", "trainer.val_every=4",
             "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0")
    quiet = run_cli("nmt.train", *quick, f"hydra.run.dir={tmp_path / 'quiet'}", env={"TQDM_DISABLE": "1"})
    shown = run_cli("nmt.train", *quick, f"hydra.run.dir={tmp_path / 'shown'}")
    assert quiet.returncode == 0 and shown.returncode == 0, quiet.stderr.decode()[-500:]
    for run in (quiet, shown):
        assert b"train:" not in run.stderr + run.stdout
        assert re.search(rb"\] - step 1 epoch 0 \| loss", run.stdout), run.stdout.decode()


def test_report_names_the_command_that_rebuilds_it():
    from nmt_study.report_header import rebuild_command

    assert rebuild_command({"data": "toy"}, "out dir") == \
        "python -m nmt_study --report-only --data toy --out 'out dir'"
    settings = {"data": "multi30k", "data_path": "../shared/data/multi30k", "links": "t.links",
                "train_links": None}
    assert rebuild_command(settings, "o") == ("python -m nmt_study --report-only --data multi30k --out o "
                                              "--data-path ../shared/data/multi30k --links t.links")


def test_the_rebuild_command_runs_from_the_repository_root(tmp_path):
    """Absolute paths the study was given, inside the checkout or beside it
    (../shared), are written as the README's commands use them; others as given."""
    from nmt_study.report_header import rebuild_command

    root = tmp_path / "checkout"
    (root / ".git").mkdir(parents=True)
    out = root / "benchmarks" / "study" / "multi30k"
    settings = {"data": "multi30k", "data_path": str(tmp_path / "shared" / "data" / "multi30k"),
                "links": str(out / "test.links"), "train_links": "/elsewhere/train.links"}
    assert rebuild_command(settings, out) == (
        "python -m nmt_study --report-only --data multi30k --out benchmarks/study/multi30k "
        "--data-path ../shared/data/multi30k --links benchmarks/study/multi30k/test.links "
        "--train-links /elsewhere/train.links")


def test_decode_only_rows_reuse_the_trained_checkpoint(tmp_path, cache_dir):
    """The coverage-penalty rows train nothing of their own: bahdanau's run is
    trained once (before the rows that decode it, even with --jobs 2), then its
    checkpoint is decoded with beam 5, without and with the penalty."""
    from nmt_study.configs import COVERAGE_PENALTY_BETA

    out, runs = tmp_path / "report" / "toy", tmp_path / "runs"
    result = run_cli("nmt_study", "--data", "toy", "--budget-steps", "20", "--val-every", "10",
                     "--val-sentences", "20", "--test-sentences", "30", "--seeds", "1", "--jobs", "2",
                     "--only", "bahdanau,decoding", "--out", str(out), "--runs-dir", str(runs),
                     "--cache-dir", str(cache_dir), timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "1 run × " in result.stdout.decode() and "then 2 decode-only rows" in result.stdout.decode()
    assert sorted(p.name for p in runs.iterdir()) == ["bahdanau"]          # no folder of their own
    trained = json.loads((out / "records" / "bahdanau" / "seed1.json").read_text())
    plain = json.loads((out / "records" / "bahdanau-beam5" / "seed1.json").read_text())
    penalised = json.loads((out / "records" / "bahdanau-beam5-cp0.2" / "seed1.json").read_text())
    assert trained["eval"]["beam_size"] == 1 and trained["eval"]["coverage_penalty"] == 0.0
    assert (plain["eval"]["beam_size"], plain["eval"]["coverage_penalty"]) == (5, 0.0)
    assert (penalised["eval"]["beam_size"], penalised["eval"]["coverage_penalty"]) == (5, COVERAGE_PENALTY_BETA)
    for row in (plain, penalised):
        assert row["decode_of"] == "bahdanau" and row["same_checkpoint_as_record"] is True
        assert row["eval"]["aer"] == trained["eval"]["aer"]    # the attention on the reference is the same
    readme = (out / "README.md").read_text()
    assert "## Beam search with Wu et al.'s coverage penalty" in readme and "No training:" in readme
    assert "| bahdanau-beam5-cp0.2 (beam 5, coverage penalty β 0.2) | 1 |" in readme
    assert penalised["gallery"] == [] and not (out / "gallery_decoding.png").exists()   # bahdanau's own
    assert not (out / "curves_decoding.png").exists()
    rows = {r["configuration"]: r for r in csv.DictReader(open(out / "results.csv", encoding="utf-8"))}
    # a decode row's cost is its decoding, not the training it reuses
    assert float(rows["bahdanau-beam5"]["cpu_minutes"]) < float(rows["bahdanau"]["cpu_minutes"])
    index = (out.parent / "README.md").read_text()
    assert "#### Wu et al. 2016, Google's Neural Machine Translation System" in index
    assert ("- Table 2 (Sec. 7): at the study's length penalty α = 1.0, the coverage penalty β = 0.2 lowers "
            "BLEU: 30.3 against 31.1") in index


def test_plan_estimates_from_runs_on_the_same_processor(monkeypatch):
    import nmt_study.__main__ as study

    zen3 = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu family\t: 25\nmodel\t\t: 1\nflags\t\t: fpu avx avx2\n"
    genoa = "model name\t: AMD EPYC\ncpu family\t: 25\nmodel\t\t: 17\nflags\t\t: avx2 avx512f avx512_bf16\n"
    monkeypatch.setattr(study.os, "cpu_count", lambda: 2)
    assert study.cpu_fingerprint(zen3) == "AMD EPYC, family 25 model 1, avx2, 2 cores"
    assert study.cpu_fingerprint(genoa) == "AMD EPYC, family 25 model 17, avx512_bf16, 2 cores"

    def record(cpu, minutes, **extra):
        return {"status": "finished", "cpu": cpu, "eval": {"wall_s": minutes * 60}, "eval_seconds": 0, **extra}

    here = study.cpu_fingerprint(zen3)
    monkeypatch.setattr(study, "cpu_fingerprint", lambda: here)
    args = parse_args(["--data", "multi30k"])
    old = [record(study.cpu_fingerprint.__name__, 12), record(None, 10)]          # other machines
    minutes, basis = study.estimate_minutes(args, old)
    assert minutes == pytest.approx(11) and "none of them on this processor" in basis
    # once a run finished here, only such runs count (decode-only rows never do)
    minutes, basis = study.estimate_minutes(args, old + [record(here, 24), record(here, 1, decode_of="x")])
    assert minutes == pytest.approx(24) and basis == f"mean of the 1 finished runs on this processor ({here})"


def test_only_seeds_keeps_those_seeds_of_the_plan():
    from nmt_study.__main__ import plan

    configs = select(study_configs("multi30k"), "bahdanau,luong_dot")
    args = parse_args(["--data", "multi30k", "--spread", "bahdanau", "--only-seeds", "6"])
    assert plan(args, configs) == {"bahdanau": [6], "luong_dot": []}      # 5 (top group) + 1 spread; 3
    args = parse_args(["--data", "multi30k", "--spread", "bahdanau", "--only-seeds", "3,4"])
    assert plan(args, configs) == {"bahdanau": [3, 4], "luong_dot": [3]}
    with pytest.raises(NmtError, match="--only-seeds x: give seed numbers"):
        plan(parse_args(["--data", "multi30k", "--only-seeds", "x"]), configs)


def test_a_record_rerun_at_this_commit_is_compared_with_its_original(tmp_path, cache_dir):
    """--reproduce NAME:SEED trains the run again into OUT/reproduce/records, with
    the part's options, and the report compares it with the original record."""
    out, runs = tmp_path / "toy", tmp_path / "runs"
    common = ["--data", "toy", "--budget-steps", "20", "--val-every", "10", "--val-sentences", "20",
              "--test-sentences", "30", "--seeds", "1", "--out", str(out), "--runs-dir", str(runs),
              "--cache-dir", str(cache_dir)]
    result = run_cli("nmt_study", *common, "--only", "luong_dot", timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    result = run_cli("nmt_study", *common, "--reproduce", "luong_dot:1", timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert (runs / "reproduce" / "luong_dot" / "seed1").is_dir()
    original = json.loads((out / "records" / "luong_dot" / "seed1.json").read_text())
    rerun = json.loads((out / "reproduce" / "records" / "luong_dot" / "seed1.json").read_text())
    assert rerun["eval"]["test_bleu"] == pytest.approx(original["eval"]["test_bleu"], abs=0.01)
    readme = (out / "README.md").read_text()
    section = readme.split("## Reproduction at the final commit")[1].split("\n## ")[0]
    assert "| luong_dot | 1 |" in section and "| reproduces: best_step" in section
    assert "| luong_dot | 1 |" in readme.split("## Overall ranking")[1]          # the original, once


def test_reproduce_trains_again_a_rerun_recorded_at_another_commit(tmp_path, monkeypatch):
    from nmt_study import __main__ as study_main
    from nmt_study.runner import record_path_of

    monkeypatch.setattr(study_main, "git_commit", lambda *folders: "bbbbbbbbbbbb")
    args = parse_args(["--data", "toy", "--out", str(tmp_path), "--reproduce", "bahdanau:1,luong_dot:1"])
    configs, seeds = study_main.chosen_runs(args)
    for name, commit in (("bahdanau", "aaaaaaaaaaaa"), ("luong_dot", "bbbbbbbbbbbb")):
        path = record_path_of(args.records_out, name, 1)
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"name": name, "seed": 1, "status": "finished", "commit": commit,
                                    "eval": {"test_bleu": 50.0}}))
    todo, total = study_main.pending(args, configs, seeds)
    assert [(c.name, s) for c, s in todo] == [("bahdanau", 1)] and total == 2
    # the study itself keeps a finished record from any commit
    plain = parse_args(["--data", "toy", "--out", str(tmp_path / "reproduce")])
    assert study_main.pending(plain, configs, seeds)[0] == []


def test_reproduce_names_runs_as_name_and_seed():
    assert parse_args(["--data", "toy", "--reproduce", "bahdanau:1,luong_dot:2"]).reproduce == {
        "bahdanau": [1], "luong_dot": [2]}
    with pytest.raises(SystemExit):
        parse_args(["--data", "toy", "--reproduce", "bahdanau"])
