"""The explorer as a careful local server (nmt.explore): it answers only
requests addressed to it, its page runs only its own script, and a client
that stalls is cut off.

- Host: a page on another site whose name an attacker points at 127.0.0.1
  (DNS rebinding) reaches the explorer with `Host: evil.example:PORT`; every
  request whose Host is not 127.0.0.1:PORT or localhost:PORT is refused with
  403 and one line, before the app sees it.
- Content-Security-Policy: the page's inline script is allowed by its
  SHA-256 (computed from the page served, so an edited page stays allowed),
  nothing else runs; it may talk to its own origin only, load no other
  resource, and be framed by nobody. Styles may be inline (the views set
  colours in style attributes); styles run no code.
- A connection that sends no complete request (headers, or a body) within
  STALL_S of opening, or of its last answer, is closed: uvicorn alone waits
  for ever on a half-sent header.
"""

import base64
import hashlib
import json
import re

STALL_S = 10.0          # seconds a client may take to send a whole request
SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def allowed_hosts(port: int) -> frozenset[bytes]:
    """The Host headers of requests meant for the explorer on 127.0.0.1:port."""
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    if port == 80:                      # a browser leaves the default port out
        hosts |= {"127.0.0.1", "localhost"}
    return frozenset(h.encode("ascii") for h in hosts)


def content_security_policy(page: str) -> str:
    """The policy for `page`: its own inline scripts (by hash) and nothing else."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(body.encode('utf-8')).digest()).decode()}'"
                      for body in SCRIPT.findall(page))
    return (f"default-src 'none'; script-src {hashes or chr(39) + 'none' + chr(39)}; style-src 'unsafe-inline'; "
            "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class HostGuard:
    """ASGI middleware: 403 for a request whose Host is not the explorer's address;
    every answer carries `headers` (the Content-Security-Policy, ...)."""

    def __init__(self, app, port: int, headers: dict[str, str]):
        self.app, self.port, self.hosts = app, port, allowed_hosts(port)
        self.headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        hosts = [value for name, value in scope.get("headers", []) if name == b"host"]
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            shown = hosts[0].decode("latin-1")[:80] if hosts else "none"
            body = json.dumps({"error": f"Host {shown!r} is not this explorer's address; open "
                                        f"http://127.0.0.1:{self.port}/ (requests for other names are refused: "
                                        "a page elsewhere could use such a name to drive the explorer)"}).encode()
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), *self.headers]})
            await send({"type": "http.response.body", "body": body})
            return None

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        return await self.app(scope, receive, send_with_headers)


def stall_protocol():
    """uvicorn's h11 protocol, closing a connection whose request stalls (STALL_S)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class StallTimeoutProtocol(H11Protocol):
        _stall = None

        def _arm(self) -> None:
            if self._stall is not None:
                self._stall.cancel()
            self._stall = self.loop.call_later(STALL_S, self._stalled)

        def _stalled(self) -> None:
            self._stall = None
            waiting = self.cycle is None or self.cycle.response_complete      # for the headers
            if (waiting or self.cycle.more_body) and not self.transport.is_closing():
                self.transport.close()           # no request will come whole: let go of the connection

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc) -> None:
            if self._stall is not None:
                self._stall.cancel()
            super().connection_lost(exc)

    return StallTimeoutProtocol
