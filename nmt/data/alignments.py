"""Word alignments for guided alignment training, in the Pharaoh format.

    0-0 1-2 2-1          one line per training pair: links "i-j", source
                         word i aligned to target word j, 0-based (what
                         eflomal, fast_align and GIZA++ tools write)

    python -m nmt.data.alignments toy toy.align           # the toy task's true links
    python -m nmt.train data=toy data.train_alignments=toy.align \\
        trainer.guided_alignment.weight=1.0 ...

The file goes line by line with the training pairs as the corpus gives them
(before nmt drops empty or too-long pairs; their lines are dropped with
them). Words are whitespace-separated; links are mapped to the subwords
the model sees: every subword of target word j is aligned to every subword
of the source words linked to j, with weight 1 / (number of those source
subwords), so each linked row of the guide G sums to 1. A target word
without a link, and the final eos, get an all-zero row (no loss).

Every reading error (line count, a malformed link, an index beyond the
sentence) is one NmtError naming the file and line.
"""

if __name__ == "__main__":      # first: stop signals are one line while torch loads
    from nmt.base.cli import run_command

    run_command("nmt.data.alignments", "; the output file is written whole or not at all")

from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from nmt.base import own_files
from nmt.base.cli import command
from nmt.base.cli_checks import ArgumentParser, check_output, write_stdout
from nmt.base.config_files import CONFIGS
from nmt.data.examples import EncodedPairs, Pairs
from nmt.data.readers import read_lines
from nmt.data.toy import make_toy_corpus, toy_alignment
from nmt.base.errors import NmtError
from nmt.base.run_files import check_not_run_file

Links = list[tuple[int, int]]          # (source word, target word)
SubwordGuide = list[tuple[int, int, float]]   # (target subword, source subword, weight)


def parse_links(line: str, where: str) -> Links:
    """'0-0 2-1' -> [(0, 0), (2, 1)]; NmtError naming `where` on a malformed link."""
    links = []
    for token in line.split():
        i, dash, j = token.partition("-")
        if not dash or not i.isdigit() or not j.isdigit():
            raise NmtError(f"{where}: {token!r} is not a link 'i-j' (source word - target word, "
                           "0-based, e.g. 0-1)")
        links.append((int(i), int(j)))
    return links


def read_alignment_file(path) -> list[str]:
    """The lines of an alignment file: UTF-8, plain or .gz (nmt.data.readers.read_lines)."""
    if not Path(path).exists():
        raise NmtError(f"data.train_alignments={path}: no such file (write one with "
                       "python -m nmt.data.alignments toy FILE, or an aligner such as eflomal)")
    return read_lines(path)


def read_alignments(path, pairs: list[tuple[str, str]]) -> list[Links]:
    """One list of links per pair, checked against the pairs' word counts."""
    lines = read_alignment_file(path)
    if len(lines) != len(pairs):
        raise NmtError(f"{path} has {len(lines)} lines but the training data has {len(pairs)} pairs; "
                       "the alignment file must have one line per training pair, in order")
    result = []
    for number, (line, (src, tgt)) in enumerate(zip(lines, pairs), 1):
        where = f"{path} line {number}"
        links = parse_links(line, where)
        n_src, n_tgt = len(src.split()), len(tgt.split())
        for i, j in links:
            if i >= n_src or j >= n_tgt:
                raise NmtError(f"{where}: link {i}-{j} is out of range; the pair has {n_src} source "
                               f"and {n_tgt} target words (indices are 0-based)")
        result.append(links)
    return result


def word_of_pieces(pieces: list[str]) -> list[int]:
    """The word index of each sentencepiece piece: a piece starting with
    '\u2581' (the meta space) starts a new word."""
    words, index = [], -1
    for piece in pieces:
        if piece.startswith("\u2581") or index < 0:
            index += 1
        words.append(index)
    return words


def subword_guide(links: Links, src_words: list[int], tgt_words: list[int]) -> SubwordGuide:
    """Word links -> (target subword, source subword, weight) entries of G.

    src_words / tgt_words: the word index of each subword (word_of_pieces).
    Each subword of target word j gets 1/n on each of the n subwords of the
    source words linked to j; a target word with no link gets nothing.
    """
    linked: dict[int, set[int]] = {}
    for i, j in links:
        linked.setdefault(j, set()).add(i)
    guide = []
    for t, j in enumerate(tgt_words):
        sources = [s for s, i in enumerate(src_words) if i in linked.get(j, ())]
        guide.extend((t, s, 1.0 / len(sources)) for s in sources)
    return guide


def guide_matrix(guide: SubwordGuide, T: int, S: int) -> np.ndarray:
    """Entries -> dense G (T, S) float32."""
    matrix = np.zeros((T, S), dtype=np.float32)
    for t, s, w in guide:
        matrix[t, s] = w
    return matrix


def train_guides(path, pairs: Pairs, encoded: EncodedPairs, tokenizer) -> list[SubwordGuide]:
    """The subword guide of every example in `encoded` (encode_train of `pairs`),
    in its order: the lines of pairs it dropped are dropped with them."""
    links_of = read_alignments(path, pairs)
    guides = []
    for index, (src_ids, tgt_ids) in zip(encoded.kept, encoded.examples):
        number, pair, links = index + 1, pairs[index], links_of[index]
        src_words = word_of_pieces(tokenizer.src_pieces(src_ids))
        tgt_words = word_of_pieces(tokenizer.tgt_pieces(tgt_ids))
        for side, words, text in (("source", src_words, pair[0]), ("target", tgt_words, pair[1])):
            if words[-1] + 1 != len(text.split()):
                raise NmtError(f"{path} line {number}: the {side} has {len(text.split())} words but "
                               f"sentencepiece reads {words[-1] + 1}; guided alignment needs "
                               "whitespace-separated words")
        guides.append(subword_guide(links, src_words, tgt_words))
    return guides


def toy_pharaoh(pairs: list[tuple[str, str]]) -> list[str]:
    """The toy task's true word alignment (nmt.data.toy.toy_alignment) of
    each pair as a Pharaoh line 'i-j ...' (source i, target j)."""
    return [" ".join(f"{i}-{j}" for j, i in enumerate(toy_alignment(src, tgt))) for src, tgt in pairs]


def write_toy_alignments(output, n_train: int, n_valid: int, n_test: int, seed: int) -> int:
    """Write the toy corpus's training links (one Pharaoh line per pair) to
    `output`, whole or not at all; returns the number of lines."""
    lines = toy_pharaoh(make_toy_corpus(n_train, n_valid, n_test, seed).train)
    try:
        own_files.write(output, "".join(line + "\n" for line in lines).encode("utf-8"), own_files.ALIGNMENTS)
    except OSError as error:
        raise NmtError(f"cannot write {output}: {error.strerror or error}") from None
    return len(lines)


def toy_defaults() -> dict:
    """The packaged configs' data/toy.yaml: the sizes and seed of data=toy."""
    return dict(OmegaConf.load(CONFIGS / "data" / "toy.yaml"))


@command
def main(argv=None) -> int:
    defaults = toy_defaults()
    parser = ArgumentParser(
        prog="python -m nmt.data.alignments",
        description="Write the toy task's true word alignments of its training pairs as a Pharaoh "
                    "file, for data.train_alignments (the sizes and seed must be data=toy's).")
    parser.add_argument("task", choices=["toy"], help="the task whose alignments are known: toy")
    parser.add_argument("output", help="file to write, one line per training pair")
    for key in ("n_train", "n_valid", "n_test", "seed"):
        parser.add_argument(f"--{key.replace('_', '-')}", type=int, default=int(defaults[key]),
                            help=f"data.{key} (default {defaults[key]}, as configs/data/toy.yaml)")
    parser.add_argument("--overwrite", action="store_true", help="replace an output that nmt did not write")
    args = parser.parse_args(argv)
    check_not_run_file("output", args.output)
    check_output(args.output, "output")
    own_files.check_replace(args.output, "output", own_files.ALIGNMENTS, args.overwrite)
    n_lines = write_toy_alignments(args.output, args.n_train, args.n_valid, args.n_test, args.seed)
    write_stdout(f"wrote {n_lines} lines to {args.output}\n")
    return 0
