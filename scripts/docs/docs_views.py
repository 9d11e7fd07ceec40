"""The explorer's pictures on the views and export pages, from the model shipped with nmt.

    python -m scripts.docs.docs_views --out docs

Starts `python -m nmt.explore --model multi30k-de-en` on a free port of 127.0.0.1, opens it
in Debian's Chromium (Playwright, as scripts/docs/screenshots.py does) at 1280x800 and writes
OUT/explorer_first_view.png (the first view: a validation sentence stored in the model,
translated, its heatmap drawn) and OUT/beam_tree.png (SENTENCE with a beam of 3, the best
final clicked: its prefix's attention under the tree). It prints what each view held (the
translations, the finals and their scores) so the page's text can be checked against it.

The model view and the head view show a Transformer's layers and heads, which the shipped
GRU has not: `--transformer CHECKPOINT` (a trained toy Transformer, e.g. the study's
transformer-sinusoidal recipe of scripts/docs/docs_pictures.py) writes OUT/model_view.png
(cross-attention layer 1, head 2 opened large) and OUT/head_view.png (layer 1, heads 1
and 2) from its `nmt.translate --attention-html` page for DATE.
"""

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

from scripts.out_path import ready_folder
from scripts.docs.screenshots import ARGS, CHROMIUM, WINDOW, free_port, serve, small_png

MODEL = "multi30k-de-en"
SENTENCE = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."
DATE = "monday the twenty first of march nineteen eighty four"


def transformer_views(browser, checkpoint: str, out: Path) -> dict:
    """model_view.png and head_view.png of a Transformer's --attention-html page for DATE."""
    from nmt.commands.translate import main as translate

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "in.txt").write_text(DATE + "\n", encoding="utf-8")
        if translate(["--checkpoint", checkpoint, "--input", str(folder / "in.txt"), "--output",
                      str(folder / "out.txt"), "--attention-html", str(folder / "page.html")]) != 0:
            raise SystemExit("nmt.translate --attention-html failed")
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
        page.goto((folder / "page.html").as_uri())
        page.click("canvas.thumb[data-map='cross'][data-layer='1'][data-head='2']")
        page.mouse.move(0, 0)
        page.screenshot(path=str(out / "model_view.png"), full_page=True)
        page.select_option(".layer-select", "1")
        page.select_option(".head-select", "2")
        page.check(".head-toggle input[data-head='1']")
        page.screenshot(path=str(out / "head_view.png"), full_page=True)
        for name in ("model_view.png", "head_view.png"):
            small_png(out / name)
        return {"sentence": DATE, "translation": (folder / "out.txt").read_text(encoding="utf-8").strip(),
                "thumbnails": page.locator("canvas.thumb").count()}


def first_view(page, out) -> dict:
    page.wait_for_function("document.querySelectorAll('svg.heatmap').length >= 1", timeout=120000)
    page.screenshot(path=str(out / "explorer_first_view.png"))
    small_png(out / "explorer_first_view.png")
    return {"example": page.input_value("#source"), "translation": page.locator(".translation-text").first.inner_text()}


def beam_tree(page, out) -> dict:
    page.fill("#source", SENTENCE)
    page.select_option("#beam", "3")
    page.click("#go")
    page.wait_for_function(f"document.getElementById('results').dataset.source === {SENTENCE!r} && "
                           "document.querySelector('svg.beam-tree') !== null", timeout=120000)
    panel = page.locator(".panel").nth(0)
    finals = [(r.locator("td.text").inner_text(), r.locator("td.final-score").inner_text())
              for r in panel.locator("tr.final-row").all()]
    panel.locator("g.node.final[data-rank='1']").click()          # its prefix's attention
    page.wait_for_function("document.querySelector('svg.prefix-heatmap') !== null", timeout=60000)
    page.screenshot(path=str(out / "beam_tree.png"), full_page=True)
    small_png(out / "beam_tree.png")
    return {"sentence": SENTENCE, "finals": finals, "pruned boxes": panel.locator("g.node.pruned").count()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="docs", help="folder for the PNGs")
    parser.add_argument("--transformer", metavar="CHECKPOINT", help="a trained Transformer: also the model and head views")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out, port = ready_folder(args.out, "docs_views"), free_port()
    url = f"http://127.0.0.1:{port}/"
    child = serve([sys.executable, "-m", "nmt.explore", "--model", MODEL, "--port", str(port), "--device", "cpu"], url)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport=WINDOW, bypass_csp=True)   # wait_for_function evaluates strings
            page.set_default_timeout(120000)
            page.goto(url)
            found = {"first view": first_view(page, out), "beam tree": beam_tree(page, out)}
            if args.transformer:
                found["transformer views"] = transformer_views(browser, args.transformer, out)
            browser.close()
    finally:
        child.kill()
        child.wait()
    for what, seen in found.items():
        print(what, seen)
    print("command: python -m scripts.docs.docs_views " + shlex.join(argv if argv is not None else sys.argv[1:]))
    return found


if __name__ == "__main__":
    main()
