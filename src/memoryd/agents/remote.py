"""`memoryd connect`: a stdio MCP server that forwards every message to a team server over HTTP.

An agent starts `memoryd connect URL --token-env VAR` as an ordinary stdio MCP server. Each
JSON-RPC line read from stdin is POSTed to the team server's streamable-HTTP endpoint with
`Authorization: Bearer $VAR` and `Memoryd-Scope: {"workspace", "repository", "branch", "root"}`
(the scope `memoryd.shared.scope.infer_scope` gives the working directory, inferred once at start on the
person's machine); each message in the answer (a JSON body, or the `data` of a `text/event-stream`
body) is written to stdout as one line. Nothing else happens here: the server decides everything.

- A notification or a response (no answer expected) gets 202 and writes nothing.
- `Mcp-Session-Id`: kept when the server sets one (today's single-token server is stateful) and
  sent back on every request; a 404 on a session the server forgot (a restart, another replica)
  re-sends the client's `initialize` once, then the request.
- Several URLs are replicas: a request that could not be sent (connection refused, connect
  timeout, DNS) goes to the next; the one that answered stays the first choice. A request whose
  answer was lost midway is not sent again (a write may have been applied), it gets an error.
- Every failure (HTTP 401/403/400/5xx, no server reachable, a timeout, an answer cut short) is
  answered as a JSON-RPC error for that request's id with a message that says what to check: the
  agent never waits forever and this process never dies of it. The token is never printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx2

__all__ = ["Forwarder", "RemoteError", "check_target", "main", "scope_header"]

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
SCOPE_HEADER = "memoryd-scope"
# JSON-RPC's implementation-defined server errors (-32000..-32099): one code per kind of failure.
UNREACHABLE, HTTP_ERROR, TIMEOUT, CUT_SHORT = -32000, -32001, -32002, -32003
PARSE_ERROR = -32700
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BODY_SHOWN = 300  # characters of a non-JSON error body quoted in a message


class RemoteError(ValueError):
    """`memoryd connect` cannot start (bad arguments, no token); the message says what to fix."""


def scope_header(cwd: str | None) -> str:
    """The `Memoryd-Scope` header for a working directory: ASCII JSON (the contract's form)."""
    from ..shared.scope import infer_scope

    s = infer_scope(cwd)
    fields = {"workspace": s.workspace, "repository": s.repository, "branch": s.branch, "root": s.root}
    return json.dumps(fields, ensure_ascii=True, separators=(",", ":"))


def _reply_error(msg_id: Any, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def _request_ids(message: Any) -> list[Any]:
    """The ids of the requests in a message (one, or a batch) that expect an answer."""
    items = message if isinstance(message, list) else [message]
    return [m["id"] for m in items if isinstance(m, dict) and "method" in m and m.get("id") is not None]


def _server_says(response: httpx2.Response) -> str:
    """What the server said about a refusal: `message` / `error` of a JSON body, else the text's start."""
    text = response.text.strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:_BODY_SHOWN]
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):  # a JSON-RPC error
            return str(err.get("message", ""))
        if body.get("message"):
            return f"{err}: {body['message']}" if err else str(body["message"])
        if err:
            return str(err)
    return text[:_BODY_SHOWN]


def _sse_data(lines: Iterator[str]) -> Iterator[str]:
    """The `data` of each event in a text/event-stream (multi-line data joined with newlines)."""
    data: list[str] = []
    event = ""
    for line in lines:
        if line == "":
            if data and event in ("", "message"):
                yield "\n".join(data)
            data, event = [], ""
        elif line.startswith(":"):
            continue  # a comment (keep-alive)
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
    if data and event in ("", "message"):
        yield "\n".join(data)


@dataclass
class Forwarder:
    """Sends JSON-RPC messages to the first reachable URL and writes the answers to `out`."""

    urls: list[str]
    token: str
    scope: str
    token_env: str
    out: Any  # a binary stream (stdout's buffer)
    timeout: float = 120.0
    client: Any = None
    session_id: str | None = None
    protocol_version: str | None = None
    initialize: dict[str, Any] | None = None  # the client's own, re-sent when a session is lost
    _first: int = 0  # the URL that answered last
    _write_lock: threading.Lock = field(default_factory=threading.Lock)
    _session_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        import httpx2

        if self.client is None:
            timeout = httpx2.Timeout(self.timeout, connect=min(5.0, self.timeout))
            self.client = httpx2.Client(timeout=timeout, follow_redirects=False, trust_env=True)

    # -- output -----------------------------------------------------------------------------------

    def write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._write_lock:
            self.out.write(line)
            self.out.flush()

    def log(self, text: str) -> None:
        print(f"memoryd connect: {text}", file=sys.stderr, flush=True)

    # -- one message ------------------------------------------------------------------------------

    def handle(self, message: Any) -> None:
        """Forward one parsed message; never raises (a failure becomes an error answer or a log line)."""
        ids = _request_ids(message)
        try:
            self._forward(message, ids)
        except Exception as exc:  # never die of one message: answer it
            self._fail(ids, UNREACHABLE, f"memoryd connect: {type(exc).__name__}: {exc}")

    def _out(self, message: Any, sink: list[Any] | None) -> None:
        if sink is None:
            self.write(message)
        else:
            sink.append(message)

    def _fail(self, ids: list[Any], code: int, text: str, data: dict[str, Any] | None = None,
              sink: list[Any] | None = None) -> None:  # fmt: skip
        if not ids:
            self.log(text)  # a notification or a response: nobody waits for an answer
        for msg_id in ids:
            self._out(_reply_error(msg_id, code, text, data), sink)

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self.token}",
            "Memoryd-Scope": self.scope,
        }
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    def _forward(self, message: Any, ids: list[Any]) -> None:
        is_init = isinstance(message, dict) and message.get("method") == "initialize"
        if is_init:
            self.initialize = message
            self.session_id = self.protocol_version = None
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        sent_session = self.session_id
        if self._post(body, ids, is_init=is_init) != "session-lost":
            return
        if self._reinitialize(sent_session):
            self._post(body, ids, is_init=False, may_renew=False)
        else:
            self._fail(ids, HTTP_ERROR, "memoryd connect: the server ended the session and refused a new one")

    def _post(self, body: bytes, ids: list[Any], *, is_init: bool, may_renew: bool = True,
              sink: list[Any] | None = None) -> str | None:  # fmt: skip
        """POST to the first URL that takes it and write the answer (to `sink` when given).

        Returns "session-lost" when the server answered 404 to a session id it no longer knows (the
        caller starts a new session and sends again), else None: answered, or failed with an error.
        """
        import httpx2

        n = len(self.urls)
        refused: list[str] = []
        for k in range(n):
            i = (self._first + k) % n
            url = self.urls[i]
            lost = may_renew and self.session_id is not None and self.initialize is not None
            try:
                with self.client.stream("POST", url, content=body, headers=self._headers()) as response:
                    self._first = i
                    if response.status_code == 404 and lost:
                        response.read()
                        return "session-lost"
                    self._answer(url, response, ids, is_init=is_init, sink=sink)
                    return None
            except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.UnsupportedProtocol) as exc:
                refused.append(f"{url} ({_reason(exc)})")  # never sent: the next replica may take it
                continue
            except httpx2.TimeoutException:
                self._fail(ids, TIMEOUT, f"memoryd connect: {url} did not answer within {self.timeout:g} s "
                                         "(--timeout sets the limit)", {"url": url}, sink)  # fmt: skip
                return None
            except httpx2.HTTPError as exc:
                self._fail(ids, CUT_SHORT, f"memoryd connect: the connection to {url} broke before the answer was "
                                           f"complete ({_reason(exc)}); the request may or may not have been applied",
                           {"url": url}, sink)  # fmt: skip
                return None
        self._fail(ids, UNREACHABLE, f"memoryd connect: cannot reach the memoryd server: {'; '.join(refused)}. Is "
                                     "the server running and the URL right?", {"urls": self.urls}, sink)  # fmt: skip
        return None

    def _answer(self, url: str, response: httpx2.Response, ids: list[Any], *, is_init: bool,
                sink: list[Any] | None) -> None:  # fmt: skip
        status = response.status_code
        if status >= 300:
            response.read()
            self._refused(url, response, ids, sink)
            return
        if is_init and response.headers.get(SESSION_HEADER):
            self.session_id = response.headers[SESSION_HEADER]
        if status == 202 or not ids:
            response.read()
            return
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        answered: set[str] = set()
        try:
            if kind == "text/event-stream":
                for data in _sse_data(response.iter_lines()):
                    self._emit(data, answered, is_init=is_init, sink=sink)
            else:
                self._emit(response.read().decode("utf-8"), answered, is_init=is_init, sink=sink)
        except ValueError as exc:  # JSON or UTF-8
            self._fail(
                [i for i in ids if json.dumps(i) not in answered],
                HTTP_ERROR,
                f"memoryd connect: {url} answered with something that is not JSON-RPC ({exc})",
                None,
                sink,
            )
            return
        missing = [i for i in ids if json.dumps(i) not in answered]
        if missing:
            self._fail(missing, CUT_SHORT, f"memoryd connect: {url} ended its answer (HTTP {status}, "
                                           f"{kind or 'no content type'}) without a response to this request",
                       {"url": url}, sink)  # fmt: skip

    def _emit(self, data: str, answered: set[str], *, is_init: bool, sink: list[Any] | None) -> None:
        message = json.loads(data)
        for m in message if isinstance(message, list) else [message]:
            if isinstance(m, dict) and "method" not in m and "id" in m:
                answered.add(json.dumps(m["id"]))
                if is_init and isinstance(m.get("result"), dict):
                    version = m["result"].get("protocolVersion")
                    self.protocol_version = version if isinstance(version, str) else None
        self._out(message, sink)

    def _refused(self, url: str, response: httpx2.Response, ids: list[Any], sink: list[Any] | None) -> None:
        status = response.status_code
        said = _server_says(response)
        if status < 400:
            hint = f"the server redirects to {response.headers.get('location', '?')}; use that URL"
        elif status >= 500:
            hint = "the server failed"
        else:
            hint = {
                401: f"the server did not accept the token in ${self.token_env} (missing, unknown, revoked or expired)",
                403: "the token may not act on this repository (its --scope list) or do this",
                404: "no MCP endpoint there (the URL usually ends in /mcp)",
            }.get(status, "the server refused the request")
        text = f"memoryd connect: {url} answered HTTP {status}: {hint}" + (f" ({said})" if said else "")
        self._fail(ids, HTTP_ERROR, text, {"url": url, "status": status}, sink)

    def _reinitialize(self, lost: str | None) -> bool:
        """Start a new session with the client's own initialize (once per lost session id)."""
        with self._session_lock:
            if self.session_id != lost:
                return self.session_id is not None  # another thread renewed it already
            assert self.initialize is not None
            self.log("the server no longer knows the session (restarted, or another replica); starting a new one")
            self.session_id = self.protocol_version = None
            init = json.dumps(self.initialize).encode("utf-8")
            sink: list[Any] = []  # the client had its answer already
            self._post(init, _request_ids(self.initialize), is_init=True, may_renew=False, sink=sink)
            if not any(isinstance(m, dict) and "result" in m for m in sink):
                return False
            done = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode("utf-8")
            self._post(done, [], is_init=False, may_renew=False)
            return True

    def close(self) -> None:
        """End the session politely (DELETE), then close the connections."""
        import httpx2

        if self.session_id:
            url = self.urls[self._first]
            try:
                self.client.delete(url, headers=self._headers(), timeout=2.0)
            except httpx2.HTTPError:
                pass
        self.client.close()


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


# -- the command ----------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="memoryd connect",
        description="Serve MCP on stdio by forwarding every message to a memoryd team server (streamable HTTP). "
                    "The scope is inferred here, from the working directory (or --cwd), and sent with each request; "
                    "the token is read from an environment variable and never printed.",
    )  # fmt: skip
    parser.add_argument("urls", nargs="*", metavar="URL", help="the server's MCP endpoint, e.g. https://memory.example"
                        ".com/mcp; more than one: replicas, tried in order when one cannot be reached")  # fmt: skip
    parser.add_argument("--url", action="append", default=[], dest="more_urls", metavar="URL",
                        help="another replica (repeatable; same as more URL arguments)")  # fmt: skip
    parser.add_argument(
        "--token-env",
        required=True,
        metavar="VAR",
        help="the NAME of the environment variable that holds the token (e.g. MEMORYD_TEAM_TOKEN)",
    )
    parser.add_argument("--cwd", metavar="DIR", help="infer the scope from DIR instead of the working directory")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="how long to wait for one answer (default: 120)")  # fmt: skip
    return parser.parse_args(argv)


def check_target(urls: list[str], token_env: str) -> None:
    """The URLs and the variable's name `memoryd connect` takes (also checked by `install --remote`).

    Raises RemoteError, never quoting a value that might be a secret.
    """
    if not urls:
        raise RemoteError("give the team server's URL, e.g. `memoryd connect https://memory.example.com/mcp "
                          "--token-env MEMORYD_TEAM_TOKEN`")  # fmt: skip
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise RemoteError("each URL must start with http:// or https:// and name a host (one argument does "
                              "not; it is not repeated here in case it is a secret)")  # fmt: skip
        if "@" in parts.netloc:
            raise RemoteError("a URL holds a user name or password (not repeated here); the token goes in the "
                              "environment variable --token-env names, never in the URL")  # fmt: skip
    if not _ENV_NAME.match(token_env) or _looks_like_a_token(token_env):
        raise RemoteError(
            "--token-env takes the NAME of an environment variable (letters, digits, _), not the "
            "token itself; e.g. `export MEMORYD_TEAM_TOKEN=…` then `--token-env MEMORYD_TEAM_TOKEN`"
        )


def _looks_like_a_token(name: str) -> bool:
    """A memoryd token (`mdt_<id>_<secret>`), or a long mix of cases and digits: a secret, not a name."""
    if name.lower().startswith("mdt_"):
        return True
    return len(name) >= 32 and any(c.islower() for c in name) and any(c.isupper() for c in name) and any(
        c.isdigit() for c in name)  # fmt: skip


def check(args: argparse.Namespace, environ: dict[str, str]) -> tuple[list[str], str]:
    """The URLs and the token, or RemoteError saying what is wrong (never quoting a secret)."""
    urls = [*args.urls, *args.more_urls]
    check_target(urls, args.token_env)
    name = args.token_env
    token = environ.get(name, "")
    if not token.strip():
        state = "is empty" if name in environ else "is not set"
        raise RemoteError(f"the environment variable {name} {state}; it must hold your memoryd token "
                          "(`memoryd token create` on the server prints one)")  # fmt: skip
    if token != token.strip() or any(c in token for c in "\r\n"):
        raise RemoteError(f"the token in {name} has spaces or line breaks around it; set it without them")
    return urls, token


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        urls, token = check(args, dict(os.environ))
        if args.cwd is not None and not os.path.isdir(args.cwd):
            raise RemoteError(f"--cwd {args.cwd!r} is not a directory")
    except RemoteError as exc:
        print(f"memoryd connect: {exc}", file=sys.stderr)
        return 2
    forwarder = Forwarder(urls, token, scope_header(args.cwd), args.token_env, sys.stdout.buffer, args.timeout)
    for url in urls:
        host = urlsplit(url).hostname or ""
        if url.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
            forwarder.log(f"{url} is plain http: the token crosses the network unencrypted; use https")
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="memoryd-connect")
    try:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
                forwarder.write(_reply_error(None, PARSE_ERROR, f"memoryd connect: not a JSON-RPC message ({exc})"))
                continue
            if isinstance(message, dict) and message.get("method") == "initialize":
                forwarder.handle(message)  # the session must exist before anything else is sent
            else:
                pool.submit(forwarder.handle, message)
    except KeyboardInterrupt:
        pass
    finally:
        pool.shutdown(wait=True)
        forwarder.close()
    return 0
