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
    layer_ms      choosing layer 1 of the matrix to the next frame it is drawn in (its svg says
                  that layer; fetched on demand the first time: the server's answer included), median
    dom_nodes     the page's elements once drawn

The figures need the brief's targets: draw_s < 5, hover_ms and layer_ms < 200.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
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


MEASURE = """async ([kind, rounds]) => {
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const times = [];
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
      // drawn: the matrix says the layer chosen (a large map's picture is repainted in its svg, the
      // labels kept; a layer fetched first is drawn in a new svg)
      const select = document.querySelector(".panel .layer-select"), layer = String(i % 2 ? select.options.length : 1);
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
    }
    return answer;
  };
}"""


def measure(url: str, text: str, rounds: int) -> dict:
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
        hover = page.evaluate(MEASURE, ["hover", rounds])
        layer = page.evaluate(MEASURE, ["layer", rounds])
        browser.close()
    return {"server_s": round((got - clicked) / 1000, 3), "reply_bytes": size, "draw_s": round((drawn - got) / 1000, 3),
            "hover_ms": round(statistics.median(hover), 1), "hover_ms_max": round(max(hover), 1),
            "layer_ms": round(statistics.median(layer), 1), "layer_ms_max": round(max(layer), 1),
            "dom_nodes": nodes, "matrix_rows_cols": pieces, "console_errors": problems}


def serve(folder: Path, port: int):
    process = subprocess.Popen([sys.executable, "-m", "nmt.explore", "--hf", str(folder), "--port", str(port),
                                "--device", "cpu"], cwd=ROOT, stderr=subprocess.PIPE)
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


def main(argv=None) -> int:
    from nmt.base.provenance import git_commit
    from nmt_study.machine import cpu_fingerprint

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", type=Path, required=True, help="where the model is built (kept, reused)")
    parser.add_argument("--out", type=Path, help="a JSON file for the figures")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    args.out = ready_file(args.out, "bench_explorer") if args.out else None     # before minutes of work
    folder = build(args.folder)
    process, url = serve(folder, args.port)
    try:
        figures = measure(url, hundred_words(), args.rounds)
    finally:
        process.terminate()
        process.wait(timeout=30)
    figures["targets_met"] = {"draw_s < 5": figures["draw_s"] < 5, "hover_ms < 200": figures["hover_ms_max"] < 200,
                              "layer_ms < 200": figures["layer_ms_max"] < 200}
    record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_commit(),
              "cpu": cpu_fingerprint(), "affinity": sorted(os.sched_getaffinity(0)), "load": os.getloadavg(),
              "command": "python -m scripts.benchmarks.bench_explorer " + shlex.join(argv if argv is not None else sys.argv[1:]),
              "model": OPUS, "words": WORDS, "figures": figures}
    print(json.dumps(record, indent=2))
    if args.out:
        args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
