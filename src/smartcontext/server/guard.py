"""What every request to our HTTP servers (the web page's and MCP's) must show before any
work is done, as Jupyter and the MCP SDK check it: safe by default against other pages in
the same browser.

- **Host** (a loopback bind): a loopback name with this server's own port, else 421, so a
  rebound DNS name (``evil.example`` resolving to 127.0.0.1) cannot reach the server.
- **Origin**, when the client sends one (browsers always do for writes and WebSockets):
  exactly this server's own origin (scheme, host and port, as the request's Host spells
  it), else 403. A page on another port of 127.0.0.1 is another origin.
- **Sec-Fetch-Site**, when sent: a request that another site (or another port: the same
  *site*) made from a page is refused with 403 unless it is a navigation to a page, so an
  ``<img>`` or a ``<script>`` elsewhere cannot even read-trigger the API.
- **Access token**, when the server has one (required beyond loopback): ``Authorization:
  Bearer TOKEN``, the cookie the server set, or ``?token=TOKEN`` once (answered with that
  cookie, HttpOnly and SameSite=Strict; a page is redirected to its address without it),
  else 401.
- **Content-Type**: a request that can change state (``json_methods``) must say
  ``application/json``, else 415. A page elsewhere can send a ``text/plain`` or form POST
  without asking the server first; a JSON one needs a CORS preflight, which we never grant.
- bodies over the limit: 413 (the SDK's ``RequestBodyLimitMiddleware``).
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from typing import Iterable
from urllib.parse import parse_qsl, urlencode

from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK = ("127.0.0.1", "localhost", "::1")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# Every method that is not a read: each one must carry JSON.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The page's own files only: no inline script, no other site, no framing.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store")]


def new_token() -> str:
    """A fresh access token (32 URL-safe characters, 192 bits)."""
    return secrets.token_urlsafe(24)


def check_token(token: str) -> str:
    """``token`` if it can travel in an address and a cookie as it is, else InvalidArgument."""
    from ..errors import InvalidArgument

    if not re.fullmatch(r"[A-Za-z0-9._~-]{8,256}", token):
        raise InvalidArgument("an access token is 8 to 256 letters, digits, '.', '_', '~' or '-' "
                              "(it travels in an address and a cookie)")
    return token


def is_loopback(host: str) -> bool:
    return host in LOOPBACK


def cookie_name(port: int) -> str:
    # Cookies ignore ports: two servers on one computer would overwrite each other's.
    return f"smartcontext-token-{port}"


class Refusal(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class GuardMiddleware:
    """The checks above on every HTTP request and WebSocket handshake.

    ``host``: the address the server is bound to (loopback: Host names checked);
    ``token``: the access token, or None; ``json_methods``: the methods that must carry
    JSON; ``max_body``: the body limit (None: the app has its own); ``page_headers``: add
    the page's Content-Security-Policy and friends to every answer."""

    def __init__(self, app: ASGIApp, host: str, token: str | None = None,
                 json_methods: Iterable[str] = WRITE_METHODS, max_body: int | None = None,
                 page_headers: bool = True):
        self.app = RequestBodyLimitMiddleware(app, max_body) if max_body is not None else app
        self.check_host = is_loopback(host)
        self.token = token
        self.json_methods = frozenset(json_methods)
        self.page_headers = page_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            query_token = self.check(scope, headers)
        except Refusal as refused:
            await self.refuse(scope, receive, send, refused)
            return
        cookie = self.cookie_header(scope) if query_token else None
        if cookie and scope["type"] == "http" and scope["method"] == "GET" and not _is_api(scope):
            # The token leaves the address bar (and the history) at once.
            await _redirect(scope, send, cookie)
            return
        extra = (SECURITY_HEADERS if self.page_headers else []) + ([(b"set-cookie", cookie)] if cookie else [])

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start" and extra:
                own = list(message.get("headers", []))
                # An answer that states its own cache policy keeps it (the page's
                # content-addressed files); every other answer is not stored.
                add = [h for h in extra if h[0] != b"cache-control"] if any(
                    k.lower() == b"cache-control" for k, _ in own) else extra
                message = {**message, "headers": own + add}
            await send(message)

        await self.app(scope, receive, with_headers)

    # -- the checks ----------------------------------------------------------------------

    def check(self, scope: Scope, headers: Headers) -> bool:
        """Refusal unless the request may go on; True when it showed the token as ``?token=``."""
        host = headers.get("host", "")
        port = _server_port(scope)
        name, host_port = _split_host(host)
        if self.check_host and (name not in LOOPBACK_NAMES or host_port not in (None, port)):
            raise Refusal(421, f"Host {host or '(none)'!r} is not this server (a loopback name with "
                               f"port {port}): this server only answers pages on this computer")
        origin = headers.get("origin")
        own = _own_origin(scope, name, host_port or port)
        if origin is not None and origin.lower() != own:
            raise Refusal(403, f"Origin {origin!r} is not this server's own ({own}): "
                               "another page cannot use this server")
        site = headers.get("sec-fetch-site")
        if site in ("cross-site", "same-site") and headers.get("sec-fetch-mode") != "navigate":
            raise Refusal(403, f"a request made by a page of another site or port ({site}) is refused")
        from_query = False
        if self.token is not None:
            given, from_query = self.presented_token(scope, headers, port)
            if given is None:
                raise Refusal(401, "this server needs its access token: open the address it printed at "
                                   "start (…/?token=…) or send 'Authorization: Bearer TOKEN'")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                raise Refusal(401, "wrong access token: use the one the server printed at start")
        if scope["type"] == "http" and scope["method"] in self.json_methods:
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            # A DELETE that sends nothing has nothing to label (and no page elsewhere can
            # send one: it needs a CORS preflight); anything it does send must be JSON.
            empty = (scope["method"] == "DELETE" and not media and "transfer-encoding" not in headers
                     and headers.get("content-length", "0") == "0")
            if media != "application/json" and not empty:
                raise Refusal(415, f"{scope['method']} needs 'Content-Type: application/json', not "
                                   f"{media or 'none'!r}: send the arguments as a JSON object")
        return from_query

    def presented_token(self, scope: Scope, headers: Headers, port: int) -> tuple[str | None, bool]:
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return auth[7:].strip(), False
        for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
            if name == "token":
                return value, True
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == cookie_name(port):
                return value, False
        return None, False

    def cookie_header(self, scope: Scope) -> bytes:
        assert self.token is not None
        secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
        return (f"{cookie_name(_server_port(scope))}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                f"{secure}").encode()

    async def refuse(self, scope: Scope, receive: Receive, send: Send, refused: Refusal) -> None:
        if scope["type"] == "websocket":
            # Closing before accepting answers the handshake with 403.
            reason = str(refused).encode()[:120].decode("utf-8", "ignore")  # a close reason: 123 bytes at most
            await send({"type": "websocket.close", "code": 1008, "reason": reason})
            return
        body = json.dumps({"success": False, "error": str(refused)}, ensure_ascii=False).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": refused.status,
                    "headers": headers + (SECURITY_HEADERS if self.page_headers else [])})
        await send({"type": "http.response.body", "body": body})


def _server_port(scope: Scope) -> int:
    server = scope.get("server")
    if server and server[1] is not None:
        return int(server[1])
    return 443 if scope.get("scheme") in ("https", "wss") else 80


def _default_port(scope: Scope) -> int:
    return 443 if scope.get("scheme") in ("https", "wss") else 80


def _split_host(host: str) -> tuple[str, int | None]:
    """A Host header's name (lower case, IPv6 in brackets) and port (None: not given). A
    malformed one comes back whole, so it matches no name."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]") + 1
        name, rest = (host[:end], host[end:]) if end else (host, "")
    else:
        name, colon, port = host.partition(":")
        rest = colon + port
    if not rest:
        return name, None
    if rest[0] == ":" and rest[1:].isdigit():
        return name, int(rest[1:])
    return host, None


def _own_origin(scope: Scope, name: str, port: int) -> str:
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    # Browsers leave the scheme's own port out of an Origin.
    return f"{scheme}://{name}" if port == _default_port(scope) else f"{scheme}://{name}:{port}"


def _is_api(scope: Scope) -> bool:
    path = scope.get("path", "")
    return path.startswith("/api/") or path == "/ws"


async def _redirect(scope: Scope, send: Send, cookie: bytes) -> None:
    kept = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            if k != "token"]
    location = scope.get("root_path", "") + scope["path"] + (f"?{urlencode(kept)}" if kept else "")
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"set-cookie", cookie),
                            (b"content-length", b"0"), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": b""})
