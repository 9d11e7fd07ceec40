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
