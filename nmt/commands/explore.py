"""python -m nmt.explore --checkpoint PATH [--compare PATH2] [--hf NAME] [--port N]: the attention explorer.

    python -m nmt.explore --model multi30k-de-en      # the model shipped with nmt (nmt.pretrained)

Serves a local page on 127.0.0.1: type a source sentence (or pick one of
the validation sentences stored in the checkpoint), choose greedy or a beam
size, and see the translation, its score and interactive heatmaps of every
attention map (Transformer cross- and self-attention by layer and head, RNN
attention with local-p's centre and window). With --compare, a second
model translates the same sentence beside the first.

The page's API: POST /api/translate with Content-Type: application/json and
a body {"text": "...", "beam_size": 1..10, "prefix": "..." (optional),
"explain": a method of nmt.explain.METHODS and "top_k": 0..50 (optional)} of
at most 64 KiB (MAX_BODY), answered with {"results": [one per model]}, each
with its beam tree ("tree") for a beam (with "explain", that method's map
first among its maps; with "top_k", each step's alternatives), and with a prefix also
{"forced": [one per model]}: the translation that starts with it. POST /api/prefix
{"model": index, "text": "...", "tokens": [target ids]} answers {"map": the cross-attention
of that prefix, every layer and head}: a beam node clicked in the tree. A reply's maps carry
their last layer and the model view's thumbnails only; POST /api/maps {"id", "map",
"layer"} answers that layer's bytes (Accept: application/octet-stream), or {"heads": them
in base64} (nmt.viz.on_demand), and POST /api/alternatives
{"id", "k"} each step's k most probable subwords (the page asks when its button is pressed;
"top_k" in a translate request sends them at once). Anything else is a 4xx with
{"error": "one line"}: 400 for a body that is not such an object (not
JSON, nested too deeply, a lone surrogate in the text), 404/405 for another path
or method, 413 for a larger body (refused before it is parsed, by its
Content-Length or as it streams in), 415 for another content type, and 403
for a request whose Host is not 127.0.0.1:PORT or localhost:PORT (a page
elsewhere pointing its name at 127.0.0.1). Every answer carries a
Content-Security-Policy that lets only the page's own script run, and a client
that sends no whole request within 10 s is cut off (nmt.commands.explore_guard).
"""


import argparse
import json
import socket
import sys
import threading

from nmt.base import signals
from nmt.base.cli import command
from nmt.base.cli_checks import ArgumentParser, check_checkpoint_exists
from nmt.base.errors import NmtError
from nmt.commands.model_options import add_device_option, add_model_options

BEAMS = (1, 2, 3, 4, 5, 8, 10)
MAX_BODY = 64 * 1024            # bytes of a request body; a sentence is far smaller


class Refused(Exception):
    """A request the API answers with `status` and {"error": message}."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_json(request):
    """The request's JSON body, or Refused: its type and size are checked
    before the body is read, and its size again as it streams in."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, f"send the body as JSON with Content-Type: application/json "
                           f"(got {kind or 'none'})")
    length = request.headers.get("content-length")
    if length is not None and not length.isdigit():
        raise Refused(400, "the Content-Length header is not a number")
    if length is not None and int(length) > MAX_BODY:
        raise Refused(413, f"the request body is {length} bytes; the explorer takes at most {MAX_BODY}")
    from starlette.requests import ClientDisconnect

    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise Refused(413, f"the request body is over {MAX_BODY} bytes; the explorer takes at "
                                   f"most {MAX_BODY}")
    except ClientDisconnect:             # the client left (or sent a broken body): nobody to answer
        raise Refused(400, "the client disconnected before the request body was complete") from None
    try:
        return json.loads(bytes(body))
    except RecursionError:
        raise Refused(400, "the request body is nested too deeply; send {text, beam_size}") from None
    except ValueError:                   # not JSON, or not UTF-8
        raise Refused(400, "the request body is not JSON") from None


class Model:
    """A loaded checkpoint: translator, short name, description, samples."""

    def __init__(self, path: str, device: str, name: str | None = None):
        from nmt.store.checkpoints import load_checkpoint
        from nmt.translator import Translator
        from nmt.viz.attention_data import describe
        from nmt.viz.html_export import model_label

        self.translator = Translator.from_checkpoint(path, device=device)
        state = load_checkpoint(path, parts=("model",))
        samples, references = state.get("samples") or [], state.get("sample_references") or []
        if len(references) != len(samples):      # a checkpoint without them: no reference shown
            references = [None] * len(samples)
        kept = [(s, r) for s, r in zip(samples, references) if isinstance(s, str) and s.strip()]
        self.samples = [s for s, _ in kept]
        self.references = [r if isinstance(r, str) else None for _, r in kept]
        self.name, self.description = name or model_label(path), describe(self.translator)


class HFModel:
    """A Hugging Face encoder-decoder in the explorer: translator, name, description, no samples."""

    def __init__(self, name: str, device: str):
        from nmt.hf.translator import HFTranslator

        self.translator = HFTranslator(name, device=device)
        self.samples, self.references = [], []
        self.name, self.description = f"{name} (Hugging Face)", self.translator.describe()


def vocabulary_note(models: list[Model]) -> str | None:
    """What the page says when compared models split text differently."""
    if len(models) < 2:
        return None
    first = models[0].translator.tokenizer.to_bytes()
    sides = [name for side, name in (("src", "source"), ("tgt", "target"))
             if any(m.translator.tokenizer.to_bytes().get(side) != first.get(side) for m in models[1:])]
    if not sides:
        return None
    return (f"These models use different {' and '.join(sides)} vocabularies (sentencepiece models): "
            "the same sentence is cut into other subwords, so their maps have other rows and columns "
            "and their scores are over different numbers of subwords.")


def parse_request(body, translator) -> tuple[str, int, str | None]:
    """The text, beam size and forced prefix (None: none) of a translate
    request; NmtError with what is wrong."""
    from nmt.decoding.interface import check_text
    from nmt.viz.attention_data import check_source

    if not isinstance(body, dict):
        raise NmtError("send a JSON object {text, beam_size}")
    text, beam = body.get("text"), body.get("beam_size", 1)
    if text is None:
        raise NmtError("the source sentence is missing; type or paste one")
    if not isinstance(text, str):
        kind = {bool: "true or false", int: "a number", float: "a number", list: "a list",
                dict: "an object"}.get(type(text), type(text).__name__)
        raise NmtError(f"text must be a string, not {kind}")
    if isinstance(beam, bool) or not isinstance(beam, int) or not 1 <= beam <= max(BEAMS):
        raise NmtError(f"beam_size must be a whole number from 1 to {max(BEAMS)}")
    prefix, links = body.get("prefix"), body.get("links")
    if prefix is not None and not isinstance(prefix, str):
        raise NmtError("prefix must be a string: the start of the translation to force")
    if links is not None and not isinstance(links, str):
        raise NmtError("links must be a string of Pharaoh links 'i-j i-j ...'")
    check_text(text, "the source sentence")
    check_text(prefix or "", "the prefix")
    check_source(translator, text)     # the same message for every model
    return text, beam, (prefix.strip() or None) if prefix else None, (links or "").strip() or None


def parse_prefix_request(body, models: list) -> tuple:
    """The model, text and token ids of POST /api/prefix {model, text, tokens}; NmtError when wrong."""
    if not isinstance(body, dict):
        raise NmtError("send a JSON object {model, text, tokens}")
    index = body.get("model")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(models):
        raise NmtError(f"model must be a whole number from 0 to {len(models) - 1}")
    if not isinstance(body.get("text"), str):
        raise NmtError("text must be a string: the source sentence")
    return models[index], body["text"], body.get("tokens")


def error(message: str, status: int = 400):
    """The API's answer to a request it refuses: {"error": one line} with `status`."""
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": message}, status_code=status)


def create_app(models: list[Model], sample_links: list[str] | None = None, port: int = 8000):
    """The FastAPI app: GET / the page, POST /api/translate {text, beam_size}
    -> {results: [one per model]} or {error} with status 400; a request whose
    Host is not 127.0.0.1:port (or localhost:port) gets 403, and every answer
    the page's Content-Security-Policy (nmt.commands.explore_guard)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse
    from starlette.concurrency import run_in_threadpool

    from nmt.commands.explore_guard import HostGuard, content_security_policy
    from nmt.viz.html_export import render_page
    from nmt.viz.explanation_maps import explain_request, explained
    from nmt.viz.on_demand import ShownOnly

    # redirect_slashes: /api/translate/ is another path (404 in JSON), not a 307 without a body
    app = FastAPI(title="nmt attention explorer", docs_url=None, redoc_url=None, openapi_url=None,
                  redirect_slashes=False)
    lock = threading.Lock()          # one translation at a time: the models are shared
    shown = ShownOnly()              # each reply carries what the page shows; the rest on request
    page = render_page({"mode": "server", "title": "nmt attention explorer",
                        "models": [{"name": m.name, "description": m.description} for m in models],
                        "samples": models[0].samples, "references": models[0].references, "beams": list(BEAMS),
                        "links": sample_links, "note": vocabulary_note(models)})
    app.add_middleware(HostGuard, port=port, headers={"Content-Security-Policy": content_security_policy(page),
                                                      "X-Content-Type-Options": "nosniff"})

    @app.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse)
    def index():                     # HEAD: the same headers, no body (uvicorn drops it)
        return page

    @app.post("/api/translate")
    async def translate(request: Request):
        try:
            body = await read_json(request)
        except Refused as refused:
            return error(str(refused), refused.status)
        try:
            text, beam, prefix, links = parse_request(body, models[0].translator)
            methods, top_k = explain_request(body)
        except NmtError as problem:
            return error(str(problem))
        results = await run_in_threadpool(_translate_all, models, text, beam, lock, None, links)
        forced = (await run_in_threadpool(_translate_all, models, text, beam, lock, prefix, links)
                  if prefix else None)   # what if: the forced translation beside the free one
        await explained(models, lock, methods, top_k, results, forced or [])
        reply = {"results": [shown.send(r, i) for i, r in enumerate(results)]}
        if forced is not None:
            reply["forced"] = [shown.send(r, i) for i, r in enumerate(forced)]
        return reply

    add_on_demand(app, models, lock, shown)
    add_error_handlers(app)
    return app


def add_error_handlers(app) -> None:
    """Every error the routes do not answer themselves is JSON with one line too."""
    from starlette.exceptions import HTTPException

    @app.exception_handler(HTTPException)
    async def http_error(request, exc):    # another path (404) or method (405): JSON too
        return error(f"{exc.detail}: the API is POST /api/translate", exc.status_code)

    @app.exception_handler(Exception)
    async def unexpected(request, exc):    # a bug: uvicorn logs the traceback; the page gets one line
        return error(f"internal error ({type(exc).__name__}); see the explorer's terminal", 500)


def add_on_demand(app, models: list, lock, shown) -> None:
    """The routes that send what the page shows when it shows it: POST /api/maps
    (a layer of a kept result, nmt.viz.on_demand), POST /api/alternatives (a kept
    result's top-k alternatives, nmt.viz.explanation_maps) and POST /api/prefix
    (a beam node's prefix, every layer and head)."""
    from fastapi import Request
    from starlette.concurrency import run_in_threadpool

    from nmt.viz.explanation_maps import alternatives_on_demand, locked
    from nmt.viz.search_tree import prefix_attention

    from starlette.responses import Response

    def route(path: str, answer) -> None:     # answer(body, binary) -> the reply (bytes: sent as they are)
        @app.post(path)
        async def answered(request: Request):
            binary = "application/octet-stream" in request.headers.get("accept", "")
            try:
                reply = await run_in_threadpool(answer, await read_json(request), binary)
                return Response(reply, media_type="application/octet-stream") if isinstance(reply, bytes) else reply
            except Refused as refused:
                return error(str(refused), refused.status)
            except NmtError as problem:
                return error(str(problem))

    def prefix(body, _) -> dict:
        model, text, tokens = parse_prefix_request(body, models)
        return {"map": locked(lock, prefix_attention, model.translator, text, tokens)}

    route("/api/maps", shown.layer)       # a layer the page shows now: its bytes, or them in JSON
    route("/api/alternatives", lambda body, _: locked(lock, alternatives_on_demand, models, shown, body))
    route("/api/prefix", prefix)          # a beam node's prefix: its attention, every layer and head


def _translate_all(models, text, beam, lock, prefix=None, links=None) -> list[dict]:
    """Every model's translation, maps and beam tree (its first subwords
    forced to `prefix`, when given; reference `links` read against its
    attention), or its one-line problem."""
    from nmt.viz.alignment_view import alignment_readings, parse_links
    from nmt.viz.search_tree import explain_with_tree

    results = []
    with lock:
        for model in models:
            try:
                results.append(explain_with_tree(model.translator, text, beam, prefix))
            except NmtError as problem:
                results.append({"error": str(problem)})
                continue
            if links:                    # links that do not fit are said beside the map, in one line
                try:
                    results[-1]["alignment"] = alignment_readings(results[-1], parse_links(links, "the links"),
                                                                  "the links")
                except NmtError as problem:
                    results[-1]["alignment"] = {"error": str(problem)}
    return results


def read_sample_links(path: str, model) -> list[str]:
    """--links FILE: one Pharaoh line per validation sentence of the first model."""
    from nmt.data.readers import read_lines
    from nmt.viz.alignment_view import parse_links

    lines = read_lines(path)
    if len(lines) != len(model.samples):
        raise NmtError(f"--links {path} has {len(lines)} lines but {model.name} holds {len(model.samples)} "
                       "validation sentences; give one line of links for each")
    for number, line in enumerate(lines, 1):
        parse_links(line, f"--links {path} line {number}")
    return lines


def check_port(port: int) -> None:
    """Fail at start, in one line, when 127.0.0.1:port cannot be served."""
    if not 0 < port < 65536:
        raise NmtError(f"--port {port} is not a TCP port; pick one from 1 to 65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise NmtError(f"cannot listen on 127.0.0.1:{port} ({error.strerror or error}); "
                           "pick another with --port") from None


def parse_args(argv=None) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m nmt.explore", description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="a .pt file written by nmt.train")
    add_model_options(parser, "with --checkpoint, shown beside it")
    parser.add_argument("--compare", metavar="PATH2", help="a second checkpoint, shown side by side")
    parser.add_argument("--links", metavar="FILE",
                        help="reference word links (Pharaoh 'i-j ...'), one line per validation sentence of the "
                             "checkpoint, filled in when one is picked; links can also be typed on the page")
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1")
    add_device_option(parser)
    return parser.parse_args(argv)


@command
def main(argv=None) -> int:
    args = parse_args(argv)
    check_port(args.port)
    if args.model and args.checkpoint:
        raise NmtError("give --checkpoint PATH or --model NAME, not both (--compare PATH2 adds a second model)")
    if args.model:
        from nmt.pretrained import checkpoint_path

        args.checkpoint = str(checkpoint_path(args.model))     # an unknown name: one line of the names
    if not args.checkpoint and not args.hf:
        raise NmtError("give a model to explore: --checkpoint PATH (nmt), --model NAME (one shipped with nmt, "
                       "e.g. multi30k-de-en) or --hf NAME_OR_FOLDER (Hugging Face)")
    for path in (args.checkpoint, args.compare):     # before the seconds of importing torch
        if path is not None:
            check_checkpoint_exists(path)
    from nmt.viz.html_export import model_labels

    paths = [p for p in (args.checkpoint, args.compare) if p]
    models = [Model(path, args.device, name) for path, name in zip(paths, model_labels(paths))] if paths else []
    if args.hf:                      # beside a checkpoint: after it; alone with --compare: before it
        hf = HFModel(args.hf, args.device)
        models = models + [hf] if args.checkpoint else [hf] + models
    app = create_app(models, read_sample_links(args.links, models[0]) if args.links else None, args.port)
    import uvicorn

    from nmt.commands.explore_guard import stall_protocol

    print(f"nmt: attention explorer on http://127.0.0.1:{args.port}/ (Ctrl-C stops it)",
          file=sys.stderr, flush=True)
    # uvicorn takes Ctrl-C over while it serves: it shuts down, then raises the signal again
    signals.set_context("; the explorer has shut down")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", http=stall_protocol())
    return 0


def cli() -> None:
    """The `nmt-explore` console command: what `python -m nmt.explore` runs."""
    from nmt.commands import run

    run("explore")
