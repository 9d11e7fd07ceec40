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


def test_report_tests_each_configuration_against_its_family_best():
    from nmt.study.configs import study_configs
    from nmt.study.report import aggregate, paired_tests

    outputs = {"luong_dot": GOOD, "bahdanau": BAD, "cosine": GOOD}
    runs = [{"name": n, "family": "score", "seed": 1, "first_seed": 1, "hypotheses": h,
             "eval": {"test_bleu": sacrebleu.corpus_bleu(h, [REFS]).score, "final_step": 10}}
            for n, h in outputs.items()]
    configs = [c for c in study_configs("multi30k") if c.name in outputs]
    cells = paired_tests(runs, configs, aggregate(runs), REFS)
    # the family's best (highest mean test BLEU; bahdanau comes first in the grid but is worst)
    # is the baseline; an identical output is p = 1
    best = "luong_dot" if cells["luong_dot"] == "baseline" else "cosine"
    assert cells[best] == "baseline"
    assert cells["bahdanau"].startswith("-") and cells["bahdanau"].endswith("p = 0.001")
    other = "cosine" if best == "luong_dot" else "luong_dot"
    assert cells[other] == "+0.00, p = 1.000"
