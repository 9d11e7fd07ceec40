"""Where nmt's decoding spends its time, and same-process A/B of its levers, one thread.

    OMP_NUM_THREADS=1 taskset -c 0 python -m scripts.benchmarks.profile_decode --checkpoint best.pt profile
    OMP_NUM_THREADS=1 taskset -c 0 python -m scripts.benchmarks.profile_decode --checkpoint best.pt ab matmul grad_mode --rounds 5

profile: torch.profiler over Translator.translate (beam --beam, batch --batch)
on the first --sentences sentences of test_2016_flickr, the ops by self CPU
time (top --top), after one untimed warm-up.

ab: each lever's variants translate the same sentences in one process,
alternating A, B, B, A, ... over --rounds rounds, so other work on the core
slows both alike; printed is the median over rounds of time(B) / time(A)
(below 1: B is faster) and whether B's translations (text, n-best, scores,
attention) are A's bit for bit.

  kernels    Translator(kernels="torch") against kernels="fast" (both levers below)
  matmul     torch's products against oneDNN's (nmt.speedups.decode_kernels.use_onednn) alone
  attention  SDPA in the decoder step against the attention written out
             (nmt.speedups.decode_kernels.use_explicit_attention) alone
  grad_mode  translate() under torch.no_grad against torch.inference_mode
  validation one whole validation as the Trainer runs it (scripts.benchmarks.bench_validation's
             ValidationSet.score, the checkpoint's own validation set, greedy unless
             --beam), translate() under torch.no_grad (before) against inference_mode (now)
"""

import argparse
import statistics
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch

from scripts.benchmarks.bench_decode import read_lines  # test_2016_flickr, plain or .gz
from scripts.peers.compare_joeynmt import MULTI30K  # the shared data beside the checkout


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", default=str(MULTI30K))
    parser.add_argument("--sentences", type=int, default=128)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("what", nargs="+", help="profile, or ab followed by levers")
    return parser.parse_args(argv)


def same(a, b) -> bool:
    """Two translate() results bit for bit: texts, n-best and scores, attention."""
    return all(x.text == y.text and x.nbest == y.nbest and x.score == y.score
               and np.array_equal(x.attention, y.attention) for x, y in zip(a, b))


def variants(lever: str, checkpoint: str):
    """lever -> {name: (translator, context factory)}, A first."""
    from nmt.speedups.decode_kernels import use_explicit_attention, use_onednn
    from nmt.translator import Translator

    plain = Translator.from_checkpoint(checkpoint, device="cpu")
    other = Translator.from_checkpoint(checkpoint, device="cpu")
    if lever == "kernels":
        return {"torch": (plain, nullcontext),
                "fast": (Translator.from_checkpoint(checkpoint, device="cpu", kernels="fast"), nullcontext)}
    if lever in ("matmul", "attention"):
        (use_onednn if lever == "matmul" else use_explicit_attention)(other.model)
        return {"torch": (plain, nullcontext), "onednn" if lever == "matmul" else "explicit": (other, nullcontext)}
    if lever == "grad_mode":
        return {"no_grad": (plain, torch.no_grad), "inference_mode": (plain, torch.inference_mode)}
    raise SystemExit(f"profile_decode: unknown lever {lever}")


def ab(lever: str, args, sentences) -> None:
    runs = variants(lever, args.checkpoint)
    names = list(runs)
    times = {name: [] for name in names}
    outputs = {}
    for name, (translator, context) in runs.items():   # warm-up
        with context():
            translator.translate(sentences[:8], beam_size=args.beam, batch_size=args.batch)
    for rnd in range(args.rounds):
        for name in (names if rnd % 2 == 0 else names[::-1]):
            translator, context = runs[name]
            start = time.perf_counter()
            with context():
                outputs[name] = translator.translate(sentences, beam_size=args.beam, batch_size=args.batch)
            times[name].append(time.perf_counter() - start)
    a = names[0]
    for b in names[1:]:
        ratio = statistics.median(tb / ta for ta, tb in zip(times[a], times[b]))
        print(f"{lever}: {b} / {a} = {ratio:.3f} (median of {args.rounds}; {a} "
              f"{statistics.median(times[a]):.2f} s, {b} {statistics.median(times[b]):.2f} s), "
              f"outputs bit for bit: {same(outputs[a], outputs[b])}", flush=True)


def validation_ab(args) -> None:
    """ValidationSet.score with translate() under no_grad, then inference_mode, alternating."""
    from scripts.benchmarks.bench_validation import validation_of

    from nmt.translator import Translator

    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    _, validation = validation_of(Path(args.checkpoint), str(MULTI30K), translator)
    validation.beam_size = args.beam
    now = Translator.translate
    versions = {"no_grad": torch.no_grad()(now.__wrapped__), "inference_mode": now}
    times, bleu = {name: [] for name in versions}, {}
    for rnd in range(args.rounds):
        for name in (list(versions) if rnd % 2 == 0 else list(versions)[::-1]):
            Translator.translate = versions[name]
            start = time.perf_counter()
            bleu[name] = validation.score(translator.model, translator, translator.device).bleu
            times[name].append(time.perf_counter() - start)
    Translator.translate = now
    ratio = statistics.median(b / a for a, b in zip(times["no_grad"], times["inference_mode"]))
    print(f"validation ({len(validation.pairs)} sentences, beam {args.beam}): inference_mode / no_grad = "
          f"{ratio:.3f} (median of {args.rounds}; no_grad {[round(t, 2) for t in times['no_grad']]} s, "
          f"inference_mode {[round(t, 2) for t in times['inference_mode']]} s); BLEU {bleu}", flush=True)


def profile(args, sentences) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from nmt.translator import Translator

    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    translator.translate(sentences[:8], beam_size=args.beam, batch_size=args.batch)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        translator.translate(sentences, beam_size=args.beam, batch_size=args.batch)
        seconds = time.perf_counter() - start
    print(f"beam {args.beam}, batch {args.batch}, {len(sentences)} sentences: {seconds:.2f} s under the profiler")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    sentences = read_lines(Path(args.data), "test_2016_flickr.de")[: args.sentences]
    if args.what[0] == "profile":
        profile(args, sentences)
    elif args.what[0] == "ab":
        for lever in args.what[1:]:
            validation_ab(args) if lever == "validation" else ab(lever, args, sentences)
    else:
        raise SystemExit("profile_decode: say profile, or ab LEVER...")


if __name__ == "__main__":
    main()
