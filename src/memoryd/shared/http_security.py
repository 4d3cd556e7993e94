"""The security rules every memoryd HTTP surface shares: the MCP streamable-HTTP transport and the console.

- Loopback by default. Binding any other address needs `MEMORYD_TOKEN`, and a token must have at
  least `MIN_TOKEN_CHARS` characters: both are refused at start (`server_token`), never at the
  first request.
- A token is compared in constant time (`hmac.compare_digest`); `Authorization: <scheme> <token>`
  is accepted with the scheme `Bearer` in any case (RFC 7235 makes the scheme case-insensitive).
- Host, and Origin when a client sends one, must name an allowed host on every bind address (DNS
  rebinding: a web page cannot reach the server through a name it controls that resolves to it):
  the bind address, the loopback names, and each `--allowed-host`. Ports do not count here; the
  console also checks that a state-changing request comes from its own origin, port included
  (`ui/security.py`, its CSRF rules).

- The client address a team server counts failed tokens by (`client_address`) is the TCP peer's, unless the
  peer is a configured trusted proxy (`MEMORYD_TRUSTED_PROXIES`); only then is `X-Forwarded-For` read.

The transport answers a refusal with JSON (`mcp/transport.py`), the console with a page
(`ui/security.py`); the decisions are these functions. Both read a request body whole before they
check it (a JSON-RPC message, a form's CSRF token) and hand it on (`read_body`, `replay`).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "LOOPBACK_NAMES", "MIN_TOKEN_CHARS", "Networks", "TokenError", "allowed_names", "bearer_ok", "bearer_token",
    "client_address", "host_of", "is_loopback", "new_token", "origins", "parse_networks", "read_body", "refusal", "replay",
    "same", "server_token",
]  # fmt: skip

Receive = Callable[[], Awaitable[Any]]  # an ASGI receive callable

MIN_TOKEN_CHARS = 32
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
MAX_FORWARDED_HOPS = 32  # X-Forwarded-For entries read, from the right: a longer list is someone's invention


def parse_networks(text: str | None) -> Networks:
    """`10.0.0.5, 10.1.0.0/16, ::1` → the networks (an address is a network of one). Raises ValueError naming
    the entry that is neither."""
    networks = []
    for entry in (text or "").split(","):
        if entry.strip():
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(f"{entry.strip()!r} is not an IP address or network (CIDR, e.g. 10.0.0.0/8)") from None
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """One X-Forwarded-For entry as an address (`[::1]:80`, `10.0.0.1:443` and `::1` accepted), else None."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def client_address(peer: str | None, forwarded: Sequence[bytes], trusted: Networks) -> str | None:
    """The address a request comes from: the TCP peer, unless the peer is a trusted proxy. Then the
    `X-Forwarded-For` values (all of the request's headers, in order) are read from the right, where each proxy
    appends the address it saw: the first entry that is not itself a trusted proxy is the client. An entry that
    is no address, or a list of trusted proxies only, ends the walk at the last proxy reached (whatever a client
    writes to the left of what our proxies appended is never believed)."""
    if peer is None or not trusted:
        return peer
    current = _address(peer)
    if current is None or not any(current in n for n in trusted):
        return peer
    entries = b",".join(forwarded).decode("latin-1").split(",")[::-1][:MAX_FORWARDED_HOPS]
    for entry in entries:
        if not entry.strip():
            continue
        hop = _address(entry)
        if hop is None:
            break
        current = hop
        if not any(hop in n for n in trusted):
            break
    return str(current)


class TokenError(ValueError):
    """A server may not start with this address and token (the message says why and what to do)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh URL-safe token (43 characters) for a server that makes its own (the console on loopback)."""
    return secrets.token_urlsafe(32)


def server_token(host: str, env_token: str | None) -> str | None:
    """The token a server bound to `host` requires: `MEMORYD_TOKEN` when set, None on loopback without one.

    Raises:
        TokenError: a non-loopback bind without a token, or a token shorter than MIN_TOKEN_CHARS.
    """
    token = env_token or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"MEMORYD_TOKEN is {len(token)} characters; use at least {MIN_TOKEN_CHARS} random characters "
                         f"(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")  # fmt: skip
    if token is None and not is_loopback(host):
        raise TokenError(f"binding {host} needs MEMORYD_TOKEN set (at least {MIN_TOKEN_CHARS} characters); "
                         "every request must then carry it")  # fmt: skip
    return token


def same(given: str | bytes | None, expected: str | bytes) -> bool:
    """Constant-time comparison of a presented secret with the expected one (one compare_digest call)."""
    if not given:
        return False
    a = given.encode("utf-8", "surrogatepass") if isinstance(given, str) else given
    b = expected.encode("utf-8", "surrogatepass") if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)


def _bearer(authorization: str | bytes | None) -> bytes | None:
    """The credentials of an `Authorization: Bearer <token>` header (scheme in any case), or None."""
    raw = authorization.encode("latin-1", "replace") if isinstance(authorization, str) else (authorization or b"")
    scheme, _, given = raw.strip().partition(b" ")
    return given.strip() if scheme.lower() == b"bearer" else None


def bearer_ok(authorization: str | bytes | None, token: str) -> bool:
    """Whether an Authorization header carries `token` with the Bearer scheme (any case)."""
    return same(_bearer(authorization), token)


def bearer_token(authorization: bytes | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (scheme in any case), or None."""
    given = _bearer(authorization)
    return given.decode("latin-1") if given else None


def host_of(value: str) -> str:
    """The host part of a Host header or an Origin, lower case, brackets and port removed."""
    value = value.strip().lower()
    if "://" in value:
        value = value.split("://", 1)[1].split("/", 1)[0]
    value = value.rsplit("@", 1)[-1]
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_names(bind_host: str, extra: Iterable[str] = ()) -> set[str]:
    """Host names clients may use: the bind address, the loopback names, and each `--allowed-host`."""
    return {host_of(h) for h in extra if h.strip()} | {host_of(bind_host), *LOOPBACK_NAMES}


def origins(names: Iterable[str], port: int) -> set[str]:
    """The `host:port` forms (netlocs) of `names` on `port`: a server's own origins."""
    forms = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
    return {f"{n}:{port}" for n in forms} | (forms if port == 80 else set())


def refusal(allowed: set[str], host: str, origin: str | None) -> str | None:
    """Why a request with these Host and Origin headers is refused, or None when both are allowed."""
    if host_of(host) not in allowed:
        return f"Host {host!r} is not allowed; start the server with --allowed-host NAME to allow it"
    if origin and host_of(origin) not in allowed:
        return f"Origin {origin!r} is not allowed; start the server with --allowed-host NAME to allow it"
    return None


HEADER_S = 10.0  # a request's headers must arrive whole within this (slowloris)
BODY_S = 30.0  # and its body within this
# The same for the daemon's Unix socket: its clients are local processes that write a request at once, so a
# half-sent request (a stopped or hostile client) is cut off sooner.
LOCAL_S = 5.0


def timed_protocol(header_s: float = HEADER_S) -> type:
    """uvicorn's HTTP/1.1 protocol with a deadline on each request's headers: a connection whose request
    headers are not complete `header_s` after their first bytes is closed (half-sent requests held a
    connection, and its memory, for as long as the client liked). The deadline ends with the headers: a
    kept-alive connection between requests waits for uvicorn's keep-alive timeout, as before."""
    import asyncio

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Timed(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state is h11.IDLE:
                self._deadline = self.loop.call_later(header_s, self._headers_due)
            super().data_received(data)
            if self._deadline is not None and self.conn.their_state is not h11.IDLE:
                # The headers are whole: disarmed, so a kept-alive connection idle between two requests is
                # not closed under the client (the next request's first bytes arm a deadline of its own).
                self._deadline.cancel()
                self._deadline = None

        def _headers_due(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()  # the headers never completed

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return Timed


async def read_body(receive: Receive, limit: int, within: float = BODY_S) -> tuple[bytes, str | None]:
    """The whole request body and None, or what was read and why it stopped: "disconnect" (the
    client went away), "too large" (more than `limit` bytes; the rest is not read) or "timeout" (not
    whole `within` seconds)."""
    import anyio

    with anyio.move_on_after(within):
        return await _read_body(receive, limit)
    return b"", "timeout"


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, str | None]:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), "disconnect"
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), "too large"
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), None


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive callable that hands the app `body` (already read whole) once, then the connection's own."""
    delivered = False

    async def again() -> Any:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
