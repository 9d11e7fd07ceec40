"""The attention explorer: its page in a real browser, its API, its start-up errors."""

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.helpers import ROOT, run_cli
from tests.test_attention_html import DATE, launch_chromium, needs_chromium, tiny_transformer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def transformer_checkpoint(tmp_path_factory, cache_dir):
    return tiny_transformer(tmp_path_factory, cache_dir)


SERVER_LOG = {}      # the running explorer's stderr, its server log


@pytest.fixture(scope="module")
def explorer(toy_checkpoint, transformer_checkpoint, tmp_path_factory):
    """`python -m nmt.explore --checkpoint RNN --compare TRANSFORMER --port N`, as a user runs it."""
    port = free_port()
    log = tmp_path_factory.mktemp("explorer") / "stderr.txt"
    SERVER_LOG["path"] = log
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "nmt.explore", "--checkpoint", str(toy_checkpoint),
             "--compare", str(transformer_checkpoint), "--port", str(port)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"nmt.explore exited with {process.returncode}: {log.read_text()}")
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"nmt.explore did not answer on {url}: {log.read_text()}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def post(url: str, body: bytes, path: str = "/api/translate"):
    """POST body to the explorer's API (`path`) -> (status, JSON reply)."""
    request = urllib.request.Request(url + path.lstrip("/"), data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_api_translates_with_both_models(explorer):
    status, reply = post(explorer, json.dumps({"text": DATE, "beam_size": 2}).encode())
    assert status == 200
    rnn, transformer = reply["results"]
    assert [m["name"] for m in rnn["maps"]] == ["cross"]
    assert [m["name"] for m in transformer["maps"]] == ["cross", "encoder-self", "decoder-self"]
    assert rnn["src_pieces"] == transformer["src_pieces"]


@pytest.mark.parametrize("body, message", [
    ({"text": "   "}, "empty"),
    ({"text": " ".join(["march"] * 400)}, "shorten it"),
    ({"text": DATE, "beam_size": 0}, "beam_size must be"),
    ({"text": DATE, "beam_size": "5"}, "beam_size must be"),
    ({"beam_size": 1}, "missing"),
    ([DATE], "JSON object"),
])
def test_api_bad_input_is_one_clear_line(explorer, body, message):
    status, reply = post(explorer, json.dumps(body).encode())
    assert status == 400 and message in reply["error"] and "\n" not in reply["error"]


def test_api_body_that_is_not_json(explorer):
    assert post(explorer, b"{not json") == (400, {"error": "the request body is not JSON"})


@pytest.mark.parametrize("body, content_type, status", [
    (b'{"text": "a\\ud800b"}', "application/json", 400),          # a lone surrogate
    (b"[" * 30000 + b"]" * 30000, "application/json", 400),        # nested too deeply
    (b'{"text": "' + b"x" * 70000 + b'"}', "application/json", 413),  # over the size limit
    (b'{"text": "x"}', "text/plain", 415),
    (b"\xff\xfe{", "application/json", 400),                       # not UTF-8
])
def test_the_real_server_answers_bad_bodies_and_logs_no_traceback(explorer, body, content_type, status):
    request = urllib.request.Request(explorer + "api/translate", data=body,
                                     headers={"Content-Type": content_type})
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=60)
    assert error.value.code == status
    assert set(json.load(error.value)) == {"error"}
    log = SERVER_LOG["path"].read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_wrong_checkpoint_path_is_one_line_at_start(tmp_path):
    result = run_cli("nmt.explore", "--checkpoint", str(tmp_path / "missing.pt"),
                     "--port", str(free_port()), timeout=120)
    err = result.stderr.decode()
    assert result.returncode == 1
    assert err == f"nmt: error: checkpoint {tmp_path / 'missing.pt'} does not exist; {tmp_path} holds no .pt file\n"


def test_samples_come_from_the_checkpoint_or_none(toy_checkpoint, tmp_path):
    from nmt.commands.explore import Model
    from nmt.store.checkpoints import load_checkpoint, save_checkpoint

    assert 1 <= len(Model(str(toy_checkpoint), "cpu").samples) <= 20
    state = load_checkpoint(toy_checkpoint)
    del state["samples"]
    save_checkpoint(state, tmp_path / "old.pt")
    assert Model(str(tmp_path / "old.pt"), "cpu").samples == []


def test_busy_port_is_one_line_at_start(toy_checkpoint):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("nmt.explore", "--checkpoint", str(toy_checkpoint), "--port", str(port))
    err = result.stderr.decode()
    assert result.returncode == 1
    assert err.startswith(f"nmt: error: cannot listen on 127.0.0.1:{port}") and err.count("\n") == 1


def weight_text(value: float, exact: bool = False) -> str:
    """A weight as the page's tooltip writes it (weightText): '0 (exactly)' (a sparse
    normaliser's 0) or float32 underflow (a softmax's), 6.12e-10 for one under 1e-4
    (which 4 decimals would show as 0), else 4 decimals."""
    if value == 0:
        return "0 (exactly)" if exact else "0 (below float32's smallest; softmax is never exactly 0)"
    return f"{value:.2e}".replace("e-0", "e-") if abs(value) < 1e-4 else f"{value:.4f}"


@needs_chromium
def test_explorer_in_a_browser(explorer, toy_checkpoint, transformer_checkpoint, tmp_path):
    from playwright.sync_api import sync_playwright

    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    expected = [translate_and_explain(Translator.from_checkpoint(path, device="cpu"), DATE, 3)
                for path in (toy_checkpoint, transformer_checkpoint)]
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        # wait_for_function's strings run through eval, which the explorer's policy forbids
        # (tests/test_explore_guard.py opens the page under the policy)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(explorer)
        assert page.locator("#sample option").count() > 1        # the checkpoint's samples
        # the first view: an example translated, and what to do
        first = page.locator("#sample option").nth(1).get_attribute("title")
        page.wait_for_function("document.querySelectorAll('svg.heatmap').length == 2")
        assert page.input_value("#source") == first and page.input_value("#sample") == "0"
        assert page.inner_text("#help").startswith("Type a sentence in the model's source language or pick "
                                                   "a validation sentence, choose greedy or a beam")
        assert page.locator(".score").nth(0).inner_text().startswith("score ")
        assert "log P(output | source), natural log, summed over its" in page.locator(".score").nth(0).inner_text()
        # compared checkpoints: distinct titles, the run folder in each
        titles = page.locator(".panel h2").all_inner_texts()
        assert len(set(titles)) == 2 and all(t.endswith("/checkpoints/best.pt") for t in titles)

        page.fill("#source", DATE)
        page.select_option("#beam", "3")
        page.click("#go")
        page.wait_for_function(f"document.getElementById('results').dataset.source === {DATE!r}")
        assert "the beam's ranking score" in page.locator(".score").nth(0).inner_text()
        panels = page.locator(".panel")
        assert panels.nth(0).locator(".translation-text").inner_text() == (expected[0]["text"] or "(empty)")
        assert panels.nth(1).locator(".translation-text").inner_text() == (expected[1]["text"] or "(empty)")
        assert panels.nth(0).locator(".colour-scale").count() == 1

        rnn = expected[0]["maps"][0]
        panels.nth(0).locator("rect.cell[data-row='0'][data-col='1']").hover()
        tip = page.inner_text("#tooltip").split("\n")
        assert tip[:3] == [f"target \u201c{rnn['rows'][0]}\u201d", f"source \u201c{rnn['cols'][1]}\u201d",
                           f"weight {weight_text(rnn['layers'][0][0][0][1], rnn['exact_zeros'])}"]
        assert len(tip) == 3         # the steps' top 5 come on request (tests/test_on_demand.py)

        cross = expected[1]["maps"][0]                            # Transformer, layer 1, head 2
        panels.nth(1).locator(".layer-select").select_option("1")
        panels.nth(1).locator(".head-select").select_option("2")
        panels.nth(1).locator("rect.cell[data-row='1'][data-col='2']").hover()
        assert page.inner_text("#tooltip").split("\n")[2] == (
            f"weight {weight_text(cross['layers'][0][1][1][2], cross['exact_zeros'])}")
        page.mouse.move(0, 0)
        page.screenshot(path=str(tmp_path / "explorer.png"), full_page=True)
        assert problems == []

        samples = page.locator("#sample option")
        page.select_option("#sample", "0")                        # a validation sentence
        page.wait_for_function("document.querySelector('.translation-text') !== null && "
                               "!document.querySelector('#message').textContent")
        assert page.input_value("#source") == samples.nth(1).get_attribute("title")

        page.fill("#source", "   ")
        page.click("#go")
        assert page.inner_text("#message") == "Type or paste a source sentence first."
        page.fill("#source", " ".join(["march"] * 400))
        page.click("#go")
        page.wait_for_function("document.querySelector('#message').textContent.includes('shorten')")
        assert "Traceback" not in page.content()
        browser.close()
    assert (tmp_path / "explorer.png").stat().st_size > 10_000


def test_compared_checkpoints_get_distinct_titles(tmp_path):
    from nmt.viz.html_export import model_labels

    a, b = tmp_path / "sweep" / "0" / "checkpoints" / "best.pt", tmp_path / "sweep" / "1" / "checkpoints" / "best.pt"
    assert model_labels([a, b]) == ["0/checkpoints/best.pt", "1/checkpoints/best.pt"]
    # the same run folder name under two dates: one part more
    c, d = tmp_path / "11-23" / "run" / "checkpoints" / "best.pt", tmp_path / "11-24" / "run" / "checkpoints" / "best.pt"
    assert model_labels([c, d]) == ["11-23/run/checkpoints/best.pt", "11-24/run/checkpoints/best.pt"]


def test_models_with_other_vocabularies_are_said_on_the_page():
    from types import SimpleNamespace

    from nmt.commands.explore import vocabulary_note

    def model(src, tgt):
        tokenizer = SimpleNamespace(to_bytes=lambda: {"src": src, "tgt": tgt})
        return SimpleNamespace(translator=SimpleNamespace(tokenizer=tokenizer))

    assert vocabulary_note([model(b"a", b"b"), model(b"a", b"b")]) is None
    assert vocabulary_note([model(b"a", b"b")]) is None
    note = vocabulary_note([model(b"a", b"b"), model(b"a", b"c")])
    assert note.startswith("These models use different target vocabularies (sentencepiece models)")


@needs_chromium
def test_a_picked_validation_sentence_shows_its_reference_and_the_note(tmp_path):
    from playwright.sync_api import sync_playwright

    from nmt.viz.html_export import render_page

    html = tmp_path / "server.html"          # the server's page, opened without its server
    html.write_text(render_page({
        "mode": "server", "title": "nmt attention explorer", "beams": [1, 5],
        "models": [{"name": "a/checkpoints/best.pt", "description": "A"},
                   {"name": "b/checkpoints/best.pt", "description": "B"}],
        "samples": ["ein hund", "zwei katzen"], "references": ["a dog", None],
        "note": "These models use different target vocabularies"}), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.goto(html.as_uri())
        first = page.inner_text("#reference")
        note = page.inner_text("#note")
        page.select_option("#sample", "1")                    # no reference stored for it
        second_hidden = page.locator("#reference").is_hidden()
        page.select_option("#sample", "0")
        page.fill("#source", "etwas anderes")                 # typed: no reference
        typed_hidden = page.locator("#reference").is_hidden()
        browser.close()
    assert first == "Reference: a dog" and note == "These models use different target vocabularies"
    assert second_hidden and typed_hidden


def test_a_checkpoint_carries_its_samples_references_for_the_explorer(toy_checkpoint):
    import torch

    state = torch.load(toy_checkpoint, weights_only=True)
    assert len(state["sample_references"]) == len(state["samples"]) > 0
    # the toy task's reference is the date in digits, e.g. "22.03.2047"
    assert all(any(ch.isdigit() for ch in ref) for ref in state["sample_references"])


def raw_request(url: str, data: bytes, hang_up: bool = False) -> bytes:
    """Send `data` as it is to the explorer; its whole answer, or b"" after hanging up at once."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    data = data.replace(b"Host: x\r\n", f"Host: 127.0.0.1:{port}\r\n".encode())   # the explorer's own address
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(data)
        if hang_up:
            return b""
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
        return answer


def test_a_client_that_hangs_up_mid_request_leaves_no_traceback(explorer):
    # no "Exception in ASGI application" and ClientDisconnect traceback per request
    head = b"POST /api/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    raw_request(explorer, head + b'Content-Length: 100\r\n\r\n{"text": "mon', hang_up=True)
    raw_request(explorer, head + b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"tex\r\nZZ\r\n", hang_up=True)
    time.sleep(1.0)
    status, _ = post(explorer, json.dumps({"text": DATE}).encode())     # still serving
    assert status == 200
    log = SERVER_LOG["path"].read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_head_answers_like_get_without_a_body(explorer):
    request = "{} / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    head = raw_request(explorer, request.format("HEAD").encode())
    get = raw_request(explorer, request.format("GET").encode())
    head_lines, _, head_body = head.partition(b"\r\n\r\n")
    get_lines, _, get_body = get.partition(b"\r\n\r\n")
    assert head_lines.startswith(b"HTTP/1.1 200 ") and head_body == b""      # not 405 with a JSON body
    assert fields(head_lines) == fields(get_lines)
    assert int(fields(get_lines)[b"content-length"]) == len(get_body)


def fields(head: bytes) -> dict:
    """The header fields of an answer's head, but its date."""
    pairs = (line.partition(b": ") for line in head.split(b"\r\n")[1:])
    return {key.lower(): value for key, _, value in pairs if key.lower() != b"date"}
