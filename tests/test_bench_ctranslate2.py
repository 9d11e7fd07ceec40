"""scripts/peers/bench_ctranslate2.py: its ratio and agreement tables from hand-made timings and outputs, its
--quick sizes, and its refusals."""

from types import SimpleNamespace

import pytest

from scripts.peers.bench_ctranslate2 import agreement, parse_args, table


def rows(cell, seconds):
    beam, batch = cell
    return [{"round": r + 1, "beam": beam, "batch_size": batch, "engine": engine, "seconds": s}
            for engine, times in seconds.items() for r, s in enumerate(times)]


def test_the_table_gives_each_rounds_ratio_and_their_median():
    args = SimpleNamespace(cells=[(5, 64), (1, 1)], engines=["nmt", "nmt_fast", "ct2_float32", "ct2_int8"],
                           limit=1000, batch1_limit=200)
    timed = rows((5, 64), {"nmt": [20.0, 22.0, 30.0], "nmt_fast": [12.0, 12.0, 12.0],
                           "ct2_float32": [10.0, 10.0, 10.0], "ct2_int8": [6.0, 6.0, 5.0]})
    timed += rows((1, 1), {"nmt": [5.0, 5.0, 5.0], "nmt_fast": [4.0, 4.0, 4.0],
                           "ct2_float32": [2.0, 2.5, 2.0], "ct2_int8": [1.0, 1.0, 1.0]})
    startup = {"nmt": 1.6, "nmt_fast": 1.6, "ct2_float32": 0.2, "ct2_int8": 0.25}
    lines = table(args, timed, startup)
    beam = lines[2].removesuffix(" |").split(" | ")
    # medians 22, 12, 10, 6; nmt/ct2 f32 per round 2.00, 2.20, 3.00 -> median 2.20; 22 / 6 = 3.67
    assert beam[:7] == ["| beam 5", "64", "1000", "22.00", "12.00", "10.00", "6.00"]
    assert beam[7:10] == ["2.00, 2.20, 3.00", "**2.20×**", "3.67×"]
    assert beam[10:13] == ["1.20, 1.20, 1.20", "**1.20×**", "2.00×"]
    greedy = lines[3].removesuffix(" |").split(" | ")
    assert greedy[:3] == ["| greedy", "1", "200"] and greedy[7:9] == ["2.50, 2.00, 2.50", "**2.50×**"]
    assert "| 8.00× |" in lines[4] and lines[4].count("6.40×") == 2      # start-up: 1.6 / 0.2, 1.6 / 0.25


@pytest.mark.parametrize("argv, message", [
    (["--cells", "5by64"], "give BEAMxBATCH pairs"),
    (["--engines", "nmt,ct2_int8"], "must hold nmt and ct2_float32"),
    (["--engines", "nmt,ct2_float32,marian"], "must hold nmt and ct2_float32"),
    (["--rounds", "0"], "must be at least 1"),
])
def test_bad_options_are_one_line(tmp_path, argv, message):
    checkpoint = tmp_path / "best.pt"
    checkpoint.write_bytes(b"")
    with pytest.raises(SystemExit, match=message):
        parse_args(["--checkpoint", str(checkpoint), "--out", str(tmp_path / "out.json"), *argv])


def test_a_missing_checkpoint_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        parse_args(["--checkpoint", str(tmp_path / "none.pt"), "--out", str(tmp_path / "out.json")])


def test_the_agreement_table_counts_lines_as_nmts_and_scores_each_engine():
    args = SimpleNamespace(cells=[(1, 64)], engines=["nmt", "ct2_float32"])
    references = ["a dog runs .", "two cats sleep ."]
    outputs = {("nmt", 1, 64): ["a dog runs .", "two cats sleep ."],
               ("ct2_float32", 1, 64): ["a dog runs .", "two dogs sleep ."]}
    lines, records = agreement(args, outputs, references)
    # nmt's lines are the references: BLEU 100; CTranslate2's second line differs from nmt's
    assert lines[2] == "| greedy | 64 | nmt | 100.00 | 2 of 2 |"
    assert records[1]["same_as_nmt"] == 1 and records[1]["sentences"] == 2 and records[1]["bleu"] < 100


def test_quick_sets_the_sizes_that_are_not_given(tmp_path):
    checkpoint = tmp_path / "best.pt"
    checkpoint.write_bytes(b"")
    common = ["--checkpoint", str(checkpoint), "--out", str(tmp_path / "out.json")]
    full, quick = parse_args(common), parse_args([*common, "--quick", "--rounds", "2"])
    assert (full.limit, full.batch1_limit, full.rounds) == (1000, 200, 3)
    assert (quick.limit, quick.batch1_limit, quick.rounds) == (64, 4, 2)
