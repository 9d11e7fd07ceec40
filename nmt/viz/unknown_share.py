"""Sources the model mostly does not know: a translation whose source is more than
UNKNOWN_SHARE <unk> says little, and neither does its attention. Torch-free, so the
CTranslate2 route of nmt.translate can warn without importing torch."""

UNKNOWN_SHARE = 0.3     # over this share of <unk> source subwords, a translation is flagged
UNKNOWN = "<unk>"


def unknown_source(src_pieces: list[str]) -> dict:
    """How many source subwords are <unk> (</s> not counted), and whether
    that is over UNKNOWN_SHARE: the model saw too little of the input for
    its translation, or its attention, to say much."""
    pieces = [p for p in src_pieces if p != "</s>"]
    count = sum(p == UNKNOWN for p in pieces)
    return {"count": count, "of": len(pieces), "over": bool(pieces) and count / len(pieces) > UNKNOWN_SHARE}


def unknown_text(unknown: dict) -> str:
    return (f"{unknown['count']} of {unknown['of']} source subwords are <unk>, unknown to the model's vocabulary "
            f"(over {UNKNOWN_SHARE:.0%}): the translation and its attention say little about this input")


def warn_unknown(outputs, logger) -> None:
    """One warning line on `logger` for the Translations whose sources are mostly <unk>."""
    flagged = [(i + 1, unknown_source(o.src_pieces)) for i, o in enumerate(outputs) if o.src_pieces]
    flagged = [(line, unknown) for line, unknown in flagged if unknown["over"]]
    if flagged:
        logger.warning("%d input line(s) mostly unknown; line %d: %s", len(flagged), flagged[0][0],
                       unknown_text(flagged[0][1]))
