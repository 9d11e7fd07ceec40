"""Paired bootstrap resampling of BLEU (Koehn 2004), through sacreBLEU.

Koehn 2004, Statistical Significance Tests for Machine Translation
Evaluation, EMNLP. sacreBLEU's implementation (sacrebleu.significance.
PairedTest with test_type="bs") draws n_samples test sets of the same size
with replacement, scores baseline and system on each, and gives the
p-value of the system's difference from the baseline; its seed is
SACREBLEU_SEED (12345 unless set), so results repeat.
"""

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest


def paired_bootstrap(baseline: list[str], systems: list[list[str]], references: list[str],
                     n_samples: int = 1000) -> list[dict]:
    """Each system's test output against the baseline's, on one reference.

    -> per system {"bleu", "baseline_bleu", "difference", "p_value", "signature"};
    p_value: the chance of a difference at least this large under the null
    (as sacreBLEU computes it: (c + 1) / (n_samples + 1))."""
    if not systems:
        return []
    for output in [baseline, *systems]:
        if len(output) != len(references):
            raise ValueError(f"{len(output)} outputs for {len(references)} references")
    # sacreBLEU gives an output identical to the baseline p = 1/(n_samples+1)
    # (no resample differs, and it counts none as chance); no test is needed there.
    different = [i for i, s in enumerate(systems) if list(s) != list(baseline)]
    named = [("baseline", baseline)] + [(f"system{i}", systems[i]) for i in different]
    if not different:
        base = BLEU().corpus_score(baseline, [references])
        return [{"bleu": base.score, "baseline_bleu": base.score, "difference": 0.0, "p_value": 1.0,
                 "signature": "identical output"} for _ in systems]
    test = PairedTest(named, {"BLEU": BLEU()}, references=[references], test_type="bs",
                      n_samples=n_samples)
    signatures, scores = test()
    name = next(k for k in scores if k != "System")
    base, *rest = scores[name]
    signature = str(signatures[name])
    found = {i: {"bleu": r.score, "baseline_bleu": base.score, "difference": r.score - base.score,
                 "p_value": r.p_value, "signature": signature} for i, r in zip(different, rest)}
    same = {"bleu": base.score, "baseline_bleu": base.score, "difference": 0.0, "p_value": 1.0,
            "signature": "identical output"}
    return [found.get(i, same) for i in range(len(systems))]
