"""python -m nmt.average CKPT... --output FILE: average model weights.

    python -m nmt.average RUN/checkpoints/step_3000.pt RUN/checkpoints/step_3300.pt --output avg.pt
    python -m nmt.average --run RUN --best 3 --output avg.pt    # the 3 best-validated step_N.pt
    python -m nmt.average --run RUN --last 3 --output avg.pt    # the 3 newest step_N.pt

Checkpoint averaging (as in Vaswani et al. 2017, Sec. 6.1: the last few
checkpoints of a run, averaged element-wise) usually adds a little BLEU for
free:

    theta_avg = (1/N) sum_i theta_i        for every floating-point tensor

The checkpoints must be of one model: the same sentencepiece models (else the
same id means another subword in each) and the same model config (else the
same tensor means another thing). Anything else is refused in one line that
names both files, before anything is written; so are weights that do not fit their
own stored config, as nmt.translate refuses them. The output keeps the config and
tokenizer of the first checkpoint and drops optimiser state, so it is for
translation only. The trainer's `trainer.average_last=N` and
`trainer.average_best=N` use the same function at the end of a run.

--run picks from the step_N.pt files a run kept: --best N ranks them by the
scores of RUN/metrics.jsonl in the run's trainer.metric (from summary.json or
.hydra/config.yaml; --metric to name it), higher BLEU/chrF or lower loss
first, the later step first among equals.
"""


from pathlib import Path

from nmt.base.cli import command
from nmt.base.cli_checks import (ArgumentParser, check_checkpoint_exists, check_not_input, check_output, positive_int,
                            write_stdout)
from nmt.base.own_files import AVERAGED, check_replace
from nmt.base.run_files import check_not_run_file
from nmt.store.metrics_log import METRIC_SIGN


@command
def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m nmt.average", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="*", type=Path,
                        help="checkpoints of one model (config and vocabulary) to average, "
                             "e.g. RUN/checkpoints/step_*.pt")
    parser.add_argument("--output", required=True, type=Path,
                        help="the averaged checkpoint to write (atomically; never one of the inputs)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write --output even over a file that is not a checkpoint nmt.average wrote "
                             "(a run's own last.pt, best.pt, ..., or any other file)")
    parser.add_argument("--run", type=Path, help="a run folder: average its step_N.pt (with --best or --last)")
    pick = parser.add_mutually_exclusive_group()
    pick.add_argument("--best", type=positive_int, metavar="N", help="with --run: the N best-validated")
    pick.add_argument("--last", type=positive_int, metavar="N", help="with --run: the N newest")
    parser.add_argument("--metric", choices=sorted(METRIC_SIGN),
                        help="with --best: rank by this (default: the run's trainer.metric)")
    args = parser.parse_args(argv)
    if args.run is None and (args.best or args.last or args.metric):
        parser.error("--best, --last and --metric pick from a run: give --run RUN")
    if args.run is not None and (args.checkpoints or not (args.best or args.last)):
        parser.error("--run takes --best N or --last N, and no checkpoint files beside it")
    if args.run is None and not args.checkpoints:
        parser.error("give the checkpoints to average, or --run RUN with --best N or --last N")
    check_output(args.output)
    if not args.overwrite:               # a run's last.pt replaced by bare weights cannot continue
        check_not_run_file("--output", args.output, allow="--overwrite")
    check_replace(args.output, "--output", AVERAGED, args.overwrite)
    for path in args.checkpoints:
        check_checkpoint_exists(path)
    # torch loads only once the arguments and paths are known to be good: a mistake answers in a blink
    from nmt.store.averaging import average_checkpoints, run_checkpoints
    from nmt.store.checkpoints import save_checkpoint, step_of

    if args.run is not None:
        args.checkpoints = run_checkpoints(args.run, args.best, args.last, args.metric)
    check_not_input("--output", args.output, [("--checkpoint", p) for p in args.checkpoints])
    averaged = average_checkpoints(args.checkpoints)
    check_fits(averaged, args.checkpoints[0])
    path = save_checkpoint(averaged, args.output,
                           advice="free disk space or choose another --output; nothing was written", purpose=AVERAGED)
    steps = ", ".join(str(step_of(p)) for p in args.checkpoints) if args.run is not None else ""
    write_stdout(f"averaged {len(args.checkpoints)} checkpoints{f' (steps {steps})' if steps else ''} "
                 f"into {path}\n")
    return 0


def check_fits(averaged: dict, first) -> None:
    """The averaged weights loaded into the model their stored config describes, as
    nmt.translate checks a checkpoint (nmt.translator.checked_model): weights that do not
    fit it are one line naming `first`, before anything is written. The average has the
    first checkpoint's config and vocabulary, and every checkpoint its tensor names and
    shapes (nmt.store.averaging.check_same_model), so this checks all of them."""
    from nmt.data.tokenizer import Tokenizer
    from nmt.translator import checked_model

    checked_model(averaged, Tokenizer.from_bytes(averaged["tokenizer"]), first)


def cli() -> None:
    """The `nmt-average` console command: what `python -m nmt.average` runs."""
    from nmt.commands import run

    run("average")
