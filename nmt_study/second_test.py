"""The confirmation set: a second test set the study never chose anything on (issue 45).

Every finding of the grid is read on Multi30k's test_2016_flickr, the set the
top group was also picked on. test_2017_flickr (1,000 pairs, German and
English only) is a set nothing was chosen on: every run also scores its best
checkpoint on it (BLEU, chrF; AER against --confirm-links where given, word
links from the same eflomal recipe as the test links:
`python -m nmt_study.eflomal_links --split test_2017_flickr`). The record keeps
these figures apart, under "confirm", so a finding is read on each set.
"""

from pathlib import Path

from nmt import NmtError, read_parallel
from nmt_study.inputs import reference_links

CONFIRM_SET = "test_2017_flickr"
LANGUAGES = ("de", "en")        # the study trains de→en; the 2017 set has de and en only


def set_files(folder: Path, base: str = CONFIRM_SET) -> tuple[Path, Path] | None:
    """(source file, target file) of `base` in a Multi30k folder, plain or .gz; None if either is missing."""
    found = []
    for lang in LANGUAGES:
        names = [Path(folder) / f"{base}.{lang}", Path(folder) / f"{base}.{lang}.gz"]
        path = next((p for p in names if p.is_file()), None)
        if path is None:
            return None
        found.append(path)
    return found[0], found[1]


def confirm_pairs(args) -> list[tuple[str, str]] | None:
    """The confirmation set's pairs (empty sources dropped, --test-sentences applied),
    or None where the study's data has none (the toy task, the hub copy, a folder without it)."""
    if args.data != "multi30k" or not args.data_path:
        return None
    files = set_files(Path(args.data_path))
    if files is None:
        return None
    pairs = [(s, t) for s, t in read_parallel(*files) if s.strip()]
    return pairs[: args.test_sentences] if args.test_sentences else pairs


def confirm_links(args, pairs: list | None) -> list[set] | None:
    """The word links of the confirmation set (--confirm-links), one line per pair, or None."""
    if not pairs or not args.confirm_links:
        return None
    if args.data == "toy":
        raise NmtError("--confirm-links: the toy task has no confirmation set")
    links, _ = reference_links(args, pairs, args.confirm_links, "--confirm-links", CONFIRM_SET)
    return links
