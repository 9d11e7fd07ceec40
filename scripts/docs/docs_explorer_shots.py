"""docs/explorer.png and docs/what_if.png, from the running explorer and a model that learned.

    taskset -c 0 python -m scripts.docs.docs_explorer_shots --checkpoint RUN/checkpoints/best.pt \
        --compare OTHER/checkpoints/best.pt --out docs

serves `python -m nmt.explore --checkpoint CHECKPOINT --compare OTHER`,
translates a Multi30k test sentence (test_2016_flickr line 10) greedily and
forces a prefix the models did not choose, in headless Chromium at 1,280 and
1,920 px wide:

    explorer.png    1,920: the page down to the two models' difference view
    what_if.png     1,920: the first model's free and forced panels side by side and their difference
    *_1280.png      the same at 1,280 px (to check the layout; not used by the docs)
"""

import argparse
import gzip
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from scripts.out_path import ready_folder
from tests.helpers import MULTI30K
from tests.test_attention_html import launch_chromium

ROOT = Path(__file__).resolve().parents[2]
LINE, PREFIX = 9, "A man wearing a vest"


def shots(url: str, out: Path, source: str) -> list[str]:
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        for width in (1280, 1920):
            tail = "" if width == 1920 else "_1280"
            page = browser.new_page(viewport={"width": width, "height": 1080}, bypass_csp=True)
            page.set_default_timeout(300_000)
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(url)
            page.fill("#source", source)
            page.click("#go")
            page.wait_for_function(f"document.getElementById('results').dataset.source === {source!r} && "
                                   "document.querySelector('svg.diff-map') !== null")
            page.mouse.move(0, 0)
            bottom = page.evaluate("document.querySelector('.diff-view').getBoundingClientRect().bottom + scrollY")
            page.screenshot(path=str(out / f"explorer{tail}.png"), full_page=True,
                            clip={"x": 0, "y": 0, "width": width, "height": bottom + 8})
            page.fill("#prefix", PREFIX)
            page.click("#force")
            page.wait_for_selector(".panel.forced svg.heatmap")
            page.wait_for_selector("svg.diff-map")
            top = page.evaluate("document.querySelector('.pair').getBoundingClientRect().top + window.scrollY")
            bottom = page.evaluate("(() => { const d = document.querySelector('.diff-view').getBoundingClientRect();"
                                   " return d.bottom + window.scrollY; })()")
            page.screenshot(path=str(out / f"what_if{tail}.png"), full_page=True,
                            clip={"x": 0, "y": max(0, top - 8), "width": width, "height": bottom - top + 16})
            page.close()
        browser.close()
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--compare", required=True, help="a second checkpoint, shown beside the first")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--port", type=int, default=8793)
    args = parser.parse_args(argv)
    args.out = ready_folder(args.out, "docs_explorer_shots")
    with gzip.open(MULTI30K / "test_2016_flickr.de.gz", "rt", encoding="utf-8") as lines:
        source = [line.strip() for line in lines][LINE]
    process = subprocess.Popen([sys.executable, "-m", "nmt.explore", "--checkpoint", args.checkpoint,
                                "--compare", args.compare, "--port", str(args.port), "--device", "cpu"], cwd=ROOT)
    url = f"http://127.0.0.1:{args.port}/"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                time.sleep(0.5)
        problems = shots(url, args.out, source)
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(f"console errors: {problems}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
