"""The study's comma-separated options (--only, --only-seeds, --spread, --reproduce) read by one rule:
an empty item (`a,,b`, a comma at either end) is refused in one line naming the option, never skipped,
so a list with a slip in it does not quietly plan other runs than the ones meant."""

from nmt import NmtError


def comma_items(text: str, option: str, advice: str) -> list[str]:
    """The items of `text`, split at commas and stripped; [] when it holds nothing at all ("" or
    spaces: each caller says what an empty list means). An empty item among others is NmtError:
    `--only 'a,,b': item 2 of 3 is empty (two commas in a row, or one at an end); {advice}`."""
    if not text.strip():
        return []
    items = [item.strip() for item in text.split(",")]
    if "" in items:
        raise NmtError(f"{option} {text!r}: item {items.index('') + 1} of {len(items)} is empty (two commas in a "
                       f"row, or one at an end); {advice}")
    return items
