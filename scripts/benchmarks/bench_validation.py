"""A validation's wall time, as the Trainer runs it, with nmt's beam search against the beam
search of an earlier commit, in one process.

    OMP_NUM_THREADS=1 taskset -c 1 python -m scripts.benchmarks.bench_validation \\
        --checkpoint RUN/checkpoints/best.pt --data-path ../shared/data/multi30k \\
        --before f454567^ --beams 1,5 --rounds 3 --out benchmarks/validation_time.json

Training validates with the same search that `nmt.translate` uses, so a faster search makes
every validation faster (issue 43). The checkpoint's own config says what one of its
validations is: the data (read from --data-path), trainer.val_max_sentences and
data.batch_tokens. `nmt.training.build.validation_set` builds the validation set from them
with the checkpoint's tokenizer, and `ValidationSet.score` is timed whole: the
teacher-forced loss, the search, and sacreBLEU.

`--before REV` loads the beam search as it was at REV (`git show` of nmt/core/beam_search.py,
or nmt/decoding/beam.py before the layout move) and swaps it in for the Translator's beam
search on alternate rounds (A, B, B, A, ...), so a busy machine slows both alike. The other
modules are today's, so REV must differ from today only in that file's own code. Both versions must give the same hypotheses, or the script stops.
Greedy (beam 1) never calls beam search: its rows are the control.
"""

import argparse
import json
import shlex
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from scripts.benchmarks.module_at import module_at
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a .pt written by nmt.train")
    parser.add_argument("--data-path", help="the folder of the checkpoint's data (data.path), if it moved")
    parser.add_argument("--before", required=True, help="a git revision whose beam search is compared")
    parser.add_argument("--beams", default="1,5", help="beam sizes, comma-separated (default: 1,5)")
    parser.add_argument("--rounds", type=int, default=3, help="validations per version and beam (default: 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args(argv)
    args.beams = [int(b) for b in args.beams.split(",")]
    if args.rounds < 1 or any(b < 1 for b in args.beams):
        parser.error("--rounds and every --beams value must be at least 1")
    return args


# Where the beam search is written: the reference core since the layout move, nmt/decoding/beam.py before it.
SEARCH_FILES = ("nmt/core/beam_search.py", "nmt/decoding/beam.py")


def beam_search_at(revision: str):
    """The beam search as it was at `revision` (the first of SEARCH_FILES that it has),
    imported as a module of its own."""
    return module_at("bench_validation", revision, *SEARCH_FILES).beam_search


def validation_of(checkpoint: Path, data_path: str | None, translator):
    """The validation set of the run that wrote `checkpoint`, with its own tokenizer; a data or
    trainer key added to nmt since that run takes today's default."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from nmt.base.config_files import CONFIGS
    from nmt.config_schema.data import check_data_config
    from nmt.data.corpora import load_corpus
    from nmt.data.examples import drop_empty
    from nmt.store.checkpoints import load_checkpoint
    from nmt.training.build import validation_set

    stored = OmegaConf.create(load_checkpoint(checkpoint, parts=("model",))["config"])
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):  # today's defaults under it:
        base = compose("config", overrides=[f"data={stored.data.kind}"])  # a key added since the run
    cfg = OmegaConf.create({part: OmegaConf.merge(base[part], stored[part]) for part in ("data", "trainer")})
    if data_path:
        cfg.data.path = data_path
    corpus = load_corpus(check_data_config(cfg.data), None)
    valid, _ = drop_empty(corpus.valid, source_only=True)
    return cfg, validation_set(cfg, SimpleNamespace(valid=valid, tokenizer=translator.tokenizer))


def time_versions(validation, translator, versions: dict, beam: int, rounds: int) -> dict:
    """Each version's validation times over `rounds` alternating rounds, and its hypotheses."""
    import nmt.translator as translator_module

    validation.beam_size = beam
    names = list(versions)
    seconds, hypotheses, bleu = {n: [] for n in names}, {}, {}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            translator_module.beam_search = versions[name]
            started = time.perf_counter()
            result = validation.score(translator.model, translator, translator.device)
            seconds[name].append(round(time.perf_counter() - started, 3))
            hypotheses.setdefault(name, result.hypotheses)
            bleu[name] = round(result.bleu, 2)
    translator_module.beam_search = versions["now"]
    if any(hypotheses[n] != hypotheses["now"] for n in names):
        sys.exit(f"bench_validation: at beam {beam} the versions' hypotheses differ: not the same search")
    medians = {n: statistics.median(seconds[n]) for n in names}
    return {
        "beam": beam,
        "seconds": seconds,
        "median_seconds": medians,
        "bleu": bleu["now"],
        "before_over_now": round(medians["before"] / medians["now"], 3),
    }


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "bench_validation") if args.out else None
    torch.set_num_threads(args.threads)
    from nmt.base.provenance import git_commit
    from nmt.translator import Translator, beam_search

    command = "python -m scripts.benchmarks.bench_validation " + shlex.join(sys.argv[1:] if argv is None else argv)
    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    translator.model.eval()
    cfg, validation = validation_of(Path(args.checkpoint), args.data_path, translator)
    versions = {"now": beam_search, "before": beam_search_at(args.before)}
    rows = []
    for beam in args.beams:
        rows.append(time_versions(validation, translator, versions, beam, args.rounds))
        row = rows[-1]
        print(
            f"beam {beam}: {len(validation.pairs)} sentences, now {row['median_seconds']['now']:.2f} s, "
            f"before ({args.before}) {row['median_seconds']['before']:.2f} s: before / now "
            f"{row['before_over_now']:.3f} (median of {args.rounds}); BLEU {row['bleu']}",
            flush=True,
        )
    figures = {
        "command": command,
        "commit": git_commit(),
        "before": args.before,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "checkpoint": args.checkpoint,
        "valid_sentences": len(validation.pairs),
        "batch_tokens": int(cfg.data.batch_tokens),
        "rows": rows,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
        print(f"(figures in {args.out})")
    return figures


if __name__ == "__main__":
    from nmt.base.errors import NmtError

    try:
        main()
    except (NmtError, OSError) as error:  # a broken checkpoint, data not where it says: one line
        sys.exit(f"bench_validation: {error}")
