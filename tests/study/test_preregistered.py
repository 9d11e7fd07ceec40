"""The pre-registered confirmation: its plan committed before every record it scores."""

import json
import shutil
from pathlib import Path

import pytest

from nmt.base.errors import NmtError
from nmt_study.preregistration import check_records, load_plan, plan_configs, require_committed
from tests.study.git_repos import git, new_repo

PLAN = Path(__file__).resolve().parents[2] / "benchmarks" / "attention_study" / "preregistered" / "plan.json"


@pytest.fixture
def repo(tmp_path):
    new_repo(tmp_path)
    (tmp_path / "code.txt").write_text("the code before the plan\n")
    git(tmp_path, "add", "code.txt")
    git(tmp_path, "commit", "--quiet", "-m", "code")
    out = tmp_path / "preregistered"
    out.mkdir()
    return tmp_path, out


def commit_file(repo, path, text, message):
    Path(path).write_text(text)
    git(repo, "add", str(Path(path).relative_to(repo)))
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_the_committed_plan_reads_and_names_fresh_seeds_and_every_compared_row():
    plan = load_plan(PLAN.parent)
    assert len(plan.seeds) >= 8 and not set(plan.seeds) & set(range(1, 6))     # the grid's seeds were 1-5
    assert set(plan.rows) == {"luong_general", "luong_general-scaled", "scaled_dot", "bahdanau", "coverage-lambda0"}
    assert plan.patience >= 10 and plan.val_sentences == 1014
    configs = {c.name: c.overrides for c in plan_configs(plan, "multi30k")}
    for overrides in configs.values():            # one decaying schedule for every row, none of the grid's
        assert "schedule=plateau" in overrides and "schedule=constant" not in overrides
        assert "trainer.precision=fp32" in overrides
    assert "model.attention.scaled=true" in configs["luong_general-scaled"]
    assert "model.attention.scaled=true" not in configs["luong_general"]


def test_training_refuses_an_uncommitted_or_edited_plan(repo):
    root, out = repo
    shutil.copy(PLAN, out / "plan.json")
    with pytest.raises(NmtError, match="not committed; commit the plan before any run"):
        require_committed(load_plan(out))
    commit_file(root, out / "plan.json", PLAN.read_text(), "the plan")
    require_committed(load_plan(out))
    edited = json.loads(PLAN.read_text())
    edited["seeds"] = [1, 2, 3]
    (out / "plan.json").write_text(json.dumps(edited))
    with pytest.raises(NmtError, match="changed since its commit"):
        require_committed(load_plan(out))


def test_a_record_trained_before_the_plan_is_not_scored(repo):
    root, out = repo
    before = git(root, "rev-parse", "HEAD").strip()
    plan_at = commit_file(root, out / "plan.json", PLAN.read_text(), "the plan")
    after = commit_file(root, root / "code.txt", "later code\n", "later")
    plan = load_plan(out)
    good = {"name": "bahdanau", "seed": 101, "status": "finished", "commit": after[:12]}
    assert check_records(plan, [good])[0] == plan_at
    assert check_records(plan, [{**good, "commit": plan_at[:12] + " (with uncommitted changes under nmt/)"}])
    early = {**good, "seed": 102, "commit": before[:12]}
    with pytest.raises(NmtError, match=r"not an ancestor of the commit that trained bahdanau seed 102"):
        check_records(plan, [good, early])
    # a plan edited after a record: the record no longer descends from the plan's (last) commit
    commit_file(root, out / "plan.json", PLAN.read_text().replace('"alpha": 0.05', '"alpha": 0.1'), "edited")
    with pytest.raises(NmtError, match="not pre-registered"):
        check_records(load_plan(out), [good])


def test_the_plan_options_are_refused_beside_it(capsys):
    from nmt_study.options import parse_args

    for extra in (["--seeds", "3"], ["--patience", "4"], ["--only", "bahdanau"], ["--budget-steps", "1600"]):
        with pytest.raises(SystemExit):
            parse_args(["--preregistered", *extra])
        assert "takes its rows, seeds and training rule from its plan" in capsys.readouterr().err


def test_the_report_decides_only_complete_rows_and_prints_power(repo):
    from nmt_study.preregistered_report import write_preregistered_report
    from nmt_study.runner import record_path_of, write_record

    root, out = repo
    commit_file(root, out / "plan.json", PLAN.read_text(), "the plan")
    head = git(root, "rev-parse", "HEAD").strip()
    plan = load_plan(out)
    for k, seed in enumerate(plan.seeds):
        for name, base in (("bahdanau", 32.0), ("coverage-lambda0", 32.2), ("luong_general", 26.0),
                           ("luong_general-scaled", 29.0), ("scaled_dot", 30.0)):
            if name == "scaled_dot" and k >= 3:
                continue                               # an unfinished row: its comparison stays interim
            bleu = base + (k % 4) * 0.3
            write_record(record_path_of(out, name, seed), {
                "name": name, "seed": seed, "status": "finished", "commit": head[:12],
                "eval": {"test_bleu": bleu + 6, "best_step": 3000 + 200 * k, "final_step": 5000 + 200 * k,
                         "stopped_by": "trainer.patience", "wall_s": 1800.0},
                "confirm": {"eval": {"test_bleu": bleu}}})
    page = write_preregistered_report(out, plan, {}).read_text()
    assert f"committed at **{head[:12]}**" in page
    assert "Runs finished: **51 of 60**" in page
    # 12 seeds of 26.0..26.9 against 29.0..29.9: Holm rejects; a 0.2 gap inside ±1: equivalent
    assert "| luong_general-scaled vs luong_general | 12 / 12 |" in page
    assert "differs (luong_general-scaled higher)" in page
    assert "equivalent within ±1 BLEU" in page
    assert "interim: differs (bahdanau higher); decides nothing yet" in page     # scaled_dot has 3 of 12
    assert "| 100% |" in page                                                    # spread 0.35: power ~1
    assert "| bahdanau | 12 of 12 | 3000, 3200" in page
