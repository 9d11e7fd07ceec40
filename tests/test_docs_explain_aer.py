"""The AER tables of docs/explain.md are the records' figures: every row of every
benchmarks/explain_aer_*.json record (AER, precision, recall, AER one step later, to three
places) is a row of the page, each figure follows from the record's own counts, and both the
page and benchmarks/explain_aer.md name every record. The page names no model path of the
project's machines (it writes RUN/checkpoints/best.pt)."""

import json

import pytest

from nmt.data.word_alignment import AerCounts
from tests.helpers import ROOT

PAGE = ROOT / "docs" / "explain.md"
INDEX = ROOT / "benchmarks" / "explain_aer.md"
RECORDS = sorted((ROOT / "benchmarks").glob("explain_aer_*.json"))


def test_the_records_are_there():
    names = {path.name for path in RECORDS}
    assert {
        "explain_aer_100.json",
        "explain_aer_500.json",
        "explain_aer_transformer_1000.json",
        "explain_aer_transformer_100.json",
        "explain_aer_transformer_ig_100.json",
        "explain_aer_shipped_1000.json",
        "explain_aer_shipped_ig_1000.json",
    } <= names


def test_the_counts_give_the_aer_by_hand():
    """The Transformer's attention on 1,000 pairs: |A| = 13423, |S| = 10593, |A ∩ S| = |A ∩ P| = 6176,
    so AER = 1 - (6176 + 6176) / (13423 + 10593) = 1 - 12352 / 24016 = 0.48568..., and
    precision = 6176 / 13423 = 0.46010..., recall = 6176 / 10593 = 0.58303"""
    record = json.loads((ROOT / "benchmarks" / "explain_aer_transformer_1000.json").read_text(encoding="utf-8"))
    attention = next(row for row in record["rows"] if row["method"] == "attention")
    assert attention["counts"] == [13423, 10593, 6176, 6176, 11889]
    assert attention["aer"] == pytest.approx(0.48568, abs=1e-5)
    assert attention["precision"] == pytest.approx(0.46010, abs=1e-5)
    assert attention["recall"] == pytest.approx(0.58303, abs=1e-5)
    assert record["pairs"] == 1000 and record["skipped"] == 0


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_every_row_of_a_record_is_on_the_page(path):
    record = json.loads(path.read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    assert path.name in page and path.name in INDEX.read_text(encoding="utf-8")
    assert record["rows"][0]["method"] == "attention"  # every run scores the attention itself
    for row in record["rows"]:
        direct, shift = AerCounts.from_list(row["counts"]), AerCounts.from_list(row["counts_shift"])
        computed = (direct.aer, direct.precision, direct.recall, shift.aer)
        assert computed == pytest.approx((row["aer"], row["precision"], row["recall"], row["aer_shift"]))
        figures = f"| {row['aer']:.3f} | {row['precision']:.3f} | {row['recall']:.3f} | {row['aer_shift']:.3f} |"
        assert figures in page, f"{path.name} {row['method']}: {figures} is not a row of {PAGE.name}"


def test_the_page_names_no_model_path_of_the_projects_machines():
    page = PAGE.read_text(encoding="utf-8")
    assert "/work/" not in page and "speed_model" not in page
    assert "RUN/checkpoints/best.pt" in page
