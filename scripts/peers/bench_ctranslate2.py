"""nmt-translate on a .pt against the same model exported to CTranslate2, whole
process from the shell: the decode ratio table of issue 61.

    OMP_NUM_THREADS=1 taskset -c 0 python -m scripts.peers.bench_ctranslate2 --checkpoint best.pt
    OMP_NUM_THREADS=1 taskset -c 0 python -m scripts.peers.bench_ctranslate2 --checkpoint best.pt --quick

It trains nothing. The checkpoint is exported (nmt.export: float32 and int8,
into a temporary folder, or --exports DIR to keep them), then every cell
(search x batch size) runs `python -m nmt.translate` once per engine per
round, the engines alternating within a round and their order turned round
every other round, so each ratio compares processes seconds apart on the
same core. A row's time is the whole process: Python start-up, imports,
loading the model, reading the input, decoding, writing the output, so a
.pt pays torch's import and CTranslate2 does not. Each child inherits this
process's cores (taskset) and OMP_NUM_THREADS (1 unless set). The table
gives each engine's median seconds and nmt's time / CTranslate2 float32's,
per round and the median; the start-up row translates one sentence. Below it,
each engine's BLEU on the references and the lines it translates as nmt does
(equal outputs_sha1: equal translations). JSON goes to --out. The engines:
nmt (the .pt, torch's kernels, the default), nmt_fast (the .pt with
--kernels fast), ct2_float32 and ct2_int8 (the exported folders).

--quick is a smoke test: 64 sentences at batch 64, 4 at batch 1, one round
(each given option still wins); its figures say that the script runs, not
how fast anything is.

nmt's engine decodes in float32 (the model as stored). CTranslate2's
fastest compute type on the CPU is the last column (int8 where it has no
bf16 kernels); nmt has no bf16 decoding path, so that column compares nmt's
float32 with it.
"""

import argparse
import hashlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchmarks.bench_decode import read_lines  # test_2016_flickr, plain or .gz
from scripts.peers.compare_joeynmt import MULTI30K  # the shared data beside the checkout
from scripts.out_path import ready_file, ready_folder

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("nmt", "nmt_fast", "ct2_float32", "ct2_int8")
EXTRA = {"nmt_fast": ["--kernels", "fast"]}    # nmt's engine with its opt-in kernels (nmt.speedups.decode_kernels)
QUICK = {"limit": 64, "batch1_limit": 4, "rounds": 1}      # --quick: what the sizes default to
FULL = {"limit": 1000, "batch1_limit": 200, "rounds": 3}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a Transformer .pt written by nmt.train")
    parser.add_argument("--data", default=str(MULTI30K), help="folder with test_2016_flickr.{de,en}[.gz]")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en", help="the references' language (BLEU)")
    parser.add_argument("--cells", default="5x64,1x64,5x1,1x1",
                        help="BEAMxBATCH, comma separated (beam 1 = greedy)")
    parser.add_argument("--limit", type=int, default=None, help="sentences at batch sizes above 1 (default 1000)")
    parser.add_argument("--batch1-limit", type=int, default=None, help="sentences at batch size 1 (default 200)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds, engines alternating (default 3)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: {QUICK['limit']} and {QUICK['batch1_limit']} sentences, 1 round")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--exports", default=None, help="keep the exported folders here (default: a temporary one)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "bench_ctranslate2.json"))
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.limit, args.batch1_limit, args.rounds) < 1:
        sys.exit("bench_ctranslate2: --limit, --batch1-limit and --rounds must be at least 1")
    args.out = ready_file(args.out, "bench_ctranslate2")
    if args.exports:
        args.exports = ready_folder(args.exports, "bench_ctranslate2", "--exports")
    try:
        args.cells = [tuple(int(x) for x in cell.split("x")) for cell in args.cells.split(",")]
    except ValueError:
        sys.exit(f"bench_ctranslate2: --cells {args.cells}: give BEAMxBATCH pairs such as 5x64,1x1")
    args.engines = args.engines.split(",")
    unknown = sorted(set(args.engines) - set(ENGINES))
    if unknown or "nmt" not in args.engines or "ct2_float32" not in args.engines:
        sys.exit(f"bench_ctranslate2: --engines must hold nmt and ct2_float32, of {', '.join(ENGINES)}")
    if not Path(args.checkpoint).is_file():
        sys.exit(f"bench_ctranslate2: --checkpoint {args.checkpoint}: no such file")
    return args


def machine() -> dict:
    """The CPU (lscpu's model name, family and model), the cores this process may use, the load."""
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines()
        fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    except (OSError, subprocess.CalledProcessError):
        fields = {"Model name": platform.processor()}
    return {
        "cpu": fields.get("Model name", ""),
        "cpu_family": fields.get("CPU family", ""),
        "cpu_model": fields.get("Model", ""),
        "cores_allowed": sorted(os.sched_getaffinity(0)),
        "cpus": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def child_env() -> dict:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def export(checkpoint: str, folder: Path, engines: list[str]) -> dict:
    """engine -> what --checkpoint names for it: the .pt, or a folder from nmt.export."""
    paths = {"nmt": checkpoint, "nmt_fast": checkpoint}
    for name in engines:
        if name.startswith("ct2_"):
            out = folder / name
            if not out.is_dir():
                done = subprocess.run([sys.executable, "-m", "nmt.export", "--checkpoint", checkpoint, "--output",
                                       str(out), "--quantization", name.removeprefix("ct2_")], env=child_env(),
                                      stdout=subprocess.DEVNULL)
                if done.returncode:
                    sys.exit(f"bench_ctranslate2: nmt.export of {checkpoint} to {name} failed (its message above)")
            paths[name] = str(out)
    return paths


def translate(model: str, beam: int, batch: int, source: Path, output: Path, extra=()) -> float:
    """Seconds of one `python -m nmt.translate` process, start to exit."""
    command = [sys.executable, "-m", "nmt.translate", "--checkpoint", model, "--beam-size", str(beam),
               "--batch-size", str(batch), "--input", str(source), "--output", str(output), "--overwrite", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, env=child_env())
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"bench_ctranslate2: {shlex.join(command[1:])} failed (its message above)")
    return seconds


def sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:12]


def measure(args, paths: dict, inputs: dict, tmp: Path) -> tuple[list[dict], dict]:
    """One row per (cell, engine, round); engines alternate, their order reversed every other
    round. Also each (engine, beam, batch)'s translations, from its last round."""
    rows, outputs = [], {}
    for rnd in range(args.rounds):
        for beam, batch in args.cells:
            order = args.engines if rnd % 2 == 0 else args.engines[::-1]
            for name in order:
                output = tmp / f"{name}_{beam}x{batch}.out"
                seconds = translate(paths[name], beam, batch, inputs["large" if batch > 1 else "batch1"], output,
                                    EXTRA.get(name, ()))
                rows.append({"round": rnd + 1, "beam": beam, "batch_size": batch, "engine": name,
                             "seconds": round(seconds, 3), "outputs_sha1": sha1(output),
                             "load_average_1": round(os.getloadavg()[0], 2)})
                outputs[(name, beam, batch)] = output.read_text(encoding="utf-8").splitlines()
                print(f"  round {rnd + 1} beam {beam} batch {batch:>3} {name:<12} {seconds:7.2f} s", flush=True)
    return rows, outputs


def table(args, rows: list[dict], startup: dict) -> list[str]:
    """The ratio table as Markdown lines: each engine's median seconds, then each nmt
    engine's time / CTranslate2 float32's per round and their median, and / the fastest."""
    def seconds(name, beam, batch):
        return [r["seconds"] for r in rows if (r["engine"], r["beam"], r["batch_size"]) == (name, beam, batch)]

    fastest = "ct2_int8" if "ct2_int8" in args.engines else "ct2_float32"
    ours = [e for e in args.engines if e.startswith("nmt")]
    head = ["search", "batch", "sentences"] + [f"{e} s" for e in args.engines]
    for e in ours:
        head += [f"{e} / ct2_float32 per round", f"**{e} / ct2_float32**", f"{e} / {fastest}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for beam, batch in args.cells:
        n = args.limit if batch > 1 else args.batch1_limit
        cells = ["greedy" if beam == 1 else f"beam {beam}", str(batch), str(n)]
        cells += [f"{statistics.median(seconds(e, beam, batch)):.2f}" for e in args.engines]
        for e in ours:
            mine, f32 = seconds(e, beam, batch), seconds("ct2_float32", beam, batch)
            per_round = [a / b for a, b in zip(mine, f32)]
            cells += [", ".join(f"{r:.2f}" for r in per_round), f"**{statistics.median(per_round):.2f}×**",
                      f"{statistics.median(mine) / statistics.median(seconds(fastest, beam, batch)):.2f}×"]
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["start-up (1 sentence, beam 5, best of 2)", "1", "1"] + [f"{startup[e]:.2f}" for e in args.engines]
    for e in ours:
        cells += ["", f"{startup[e] / startup['ct2_float32']:.2f}×", f"{startup[e] / startup[fastest]:.2f}×"]
    lines.append("| " + " | ".join(cells) + " |")
    return lines


def agreement(args, outputs: dict, references: list[str]) -> tuple[list[str], list[dict]]:
    """Per cell and engine: sacreBLEU on the references and the lines equal to nmt's,
    as Markdown lines and as records."""
    from nmt.base.scoring import score_translations

    lines = ["| search | batch | engine | BLEU | lines as nmt's |", "|---|---|---|---|---|"]
    records = []
    for beam, batch in args.cells:
        mine = outputs[("nmt", beam, batch)]
        for name in args.engines:
            theirs = outputs[(name, beam, batch)]
            bleu = score_translations(theirs, references[: len(theirs)])[0]
            same = sum(a == b for a, b in zip(mine, theirs))
            records.append({"beam": beam, "batch_size": batch, "engine": name, "bleu": round(bleu, 2),
                            "sentences": len(theirs), "same_as_nmt": same})
            search = "greedy" if beam == 1 else f"beam {beam}"
            lines.append(f"| {search} | {batch} | {name} | {bleu:.2f} | {same} of {len(theirs)} |")
    return lines, records


def write_inputs(args, tmp: Path) -> tuple[dict, list[str]]:
    """The source files each cell translates (the first --limit sentences, the first
    --batch1-limit, one sentence; each limit cut to the split's size) and the references."""
    sources = read_lines(Path(args.data), f"{args.split}.{args.src_lang}")
    references = read_lines(Path(args.data), f"{args.split}.{args.tgt_lang}")
    args.limit, args.batch1_limit = min(args.limit, len(sources)), min(args.batch1_limit, len(sources))
    inputs = {"large": tmp / "large.src", "batch1": tmp / "batch1.src", "one": tmp / "one.src"}
    inputs["large"].write_text("\n".join(sources[: args.limit]) + "\n", encoding="utf-8")
    inputs["batch1"].write_text("\n".join(sources[: args.batch1_limit]) + "\n", encoding="utf-8")
    inputs["one"].write_text(sources[0] + "\n", encoding="utf-8")
    return inputs, references


def main(argv=None) -> dict:
    args = parse_args(argv)
    command = "python -m scripts.peers.bench_ctranslate2 " + shlex.join(sys.argv[1:] if argv is None else argv)
    from nmt.base.provenance import git_commit

    before = machine()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        inputs, references = write_inputs(args, tmp)
        paths = export(args.checkpoint, Path(args.exports) if args.exports else tmp, args.engines)
        for name in args.engines:                       # untimed: the page cache holds every file
            translate(paths[name], 5, 1, inputs["one"], tmp / "warm.out", EXTRA.get(name, ()))
        startup = {name: min(translate(paths[name], 5, 1, inputs["one"], tmp / "one.out", EXTRA.get(name, ()))
                             for _ in range(2)) for name in args.engines}
        rows, outputs = measure(args, paths, inputs, tmp)
    after = [round(x, 2) for x in os.getloadavg()]
    lines = table(args, rows, startup)
    quality, agreed = agreement(args, outputs, references)
    cpu = f"{before['cpu']} (family {before['cpu_family']} model {before['cpu_model']})"
    header = [f"command: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')} {command}",
              f"commit {git_commit()}, cpu {cpu}, cores {before['cores_allowed']}, "
              f"load before {before['load_average_1_5_15']}, after {after}, {time.strftime('%Y-%m-%d %H:%M %Z')}"]
    print("\n".join(header + [""] + lines + [""] + quality))
    record = {"command": header[0].removeprefix("command: "), "commit": git_commit(), "date": time.strftime(
        "%Y-%m-%d %H:%M %Z"), "checkpoint": args.checkpoint, "quick": args.quick, "machine": before,
        "load_average_after": after, "startup_seconds": startup, "rows": rows, "quality": agreed,
        "table": lines + [""] + quality}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"(figures in {args.out})")
    return record


if __name__ == "__main__":
    main()
