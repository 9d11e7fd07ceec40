"""Silver word links for a test or validation set: eflomal, symmetrised with grow-diag-final-and.

    pip install -e '.[study]'
    python -m nmt_study.eflomal_links --data-path data/multi30k \\
        --out benchmarks/attention_study/multi30k/test.links
    python -m nmt_study.eflomal_links --data-path data/multi30k --split valid \\
        --out benchmarks/attention_study/multi30k/valid.links
    python -m nmt_study.eflomal_links --data-path data/multi30k --split test_2017_flickr \\
        --out benchmarks/attention_study/multi30k/test_2017.links
    python -m nmt_study --data-path data/multi30k \\
        --links benchmarks/attention_study/multi30k/test.links ...

Östling & Tiedemann 2016, Efficient Word Alignment with Markov Chain Monte
Carlo, PBML 106 (eflomal). The aligner is trained on the training corpus
plus the test set (an unsupervised aligner may see the sentences it
aligns; Koehn and Knowles 2017, Sec. 3.5, did the same with fast_align),
in both directions; the two directions are joined by grow-diag-final-and
(nmt_study.symmetrise). Words are the whitespace-separated words of the raw
sentences, lower-cased for the aligner (their positions unchanged), which
are the words nmt_study.alignment groups subwords into. The links are
silver, not gold: an aligner's guess. eflomal samples (Gibbs sampling,
no seed option), so two runs may differ in a few links.

Writes one line per test sentence, Pharaoh "i-j" (source word i, target
word j, from 0); --train-out also writes the training pairs' links (for
guided alignment, data.train_alignments).
"""

if __name__ == "__main__":      # first: stop signals are one line while torch loads
    from nmt import run_command

    run_command("nmt_study.eflomal_links", "; the links files are written whole or not at all")

import tempfile
import time
from pathlib import Path

from nmt import ALIGNMENTS, ArgumentParser, NmtError, check_replace, command, write_own, write_stdout
from nmt_study.alignment import read_links
from nmt_study.second_test import CONFIRM_SET, confirm_pairs
from nmt_study.symmetrise import grow_diag_final_and


def pharaoh(links: set) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def eflomal_links(pairs: list[tuple[str, str]], iterations_scale: float = 1.0) -> list[set[tuple[int, int]]]:
    """Align `pairs` (source, target sentences) with eflomal in both directions
    and symmetrise each pair's links with grow-diag-final-and."""
    try:
        import eflomal
    except ImportError:
        raise NmtError("eflomal is not installed: pip install -e '.[study]' (or pip install eflomal)") from None
    if not pairs:
        return []
    src = [" ".join(s.lower().split()) + "\n" for s, _ in pairs]
    tgt = [" ".join(t.lower().split()) + "\n" for _, t in pairs]
    if any(line == "\n" for line in src + tgt):
        raise NmtError("eflomal cannot align an empty sentence; drop empty pairs first")
    with tempfile.TemporaryDirectory(prefix="nmt-eflomal-") as folder:
        forward, reverse = Path(folder) / "fwd", Path(folder) / "rev"
        aligner = eflomal.Aligner(rel_iterations=iterations_scale)
        aligner.align(src, tgt, links_filename_fwd=str(forward), links_filename_rev=str(reverse), quiet=True)
        fwd = forward.read_text(encoding="utf-8").splitlines()
        rev = reverse.read_text(encoding="utf-8").splitlines()
    if len(fwd) != len(pairs) or len(rev) != len(pairs):
        raise NmtError(f"eflomal wrote {len(fwd)} and {len(rev)} lines for {len(pairs)} pairs")
    return [grow_diag_final_and(read_links(f), read_links(r), len(s.split()), len(t.split()))
            for f, r, (s, t) in zip(fwd, rev, pairs)]


@command
def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m nmt_study.eflomal_links",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data", choices=["multi30k", "toy"], default="multi30k", help="the study's data")
    parser.add_argument("--data-path", help="local Multi30k folder (data.path)")
    parser.add_argument("--out", required=True, type=Path, help="the split's links (Pharaoh)")
    parser.add_argument("--split", choices=["test", "valid", CONFIRM_SET], default="test",
                        help="the split aligned (with the training pairs) and written to --out; "
                        f"{CONFIRM_SET}: the confirmation set (nmt_study.second_test)")
    parser.add_argument("--train-out", type=Path, help="also write the training pairs' links here")
    parser.add_argument("--train-sentences", type=int, help="use the first N training pairs (default all)")
    parser.add_argument("--cache-dir", help="cache_dir (default data/)")
    parser.add_argument("--overwrite", action="store_true", help="replace outputs that nmt did not write")
    args = parser.parse_args(argv)
    for option, path in (("--out", args.out), ("--train-out", args.train_out)):
        if path is not None:             # before hours of aligning: a file of someone else's is said now
            check_replace(path, option, ALIGNMENTS, args.overwrite)
    try:
        from argparse import Namespace

        from nmt_study.__main__ import load_pairs

        study_args = Namespace(data=args.data, data_path=args.data_path, cache_dir=args.cache_dir,
                               test_sentences=None)
        if args.train_out and args.train_sentences:
            raise NmtError("--train-out writes one line per training pair: give it without --train-sentences")
        train, test = load_pairs(study_args, split="train")
        if args.split == "valid":
            test, _ = load_pairs(study_args, split="valid")
        elif args.split == CONFIRM_SET:
            test = confirm_pairs(study_args)
            if test is None:
                raise NmtError(f"--split {CONFIRM_SET}: --data-path must be a Multi30k folder holding "
                               f"{CONFIRM_SET}.de and .en (plain or .gz)")
        train = train[: args.train_sentences]
        # a pair with an empty side gets an empty line (no links) and is not given to eflomal
        kept = [k for k, (s, t) in enumerate(train) if s.strip() and t.strip()]
        started = time.perf_counter()
        links = eflomal_links([train[k] for k in kept] + test)
        write_own(args.out, "".join(pharaoh(x) + "\n" for x in links[len(kept):]).encode("utf-8"), ALIGNMENTS)
        if args.train_out:
            by_pair = dict(zip(kept, links))
            write_own(args.train_out, "".join(pharaoh(by_pair.get(k, set())) + "\n"
                                              for k in range(len(train))).encode("utf-8"), ALIGNMENTS)
    except OSError as error:
        raise NmtError(str(error)) from None
    write_stdout(f"nmt_study.eflomal_links: {len(kept)} training + {len(test)} {args.split} pairs aligned in "
                 f"{time.perf_counter() - started:.0f} s; {args.split} links in {args.out}\n", keep_going=True)
    return 0

