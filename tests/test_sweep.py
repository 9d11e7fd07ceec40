"""A two-run sweep on one machine (Hydra's basic launcher) ends in one table."""

import csv
import subprocess

from tests.helpers import fresh_shell_env, run_cli


def test_multirun_then_compare(tmp_path):
    sweep = tmp_path / "sweep"
    done = run_cli("nmt.train", "--multirun", "experiment=quickstart",
                   "model/attention=bahdanau,luong_general", "trainer.max_steps=3",
                   "trainer.val_every=3", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0",
                   f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    # the sweep ends with one line naming the command that compares its runs, which
    # runs as printed from a new shell elsewhere, no environment activated
    last = done.stdout.decode().splitlines()[-1]
    prefix = f"nmt: sweep finished, 2 run(s) in {sweep}; compare them: "
    assert last.startswith(prefix) and last.endswith(f" {sweep}")
    table = subprocess.run(["bash", "-c", f"{last[len(prefix):]} --csv {tmp_path / 'table.csv'}"],
                           cwd=tmp_path / "cache", capture_output=True, timeout=120, env=fresh_shell_env())
    assert table.returncode == 0, table.stderr.decode()
    lines = table.stdout.decode().splitlines()
    assert lines[0].startswith("| best | run | model/attention | parameters | bleu | chrf | perplexity")
    assert len(lines) == 6 and "bahdanau" in lines[2] and "luong_general" in lines[3]
    assert lines[5].startswith("* best by validation bleu (higher is better): run ")
    rows = list(csv.reader(open(tmp_path / "table.csv")))
    assert len(rows) == 3 and rows[0][2] == "model/attention"


def test_compare_on_a_folder_without_runs_is_one_line(tmp_path):
    done = run_cli("nmt.compare", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.decode().strip().count("\n") == 0
    assert "no finished runs" in done.stderr.decode()


def test_joblib_launcher_runs_two_jobs_in_parallel_and_survives_a_failed_one(tmp_path):
    """README: --multirun hydra/launcher=joblib (pip install -e ".[joblib]")."""
    import pytest

    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    sweep = tmp_path / "sweep"
    done = run_cli("nmt.train", "--multirun", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                   "experiment=quickstart", "model/attention=bahdanau,luong_general",
                   "trainer.max_steps=3", "trainer.val_every=3", "trainer.val_max_sentences=5",
                   "trainer.heatmap_sentences=0", f"cache_dir={tmp_path / 'cache'}",
                   f"hydra.sweep.dir={sweep}", env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "Joblib.Parallel(n_jobs=2" in done.stdout.decode() + done.stderr.decode()
    table = run_cli("nmt.compare", str(sweep))
    assert table.returncode == 0, table.stderr.decode()
    lines = table.stdout.decode().splitlines()
    assert len(lines) == 6 and "bahdanau" in lines[2] and "luong_general" in lines[3]

    # A job that fails (nmt.train's one-line error) does not take the other down.
    failing = tmp_path / "failing"
    done = run_cli("nmt.train", "--multirun", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                   "experiment=quickstart", "trainer.metric=nonsense,bleu", "trainer.max_steps=2",
                   "trainer.val_every=2", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0",
                   f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={failing}",
                   env={"OMP_NUM_THREADS": "1"})
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr[-2000:]
    assert "nmt: error: trainer.metric=nonsense: must be one of bleu, chrf, loss" in stderr
    assert "Traceback" not in stderr
    assert (failing / "1" / "summary.json").is_file() and not (failing / "0" / "summary.json").exists()


def test_slurm_launcher_configs_compose(tmp_path):
    """README: hydra/launcher=submitit_slurm and the slurm_gpu preset (pip install -e ".[slurm]")."""
    import pytest

    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    for launcher, expected in (("submitit_slurm", "gpus_per_node: 1"), ("slurm_gpu", "timeout_min: 720")):
        done = run_cli("nmt.train", f"hydra/launcher={launcher}",
                       "hydra.launcher.gpus_per_node=1", "experiment=quickstart", "--cfg", "hydra")
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        out = done.stdout.decode()
        assert "SlurmLauncher" in out and expected in out
