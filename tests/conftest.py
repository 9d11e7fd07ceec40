import os

import pytest
import torch

from tests.helpers import train

# Under pytest-xdist (-n auto, pyproject.toml; one worker per core and one more) each worker
# runs one thread, and so does every process it starts (a CLI run, a notebook kernel): two
# workers each starting a process of torch's default two threads leave four spinning threads
# on two cores, and a test runs up to ten times slower. A plain single-process run (-n 0)
# keeps both cores.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else 2)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than the cores this process may run on. Many tests wait on a
    child process (a CLI run, a signal's moment, a server's first page) with their core idle;
    the extra worker fills that time (docs/getting-started/install.md has the timings). Every
    test keeps one thread, so the extra worker adds no oversubscription inside a test."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory, request):
    """One sentencepiece cache for the whole test run, shared by the xdist workers, so a
    vocabulary is trained once a run, not once a worker. Sharing is safe: a cache file is
    written whole or not at all (tokenizer._write_atomic), and sentencepiece gives the same
    bytes for the same data (tests/data/test_tokenizer.py), so a worker that trains a model
    another is training writes the same file. Tests that damage a cache use their own."""
    if hasattr(request.config, "workerinput"):   # an xdist worker (a pytest run inside a test inherits the env)
        shared = tmp_path_factory.getbasetemp().parent / "cache"       # beside the workers' popen-gwN
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def toy_checkpoint(tmp_path_factory, cache_dir):
    """A quickstart model trained briefly on the toy task (best.pt)."""
    run_dir = tmp_path_factory.mktemp("toy_run")
    train(run_dir, "experiment=quickstart", "trainer.max_steps=60", "trainer.val_every=60",
          "trainer.val_max_sentences=20", "trainer.heatmap_sentences=1", cache_dir=cache_dir)
    return run_dir / "checkpoints" / "best.pt"


@pytest.fixture
def chromium():
    """A headless Chromium (Debian's, never a downloaded one) for one test, closed after it (a
    session-wide one would hold Playwright's event loop while other tests start their own);
    skips where it is not installed."""
    import shutil

    from tests.test_attention_html import CHROMIUM, launch_chromium

    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium):
    """open(url, width=1400, height=1000) -> (page, problems): a fresh page of the shared Chromium at
    `url`, its console errors and uncaught exceptions collected in `problems`, closed after the test.
    The explorer's policy forbids eval, which wait_for_function's strings use: the page bypasses it
    (tests/test_explore_guard.py opens the page under the policy)."""
    contexts = []

    def open_page(url, width=1400, height=1000):
        context = chromium.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(90_000)          # a busy 2-core machine: seconds, never a hang
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(url)
        return page, problems

    yield open_page
    for context in contexts:
        context.close()
