"""What the study reads before training or reporting: the data's pairs, the
reference word links of the test and validation sets, the training links
of the guided runs, and the Hydra overrides that name the data."""

import os
import subprocess
import sys
from pathlib import Path

from nmt import CONFIGS, NmtError, refuse_special
from nmt_study.configs import PROFILES


def data_overrides(args) -> list[str]:
    if args.data == "toy":
        return ["data=toy"]
    return ["data=multi30k"] + ([f"data.path={Path(args.data_path).resolve()}"] if args.data_path else [])


def load_pairs(args, split: str = "valid"):
    """(validation pairs, or training pairs with split="train"; test pairs) of
    the study's data, raw text; validation and test without empty sources."""
    from hydra import compose, initialize_config_dir

    from nmt import load_corpus

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("config", overrides=data_overrides(args))
    corpus = load_corpus(cfg.data, Path(args.cache_dir or cfg.cache_dir))
    if split == "train":
        valid = list(corpus.train)
    else:
        valid = [(s, t) for s, t in corpus.valid if s.strip()]
    test = [(s, t) for s, t in corpus.test if s.strip()]
    if args.test_sentences:
        test = test[: args.test_sentences]
    if not test:
        raise NmtError(f"{corpus.name} has no test set; the study reports test BLEU")
    return valid, test


def reference_links(args, test, path: str | None = None, option: str = "--links",
                    split: str = "test") -> tuple[list | None, str | None]:
    """Word links (source word, target word) per pair of `test`, and what they
    are: the toy task's true links, or the file `path` (default --links)."""
    from nmt_study.alignment import read_links, toy_links

    if args.data == "toy":
        return [toy_links(s, t) for s, t in test], "the toy task's true alignment (nmt.data.toy.toy_alignment)"
    path = args.links if path is None and option == "--links" else path
    if not path:
        return None, None
    refuse_special(path, option, "give a text file of word links")     # a FIFO would hang
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        links = [read_links(line) for line in lines]
    except (OSError, ValueError) as error:
        raise NmtError(f"{option} {path}: {error}") from None
    if len(links) < len(test):
        raise NmtError(f"{option} {path}: {len(links)} lines for {len(test)} {split} sentences")
    return links[: len(test)], f"silver links from {Path(path).name} (a statistical aligner, not gold)"


def valid_references(args, valid) -> tuple[list, list] | None:
    """(validation pairs, their word links) to choose a layer and head on, or None."""
    links, _ = reference_links(args, valid, args.valid_links, "--valid-links", "validation")
    return (valid, links) if links is not None else None


def train_alignments(args) -> Path:
    """The word links of the training pairs, for the guided runs: --train-links,
    or on the toy task its true links (python -m nmt.data.alignments toy FILE,
    at data=toy's sizes and seed)."""
    if args.train_links:
        path = Path(args.train_links).resolve()
        if not path.is_file():
            raise NmtError(f"--train-links {args.train_links}: no such file")
        return path
    if args.data != "toy":
        raise NmtError("the guided runs need word links of the training pairs: give --train-links FILE "
                       "(python -m nmt_study.eflomal_links --train-out FILE), or leave them out with "
                       "--only and the other families")
    path = (Path(args.runs_dir) / "toy_train.align").resolve()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_toy_links(path)
    return path


def write_toy_links(path: Path) -> None:
    """The toy task's true training links written to `path` as a user writes them:
    `python -m nmt.data.alignments toy PATH` (data=toy's sizes and seed), run
    with the study's own nmt; its error line, if any, is the study's."""
    from nmt_study.runner import code_environment

    done = subprocess.run([sys.executable, "-P", "-m", "nmt.data.alignments", "toy", str(path)],
                          env=code_environment(dict(os.environ)), capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise NmtError(f"python -m nmt.data.alignments toy {path}: {lines[-1].removeprefix('nmt: error: ')}")


def describe(args) -> str:
    if args.data == "toy":
        return "the toy task (nmt.data.toy): spelled-out dates to digits, reordered; 8,000 training pairs"
    sizes = PROFILES[args.data]
    return (f"Multi30k task 1 de→en (29,000 training pairs), sentencepiece unigram {sizes.vocab_size:,} "
            f"joint vocabulary, batches of {sizes.batch_tokens:,} padded tokens")
