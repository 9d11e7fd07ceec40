"""The alignment readings of one record, from the counts it stores.

A record keeps, per split (valid, test), the AerCounts of every way the
study reads an alignment from the attention (nmt_study.metrics.Readings):
the attention shown, and for Transformers each head, each layer's mean of
heads and the mean of all, each directly and one step later (Shift-Att,
Chen, Liu, Chen, Jiang & Liu 2020, Accurate Word Alignment Induction from
Neural Machine Translation, EMNLP, Sec. 3). This module turns those counts
into the figures the report shows; it computes nothing from a model.

    precision, recall     of the shown attention (Och and Ney 2003, Sec. 5)
    aer_linked            AER over target words the reference links
    aer_shift             the shown attention read one step later
    aer_head_valid        the head chosen on the validation counts, scored
    aer_head_valid_shift  on the test counts (never chosen on test)
    unlinked_share        target words without a reference link
"""

from nmt_study.alignment import AerCounts


def counts(evaluation: dict, split: str, key: str) -> AerCounts | None:
    """One reading's summed counts of a split, or None where the record has none."""
    found = ((evaluation.get("alignment") or {}).get(split) or {}).get("counts", {}).get(key)
    return AerCounts.from_list(found) if found else None


def grid(evaluation: dict, split: str, key: str) -> list[list[AerCounts]] | None:
    """A (layer, head) grid of counts ("heads" or "shift_heads"), or None."""
    found = ((evaluation.get("alignment") or {}).get(split) or {}).get("grids", {}).get(key)
    return [[AerCounts.from_list(c) for c in row] for row in found] if found else None


def chosen_on_valid(evaluation: dict, key: str = "heads") -> tuple[tuple[int, int], float] | None:
    """((layer, head) with the lowest validation AER, ties the first; that
    head's TEST AER), or None without both grids."""
    valid, test = grid(evaluation, "valid", key), grid(evaluation, "test", key)
    if not valid or not test:
        return None
    cells = [(layer, head) for layer in range(len(valid)) for head in range(len(valid[0]))]
    layer, head = min(cells, key=lambda lh: valid[lh[0]][lh[1]].aer)
    return (layer, head), test[layer][head].aer


def derived(evaluation: dict) -> dict:
    """The figures above, for the keys the record's counts allow."""
    out = {}
    shown, shift = counts(evaluation, "test", "shown"), counts(evaluation, "test", "shift_shown")
    if shown and shown.sure:
        out.update(precision=shown.precision, recall=shown.recall, aer_linked=shown.aer_linked)
    if shift and shift.sure:
        out["aer_shift"] = shift.aer
    for key, name in (("heads", "aer_head_valid"), ("shift_heads", "aer_head_valid_shift")):
        chosen = chosen_on_valid(evaluation, key)
        if chosen:
            out[name] = chosen[1]
            out[name.replace("aer_", "") + "_cell"] = list(chosen[0])
    test = (evaluation.get("alignment") or {}).get("test") or {}
    if test.get("target_words"):
        out["unlinked_share"] = test["unlinked_target_words"] / test["target_words"]
    return out
