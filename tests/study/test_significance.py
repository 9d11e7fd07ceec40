"""The paired bootstrap goes through sacreBLEU (nmt_study.significance)."""

import pytest
import sacrebleu

from nmt_study.significance import noise_line, paired_bootstrap, seed_pair_noise

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


def test_the_paired_bootstrap_between_seeds_of_one_configuration_is_test_set_noise():
    """The paired bootstrap is shown only between two seeds of the same
    configuration, aggregated over configurations (issue 34: it calls seeds
    of one model different), and cached in paired.json's dict."""
    runs = [{"name": n, "seed": seed, "eval": {"test_bleu": 1.0}, "hypotheses": h}
            for n, pair in (("a", (GOOD, BAD)), ("b", (GOOD, GOOD)), ("c", (GOOD,)))
            for seed, h in enumerate(pair, 1)]
    cache = {}
    results = seed_pair_noise(runs, REFS, cache)
    assert [(r["name"], r["seeds"]) for r in results] == [("a", (1, 2)), ("b", (1, 2))]   # c: one seed
    assert results[0]["p_value"] == pytest.approx(1 / 1001) and results[1]["p_value"] == 1.0
    assert set(cache) == {"a|1|2", "b|1|2"}
    assert seed_pair_noise(runs, REFS, {"a|1|2": {"difference": -9.0, "p_value": 0.5},
                                        "b|1|2": cache["b|1|2"]})[0]["p_value"] == 0.5      # reused
    text = noise_line(results)
    assert "p < 0.05 in 1 of 2 configurations" in text and "no finding in this report rests on it" in text
    assert noise_line([]) == "No configuration has two seeds with test outputs yet."
