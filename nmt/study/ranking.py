"""The study's overall ranking: every trained configuration, first to last.

Multi30k ranks by mean test BLEU (greedy), the toy task by mean AER (its
test BLEU is near 100 for nearly every configuration, so only alignment
tells them apart). Decode-only rows (the same checkpoint decoded with a
beam) are left out: they decode differently, not a different model.

A rank is only as good as its evidence, so every row says how it stands
against the first: the gap over the seeds with its 95% interval, Welch's
exact p and Holm's correction over the table's comparisons
(nmt.study.statistics). RNN and Transformer models are ranked apart. The
paired bootstrap of first seeds measures test-set sampling only, so it
ranks nothing here. The issue's
rule is that the three configurations ranked first run at least
`MIN_SEEDS_OF_TOP` seeds; `top_three_line` says whether they do, and the
`--spread` that would make them.
"""

from nmt.study.configs import StudyConfig, label
from nmt.study.tables import against, cell

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


def ranking_table(configs: list[StudyConfig], table: dict, toy: bool, transformers: bool) -> list[str]:
    """Markdown lines of one architecture's ranking (RNN or Transformer models,
    never mixed: their budgets and sizes differ): rank, configuration, family,
    seeds, parameters, test BLEU, chrF, AER, and the gap to the first with its
    95% interval, Welch's exact p and Holm's reading over the table."""
    arch = {c.name: c.transformer for c in configs}
    names = [n for n in ranked_names(configs, table, toy) if arch[n] == transformers]
    if not names:
        return []
    key, _ = rank_key(toy)
    readings = against(table, names, names[0], key, 3 if toy else 2)
    header = ["rank", "configuration", "family", "seeds", "parameters", "test BLEU", "chrF", "AER",
              f"vs first ({'AER' if toy else 'test BLEU'}: gap [95% CI], Welch p, Holm over the table)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for rank, name in enumerate(names, start=1):
        entry = table[name]
        row = [str(rank), label(name), entry["family"], str(entry["n"]), cell(entry, "parameters", "{:,.0f}"),
               cell(entry, "test_bleu", "{:.2f}"), cell(entry, "test_chrf", "{:.2f}"), cell(entry, "aer", "{:.3f}"),
               "first" if rank == 1 else readings.get(name, "–")]
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
