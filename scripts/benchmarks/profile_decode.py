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
  search     the beam and greedy search as they were at --before (git show of nmt/core/'s
             beam_search.py and greedy_search.py, or nmt/decoding/beam.py and greedy.py) against
             today's, swapped in for the Translator's searches (beam --beam; greedy when 1)
  cache      the core's decoder step (cat, then index_select) against
             nmt.speedups.decode_cache.use_kept_cache (the cache written in place)
  cache_step the decoder alone: --steps steps of step() and reorder_state() at --batch
             sentences x --beam rows (the reorder a fixed shuffle within each sentence), the
             core's step against use_kept_cache's, alternating; logits compared bit for bit
  heap       whole `nmt.translate` processes (beam --beam, batch --batch, the --sentences):
             glibc's default heap against nmt.speedups.scratch.keep_freed_heap set first;
             wall seconds and minor page faults, alternating, translations compared
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
from scripts.benchmarks.module_at import module_at
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
    parser.add_argument("--before", default="HEAD", help="the git revision of the search lever's A side")
    parser.add_argument("--steps", type=int, default=40, help="decoder steps of the cache_step lever")
    parser.add_argument("what", nargs="+", help="profile, or ab followed by levers")
    return parser.parse_args(argv)


def same(a, b) -> bool:
    """Two translate() results bit for bit: texts, n-best and scores, attention."""
    return all(x.text == y.text and x.nbest == y.nbest and x.score == y.score
               and np.array_equal(x.attention, y.attention) for x, y in zip(a, b))


class SearchAt:
    """A context that swaps the Translator's beam and greedy search for these two."""

    def __init__(self, beam, greedy):
        self.searches = (beam, greedy)

    def __call__(self):
        return self

    def __enter__(self):
        import nmt.translator as module

        self.kept = (module.beam_search, module.greedy_search)
        module.beam_search, module.greedy_search = self.searches

    def __exit__(self, *exc):
        import nmt.translator as module

        module.beam_search, module.greedy_search = self.kept


def variants(lever: str, checkpoint: str, before: str = "HEAD"):
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
    if lever == "cache":         # from_checkpoint keeps the cache unless kernels="plain": A is the core's step
        core = Translator.from_checkpoint(checkpoint, device="cpu", kernels="plain")
        return {"core": (core, nullcontext), "kept": (other, nullcontext)}
    if lever == "search":
        from nmt.core.beam_search import beam_search
        from nmt.core.greedy_search import greedy_search

        old = SearchAt(  # the core's search at --before, or the older nmt/decoding modules
            module_at("profile_decode", before, "nmt/core/beam_search.py", "nmt/decoding/beam.py").beam_search,
            module_at("profile_decode", before, "nmt/core/greedy_search.py", "nmt/decoding/greedy.py").greedy_search,
        )
        return {before: (plain, old), "now": (plain, SearchAt(beam_search, greedy_search))}
    if lever == "grad_mode":
        return {"no_grad": (plain, torch.no_grad), "inference_mode": (plain, torch.inference_mode)}
    raise SystemExit(f"profile_decode: unknown lever {lever}")


def ab(lever: str, args, sentences) -> None:
    runs = variants(lever, args.checkpoint, args.before)
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


KEPT_HEAP = ("import runpy, sys; from nmt.speedups.scratch import keep_freed_heap; assert keep_freed_heap(); "
             "sys.argv[0] = 'nmt.translate'; runpy.run_module('nmt.translate', run_name='__main__', alter_sys=True)")


def heap_ab(args, sentences) -> None:
    """Whole nmt.translate processes with glibc's default heap (A) and with keep_freed_heap (B)."""
    import os
    import resource
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="heap_ab_") as scratch:      # removed when done
        folder = Path(scratch)
        source = folder / "in.txt"
        source.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        options = ["--checkpoint", args.checkpoint, "--beam-size", str(args.beam), "--batch-size", str(args.batch),
                   "--input", str(source), "--overwrite"]
        heads = {"default": [sys.executable, "-m", "nmt.translate"], "kept_heap": [sys.executable, "-c", KEPT_HEAP]}
        times, faults, outputs = {n: [] for n in heads}, {n: [] for n in heads}, {}
        for rnd in range(args.rounds):
            for name in heads if rnd % 2 == 0 else list(heads)[::-1]:
                out = folder / f"{name}.txt"
                before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
                start = time.perf_counter()
                subprocess.run([*heads[name], *options, "--output", str(out)], check=True, env=dict(os.environ))
                times[name].append(time.perf_counter() - start)
                faults[name].append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before)
                outputs[name] = out.read_text(encoding="utf-8")
    ratio = statistics.median(b / a for a, b in zip(times["default"], times["kept_heap"]))
    print(f"heap: kept_heap / default = {ratio:.3f} (median of {args.rounds} processes each; default "
          f"{[round(t, 2) for t in times['default']]} s, {faults['default']} faults; kept_heap "
          f"{[round(t, 2) for t in times['kept_heap']]} s, {faults['kept_heap']} faults), "
          f"translations equal: {outputs['default'] == outputs['kept_heap']}", flush=True)


def cache_step_ab(args, sentences) -> None:
    """The decoder's step and reorder alone, the core's against the kept cache's."""
    from nmt.core.transformer_decoder import TransformerDecoder, TransformerDecoderLayer
    from nmt.speedups.decode_cache import KeptCacheDecoder, KeptCacheLayer
    from nmt.translator import Translator

    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    model, W = translator.model, args.beam
    src, _, _ = translator._encode(sentences[: args.batch])
    expand = torch.arange(src.size(0)).repeat_interleave(W)                     # (B*W,)
    shuffle = (expand * W + torch.randperm(W).repeat(src.size(0)))              # within each sentence
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, translator.tokenizer.tgt_vocab_size, (args.steps, expand.numel()), generator=generator)

    def become(kind):
        model.decoder.__class__, layer_kind = kind
        for layer in model.decoder.layers:
            layer.__class__ = layer_kind

    def run(kind):
        become(kind)
        with torch.inference_mode():
            memory, state = model.start(src)
            memory, state = memory.index_select(expand), model.decoder.reorder_state(state, expand)
            logits = []
            for t in range(args.steps):
                out, state, _ = model.decoder.step(tokens[t], state, memory)
                logits.append(out[:, :4].clone())
                state = model.decoder.reorder_state(state, shuffle)
        return torch.stack(logits)

    kinds = {"core": (TransformerDecoder, TransformerDecoderLayer), "kept": (KeptCacheDecoder, KeptCacheLayer)}
    times, outputs = {n: [] for n in kinds}, {}
    run(kinds["core"])
    for rnd in range(args.rounds):
        for name in kinds if rnd % 2 == 0 else list(kinds)[::-1]:
            start = time.perf_counter()
            outputs[name] = run(kinds[name])
            times[name].append(time.perf_counter() - start)
    become(kinds["kept"])                           # as from_checkpoint gave it
    ratios = [b / a for a, b in zip(times["core"], times["kept"])]
    print(f"cache_step ({expand.numel()} rows, {args.steps} steps): kept / core = {statistics.median(ratios):.3f} "
          f"(median of {args.rounds}; per round {[round(r, 3) for r in ratios]}), "
          f"logits bit for bit: {torch.equal(outputs['core'], outputs['kept'])}", flush=True)


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
            if lever in ("validation", "heap", "cache_step"):
                {"validation": lambda: validation_ab(args), "heap": lambda: heap_ab(args, sentences),
                 "cache_step": lambda: cache_step_ab(args, sentences)}[lever]()
            else:
                ab(lever, args, sentences)
    else:
        raise SystemExit("profile_decode: say profile, or ab LEVER...")


if __name__ == "__main__":
    main()
