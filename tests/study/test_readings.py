"""The study's alignment readings by hand: precision, recall and AER with and
without unlinked target words, Shift-Att on a 3x4 example, the baselines and
the one-link floor; the seed plan fixed in advance; the hang guard by progress."""

import sys
from pathlib import Path

import numpy as np
import pytest

from nmt_study.alignment import AerCounts, baseline_links, one_link_floor, shifted_rows
from nmt_study.runner import run_watched


def test_precision_recall_and_aer_without_unlinked_words():
    sure = {(0, 0), (1, 1), (1, 2)}                   # target word 3 has no reference link
    predicted = {(0, 0), (2, 1), (1, 2), (3, 3)}
    counts = AerCounts.of(predicted, sure)
    assert counts.to_list() == [4, 3, 2, 2, 3]        # |A|, |S|, |A∩S|, |A∩P|, |A on linked words|
    assert counts.precision == pytest.approx(2 / 4)
    assert counts.recall == pytest.approx(2 / 3)
    assert counts.aer == pytest.approx(1 - 4 / 7)     # 1 - (2 + 2) / (4 + 3)
    assert counts.aer_linked == pytest.approx(1 - 4 / 6)   # (3, 3) left out: 1 - 4 / (3 + 3)
    total = AerCounts.from_list(counts.to_list())
    total += AerCounts.of({(0, 0)}, {(0, 0)})
    assert total.to_list() == [5, 4, 3, 3, 4]


def test_shift_att_reads_each_target_piece_one_row_later():
    # rows: the attention that predicts target pieces 0, 1, 2 and then </s>; 4 source pieces
    weights = np.array([[0.7, 0.1, 0.1, 0.1],
                        [0.1, 0.1, 0.7, 0.1],
                        [0.1, 0.7, 0.1, 0.1],
                        [0.1, 0.1, 0.1, 0.7]])
    direct = weights[:-1].argmax(axis=1).tolist()
    shifted = shifted_rows(weights).argmax(axis=1).tolist()
    assert direct == [0, 2, 1]                         # piece t from the row that predicts it
    assert shifted == [2, 1, 3]                        # piece t from the row whose input it is
    assert shifted_rows(weights).shape == (3, 4)


def test_diagonal_and_same_position_baselines_by_hand():
    # I = 5 source words, J = 3 target words: j (I-1)/(J-1) = 0, 2, 4
    assert baseline_links("diagonal", 5, 3) == {(0, 0), (2, 1), (4, 2)}
    # I = 4, J = 3: 0, 1.5 -> 2 (halves up), 3
    assert baseline_links("diagonal", 4, 3) == {(0, 0), (2, 1), (3, 2)}
    assert baseline_links("diagonal", 3, 1) == {(0, 0)}
    assert baseline_links("same_position", 2, 4) == {(0, 0), (1, 1), (1, 2), (1, 3)}
    sure = {(0, 0), (2, 1), (3, 2)}
    assert AerCounts.of(baseline_links("diagonal", 4, 3), sure).aer == 0.0
    assert AerCounts.of(baseline_links("same_position", 4, 3), sure).aer == pytest.approx(1 - 2 / 6)


def test_one_link_floor_keeps_one_reference_link_per_word():
    sure = {(0, 0), (1, 0), (2, 1)}                    # word 0 has two links, word 2 none
    floor = one_link_floor(sure, 3)
    assert floor == {(0, 0), (2, 1), (0, 2)}
    assert AerCounts.of(floor, sure).aer == pytest.approx(1 - 4 / 6)   # can't get (1, 0) too


def test_the_seed_plan_is_fixed_in_advance():
    from nmt_study.__main__ import parse_args, plan
    from nmt_study.configs import BUDGETS, study_configs

    args = parse_args(["--data-path", "/data"])
    seeds = plan(args, study_configs("multi30k"))
    assert all(len(s) >= 3 for s in seeds.values())
    top = set(BUDGETS["multi30k"].top_group)
    assert {"luong_general", "bahdanau"} <= top
    assert all(seeds[name] == [1, 2, 3, 4, 5] for name in top)
    assert seeds["bahdanau-beam5"] == [1, 2, 3, 4, 5]        # decodes bahdanau's checkpoints
    assert seeds["luong_dot"] == [1, 2, 3]
    assert plan(parse_args(["--data-path", "/data", "--seeds", "2"]), study_configs("multi30k"))["bahdanau"] == [1, 2]


def test_a_run_without_progress_is_stopped_a_slow_one_is_not(tmp_path):
    log = tmp_path / "out"
    silent = [sys.executable, "-c", "import time; print('start', flush=True); time.sleep(60)"]
    code, reason = run_watched(silent, log, {}, None, stall_s=1.0)
    assert code == -1 and reason == "stopped: no output for 1 s"
    slow = [sys.executable, "-c", "import time\nfor i in range(6):\n    print(i, flush=True); time.sleep(0.4)"]
    code, reason = run_watched(slow, log, {}, None, stall_s=1.0)
    assert (code, reason) == (0, "exit status 0")
    assert log.read_text().split() == ["0", "1", "2", "3", "4", "5"]


def test_the_convergence_check_runs_its_rows_three_times_longer_with_early_stopping():
    from nmt_study.__main__ import common_overrides, parse_args, plan
    from nmt_study.configs import select, study_configs

    args = parse_args(["--data-path", "/data", "--convergence"])
    assert (args.budget_steps, args.transformer_budget_steps, args.patience) == (4800, 3000, 4)
    assert str(args.out).endswith("attention_study/convergence")
    # the part's folder or the check's own: the check reads and writes beside the part, never over it
    for out in ("bench/multi30k", "bench/convergence"):
        assert parse_args(["--data-path", "/data", "--convergence", "--out", out]).out == Path("bench/convergence")
    configs = select(study_configs("multi30k"), args.only)
    assert plan(args, configs) == {name: [1, 2] for name in
                                   ("luong_general", "bahdanau", "coverage", "transformer-rotary")}
    common = common_overrides(args)
    assert "trainer.max_steps=4800" in common and "trainer.patience=4" in common
    with pytest.raises(SystemExit):
        parse_args(["--data", "toy", "--convergence"])
    with pytest.raises(SystemExit):                   # a grid written where the check's report belongs
        parse_args(["--data-path", "/data", "--out", "bench/convergence"])


def test_a_run_that_only_writes_into_its_folder_is_not_stopped(tmp_path):
    # TensorBoard's event files grow while the output stays silent between validations
    folder = tmp_path / "run" / "tensorboard"
    folder.mkdir(parents=True)
    writer = [sys.executable, "-c", "import time, pathlib\nf = pathlib.Path(%r) / 'events'\n"
              "for i in range(6):\n    f.write_text('x' * (i + 1)); time.sleep(0.4)" % str(folder)]
    code, reason = run_watched(writer, tmp_path / "out", {}, None, stall_s=1.0, progress=(tmp_path / "run",))
    assert (code, reason) == (0, "exit status 0")
    code, _ = run_watched(writer, tmp_path / "out2", {}, None, stall_s=1.0)    # nothing watched but output
    assert code == -1
