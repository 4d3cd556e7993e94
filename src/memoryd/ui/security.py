"""The console's guard: token, cookie, Host/Origin checks, CSRF and security headers.

The rules it shares with the MCP HTTP transport are `memoryd.shared.http_security`'s (one implementation):
loopback by default; binding any other address needs `MEMORYD_TOKEN` (at least 32 characters);
constant-time token checks, `Authorization: Bearer` in any case; Host and Origin against the same
allow-list (bind address, loopback names, `--allowed-host`). On top of them, what a browser page needs:
- the console answers only under its capability path (`console_path`: a random first path segment per run,
  printed with the address); anything else is 404, whatever credential it carries;
- every request carries the token: `?token=` once (answered with an HttpOnly, SameSite=Strict
  cookie scoped to the capability path, and a redirect that drops the token from the address bar), then the
  cookie, or an `Authorization: Bearer` header (scripts, benchmarks). Cookies ignore ports, but not paths: a
  page another local program serves on the console's own address (another port) is never sent the cookie,
  since it cannot name the path, and a cookie replayed outside the path is refused;
- a state-changing request (anything but GET/HEAD/OPTIONS) must come from the console's own
  origin, port included (Origin, else Referer; `Sec-Fetch-Site` must not say cross-site) and carry
  the CSRF token (url-encoded form field `_csrf`, or header `X-CSRF-Token`), checked here for every
  route;
- every response says `Content-Security-Policy: default-src 'none'; script-src 'self'; …`:
  no inline script or style, nothing from the network.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..shared.http_security import (
    MIN_TOKEN_CHARS,
    TokenError,
    allowed_names,
    bearer_ok,
    host_of,
    new_token,
    origins,
    read_body,
    refusal,
    replay,
    same,
    server_token,
)  # fmt: skip

__all__ = [
    "BIDI_CONTROLS", "CSP", "CSRF_FIELD", "CSRF_HEADER", "MIN_TOKEN_CHARS", "ConsoleGuard", "TokenError",
    "allowed_hosts", "bidi_visible", "console_path", "derive", "resolve_token", "same_site_path",
]  # fmt: skip

CSRF_FIELD = "_csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_FORM_BYTES = 1 << 20  # a memory is at most MEMORYD_MAX_CONTENT_CHARS; forms never need more
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on form posts.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def same_site_path(path: str) -> str:
    """A redirect target that stays on this server: `//evil.example/` (or `/\\evil.example`) would be read by
    the browser as another host, so leading slashes and backslashes collapse into one slash."""
    return "/" + path.lstrip("/\\")


# Characters that reorder what follows them (bidi embeddings, overrides, isolates, marks): stored text
# with them displays as other text (`invoice_\u202efdp.exe` shows as `invoice_exe.pdf`). The console
# shows each as a visible `[U+202E]` instead (stored bytes stay; an edit saved from the console keeps
# the visible form, which is the point).
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_VISIBLE = {ord(c): f"[U+{ord(c):04X}]" for c in BIDI_CONTROLS}


def bidi_visible(value: object) -> object:
    """Jinja's `finalize` for the console: every rendered string with its bidi controls made visible."""
    from markupsafe import Markup

    if isinstance(value, Markup):  # already-escaped HTML: the markers hold no HTML-special characters
        return Markup(str(value).translate(_BIDI_VISIBLE))
    if isinstance(value, str):
        return value.translate(_BIDI_VISIBLE)
    return value


def resolve_token(host: str, env_token: str | None) -> str:
    """The console's token: `MEMORYD_TOKEN` when set, else a new one (loopback only).

    Raises TokenError (the transport's rules, `http_security.server_token`).
    """
    return server_token(host, env_token) or new_token()


def derive(token: str, purpose: str) -> str:
    """A value bound to the token for one purpose (cookie, csrf): knowing it does not reveal the token."""
    return hmac.new(token.encode(), f"memoryd-ui:{purpose}".encode(), hashlib.sha256).hexdigest()


def console_path() -> str:
    """A new capability path for one console run (`/` and 22 URL-safe characters, 128 random bits): the console
    answers only under it and scopes its cookie to it. /proc/net/tcp shows every local program the console's
    address and port; the path is only in the address printed (with the token) for its person."""
    return "/" + secrets.token_urlsafe(16)


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> set[str]:
    """The console's own addresses (`host:port`): the allowed names of `http_security` on its port."""
    return origins(allowed_names(host, extra), port)


class ConsoleGuard:
    """ASGI middleware in front of the console app (see the module docstring for the rules)."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str], cookie_name: str = "memoryd_ui",
                 path: str = "") -> None:  # fmt: skip
        """`hosts`: the console's own addresses, `host:port` (`allowed_hosts`); their names are the Host allow-list.
        `path`: the capability path (`console_path()`) it answers under, below the ASGI root path; "" for none
        (an app mounted by a caller that checks the path itself, or tests)."""
        if path and (not path.startswith("/") or "/" in path[1:]):
            raise ValueError(f"a console path is one segment starting with '/', got {path!r}")
        self.app = app
        self.token = token
        self.hosts = frozenset(h.lower() for h in hosts)
        self.names = {host_of(h) for h in self.hosts}
        self.cookie_name = cookie_name
        self.path = path
        self.cookie_value = derive(token, f"cookie{path}")
        self.csrf = derive(token, "csrf")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *[(k, v) for k, v in SECURITY_HEADERS if k not in present]]  # fmt: skip
            await send(message)

        response, scope = self._capability(scope)
        if response is None:
            response = self._check(scope)
        if response is None and scope["method"] not in SAFE_METHODS:
            response, receive = await self._check_csrf(scope, receive)
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        scope.setdefault("state", {})["csrf"] = self.csrf
        await self.app(scope, receive, send_with_headers)

    async def _check_csrf(self, scope: Scope, receive: Receive) -> tuple[Response | None, Receive]:
        """The CSRF token from the header, or from the url-encoded form (whose body is then replayed)."""
        headers = Headers(scope=scope)
        if same(headers.get(CSRF_HEADER), self.csrf):
            return None, receive
        if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return _refuse(403, "missing CSRF token: send the form from the console page"), receive
        body, stopped = await read_body(receive, MAX_FORM_BYTES)
        if stopped == "disconnect":
            return _refuse(400, "the request ended early"), receive
        if stopped == "too large":
            return _refuse(413, f"form larger than {MAX_FORM_BYTES} bytes"), receive
        fields = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        given = [v for k, v in fields if k == CSRF_FIELD]
        if len(given) != 1 or not same(given[0], self.csrf):
            return _refuse(403, "missing or wrong CSRF token: reload the console page and send the form again"), receive
        return None, replay(body, receive)

    def _capability(self, scope: Scope) -> tuple[Response | None, Scope]:
        """(a refusal, or None and the scope the console sees: its root path ending with the capability path).

        Host and Origin first (403), then the path: outside the capability path 404, whatever the request
        carries; the path itself redirects to its `/` form."""
        headers = Headers(scope=scope)
        problem = refusal(self.names, headers.get("host", ""), headers.get("origin"))
        if problem is not None:
            return _refuse(403, f"{problem}, or open the address memoryd ui printed"), scope
        if not self.path:
            return None, scope
        root = scope.get("root_path", "")
        rest = scope["path"][len(root) :] if scope["path"].startswith(root) else ""
        segment, slash, _ = rest[1:].partition("/")
        if not rest.startswith("/") or not same(f"/{segment}", self.path):
            return _refuse(404, "not found: open the address memoryd ui printed"), scope
        base = root + self.path
        if not slash:  # `/<path>` itself: to `/<path>/`, the query (a token) kept
            query = scope.get("query_string", b"").decode("latin-1")
            return RedirectResponse(base + "/" + (f"?{query}" if query else ""), status_code=307), scope
        return None, {**scope, "root_path": base}

    def _check(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        if "token" in query:
            if not same(query["token"], self.token):
                return _refuse(401, "the token in the address is wrong; open the address memoryd ui printed")
            rest = urlencode([(k, v) for k, v in parse_qsl(scope["query_string"].decode("latin-1"),
                                                           keep_blank_values=True) if k != "token"])  # fmt: skip
            target = same_site_path(scope["path"])  # the full path (Starlette keeps root_path inside path)
            redirect = RedirectResponse(target + (f"?{rest}" if rest else ""), status_code=303)
            redirect.set_cookie(self.cookie_name, self.cookie_value, httponly=True, samesite="strict",
                                path=scope.get("root_path") or "/")  # fmt: skip
            return redirect
        if not self._authenticated(headers):
            return _refuse(401, "this console needs its token: open the address memoryd ui printed at start")
        if scope["method"] not in SAFE_METHODS:
            problem = self._cross_site(headers)
            if problem:
                return _refuse(403, problem)
        return None

    def _authenticated(self, headers: Headers) -> bool:
        if bearer_ok(headers.get("authorization"), self.token):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed Cookie header is simply not a credential
            return False
        morsel = cookie.get(self.cookie_name)
        return morsel is not None and same(morsel.value, self.cookie_value)

    def _cross_site(self, headers: Headers) -> str | None:
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return f"cross-site request refused (Sec-Fetch-Site: {site})"
        origin = headers.get("origin")
        if origin is None:
            referer = headers.get("referer")
            if not referer:
                return "cross-site request refused: no Origin or Referer header"
            parts = urlsplit(referer)
            origin = f"{parts.scheme}://{parts.netloc}"
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.netloc.lower() not in self.hosts:
            return f"cross-site request refused: Origin {origin} is not this console"
        return None


def _refuse(status: int, message: str) -> Response:
    from html import escape

    body = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>memoryd ui</title></head>"
        f"<body><h1>{status}</h1><p class=error>{escape(message)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status)
