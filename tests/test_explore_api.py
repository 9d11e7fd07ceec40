"""The explorer's API against any request body: every answer is 200 or a 4xx
with {"error": one line}, never a 500, and nothing is logged with a
traceback. Hypothesis writes the bodies (JSON values of any shape, the
request's own fields with odd values, raw bytes); hand-picked cases cover
size, nesting, content type, paths and methods."""

import asyncio
import json
import logging

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from nmt.commands.explore import MAX_BODY, Model, create_app
from tests.helpers import one_thread  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

DATE = "monday the twenty first of march nineteen eighty four"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def client(toy_checkpoint):
    app = create_app([Model(str(toy_checkpoint), "cpu")])
    # Server exceptions come back as their 500 answer, which the tests refuse.
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1:8000") as client:
        yield client


@pytest.fixture
def no_traceback_logged(caplog):
    caplog.set_level(logging.DEBUG)
    yield
    logged = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not logged, [r.getMessage() for r in logged]


def answered_well(reply):
    """200 with results, or a 4xx with one line of error; JSON either way."""
    assert reply.status_code == 200 or 400 <= reply.status_code < 500, (reply.status_code, reply.text)
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    body = reply.json()
    if reply.status_code == 200:
        assert isinstance(body["results"], list)
    else:
        assert set(body) == {"error"} and isinstance(body["error"], str), body
        assert body["error"] and "\n" not in body["error"] and "Traceback" not in body["error"]
    return body


# -- hypothesis ----------------------------------------------------------------------

# Characters sentencepiece and JSON find hard, besides any Unicode character.
ODD = st.sampled_from(["\ud800", "\udfff", "\udc80", "\x00", "\n", "\r", "\t", "\x1b", "\x85",
                       "\u2028", "\u200b", "\ufeff", "\ufffe", "\U0010ffff", "\u0301", " "])
# st.text() leaves lone surrogates out whatever its alphabet: join characters instead.
TEXT = st.lists(st.characters() | ODD, max_size=40).map("".join)
SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | TEXT)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(TEXT, inner, max_size=4), max_leaves=16)
REQUESTS = st.fixed_dictionaries(
    {}, optional={"text": TEXT | JSON_VALUES, "beam_size": st.integers(-2, 12) | JSON_VALUES,
                  "extra": JSON_VALUES})
BODIES = st.one_of(
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),          # any JSON, NaN and Infinity too
    REQUESTS.map(lambda v: json.dumps(v).encode()),             # the API's fields, odd values
    REQUESTS.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),                                    # not JSON, or not UTF-8
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(body=BODIES, content_type=st.sampled_from(["application/json", "application/json; charset=utf-8",
                                                  "text/plain", "application/x-www-form-urlencoded", None]))
def test_any_body_is_answered_with_json_and_never_a_500(client, no_traceback_logged, body, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    reply = client.post("/api/translate", content=body, headers=headers)
    answered_well(reply)
    if content_type is None or not content_type.startswith("application/json"):
        assert reply.status_code == 415


def has_lone_surrogate(text: str) -> bool:
    """What the server receives holds a lone surrogate: through JSON a high surrogate
    before a low one is one character ("\\ud800\\udc00" is U+10000), not two."""
    return any("\ud800" <= c <= "\udfff" for c in json.loads(json.dumps(text)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(text=TEXT, beam=st.sampled_from([1, 2, 5, 10]))
def test_any_text_is_translated_or_refused_in_one_line(client, no_traceback_logged, text, beam):
    # json.dumps writes a lone surrogate as \ud800, as a browser's JSON.stringify does
    reply = client.post("/api/translate", content=json.dumps({"text": text, "beam_size": beam}).encode(),
                        headers=JSON)
    body = answered_well(reply)
    if has_lone_surrogate(text):
        assert reply.status_code == 400 and "lone surrogate" in body["error"]
    elif text.strip() and "\n" not in text.strip():
        assert reply.status_code == 200, body


def test_the_text_strategy_reaches_lone_surrogates():
    """st.text() leaves them out whatever its alphabet; TEXT must not."""
    found = find(TEXT, has_lone_surrogate,
                 settings=settings(database=None, max_examples=200))
    assert len(found) == 1


# -- hand-picked -------------------------------------------------------------------

def test_a_lone_surrogate_is_one_line(client, no_traceback_logged):
    reply = client.post("/api/translate", content=b'{"text": "a\\ud800b"}', headers=JSON)
    assert reply.status_code == 400
    assert reply.json() == {"error": "the source sentence holds a lone surrogate (U+D800 at character 2), "
                                     "which is not text; decode the input as UTF-8 with errors='strict' "
                                     "or 'replace'"}


@pytest.mark.parametrize("body, message", [
    (b'{"beam_size": 1}', "the source sentence is missing; type or paste one"),
    (b'{"text": null}', "the source sentence is missing; type or paste one"),
    # was 'missing' too: the text is there, but not as a string
    (b'{"text": 5}', "text must be a string, not a number"),
    (b'{"text": ["a"]}', "text must be a string, not a list"),
    (b'{"text": {"a": 1}}', "text must be a string, not an object"),
    (b'{"text": true}', "text must be a string, not true or false"),
])
def test_a_text_that_is_not_a_string_says_so(client, no_traceback_logged, body, message):
    reply = client.post("/api/translate", content=body, headers=JSON)
    assert reply.status_code == 400
    assert reply.json() == {"error": message}


@pytest.mark.parametrize("depth", [1000, 30000])
def test_deep_nesting_is_refused(client, no_traceback_logged, depth):
    reply = client.post("/api/translate", content=b"[" * depth + b"]" * depth, headers=JSON)
    assert reply.status_code == 400
    assert reply.json()["error"] in ("send a JSON object {text, beam_size}",
                                     "the request body is nested too deeply; send {text, beam_size}")


def test_a_body_over_the_limit_is_refused_by_its_length(client, no_traceback_logged):
    body = json.dumps({"text": "x" * MAX_BODY}).encode()
    reply = client.post("/api/translate", content=body, headers=JSON)
    assert reply.status_code == 413
    assert reply.json() == {"error": f"the request body is {len(body)} bytes; the explorer takes at most "
                                     f"{MAX_BODY}"}


def test_a_streamed_body_over_the_limit_is_refused_as_it_comes(client, no_traceback_logged):
    """No Content-Length (chunked transfer): the body is counted as it streams
    in, and the app stops reading at the limit. Driven at the ASGI level, where
    the chunks the app asked for can be counted (TestClient reads all first)."""
    app, read = client.app, []

    async def receive():
        read.append(1)                    # 1000 chunks of 1 KiB: far over the limit
        return {"type": "http.request", "body": b"[" * 1024, "more_body": len(read) < 1000}

    answer = []

    async def send(message):
        answer.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/api/translate", "raw_path": b"/api/translate", "root_path": "",
             "query_string": b"", "headers": [(b"content-type", b"application/json"), (b"host", b"127.0.0.1:8000")],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    assert answer[0]["status"] == 413
    error = json.loads(b"".join(m.get("body", b"") for m in answer[1:]))["error"]
    assert error == f"the request body is over {MAX_BODY} bytes; the explorer takes at most {MAX_BODY}"
    assert len(read) == MAX_BODY // 1024 + 1          # not one chunk more


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "multipart/form-data"])
def test_another_content_type_is_refused(client, no_traceback_logged, content_type):
    reply = client.post("/api/translate", content=json.dumps({"text": DATE}).encode(),
                        headers={"Content-Type": content_type})
    assert reply.status_code == 415
    assert reply.json()["error"].startswith("send the body as JSON with Content-Type: application/json")


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/api/translate", 405), ("PUT", "/api/translate", 405), ("DELETE", "/", 405),
    ("POST", "/api/other", 404), ("GET", "/nothing", 404),
    ("POST", "/api/translate/", 404), ("GET", "/api/translate/", 404),   # was a 307 redirect, no JSON
])
def test_other_paths_and_methods_answer_json(client, no_traceback_logged, method, path, status):
    reply = client.request(method, path, follow_redirects=False)
    assert reply.status_code == status
    assert reply.json()["error"].endswith(": the API is POST /api/translate")


def test_a_good_request_still_translates(client, no_traceback_logged):
    reply = client.post("/api/translate", json={"text": DATE, "beam_size": 2})
    assert reply.status_code == 200
    (result,) = reply.json()["results"]
    assert result["src_pieces"]
