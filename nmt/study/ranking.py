"""The study's overall ranking: every trained configuration, first to last.

Multi30k ranks by mean test BLEU (greedy), the toy task by mean AER (its
test BLEU is near 100 for nearly every configuration, so only alignment
tells them apart). Decode-only rows (the same checkpoint decoded with a
beam) are left out: they decode differently, not a different model.

A rank is only as good as its evidence, so every row says how it stands
against the first: Welch's t-test over the seeds and, on Multi30k,
sacreBLEU's paired bootstrap of the first seeds' test outputs. The issue's
rule is that the three configurations ranked first run at least
`MIN_SEEDS_OF_TOP` seeds; `top_three_line` says whether they do, and the
`--spread` that would make them.
"""

from nmt.study.configs import StudyConfig, label
from nmt.study.tables import cell, clearly_different

MIN_SEEDS_OF_TOP = 3
TOP = 3


def rank_key(toy: bool) -> tuple[str, bool]:
    """-> (the figure ranked on, whether lower is better)."""
    return ("aer", True) if toy else ("test_bleu", False)


def ranked_names(configs: list[StudyConfig], table: dict, toy: bool) -> list[str]:
    """Trained configurations with a finished run, best first; ties keep grid order."""
    key, lower = rank_key(toy)
    sign = 1 if lower else -1
    names = [c.name for c in configs if not c.decode_of and c.name in table
             and table[c.name]["n"] and key in table[c.name]["stats"]]
    return sorted(names, key=lambda n: sign * table[n]["stats"][key][0])


def paired_against_first(names: list[str], runs: list[dict], references: list[str] | None) -> dict[str, str]:
    """name -> "difference, p" of its first seed's test output against the first
    configuration's (sacreBLEU's paired bootstrap); empty without references."""
    from nmt.study.significance import paired_bootstrap

    first_seed = {r["name"]: r for r in runs if r["eval"] and r["seed"] == r["first_seed"] and r["hypotheses"]}
    if not references or not names or names[0] not in first_seed:
        return {}
    others = [n for n in names[1:] if n in first_seed]
    found = paired_bootstrap(first_seed[names[0]]["hypotheses"], [first_seed[n]["hypotheses"] for n in others],
                             references)
    return {n: f"{r['difference']:+.2f}, p = {r['p_value']:.3f}" for n, r in zip(others, found)}


def ranking_table(configs: list[StudyConfig], table: dict, runs: list[dict], toy: bool,
                  references: list[str] | None = None) -> list[str]:
    """Markdown lines: rank, configuration, family, seeds, test BLEU, chrF, AER,
    the gap to the first with Welch's verdict, and (Multi30k) the paired test."""
    names = ranked_names(configs, table, toy)
    if not names:
        return []
    key, _ = rank_key(toy)
    paired = paired_against_first(names, runs, references) if not toy else {}
    header = ["rank", "configuration", "family", "seeds", "test BLEU", "chrF", "AER",
              f"vs first ({'AER' if toy else 'test BLEU'}, Welch over seeds)"]
    if paired:
        header.append("paired bootstrap vs first (BLEU difference, p; first seeds)")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    first = table[names[0]]
    for rank, name in enumerate(names, start=1):
        entry = table[name]
        row = [str(rank), label(name), entry["family"], str(entry["n"]), cell(entry, "test_bleu", "{:.2f}"),
               cell(entry, "test_chrf", "{:.2f}"), cell(entry, "aer", "{:.3f}")]
        if rank == 1:
            row.append("first")
        else:
            gap = entry["stats"][key][0] - first["stats"][key][0]
            verdict = clearly_different(entry, first, key)
            row.append(f"{gap:+.3g}: " + {True: "clearly behind", False: "within seed spread",
                                          None: "too few seeds"}[verdict])
        if paired:
            row.append("baseline" if rank == 1 else paired.get(name, "–"))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def top_three_line(configs: list[StudyConfig], table: dict, toy: bool) -> str:
    """Do the configurations ranked first have the seeds the study's rule asks?"""
    names = ranked_names(configs, table, toy)[:TOP]
    if not names:
        return ""
    listed = ", ".join(f"{n} ({table[n]['n']} seed{'s' if table[n]['n'] != 1 else ''})" for n in names)
    short = [n for n in names if table[n]["n"] < MIN_SEEDS_OF_TOP]
    if not short:
        return (f"The {len(names)} ranked first: {listed}; each has at least {MIN_SEEDS_OF_TOP} seeds, as the "
                "study's rule asks of the top three.")
    return (f"The {len(names)} ranked first: {listed}. The study's rule asks at least {MIN_SEEDS_OF_TOP} seeds "
            f"of the top three: not yet met for {', '.join(short)} (`--spread {','.join(short)}` gives each "
            "one seed more than `--seeds`).")
