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


def seed_pair_noise(runs: list[dict], references: list[str], cache: dict, n_samples: int = 1000) -> list[dict]:
    """The paired bootstrap between the first two seeds of each configuration
    that kept its test hypotheses: the same configuration, so what it finds is
    test-set sampling and the seed, never a mechanism. `cache` (name|s1|s2 ->
    result) is filled and reused, so a report rewrite does not test again.
    -> [{"name", "seeds", "difference", "p_value"}]"""
    by_name: dict[str, list[dict]] = {}
    for run in sorted(runs, key=lambda r: r["seed"]):
        if run["eval"] and len(run.get("hypotheses") or []) == len(references):
            by_name.setdefault(run["name"], []).append(run)
    out = []
    for name, mine in by_name.items():
        if len(mine) < 2:
            continue
        first, second = mine[:2]
        key = f"{name}|{first['seed']}|{second['seed']}"
        if key not in cache:
            found = paired_bootstrap(first["hypotheses"], [second["hypotheses"]], references, n_samples)[0]
            cache[key] = {"difference": found["difference"], "p_value": found["p_value"]}
        out.append({"name": name, "seeds": (first["seed"], second["seed"]), **cache[key]})
    return out


def noise_line(results: list[dict]) -> str:
    """One paragraph: how often two seeds of one configuration 'differ' by the paired bootstrap."""
    if not results:
        return "No configuration has two seeds with test outputs yet."
    below = [r for r in results if r["p_value"] < 0.05]
    sizes = sorted(abs(r["difference"]) for r in results)
    median = sizes[len(sizes) // 2] if len(sizes) % 2 else (sizes[len(sizes) // 2 - 1] + sizes[len(sizes) // 2]) / 2
    return (f"Two seeds of the same configuration, compared by the paired bootstrap of their test outputs "
            f"(Koehn 2004, sacreBLEU, 1,000 resamples): p < 0.05 in {len(below)} of {len(results)} "
            f"configurations; median |ΔBLEU| {median:.2f}, largest {sizes[-1]:.2f}. The test is about test-set "
            "sampling of two fixed outputs, so it calls seeds of one model different: no finding in this "
            "report rests on it.")
