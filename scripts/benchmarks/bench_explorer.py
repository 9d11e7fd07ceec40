"""The explorer at opus-mt size: how long 100 words take to draw, a hover and a layer change.

    taskset -c 0 python -m scripts.benchmarks.bench_explorer --folder /tmp/opus_size --out benchmarks/explorer_opus_size.json

builds (once, into --folder) a randomly initialised MarianMTModel of
Helsinki-NLP/opus-mt-de-en's shape, offline: 6 + 6 layers, 8 heads, d_model
512, ffn 2,048, 58,101 vocabulary entries, 512 positions, with a
sentencepiece model trained on the first 5,000 German and English lines of
Multi30k's training set (its vocabulary filled up to 58,101 entries with
pieces the text never has). It serves it with `python -m nmt.explore --hf
FOLDER` (the same CPUs as this script: run it under taskset), opens the page
in headless Chromium, translates the first Multi30k test sentences joined
to 100 words, and measures in the page:

    server_s      the click to the reply's last byte (the translation and its maps)
    reply_bytes   the reply's size
    draw_s        the reply's last byte to the page drawn (the next frame after render)
    hover_ms      a mousemove on a cell of the matrix to the next frame (its tooltip shown), median
    walk_ms       a first visit to a layer: from the last layer (the one a reply carries) down to
                  layer 1 one at a time, PAUSE ms apart (a reader looking at each), each the choice
                  to the next frame it is drawn in (its svg says that layer), median and max: the
                  layer's request and its bytes included when the page has not got it yet
    layer_ms      then layer 1 and the last in turn, ROUNDS times: a change between layers held, median
    layer_bytes   the sizes of the page's POST /api/maps answers (one a layer it asked for)
    dom_nodes     the page's elements once drawn

The figures need the brief's targets: draw_s < 5, hover_ms and layer_ms < 200 (median).

    python -m scripts.benchmarks.bench_explorer --folder F --out O --commits main h/see~2 h/see --repeat 2

measures the explorer of each commit (`git archive` of it into a temporary
folder, served from there) in one run, in turn, `--repeat` times, and adds
each figure's ratio to the first commit's (the medians over the repeats):
what each change gives under the same load.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
OPUS = {"d_model": 512, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8,
        "decoder_attention_heads": 8, "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048,
        "max_position_embeddings": 512, "vocab_size": 58101}
WORDS = 100


def build(folder: Path) -> Path:
    """A random Marian of opus-mt-de-en's shape and a sentencepiece tokenizer, saved in `folder`."""
    if (folder / "config.json").exists():
        return folder
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "corpus.txt"
    lines = multi30k_lines("train", "de")[:5000] + multi30k_lines("train", "en")[:5000]
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"), vocab_size=6000, hard_vocab_limit=False,
                                   model_type="unigram", bos_id=-1, eos_id=1, unk_id=2, pad_id=0,
                                   minloglevel=2)
    text.unlink()
    processor = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    pieces = ["<pad>", "</s>", "<unk>"] + [processor.id_to_piece(i) for i in range(3, processor.get_piece_size())]
    pieces += [f"\u2581unused{i}" for i in range(OPUS["vocab_size"] - len(pieces))]
    (folder / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(pieces)}), encoding="utf-8")
    for side in ("source", "target"):
        (folder / f"{side}.spm").write_bytes((folder / "spm.model").read_bytes())
    tokenizer = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"))
    torch.manual_seed(0)
    config = MarianConfig(**OPUS, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, forced_eos_token_id=1)
    MarianMTModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def multi30k_lines(split: str, language: str) -> list[str]:
    """Multi30k's lines of `split` in `language` (tests.helpers.MULTI30K: the machine's copy)."""
    import gzip

    from tests.helpers import MULTI30K

    with gzip.open(MULTI30K / f"{split}.{language}.gz", "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines]


def hundred_words() -> str:
    words = " ".join(multi30k_lines("test_2016_flickr", "de")).split()
    return " ".join(words[:WORDS])


MEASURE = """async ([kind, rounds, pause]) => {
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const times = [];
  const select = document.querySelector(".panel .layer-select"), last = select.options.length;
  for (let i = 0; i < rounds; i++) {
    if (kind === "hover") {
      // a cell's rect, or the one target over a large map's canvas (explorer_page.html, CELL_BUDGET)
      const cells = document.querySelectorAll(".panel svg.heatmap rect.cell, .panel svg.heatmap rect.cells-overlay");
      const cell = cells[(i * 7919) % cells.length], box = cell.getBoundingClientRect();
      const fx = cell.classList.contains("cells-overlay") ? ((i * 37) % 100) / 100 : 0.1, fy = fx;
      const t = performance.now();
      cell.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: box.x + 2 + fx * (box.width - 4),
                                                      clientY: box.y + 2 + fy * (box.height - 4)}));
      await frame();
      times.push(performance.now() - t);
    } else {
      // walk: layers last - 1 down to 1, pause ms apart; layer: 1 and the last in turn. Drawn: the matrix
      // says the layer chosen (a large map's picture is repainted in its svg; a layer fetched first may
      // be drawn in a new svg)
      const layer = String(kind === "walk" ? last - 1 - i : i % 2 ? last : 1);
      if (kind === "walk") await new Promise(r => setTimeout(r, pause));
      const drawn = () => { const m = document.querySelector(".panel svg.heatmap");
                            return m && m.getAttribute("data-layer") === layer; };
      const t = performance.now();
      select.value = layer;
      select.dispatchEvent(new Event("change"));
      while (!drawn()) await new Promise(r => setTimeout(r, 1));
      await frame();
      times.push(performance.now() - t);
    }
  }
  return times;
}"""

WATCH = """() => {
  const real = window.fetch;
  window.fetch = async (...args) => {
    const answer = await real(...args);
    if (String(args[0]).includes("api/translate")) {
      const body = await answer.clone().arrayBuffer();
      window.__got = performance.now(); window.__bytes = body.byteLength;
    } else if (String(args[0]).includes("api/maps")) {
      const body = await answer.clone().arrayBuffer();
      (window.__layers = window.__layers || []).push(body.byteLength);
    }
    return answer;
  };
}"""


def measure(url: str, text: str, rounds: int, pause: int) -> dict:
    from playwright.sync_api import sync_playwright

    from tests.test_attention_html import launch_chromium

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1920, "height": 1080}, bypass_csp=True)
        page.set_default_timeout(600_000)
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.add_init_script(f"({WATCH})()")
        page.goto(url)
        page.fill("#source", text)
        clicked = page.evaluate("performance.now()")
        page.click("#go")
        page.wait_for_function(f"document.getElementById('results').dataset.source === {json.dumps(text)} && "
                               "document.querySelector('.panel svg.heatmap') !== null")
        drawn = page.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(() => r(performance.now()))))")
        got, size = page.evaluate("[window.__got, window.__bytes]")
        nodes = page.evaluate("document.getElementsByTagName('*').length")
        pieces = page.evaluate("(() => { const m = document.querySelector('.panel svg.heatmap'); "
                               "return [m.querySelectorAll('text[text-anchor=\"end\"]').length, "
                               "m.querySelectorAll('text[transform]').length]; })()")
        print(json.dumps({"server_s": (got - clicked) / 1000, "draw_s": (drawn - got) / 1000, "bytes": size,
                          "nodes": nodes}), file=sys.stderr, flush=True)
        hover = page.evaluate(MEASURE, ["hover", rounds, 0])
        layers = page.evaluate("document.querySelector('.panel .layer-select').options.length")
        walk = page.evaluate(MEASURE, ["walk", layers - 1, pause])
        layer = page.evaluate(MEASURE, ["layer", rounds, 0])
        fetched = page.evaluate("window.__layers || []")
        browser.close()
    return {"server_s": round((got - clicked) / 1000, 3), "reply_bytes": size, "draw_s": round((drawn - got) / 1000, 3),
            "hover_ms": round(statistics.median(hover), 1), "hover_ms_max": round(max(hover), 1),
            "walk_ms": round(statistics.median(walk), 1), "walk_ms_max": round(max(walk), 1),
            "walk_each_ms": [round(t, 1) for t in walk],
            "layer_ms": round(statistics.median(layer), 1), "layer_ms_max": round(max(layer), 1),
            "layer_bytes": fetched, "dom_nodes": nodes, "matrix_rows_cols": pieces, "console_errors": problems}


def serve(folder: Path, port: int, code: Path = ROOT):
    """`python -m nmt.explore --hf folder` of the nmt in `code` (this checkout, or a commit's files)."""
    environment = {**os.environ, "PYTHONPATH": str(code)}
    process = subprocess.Popen([sys.executable, "-m", "nmt.explore", "--hf", str(folder), "--port", str(port),
                                "--device", "cpu"], cwd=code, stderr=subprocess.PIPE, env=environment)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 600
    while True:
        if process.poll() is not None:
            raise SystemExit(f"nmt.explore exited: {process.stderr.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return process, url
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("nmt.explore did not answer in 600 s") from None
            time.sleep(0.5)


def served_and_measured(folder: Path, port: int, code: Path, rounds: int, pause: int) -> dict:
    process, url = serve(folder, port, code)
    try:
        figures = measure(url, hundred_words(), rounds, pause)
    finally:
        process.terminate()
        process.wait(timeout=30)
    figures["targets_met"] = {"draw_s < 5": figures["draw_s"] < 5, "hover_ms < 200 (median)": figures["hover_ms"] < 200,
                              "layer_ms < 200 (median)": figures["layer_ms"] < 200}
    return figures


RATIOS = ("draw_s", "hover_ms", "hover_ms_max", "walk_ms", "walk_ms_max", "layer_ms", "layer_ms_max")


def by_commit(folder: Path, port: int, commits: list[str], repeat: int, rounds: int, pause: int) -> dict:
    """Each commit's figures (`repeat` runs, in turn), their medians and the medians' ratios to the first's."""
    runs = {commit: [] for commit in commits}
    with tempfile.TemporaryDirectory(prefix="bench_explorer_") as temporary:
        codes = {}
        for commit in commits:                     # each commit's files, as git holds them
            code = codes[commit] = Path(temporary) / str(len(codes))
            code.mkdir()
            archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        for _ in range(repeat):
            for commit in commits:
                runs[commit].append(served_and_measured(folder, port, codes[commit], rounds, pause))
                print(json.dumps({commit: {k: runs[commit][-1][k] for k in RATIOS}}), file=sys.stderr, flush=True)
    medians = {c: {k: statistics.median(r[k] for r in runs[c]) for k in RATIOS} for c in commits}
    first = medians[commits[0]]
    ratios = {c: {k: round(m[k] / first[k], 3) if first[k] else None for k in RATIOS} for c, m in medians.items()}
    revisions = {c: subprocess.run(["git", "rev-parse", "--short=12", c], cwd=ROOT, capture_output=True,
                                   text=True).stdout.strip() for c in commits}
    return {"commits": revisions, "runs": runs, "medians": medians, "ratios_to_first": ratios}


def main(argv=None) -> int:
    from nmt.base.provenance import git_commit
    from nmt_study.machine import cpu_fingerprint

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", type=Path, required=True, help="where the model is built (kept, reused)")
    parser.add_argument("--out", type=Path, help="a JSON file for the figures")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pause", type=int, default=1000, help="ms between the first visits to the layers")
    parser.add_argument("--commits", nargs="+", metavar="REV", help="measure each commit's explorer instead, in turn")
    parser.add_argument("--repeat", type=int, default=1, help="with --commits: runs of each")
    args = parser.parse_args(argv)
    args.out = ready_file(args.out, "bench_explorer") if args.out else None     # before minutes of work
    folder = build(args.folder)
    record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_commit(),
              "cpu": cpu_fingerprint(), "affinity": sorted(os.sched_getaffinity(0)), "load_before": os.getloadavg(),
              "command": "python -m scripts.benchmarks.bench_explorer " + shlex.join(argv if argv is not None else sys.argv[1:]),
              "model": OPUS, "words": WORDS}
    if args.commits:
        record |= by_commit(folder, args.port, args.commits, args.repeat, args.rounds, args.pause)
        summary = {c: {k: record["medians"][c][k] for k in ("layer_ms", "hover_ms", "walk_ms")} for c in args.commits}
    else:
        record["figures"] = served_and_measured(folder, args.port, ROOT, args.rounds, args.pause)
        summary = {k: record["figures"][k] for k in ("layer_ms", "hover_ms", "walk_ms")}
    record["load_after"] = os.getloadavg()
    print(json.dumps(record, indent=2))
    print("median layer change and hover (ms): " + json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
