"""The explorer as a careful local server (issue 58 item 6, issue 62 item 7):
a foreign Host is refused (DNS rebinding), the page runs only its own script
under a Content-Security-Policy and still works in a browser, and a client
that stalls mid-request is cut off."""

import base64
import hashlib
import json
import re
import socket
import subprocess
import sys
import time

import pytest

from nmt.commands.explore_guard import STALL_S
from tests.helpers import ROOT
from tests.test_attention_html import launch_chromium, needs_chromium
from tests.test_explore import free_port

DATE = "monday the twenty first of march nineteen eighty four"


@pytest.fixture(scope="module")
def served(toy_checkpoint, tmp_path_factory):
    """`python -m nmt.explore --checkpoint TOY --port N` -> its port."""
    port = free_port()
    log = tmp_path_factory.mktemp("guard") / "stderr.txt"
    with open(log, "w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "nmt.explore", "--checkpoint", str(toy_checkpoint),
                                    "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 90
        while b"200" not in ask(port, "GET", "/", f"127.0.0.1:{port}", quiet=True)[:20]:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=20)


def ask(port: int, method: str, path: str, host: str, body: bytes = b"", quiet: bool = False) -> bytes:
    """One raw HTTP/1.1 request with the given Host -> the whole answer."""
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
            connection.sendall(head + body)
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
            return answer
    except OSError:
        if quiet:
            return b""
        raise


def headers_of(answer: bytes) -> dict[str, str]:
    head = answer.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head)}


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost.evil:{port}",
                                  "127.0.0.1:{port}.evil"])
def test_a_request_for_another_host_is_refused_on_every_route(served, host):
    body = json.dumps({"text": DATE, "beam_size": 1}).encode()
    for method, path, data in (("GET", "/", b""), ("HEAD", "/", b""), ("POST", "/api/translate", body),
                               ("GET", "/nothing", b"")):
        answer = ask(served, method, path, host.format(port=served), data)
        assert answer.startswith(b"HTTP/1.1 403 "), (method, path, answer[:200])
        if method != "HEAD":
            error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
            assert error.startswith(f"Host {host.format(port=served)!r} is not this explorer's address; open "
                                    f"http://127.0.0.1:{served}/")


def test_its_own_address_is_served_with_a_policy_that_allows_only_its_script(served):
    for host in (f"127.0.0.1:{served}", f"localhost:{served}", f"LOCALHOST:{served}"):
        answer = ask(served, "GET", "/", host)
        assert answer.startswith(b"HTTP/1.1 200 "), host
    page = answer.partition(b"\r\n\r\n")[2].decode("utf-8")
    policy = headers_of(answer)["content-security-policy"]
    scripts = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    assert scripts and "<script src" not in page
    digests = {"'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in scripts}
    rules = dict(rule.strip().split(" ", 1) for rule in policy.split(";"))
    assert set(rules["script-src"].split()) == digests                     # no 'unsafe-inline', no other source
    assert rules["default-src"] == "'none'" and rules["connect-src"] == "'self'"
    assert rules["frame-ancestors"] == "'none'" and rules["base-uri"] == "'none'"
    api = ask(served, "POST", "/api/translate", f"127.0.0.1:{served}", json.dumps({"text": DATE}).encode())
    assert api.startswith(b"HTTP/1.1 200 ") and "content-security-policy" in headers_of(api)


@pytest.mark.parametrize("sent", [b"", b"GET / HTTP/1.1\r\nHost: 127.0.0.1", b"POST /api/translate HTTP/1.1\r\n"
                                  b"Host: {host}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"te"])
def test_a_stalled_connection_is_closed(served, sent):
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", served), timeout=STALL_S + 20) as connection:
        connection.sendall(sent.replace(b"{host}", f"127.0.0.1:{served}".encode()))
        answer = b""
        while chunk := connection.recv(65536):           # uvicorn alone waited for ever here
            answer += chunk
    waited = time.monotonic() - started
    assert STALL_S - 1 < waited < STALL_S + 10, waited
    assert b"200" not in answer[:20]
    assert ask(served, "GET", "/", f"127.0.0.1:{served}").startswith(b"HTTP/1.1 200 ")     # still serving


@needs_chromium
def test_the_page_works_under_its_policy(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"http://127.0.0.1:{served}/")
        page.fill("#source", DATE)
        page.select_option("#beam", "3")
        page.click("#go")
        # selectors only: wait_for_function evaluates a string, which the policy forbids
        page.wait_for_selector(f"#results[data-source='{DATE}'] svg.heatmap", timeout=90_000)
        assert page.locator(".translation-text").count() >= 1
        assert page.locator("svg.heatmap rect.cell").count() > 10
        browser.close()
    assert problems == []                # a blocked script or style is a console error
