"""The paired bootstrap goes through sacreBLEU (nmt.study.significance)."""

import pytest
import sacrebleu

from nmt.study.significance import paired_bootstrap

REFS = ["the cat sat on the mat", "a dog runs in the park", "two men play chess", "the sun is hot today"]
GOOD = list(REFS)
BAD = ["the cat on mat", "dog runs park", "men play", "sun hot"]


def test_paired_bootstrap_on_a_tiny_example():
    worse, same = paired_bootstrap(GOOD, [BAD, GOOD], REFS, n_samples=200)
    # the difference is sacreBLEU's corpus BLEU of each, not a BLEU of our own
    assert worse["baseline_bleu"] == pytest.approx(100.0)
    assert worse["bleu"] == pytest.approx(sacrebleu.corpus_bleu(BAD, [REFS]).score)
    assert worse["difference"] == pytest.approx(worse["bleu"] - 100.0) and worse["difference"] < -50
    # every resample of 4 sentences favours the perfect output: p = (0 + 1) / (200 + 1)
    assert worse["p_value"] == pytest.approx(1 / 201)
    assert "bs:200" in worse["signature"]
    # an identical output: no difference, nothing to test
    assert same["difference"] == 0.0 and same["p_value"] == 1.0
    with pytest.raises(ValueError, match="references"):
        paired_bootstrap(GOOD, [BAD[:3]], REFS)


def test_the_paired_bootstrap_of_first_seeds_is_shown_but_decides_nothing(tmp_path):
    """One seed each cannot rank by the seed spread. The index asks for the
    paired bootstrap of the pair it compares and the report runs it through
    sacreBLEU into paired.json; the finding cites it as test-set noise of one
    seed pair, and still says there are too few seeds (issue 34: two seeds of
    one configuration differ "significantly" by it)."""
    import json

    from nmt.study.index import PairedEvidence, cited_pairs, findings
    from nmt.study.report import write_cited_tests
    from nmt.study.tables import aggregate

    outputs = {"luong_general": GOOD, "bahdanau": BAD}
    runs = [{"name": n, "family": "score", "seed": 1, "first_seed": 1, "hypotheses": h, "status": "finished",
             "eval": {"test_bleu": sacrebleu.corpus_bleu(h, [REFS]).score, "final_step": 10}}
            for n, h in outputs.items()]
    table = aggregate(runs)
    assert ("bahdanau", "luong_general") in cited_pairs(table, runs)
    write_cited_tests(tmp_path, runs, table, REFS)
    paired = json.loads((tmp_path / "paired.json").read_text())
    assert paired["bahdanau|luong_general"]["p_value"] == pytest.approx(1 / 1001)
    lines = findings(table, runs, "multi30k", PairedEvidence(paired))
    line = next(x for x in lines if x.startswith("- test BLEU: bahdanau"))
    assert "paired bootstrap of the first seeds (test-set noise only): -" in line and "p = 0.001" in line
    assert line.endswith("too few seeds to tell.")
    # without the test, one seed each is too few to tell
    line = next(x for x in findings(table, runs, "multi30k") if x.startswith("- test BLEU: bahdanau"))
    assert line.endswith("too few seeds to tell.") and "updates to BLEU 95" not in "\n".join(findings(table, runs, "multi30k"))
