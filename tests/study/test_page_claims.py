"""The study's pages say only what its records show: no "at convergence" (every run
stops by early stopping; no convergence test is run), and no family said to be
declared before its results except the pre-registered plan's, whose commit the
study checks (nmt_study.preregistration)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*ROOT.glob("docs/**/*.md"), *ROOT.glob("benchmarks/attention_study/**/README.md"),
         *ROOT.glob("nmt_study/*.py"), ROOT / "README.md"]
# what the papers report of their own runs, quoted as theirs
PAPERS_OWN = ("their gains are at convergence",)


def sentences(path: Path):
    text = re.sub(r"\"\s+f?\"", "", path.read_text(encoding="utf-8"))    # Python's implicit joins
    text = re.sub(r"\s+", " ", text)
    return re.split(r"(?<=[.!?])\s", text)


def test_no_page_reads_a_run_at_convergence():
    found = [f"{p.relative_to(ROOT)}: {s[:160]}" for p in PAGES for s in sentences(p)
             if "at convergence" in s and not any(q in s for q in PAPERS_OWN)]
    assert not found, "\n".join(found)


def test_only_the_preregistered_plan_is_said_to_be_declared_before_its_results():
    said = re.compile(r"declared (here |in \S+ \(?\w*\)? ?)?before|before any (reading|result)", re.IGNORECASE)
    found = [f"{p.relative_to(ROOT)}: {s[:160]}" for p in PAGES for s in sentences(p)
             if said.search(s) and "preregistered" not in str(p) and "plan" not in s and "after" not in s]
    assert not found, "\n".join(found)
