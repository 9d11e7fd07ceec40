"""Screenshots of what a user sees first, taken in headless Chromium:
TensorBoard's scalars of a run, and the explorer's first view of its best.pt.

    python -m scripts.docs.screenshots --run outputs/DATE/TIME --out docs

Starts `tensorboard --logdir RUN/tensorboard` and `python -m nmt.explore
--checkpoint RUN/checkpoints/best.pt` on free ports of 127.0.0.1, opens each
in Debian's Chromium (/usr/bin/chromium, driven by Playwright, never a
downloaded browser), TensorBoard's SCALARS tab at 1920x1080 and the
explorer at 1280x800, and writes
OUT/tensorboard_scalars.png and OUT/explorer_first_view.png. It prints where
TensorBoard's valid/bleu chart lies (its top, in pixels from the top of the
window of 1920x1080) and what the explorer's first view holds (the example,
the help line, the heatmaps drawn).
"""

import argparse
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from scripts.out_path import ready_folder

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WINDOW = {"width": 1280, "height": 800}  # the explorer's
DESKTOP = {"width": 1920, "height": 1080}  # TensorBoard's: a full-HD browser window


def small_png(path: Path) -> None:
    """Rewrite the screenshot at `path` with a 256-colour palette: a third of the bytes, for docs/."""
    from PIL import Image

    Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(command: list[str], url: str, timeout: float = 120.0) -> subprocess.Popen:
    """Start `command` and wait until `url` answers."""
    import urllib.request

    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return child
        except OSError:
            if child.poll() is not None or time.monotonic() > deadline:
                child.kill()
                raise SystemExit(f"{shlex.join(command)} did not answer at {url}")
            time.sleep(0.5)


def tensorboard_scalars(browser, run: Path, out: Path) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    child = serve(
        [
            sys.executable,
            "-m",
            "tensorboard.main",
            "--logdir",
            str(run / "tensorboard"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        url + "data/runs",
    )
    try:
        page = browser.new_page(viewport=DESKTOP)
        page.goto(url + "#scalars")
        title = page.get_by_text("valid/bleu", exact=True).first  # the chart's title
        title.wait_for(timeout=60000)
        time.sleep(3)  # the charts draw their lines
        top = title.bounding_box()["y"]
        page.screenshot(path=str(out / "tensorboard_scalars.png"))
        small_png(out / "tensorboard_scalars.png")
        return {"valid/bleu title top px": round(top), "window height px": DESKTOP["height"]}
    finally:
        child.kill()
        child.wait()


def explorer_first_view(browser, run: Path, out: Path) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    child = serve(
        [
            sys.executable,
            "-m",
            "nmt.explore",
            "--checkpoint",
            str(run / "checkpoints" / "best.pt"),
            "--port",
            str(port),
            "--device",
            "cpu",
        ],
        url,
    )
    try:
        page = browser.new_page(viewport=WINDOW)
        page.goto(url)
        page.wait_for_function("document.querySelectorAll('svg.heatmap').length >= 1", timeout=60000)
        page.screenshot(path=str(out / "explorer_first_view.png"))
        small_png(out / "explorer_first_view.png")
        return {
            "example": page.input_value("#source"),
            "help": page.inner_text("#help")[:80],
            "heatmaps": page.locator("svg.heatmap").count(),
        }
    finally:
        child.kill()
        child.wait()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="a run folder written by nmt.train")
    parser.add_argument("--out", default="docs", help="folder for the PNGs")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    run, out = Path(args.run), ready_folder(args.out, "screenshots")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        found = {
            "tensorboard": tensorboard_scalars(browser, run, out),
            "explorer": explorer_first_view(browser, run, out),
        }
        browser.close()
    for what, seen in found.items():
        print(what, seen)
    print("command: python -m scripts.docs.screenshots " + shlex.join(argv if argv is not None else sys.argv[1:]))
    return found


if __name__ == "__main__":
    main()
