"""Transports that answer every request: malformed lines on stdio and bodies on HTTP get a JSON-RPC error.

The SDK's stdio transport replaces invalid UTF-8 with U+FFFD (so the bytes a client sent are not
what a tool sees) and drops a line it cannot validate without a reply, so a client that sent a
lone surrogate (`"\\ud800"`) waits forever. Here every line is checked before the SDK sees it:
invalid UTF-8 and non-JSON get -32700 (Parse error), a request holding a lone surrogate -32602
(Invalid params), a message that is not JSON-RPC -32600 (Invalid Request), each with the request's
id when it has one. The same check guards HTTP POST bodies (`check_message`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO, NamedTuple

import anyio
import anyio.to_thread

from ..shared.errors import InvalidInput
from ..shared.http_security import Networks
from ..shared.limits import SURROGATE, json_loads

__all__ = ["MAX_BODY_BYTES", "Refusal", "check_message", "error_reply", "http_guard", "stdio_streams"]

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def _first_surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """(where, the character) of the first lone surrogate in any key or string of a JSON value."""
    if isinstance(value, str):
        m = SURROGATE.search(value)
        return (path or "message", m.group()) if m else None
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and SURROGATE.search(k):
                return where, SURROGATE.search(k).group()  # type: ignore[union-attr]
            if (hit := _first_surrogate(v, where)) is not None:
                return hit
    if isinstance(value, list):
        for i, v in enumerate(value):
            if (hit := _first_surrogate(v, f"{path}[{i}]")) is not None:
                return hit
    return None


def _id_of(obj: Any) -> Any:
    rid = obj.get("id") if isinstance(obj, dict) else None
    return (
        rid if isinstance(rid, str | int) and not isinstance(rid, bool) and SURROGATE.search(str(rid)) is None else None
    )


def error_reply(rid: Any, code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode() + b"\n"


def check_message(data: bytes) -> tuple[bytes | None, str | None]:
    """(a JSON-RPC error reply or None, the text to pass on or None) for one message's bytes.

    Neither for a notification that cannot be used (JSON-RPC forbids answering a notification).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        try:
            rid = _id_of(json_loads(data.decode("utf-8", "replace")))
        except (ValueError, InvalidInput):
            rid = None
        return error_reply(rid, PARSE_ERROR, f"Parse error: invalid_input: the message is not valid UTF-8 "
                                             f"(byte {exc.start}); send UTF-8"), None  # fmt: skip
    try:
        obj = json_loads(text, field="the message")
    except InvalidInput as exc:
        return error_reply(None, INVALID_REQUEST, f"Invalid Request: invalid_input: {exc.message}"), None
    except ValueError as exc:
        where = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        return error_reply(None, PARSE_ERROR, f"Parse error: invalid_input: the message is not JSON ({where})"), None
    if isinstance(obj, list) and obj and all(isinstance(o, dict) for o in obj):
        return _batch_refusal(obj), None
    if not isinstance(obj, dict):
        return error_reply(
            None, INVALID_REQUEST, "Invalid Request: invalid_input: a JSON-RPC message is an object"
        ), None
    hit = _first_surrogate(obj)
    if hit is not None:
        if "method" in obj and "id" not in obj:
            return None, None  # a notification: no reply is allowed
        where, char = hit
        return error_reply(_id_of(obj), INVALID_PARAMS, f"Invalid params: invalid_input: {where} holds a lone "
                                                        f"surrogate U+{ord(char):04X}; send valid Unicode"), None  # fmt: skip
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_python(obj, by_name=False)
    except Exception:
        if "method" in obj and "id" not in obj:
            return None, None
        return error_reply(_id_of(obj), INVALID_REQUEST, "Invalid Request: invalid_input: not a JSON-RPC 2.0 "
                                                         "request, notification or response"), None  # fmt: skip
    return None, text


BATCH_REFUSED = ("Invalid Request: invalid_input: JSON-RPC batches are not supported (MCP 2025-06-18 removed "
                 "them); send each message on its own")  # fmt: skip


def _batch_refusal(batch: list[dict[str, Any]]) -> bytes | None:
    """A batch's answer: JSON-RPC 2.0's batch of replies, one error per request in it (a client waiting for any
    of their ids gets it), or one error with a null id when the batch holds no request; None for notifications
    only (nothing may answer them)."""
    ids = [_id_of(o) for o in batch if "method" in o and o.get("id") is not None]
    if ids:
        return json.dumps([{"jsonrpc": "2.0", "id": rid, "error": {"code": INVALID_REQUEST, "message": BATCH_REFUSED}}
                           for rid in ids]).encode() + b"\n"  # fmt: skip
    if all("method" in o and "id" not in o for o in batch):
        return None
    return error_reply(None, INVALID_REQUEST, BATCH_REFUSED)


class _Writer:
    """The wire's stdout: whole lines, written and flushed at once (the SDK and the checker share it)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    async def write(self, text: str | bytes) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        self._raw.write(data)

    async def flush(self) -> None:
        self._raw.flush()


class _CheckedLines:
    """stdin as the SDK reads it: only lines that passed `check_message`; the rest are answered here."""

    def __init__(self, raw: BinaryIO, out: _Writer) -> None:
        self._raw = raw
        self._out = out

    def __aiter__(self) -> _CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anyio.to_thread.run_sync(self._raw.readline, abandon_on_cancel=True)
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue
            reply, text = check_message(line.rstrip(b"\r\n"))
            if text is not None:
                return text
            if reply is not None:
                await self._out.write(reply)
                await self._out.flush()


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[_CheckedLines, _Writer]]:
    """The process's stdin/stdout as checked streams; fd 0/1 point elsewhere meanwhile.

    Stray output of a library (a print) would corrupt the wire: fd 1 goes to stderr and fd 0 to
    the null device while serving, as the SDK's own stdio transport does.
    """
    sys.stdout.flush()
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    out = _Writer(wire_out)
    try:
        yield _CheckedLines(wire_in, out), out
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


# -- HTTP ------------------------------------------------------------------------------------------

MAX_BODY_BYTES = 4 * 1024 * 1024  # a request larger than this is refused before it is read whole


class Refusal(NamedTuple):
    """An HTTP answer instead of the app's: status, a stable error code, the reason."""

    status: int
    error: str
    message: str
    retry_after: int | None = None  # seconds, sent as Retry-After (429)


# The team server's identity check: the request's headers (lower-case names) and the client's address → the
# engine it acts with, or why not.
Identify = Callable[[dict[bytes, bytes], str | None], Awaitable[Any]]
# A checked POST's lower-case headers, ASGI scope and body text → an answer's JSON bytes, or None (the app answers).
FastPath = Callable[[dict[bytes, bytes], dict[str, Any], str], Awaitable[bytes | None]]


# Headers a request may carry once: with two, which one a check reads and which one acts would be up to
# each layer (the last `Authorization` won), so a doubled one is refused.
SINGLE_HEADERS = (b"authorization", b"memoryd-scope", b"memoryd-client", b"host", b"origin", b"content-length",
                  b"content-type", b"mcp-session-id", b"mcp-protocol-version")  # fmt: skip


def http_guard(app: Any, *, token: str | None, allowed_hosts: set[str], identify: Identify | None = None,
               post_only: bool = False, fast: FastPath | None = None, trusted_proxies: Networks = (),
               body_s: float | None = None) -> Any:  # fmt: skip
    """Wrap an ASGI app: the shared HTTP rules (`memoryd.shared.http_security`) and checked JSON bodies.

    - A header of SINGLE_HEADERS sent more than once: 400 (before anything reads it).
    - `post_only` (the stateless servers: the team server, the daemon): anything but POST is 405 with
      `Allow: POST` (no event stream to resume, no session to end), never the SDK's 500.
    - A GET with `Last-Event-ID` (a stream to resume; nothing is kept to replay): 400, never the SDK's 500.

    - Host and Origin must name an allowed host, on every bind address (403 with the reason).
    - With a token, `Authorization: Bearer <token>` (scheme in any case), compared in constant time (401).
    - With `identify` (the team server), every request's identity: its answer is a `Refusal` (sent as JSON
      `{"error", "message"}`, 401 with `WWW-Authenticate`) or the engine the request acts with, left in the
      ASGI scope as `memoryd.engine` for the MCP handlers (`MemorydServer._bind`). The client address it gets is
      the peer's, or, from one of `trusted_proxies`, the one their `X-Forwarded-For` names (`client_address`).
    - A POST body must be at most MAX_BODY_BYTES, UTF-8, JSON, free of lone surrogates; otherwise
      a JSON-RPC error comes back with status 400 (413 when too large).
    - `fast` (the stateless servers): a checked body it answers (a plain `tools/call`, `memoryd.mcp.fast`) is
      answered without the SDK's per-request session; whatever it declines goes to `app`.
    - A body not whole within `body_s` seconds (default `http_security.BODY_S`): 408.
    """
    from ..shared.http_security import BODY_S, bearer_ok, client_address, read_body, refusal, replay

    within = BODY_S if body_s is None else body_s

    async def send_json(send: Any, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        names = [k.lower() for k, _ in scope.get("headers", [])]
        for name in SINGLE_HEADERS:
            if (n := names.count(name)) > 1:
                message = f"the request has {n} {name.decode()} headers; send exactly one"
                await send_json(send, 400, json.dumps({"error": "invalid_input", "message": message}).encode())
                return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        problem = refusal(allowed_hosts, host, origin)
        if problem is not None:
            await send_json(send, 403, json.dumps({"error": "forbidden", "message": problem}).encode())
            return
        if token is not None:
            if not bearer_ok(headers.get(b"authorization"), token):
                await send_json(
                    send, 401, b'{"error": "unauthorized"}', [(b"www-authenticate", b'Bearer realm="memoryd"')]
                )
                return
        if post_only and scope.get("method") != "POST":
            message = ("this server is stateless: send JSON-RPC requests with POST (there is no event stream to "
                       "resume and no session to end)")  # fmt: skip
            await send_json(send, 405, json.dumps({"error": "method_not_allowed", "message": message}).encode(),
                            [(b"allow", b"POST")])  # fmt: skip
            return
        if scope.get("method") == "GET" and b"last-event-id" in headers:
            # The SDK resumes a stream only from an event store (none here: nothing is kept to replay); without
            # one it returned without an answer, which uvicorn turned into a 500.
            message = ("this server keeps no event history, so a stream cannot be resumed: open a new one without "
                       "Last-Event-ID (or send the request again)")  # fmt: skip
            await send_json(send, 400, json.dumps({"error": "invalid_input", "message": message}).encode())
            return
        if identify is not None:
            peer = scope.get("client")
            forwarded = [v for k, v in scope.get("headers", []) if k.lower() == b"x-forwarded-for"]
            who = await identify(headers, client_address(str(peer[0]) if peer else None, forwarded, trusted_proxies))
            if isinstance(who, Refusal):
                extra = [(b"www-authenticate", b'Bearer realm="memoryd"')] if who.status == 401 else []
                if who.retry_after is not None:
                    extra.append((b"retry-after", str(who.retry_after).encode()))
                await send_json(
                    send, who.status, json.dumps({"error": who.error, "message": who.message}).encode(), extra
                )
                return
            scope = {**scope, "memoryd.engine": who}
        if scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            await send_json(send, 413, error_reply(None, INVALID_REQUEST, f"Invalid Request: invalid_input: the body "
                                                   f"is larger than {MAX_BODY_BYTES} bytes"))  # fmt: skip
            return
        body, stopped = await read_body(receive, MAX_BODY_BYTES, within)
        if stopped == "disconnect":
            return
        if stopped == "timeout":
            await send_json(send, 408, error_reply(None, INVALID_REQUEST, "Invalid Request: invalid_input: the body "
                                                   "did not arrive in time"))  # fmt: skip
            return
        if stopped == "too large":
            await send_json(send, 413, error_reply(None, INVALID_REQUEST, f"Invalid Request: invalid_input: the "
                                                   f"body is larger than {MAX_BODY_BYTES} bytes"))  # fmt: skip
            return
        reply, text = check_message(body)
        if reply is not None:
            await send_json(send, 400, reply.rstrip(b"\n"))
            return
        if text is None:  # notifications only, unusable: accepted, and nothing may answer them
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if fast is not None and text is not None and (answer := await fast(headers, scope, text)) is not None:
            await send_json(send, 200, answer)
            return
        await app(scope, replay(body, receive), send)

    return guarded
