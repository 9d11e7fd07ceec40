"""The study's committed pages say no more than their numbers carry (issue 45): the audit's
over-claims are gone, and every command in them reruns from the repository root."""

import re
import shlex
from pathlib import Path

import pytest

from nmt_study.report_header import portable_command

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "benchmarks" / "attention_study"
PAGES = sorted(p for p in STUDY.rglob("README.md") if "superseded" not in str(p) and "round2" not in str(p))


def test_there_are_pages_to_read():
    names = {p.relative_to(STUDY).as_posix() for p in PAGES}
    assert {"README.md", "toy/README.md", "multi30k/README.md", "convergence/README.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(STUDY).as_posix())
def test_a_page_makes_none_of_the_audits_over_claims(page):
    text = page.read_text(encoding="utf-8")
    # "converged" needs every run stopped early; the convergence check had runs at its cap
    assert "trained to convergence" not in text
    assert "named in advance" not in text              # the top group was chosen on test_2016_flickr
    assert "competitive with or better than" not in text        # Garg et al.'s word is "competitive"
    assert "Tables 2, 3 and 12" not in text                    # ALiBi's tables are images in every stored copy
    # GNMT's Table 2 as read in a stored copy of Sec. 7: at the study's α = 1.0, β = 0.2 is below β = 0
    if "Table 2 (Sec. 7):" in text:                          # the claim itself, not a table cell naming it
        assert "β = 0.2 lowers BLEU: 30.3 against 31.1" in text
    # a "disagrees" stands on a test that survived Holm: a gap, its interval and Welch's p on its line
    for line in text.splitlines():
        if line.lstrip().startswith("- ") and "**disagrees" in line:       # a comparison, not the legend
            assert re.search(r"gap [+-][0-9.]+ \[[+-][0-9.]+, [+-][0-9.]+\], Welch p = ", line), line


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(STUDY).as_posix())
def test_a_page_names_no_path_of_the_machine_that_ran_it(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"(?<![\w.])/(work|home|root|tmp|Users)/", text), \
        re.search(r".{60}(?<![\w.])/(work|home|root|tmp|Users)/.{40}", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(STUDY).as_posix())
def test_every_file_a_page_command_names_in_the_repository_is_there(page):
    """A link file or an --out in a page's commands is a path of this repository (rerun
    as written), never one of a worktree beside it that another machine does not have."""
    for option, path in re.findall(r"(--(?:links|valid-links|train-links|confirm-links|out)) ([^\s`']+)",
                                   page.read_text(encoding="utf-8")):
        assert not path.startswith("../"), (option, path)
        if option != "--out":
            assert (ROOT / path).is_file(), (option, path)


def test_a_path_of_a_removed_worktree_is_shown_as_the_repository_reads_it(tmp_path):
    """A study run from a worktree that has since been removed (or on another machine):
    its recorded links are still written relative to the root, since the same file is here;
    its command, recorded when the study was nmt.study, is shown as it runs now (nmt_study)."""
    main = tmp_path / "main"
    (main / ".git").mkdir(parents=True)
    (main / "nmt").mkdir()
    (main / "benchmarks" / "m30").mkdir(parents=True)
    (main / "benchmarks" / "m30" / "test.links").write_text("0-0\n")
    out = main / "benchmarks" / "confirmation"
    out.mkdir()
    recorded = (f"python -m nmt.study --links {tmp_path}/wt-gone/benchmarks/m30/test.links "
                f"--data-path {tmp_path}/shared/data --out {out}")
    assert portable_command(recorded, out) == (
        "python -m nmt_study --links benchmarks/m30/test.links --data-path ../shared/data --out benchmarks/confirmation")


def test_a_recorded_command_is_shown_as_run_from_the_repository_root(tmp_path):
    checkout = tmp_path / "main"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "nmt").mkdir()
    out = tmp_path / "elsewhere" / "benchmarks" / "attention_study" / "multi30k"
    (tmp_path / "elsewhere" / ".git").mkdir(parents=True)
    out.mkdir(parents=True)
    recorded = (f"python -m nmt.study --data-path {tmp_path}/shared/data/multi30k --links "
                f"{checkout}/benchmarks/attention_study/multi30k/test.links --runs-dir {tmp_path}/runs/x "
                f"--machine '2-core CPU' data.path={tmp_path}/shared/data/multi30k")
    assert portable_command(recorded, out) == (
        "python -m nmt_study --data-path ../shared/data/multi30k --links "
        "benchmarks/attention_study/multi30k/test.links --runs-dir ../runs/x --machine '2-core CPU' "
        "data.path=../shared/data/multi30k")


def test_a_command_run_from_a_worktree_is_shown_as_run_from_the_repository_root(tmp_path, monkeypatch):
    """Paths typed relative to another folder (a worktree beside the repository) are
    recorded absolute, so the page writes them relative to its own repository root."""
    from nmt_study.options import absolute_paths

    main, worktree = tmp_path / "main", tmp_path / "wt"
    for checkout in (main, worktree):
        (checkout / ".git").mkdir(parents=True)
        (checkout / "nmt").mkdir()
    out = main / "benchmarks" / "attention_study" / "learning_rate"
    out.mkdir(parents=True)
    monkeypatch.chdir(worktree)
    argv = ["--lr-sweep", "--data-path", "../shared/data/multi30k", "--links", "benchmarks/x/test.links",
            "--out", "../main/benchmarks/attention_study/learning_rate", "--runs-dir=../runs/lr", "--only",
            "bahdanau", "--machine", "2 cores"]
    recorded = "python -m nmt_study " + shlex.join(absolute_paths(argv))
    assert portable_command(recorded, out) == (
        "python -m nmt_study --lr-sweep --data-path ../shared/data/multi30k --links benchmarks/x/test.links "
        "--out benchmarks/attention_study/learning_rate --runs-dir=../runs/lr --only bahdanau --machine '2 cores'")


def test_a_relative_command_recorded_in_a_worktree_by_an_older_study_is_shown_from_the_root(tmp_path):
    """Before paths were recorded absolute, a study run in a worktree beside the repository
    recorded what was typed there; the page finds that folder from --out and writes every
    path as the repository root reads it."""
    main = tmp_path / "main"
    (main / ".git").mkdir(parents=True)
    (main / "nmt").mkdir()
    out = main / "benchmarks" / "attention_study" / "confirmation"
    out.mkdir(parents=True)
    recorded = ("python -m nmt.study --confirm --data-path ../shared/data/multi30k --links "
                "benchmarks/attention_study/multi30k/test.links --out ../main/benchmarks/attention_study/confirmation "
                "--runs-dir=../runs/confirmation --cache-dir ../cache_study --jobs 2 --machine 'AMD, 2 cores'")
    assert portable_command(recorded, out) == (
        "python -m nmt_study --confirm --data-path ../shared/data/multi30k --links "
        "benchmarks/attention_study/multi30k/test.links --out benchmarks/attention_study/confirmation "
        "--runs-dir=../runs/confirmation --cache-dir ../cache_study --jobs 2 --machine 'AMD, 2 cores'")
    from_root = "python -m nmt_study --out benchmarks/attention_study/confirmation --links ../x.links"
    assert portable_command(from_root, out) == from_root          # run from the root: as recorded


def test_baselines_are_read_in_words_with_each_gaps_own_interval_both_ways():
    from nmt_study.alignment_table import baselines_read, gap_interval

    table = {"a": {"n": 3, "values": {"aer": [0.50, 0.51, 0.49]}}, "b": {"n": 3, "values": {"aer": [0.42, 0.46, 0.44]}},
             "c": {"n": 3, "values": {"aer": [0.30, 0.31, 0.29]}}, "d": {"n": 1, "values": {"aer": [0.40]}},
             "e": {"n": 0}}
    # b: mean 0.44, sd 0.02, t(0.975, 2) = 4.303: half-width 4.303 * 0.02 / sqrt(3) = 0.0497;
    # its gap to the diagonal's 0.444 is -0.004: [-0.054, +0.046] spans 0
    low, high = gap_interval([0.42, 0.46, 0.44], 0.444)
    assert low == pytest.approx(-0.0537, abs=1e-4) and high == pytest.approx(0.0457, abs=1e-4)
    assert gap_interval([0.40], 0.444) is None
    said = baselines_read(table, {"diagonal": 0.444, "same_position": 0.507})
    # a (0.50 ± 0.0248): +0.056 to the diagonal, wholly above (worse); -0.007 to same position: spans.
    # c is wholly below both (better); d has one seed; e no runs
    assert said.endswith("against the diagonal, of the 4 configurations 1 better, 1 worse (a), 1 not separable "
                         "from it (b), 1 with one seed, not read (d); against the same-position baseline, of the 4 "
                         "configurations 2 better, 0 worse, 1 not separable from it (a), 1 with one seed, not read "
                         "(d).")
    # the band works both ways: a row just below the baseline within its noise is not "better"
    near = baselines_read({"x": {"n": 3, "values": {"aer": [0.43, 0.45, 0.44]}}}, {"diagonal": 0.45,
                                                                               "same_position": 0.43})
    assert "against the diagonal, of the 1 configurations 0 better, 0 worse, 1 not separable" in near
    assert "against the same-position baseline, of the 1 configurations 0 better, 0 worse, 1 not separable" in near


def test_only_the_multi30k_page_sets_the_grid_beside_the_convergence_check():
    """The convergence check sets the grid's rows (1,600 updates) beside its 3× runs; on any other
    page the table beside them would not be the grid's, so that page points to Multi30k's."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        beside = "| grid test BLEU | converged test BLEU |" in text
        assert beside == (page.relative_to(STUDY).as_posix() == "multi30k/README.md"), page
    assert "(../multi30k/README.md#convergence-check)" in (STUDY / "confirmation" / "README.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(STUDY).as_posix())
def test_a_page_counts_one_in_the_singular(page):
    text = page.read_text(encoding="utf-8")
    wrong = re.findall(r"(?<![\d.,])1 (jobs|runs to train|runs ×|configurations align |more are )", text)
    assert not wrong, wrong
