"""The learning-rate sweep (issue 45, item 7): its rows, its options, and its page,
which chooses each row's rate on validation BLEU and reads the score finding there."""

from nmt_study.configs import lr_name, lr_sweep_configs, study_configs
from nmt_study.lr_sweep_report import lr_sweep_item, write_lr_sweep_report
from nmt_study.runner import record_path_of, write_record
from tests.helpers import run_cli


def test_each_row_at_each_rate_differs_from_the_grid_in_its_rate_only():
    grid = {c.name: c for c in study_configs("multi30k")}
    configs = lr_sweep_configs("multi30k")
    assert [c.name for c in configs] == [f"{row}-lr{rate:g}" for row in ("luong_general", "luong_dot", "bahdanau")
                                         for rate in (0.001, 0.002, 0.004)]
    for config in configs:
        row, rate = config.name.rsplit("-lr", 1)
        without_rate = [o for o in config.overrides if not o.startswith("optimizer.lr=")]
        assert without_rate == [o for o in grid[row].overrides if not o.startswith("optimizer.lr=")]
        assert [o for o in config.overrides if o.startswith("optimizer.lr=")] == [f"optimizer.lr={rate}"]
    assert "optimizer.lr=0.002" in grid["bahdanau"].overrides      # the grid's one rate is the middle one


def test_lr_sweep_options(tmp_path):
    from nmt_study.__main__ import chosen_runs, parse_args

    args = parse_args(["--lr-sweep", "--out", str(tmp_path / "multi30k")])
    assert args.out == tmp_path / "learning_rate" and args.budget_steps == 1600 and args.seeds == 1
    assert args.patience == 0 and args.val_sentences == 300           # the grid's: no early stopping
    configs, seeds = chosen_runs(args)
    assert len(configs) == 9 and all(s == [1] for s in seeds.values())
    for extra, said in ((["--only", "bahdanau"], "--lr-sweep sets the Multi30k rows"),
                        (["--budget-steps", "50"], "--lr-sweep sets the Multi30k rows"),
                        (["--confirm"], "give one of --confirm, --lr-sweep, not several"),
                        (["--reproduce", "bahdanau-lr0.001:1"], "--reproduce reruns runs of the grid")):
        done = run_cli("nmt_study", "--lr-sweep", *extra, "--out", str(tmp_path / "x"), "--list")
        assert done.returncode == 2 and said in done.stderr.decode() and done.stderr.decode().count("\n") == 1


def write_run(folder, name: str, seed: int, valid: float, test: float, second: float | None,
              best_step: int = 1400) -> None:
    record = {"name": name, "family": "learning_rate", "seed": seed, "status": "finished", "commit": "abc123",
              "eval": {"valid_bleu": valid, "test_bleu": test, "entropy": 1.5, "wall_s": 600.0,
                       "best_step": best_step, "final_step": 1600}}
    if second is not None:
        record["confirm"] = {"eval": {"test_bleu": second}}
    write_record(record_path_of(folder, name, seed), record)


SWEEP = {  # row -> rate -> (validation BLEU, test_2016, test_2017)
    "luong_general": {0.001: (30.0, 31.0, 25.0), 0.002: (29.0, 33.5, 26.0), 0.004: (27.0, 28.0, 22.0)},
    "luong_dot": {0.001: (26.0, 27.0, 21.0), 0.002: (28.0, 29.0, 23.0), 0.004: (28.5, 28.0, 22.5)},
    "bahdanau": {0.001: (33.0, 34.0, 27.5), 0.002: (34.0, 35.0, 28.0), 0.004: (32.0, 36.0, 29.0)},
}


def test_the_page_chooses_each_rate_on_validation_and_reads_the_finding_there(tmp_path):
    sweep, grid = tmp_path / "learning_rate", tmp_path / "multi30k"
    for row, rates in SWEEP.items():
        for rate, (valid, test, second) in rates.items():
            write_run(sweep, lr_name(row, rate), 1, valid, test, second, 1600 if row == "luong_dot" else 1400)
    for row, scores in (("luong_general", (29.0, 30.0, 31.0)), ("bahdanau", (34.5, 35.0, 35.5))):
        for seed, score in enumerate(scores, 1):                    # the grid's seeds: sd 1.0 and 0.5
            write_run(grid, row, seed, score, score, None)
    text = write_lr_sweep_report(sweep, {"budget_steps": 1600, "val_sentences": 300, "sessions": []})
    rows = {tuple(line.split(" | ")[:2]): line for line in text.splitlines() if line.startswith("| ")}
    # chosen on validation, not on test: luong_general's best test (33.5 at 0.002) is not its rate
    assert "**0.001**" in rows[("| luong_general", "**0.001**")] and "| **30.00** | 31.00 | 25.00 |" in \
        rows[("| luong_general", "**0.001**")]
    assert ("| luong_dot", "**0.004**") in rows and ("| bahdanau", "**0.002**") in rows
    # at their rates: bahdanau 35.00 vs luong_general 31.00 (+4.00) and luong_dot 28.00 (+7.00) on test_2016;
    # twice the largest grid spread is 2.0, so both gaps are read
    assert ("- On test_2016, at each row's own rate: bahdanau 35.00 (rate 0.002), luong_general 31.00 (rate 0.001), "
            "luong_dot 28.00 (rate 0.004): bahdanau is ahead of luong_general by 4.00 and ahead of luong_dot by "
            "7.00.") in text
    # test_2017: 28.00 vs 25.00 (+3.00) and 22.50 (+5.50); the grid has no test_2017 spread, so no level reading
    assert ("bahdanau is ahead of luong_general by 3.00 (no seed spread of this set) and ahead of luong_dot by 5.50 "
            "(no seed spread of this set).") in text
    assert "test_2017's gaps have no spread to be read against" in text
    # luong_dot's three runs had their best validation at their last update (1,600)
    assert ("Still improving at the budget: 3 of the 9 runs had their best validation at their last update "
            "(luong_dot-lr0.001, luong_dot-lr0.002, luong_dot-lr0.004)") in text
    assert "1.00 for luong_general (3 seeds), 0.50 for bahdanau (3 seeds)" in text
    assert "At the edge of the sweep: luong_general's (0.001), luong_dot's (0.004) chosen rate is" in text
    assert "at the grid's budget of 1,600 updates" in text
    assert (sweep / "README.md").read_text(encoding="utf-8") == text
    assert lr_sweep_item(tmp_path).endswith(                        # the index says the answer too
        "9 of 9 runs finished; on test_2016 bahdanau is ahead of luong_general by 4.00, ahead of luong_dot by 7.00; "
        "on test_2017 bahdanau is ahead of luong_general by 3.00 (no seed spread of this set), ahead of luong_dot "
        "by 5.50 (no seed spread of this set) (one seed a rate; 3 of 9 runs still improving at their last update)")


def test_a_gap_within_the_grid_spread_is_level_and_a_partial_sweep_is_not_read(tmp_path):
    sweep, grid = tmp_path / "learning_rate", tmp_path / "multi30k"
    for row, rates in SWEEP.items():
        for rate, (valid, test, second) in rates.items():
            write_run(sweep, lr_name(row, rate), 1, valid, 32.0 if row == "luong_general" else test, second)
    for seed, score in enumerate((28.0, 30.0, 32.0), 1):            # sd 2.0: a 3.00 gap is under 4.0
        write_run(grid, "luong_general", seed, score, score, None)
    text = write_lr_sweep_report(sweep, {"budget_steps": 1600, "val_sentences": 300, "sessions": []})
    assert "bahdanau is level with luong_general (+3.00, under twice the grid's seed spread)" in text
    assert ("; on test_2016 bahdanau is level with luong_general (+3.00, under twice the grid's seed spread), "
            "ahead of luong_dot by 7.00;") in lr_sweep_item(tmp_path)
    (record_path_of(sweep, lr_name("luong_dot", 0.004), 1)).unlink()
    text = write_lr_sweep_report(sweep, {"budget_steps": 1600, "val_sentences": 300, "sessions": []})
    assert "Not read yet: 1 of 9 runs have no record (luong_dot-lr0.004)" in text
    assert lr_sweep_item(tmp_path).endswith("8 of 9 runs finished")   # no answer from a partial sweep
    assert "| luong_dot | 0.004 | – | – | – | – | 0 of 1 |" in text
    assert "| luong_dot | 0.002 | 28.00 |" in text and "| bahdanau | **0.002** | **34.00** |" in text  # no rate chosen
