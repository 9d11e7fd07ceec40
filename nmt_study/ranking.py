"""The study's overall ranking: every trained configuration, first to last.

Multi30k ranks by mean test BLEU (greedy), the toy task by mean AER (its
test BLEU is near 100 for nearly every configuration, so only alignment
tells them apart). Decode-only rows (the same checkpoint decoded with a
beam) are left out: they decode differently, not a different model.

A rank is only as good as its evidence, so every row says how it stands
against the first: the gap over the seeds with its 95% interval, Welch's
exact p and Holm's correction over the table's comparisons
(nmt_study.statistics). RNN and Transformer models are ranked apart. The
paired bootstrap of first seeds measures test-set sampling only, so it
ranks nothing here. The seeds of every row are fixed before the runs
(nmt_study.configs.BUDGETS); `seed_plan_line` says which rows are short.
"""

from nmt_study.configs import BUDGETS, CONVERGENCE, CONVERGENCE_FOLDER, StudyConfig, label
from nmt_study.tables import against, cell



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


def against_first_of_each(table: dict, names: list[str], transformer: dict[str, bool], key: str, digits: int,
                          declared: dict | None) -> tuple[set[str], dict[str, str]]:
    """`names` (best first) against the first of their own architecture, each
    architecture its own Holm family -> (the firsts, the readings)."""
    firsts, readings = set(), {}
    for arch in dict.fromkeys(transformer[n] for n in names):
        group = [n for n in names if transformer[n] == arch]
        firsts.add(group[0])
        readings.update(against(table, group, group[0], key, digits, declared))
    return firsts, readings


def ranking_table(configs: list[StudyConfig], table: dict, toy: bool, transformers: bool,
                  guided: bool = False, declared: dict | None = None) -> list[str]:
    """Markdown lines of one architecture's ranking (RNN or Transformer models,
    never mixed: their budgets and sizes differ): rank, configuration, family,
    seeds, parameters, test BLEU, chrF, AER, and the gap to the first with its
    95% interval, Welch's exact p and Holm's reading over the table. On the
    toy task the guided rows, taught the very links AER scores, are a table
    of their own (`guided`), both architectures listed, each read against its
    own first. A comparison a claim declares shows that claim's decision
    (`declared`, nmt_study.findings.declared)."""
    arch = {c.name: c.transformer for c in configs}
    taught = {c.name: toy and c.needs_alignments for c in configs}
    names = [n for n in ranked_names(configs, table, toy)
             if taught[n] == guided and (guided or arch[n] == transformers)]
    if not names:
        return []
    key, _ = rank_key(toy)
    firsts, readings = against_first_of_each(table, names, arch, key, 3 if toy else 2, declared)
    header = ["rank", "configuration", "family", "seeds", "parameters", "test BLEU", "chrF", "AER",
              f"vs first ({'AER' if toy else 'test BLEU'}: gap [95% CI], Welch p, Holm over the table"
              f"{', each architecture apart' if guided else ''})"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for rank, name in enumerate(names, start=1):
        entry = table[name]
        row = [str(rank), label(name), entry["family"], str(entry["n"]), cell(entry, "parameters", "{:,.0f}"),
               cell(entry, "test_bleu", "{:.2f}"), cell(entry, "test_chrf", "{:.2f}"), cell(entry, "aer", "{:.3f}"),
               "first" if name in firsts else readings.get(name, "–")]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def seed_plan_line(configs: list[StudyConfig], table: dict, part: str) -> str:
    """Does every ranked row have the seeds fixed before the runs? `part` is
    toy or multi30k (nmt_study.configs.BUDGETS: `seeds` each, `top_seeds` for
    the base and the top group) or convergence (CONVERGENCE:
    `seeds` for each of its rows). Seeds are never added after looking."""
    ranked = [c.name for c in configs if not c.decode_of and c.name in table and table[c.name]["n"]]
    if not ranked:
        return ""
    if part == CONVERGENCE_FOLDER:
        planned = dict.fromkeys(ranked, CONVERGENCE.seeds)
        plan = f"{CONVERGENCE.seeds} seeds for each row of the convergence check"
    else:
        budget = BUDGETS[part]
        planned = {n: budget.top_seeds if n in budget.top_group else budget.seeds for n in ranked}
        plan = f"{budget.seeds} seeds for every configuration" + (
            f", {budget.top_seeds} for the base and the top group ({', '.join(budget.top_group)}). The top group "
            "was fixed before the third round's runs, but chosen as the second round's rows within 1.5 test BLEU "
            "of the first on test_2016_flickr, the set every finding here is read on: an ordering among them is "
            "confirmed only on test_2017_flickr, which nothing was chosen on (the confirmation runs)"
            if budget.top_group else "")
    short = [f"{n} ({table[n]['n']} of {planned[n]})" for n in ranked if table[n]["n"] < planned[n]]
    return (f"Seeds, fixed before any run: {plan}. "
            + (f"Still short of their plan: {', '.join(short)}." if short else "Every ranked row has them."))
