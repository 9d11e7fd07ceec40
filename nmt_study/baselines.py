"""Alignments that read no model, scored like the attention: what a reading
must beat (diagonal, same position) and what one link per target word can
reach at best (nmt_study.alignment.one_link_floor)."""

from nmt_study.alignment import AerCounts, baseline_links, one_link_floor

BASELINES = ("diagonal", "same_position", "one_link_floor")


def baseline_counts(pairs: list[tuple[str, str]], references: list[set]) -> dict[str, AerCounts]:
    """Each baseline's AerCounts summed over `pairs` (raw sentences, whose
    whitespace words the links count) against their reference links."""
    totals = {name: AerCounts() for name in BASELINES}
    for (src, tgt), sure in zip(pairs, references):
        n_src, n_tgt = len(src.split()), len(tgt.split())
        totals["diagonal"] += AerCounts.of(baseline_links("diagonal", n_src, n_tgt), sure)
        totals["same_position"] += AerCounts.of(baseline_links("same_position", n_src, n_tgt), sure)
        totals["one_link_floor"] += AerCounts.of(one_link_floor(sure, n_tgt), sure)
    return totals
