"""The daemon: one process per data home that owns the store, the models and the indexes.

`memoryd daemon serve` (clients start it as `python -m memoryd.daemon serve`):

- Exactly one per data home: it holds `<home>/daemon.lock` (flock) for its whole life; a second one
  exits at once (code 3). The socket `<home>/memoryd.sock` is created 0600 (the home is 0700) and every
  connection's peer uid is checked (`SO_PEERCRED`): another user gets 403 `forbidden` and is closed.
- It listens first and opens the engine on a background thread (the first request waits for it), then
  writes `<home>/daemon.json`; its log is `<home>/daemon.log`.
- Each request acts in the scope its client sent (`Memoryd-Scope`: `{"cwd"}` inferred here as the CLI
  does, or explicit workspace/repository/branch/root), through an engine view over the one store and
  models, as the team server's requests do (`Engine.for_request`); `Memoryd-Client` names the client in
  every event the request writes.
- `/v1/*`: the local API (docs/LOCAL_API.md), engine reads and writes only: the hooks ask it what to inject
  (`/v1/brief`, `/v1/prompt`, `/v1/context`) and record what reached them themselves; `/mcp/<profile>`: both
  MCP tool profiles (stateless streamable HTTP, JSON answers), for `memoryd-mcp`'s stdio forwarder.
- Version handshake: a request whose `Memoryd-Version` (or `Memoryd-Settings`) differs from this process's
  gets 409 `version_skew`; the client then stops it and starts its own.
- Idle exit after `MEMORYD_DAEMON_IDLE` seconds without a request (default 1800; 0: never).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import logging
import os
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..shared.errors import HTTP_STATUS
from ..shared.http_security import LOCAL_S
from .client import API, Paths, home, private_dir, settings_digest, version

if TYPE_CHECKING:
    from ..engine import Engine
    from ..shared.models import Scope

__all__ = ["main", "serve"]

log = logging.getLogger("memoryd.daemon")
DEFAULT_IDLE = 1800.0
LOG_MAX_BYTES = 5_000_000
MAX_BODY = 4 * 1024 * 1024
SCOPE_TTL = 3.0  # seconds a directory's inferred scope is reused (a branch switch shows within that)
VIEWS_MAX = 64
# the handshake's and the transport's own answers besides the errors' statuses
_STATUS = {**HTTP_STATUS, "version_skew": 409, "request_timeout": 408}


class AlreadyRunning(Exception):
    pass


class _ClientError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _peer_uid(sock: socket.socket) -> int | None:
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return int(struct.unpack("3i", creds)[1])


def _protocol_class() -> type:
    from ..shared.http_security import timed_protocol

    body = json.dumps({"error": {"code": "forbidden", "message": "this memoryd daemon serves its own user only"}})
    refusal = (f"HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
               f"connection: close\r\n\r\n{body}").encode()  # fmt: skip

    class PeerChecked(timed_protocol(LOCAL_S)):  # type: ignore[misc]
        """uvicorn's HTTP/1.1 with the peer's uid checked when the connection is made, and a request's headers
        due within LOCAL_S of its first byte (a half-sent request held its connection for good)."""

        def connection_made(self, transport: Any) -> None:
            sock = transport.get_extra_info("socket")
            uid = _peer_uid(sock) if sock is not None else None
            if uid != os.getuid():
                log.warning("refused a connection from uid %s (this daemon serves uid %s)", uid, os.getuid())
                transport.write(refusal)
                self._refused = transport  # closed once its request is read (closing with unread data resets it)
                asyncio.get_running_loop().call_later(2.0, transport.close)
                return
            super().connection_made(transport)

        def data_received(self, data: bytes) -> None:
            refused = getattr(self, "_refused", None)
            if refused is not None:
                refused.close()
                return
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if getattr(self, "flow", None) is None:
                return
            super().connection_lost(exc)

    return PeerChecked


class Views:
    """Engine views per request: the scope a client sent, over the one engine's store and models."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self._scopes: dict[str, tuple[float, Scope]] = {}
        self._views: OrderedDict[tuple[str, str, str | None], Engine] = OrderedDict()
        self._lock = threading.Lock()

    def scope_of(self, header: str | None) -> Scope:
        """The request's scope (`engine.tenancy.local_scope`), a directory's reused for SCOPE_TTL seconds."""
        from ..engine.tenancy import local_scope

        now = time.monotonic()
        with self._lock:
            hit = self._scopes.get(header or "")
        if hit is not None and now - hit[0] < SCOPE_TTL:
            return hit[1]
        scope = local_scope(header)
        if header and '"cwd"' in header:  # an inferred scope costs git calls; an explicit one nothing
            with self._lock:
                if len(self._scopes) > 1024:
                    self._scopes.clear()
                self._scopes[header] = (now, scope)
        return scope

    def view(self, scope: Scope, principal: str | None) -> Engine:
        key = (scope.scope_hash, scope.branch, principal)
        with self._lock:
            view = self._views.get(key)
            if view is not None and view.scope.root == scope.root:
                self._views.move_to_end(key)
                return view
        new: Engine = self.handle.get().for_scope(scope, principal=principal)
        with self._lock:
            self._views[key] = new
            while len(self._views) > VIEWS_MAX:
                self._views.popitem(last=False)
        return new

    def for_headers(self, headers: dict[bytes, bytes]) -> Engine:
        scope = headers.get(b"memoryd-scope")
        return self.view(self.scope_of(None if scope is None else scope.decode("latin-1")),
                         principal_of(headers.get(b"memoryd-client")))  # fmt: skip

    def operator(self, headers: dict[bytes, bytes], *, console: bool = False) -> Engine:
        """The person's view (`memoryd <command>`): every scope, no grant needed, no client name, acting in the
        scope the CLI sent, as `Engine.open(cwd=…, authority="operator")` in its own process would. `console`:
        the web console's, where a sensitive scope still needs a grant (`ui.server.open_console_engine`)."""
        header = headers.get(b"memoryd-scope")
        scope = self.scope_of(None if header is None else header.decode("latin-1"))
        if console:
            return self.view(scope, None).acting_as("operator", enforce_sensitive=True)
        key = (scope.scope_hash, scope.branch, "\0operator")  # one per scope: a command's calls share its state
        with self._lock:
            view = self._views.get(key)
            if view is not None and view.scope.root == scope.root:
                self._views.move_to_end(key)
                return view
        new: Engine = self.view(scope, None).acting_as("operator")
        with self._lock:
            self._views[key] = new
        return new


_CLIENT_KEYS = ("host", "agent", "session", "channel", "sender")


def _principal(data: dict[str, Any]) -> str:
    from ..shared.errors import InvalidInput

    for k, v in data.items():
        if k not in _CLIENT_KEYS:
            raise InvalidInput(f"Memoryd-Client has an unknown key {k!r}; expected {', '.join(_CLIENT_KEYS)}")
        if not isinstance(v, str) or not v or len(v) > 128 or any(ord(ch) < 32 or ch in "@#/" for ch in v):
            raise InvalidInput(f"Memoryd-Client {k} must be 1-128 printable characters without @ # /")
    if "host" not in data:
        raise InvalidInput('Memoryd-Client needs "host" (claude-code, codex, openclaw, cli, …)')
    name = str(data["host"]) + (f"/{data['agent']}" if "agent" in data else "")
    if "session" in data:
        name += f"#{data['session']}"
    if "channel" in data or "sender" in data:
        name += f"[{data.get('channel', '')}:{data.get('sender', '')}]"
    return name


def principal_of(header: bytes | None) -> str | None:
    """The name `Memoryd-Client` gives the client in the events it writes (`host/agent#session[channel:sender]`)."""
    from ..shared.errors import InvalidInput

    if header is None:
        return None
    if len(header) > 1024:
        raise InvalidInput("the Memoryd-Client header is longer than 1024 bytes")
    try:
        data = json.loads(header.decode("utf-8"))
    except ValueError as exc:
        raise InvalidInput(f"the Memoryd-Client header is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InvalidInput("the Memoryd-Client header must be a JSON object")
    return _principal(data)


class Daemon:
    """The ASGI app: the local API, hooks, both MCP profiles; idle exit; the version handshake."""

    def __init__(self, paths: Paths, idle: float) -> None:
        from ..mcp.app import local_app
        from ..mcp.common import EngineHandle
        from ..shared.config import Settings

        self.paths = paths
        self.idle = idle
        self.settings = Settings()
        self.handle = EngineHandle(self.settings, str(paths.home))
        self.views = Views(self.handle)
        self.started = time.time()
        self.last = time.monotonic()
        self.inflight = 0
        self.calls = 0
        self.server: Any = None
        built = {p: local_app(p, self.handle) for p in ("memoryd", "hmg")}
        self.mcps = {p: m for p, (m, _) in built.items()}
        self.apps = {p: app for p, (_, app) in built.items()}
        self.version = version()
        self.digest = settings_digest()
        self.observers = threading.BoundedSemaphore(2)  # transcript observations run at most two at once
        from .console import Consoles

        self.consoles = Consoles()  # `memoryd ui`'s consoles

    # -- ASGI -------------------------------------------------------------------------------------------

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        self.inflight += 1
        self.calls += 1
        self.last = time.monotonic()
        try:
            await self._http(scope, receive, send)
        finally:
            self.inflight -= 1
            self.last = time.monotonic()

    async def _lifespan(self, receive: Any, send: Any) -> None:
        from contextlib import AsyncExitStack

        stack = AsyncExitStack()
        watchdog: asyncio.Task[None] | None = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                for m in self.mcps.values():
                    await stack.enter_async_context(m.session_manager.run())
                watchdog = asyncio.get_running_loop().create_task(self._watch())
                self._write_info()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if watchdog is not None:
                    watchdog.cancel()
                await asyncio.get_running_loop().run_in_executor(None, self.consoles.stop_all)
                await stack.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _watch(self) -> None:
        if self.idle <= 0:
            return
        step = max(0.05, min(5.0, self.idle / 4))
        while True:
            await asyncio.sleep(step)
            if self.inflight == 0 and not len(self.consoles) and time.monotonic() - self.last >= self.idle:
                log.warning("idle for %.0f s: exiting", self.idle)
                self.server.should_exit = True
                return

    def _write_info(self) -> None:
        info = {"pid": os.getpid(), "version": self.version, "api": API, "socket": str(self.paths.socket),
                "started_at": datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds"),
                "settings": self.digest}  # fmt: skip
        tmp = self.paths.info.with_name(f"daemon.json.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(info, fh)
        os.replace(tmp, self.paths.info)

    async def _json(self, send: Any, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": data})

    async def _error(self, send: Any, code: str, message: str) -> None:
        await self._json(send, _STATUS.get(code, 500), {"error": {"code": code, "message": message}})

    def _skew(self, headers: dict[bytes, bytes]) -> str | None:
        """Why this client needs another daemon (version or settings), or None."""
        theirs = headers.get(b"memoryd-version", b"").decode("latin-1").strip()
        if theirs and "api=" not in theirs and theirs != self.version:
            return f"this daemon runs memoryd {self.version}, the client {theirs}: the client restarts it"
        if "api=" in theirs:
            api = theirs.split("api=", 1)[1].split(";")[0].strip()
            if api != str(API):
                return f"this daemon serves local API {API}, the client asks for api={api}"
        digest = headers.get(b"memoryd-settings", b"").decode("latin-1").strip()
        if digest and digest != self.digest:
            return "the client's MEMORYD_* settings differ from this daemon's: the client restarts it"
        return None

    async def _http(self, scope: Any, receive: Any, send: Any) -> None:
        import anyio.to_thread

        from ..shared.errors import MemorydError

        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if path == "/v1/health":
            await self._json(send, 200, self.health())
            return
        if path == "/v1/shutdown" and method == "POST":
            await self._json(send, 200, {"ok": True, "pid": os.getpid()})
            log.warning("shutdown requested")
            self.server.should_exit = True
            return
        skew = self._skew(headers)
        if skew is not None:
            await self._error(send, "version_skew", skew)
            return
        if path.startswith("/mcp/"):
            profile = path[len("/mcp/") :].strip("/")
            app = self.apps.get(profile)
            if app is None:
                await self._error(send, "not_found", f"no MCP profile {profile!r}; expected memoryd or hmg")
                return
            try:
                engine = await anyio.to_thread.run_sync(self.views.for_headers, headers)
            except MemorydError as exc:
                await self._error(send, exc.code, exc.message)
                return
            await app({**scope, "path": "/mcp", "raw_path": b"/mcp", "memoryd.engine": engine}, receive, send)
            return
        if method != "POST" or not path.startswith("/v1/"):
            await self._error(send, "not_found", f"no endpoint {method} {path}; docs/LOCAL_API.md lists them")
            return
        from ..shared.http_security import read_body
        from ..shared.limits import json_loads

        body_bytes, stopped = await read_body(receive, MAX_BODY, within=LOCAL_S)
        if stopped == "disconnect":
            return
        if stopped == "too large":
            await self._error(send, "invalid_input", f"the body is larger than {MAX_BODY} bytes")
            return
        if stopped == "timeout":
            await self._error(send, "request_timeout", f"the body did not arrive whole within {LOCAL_S:g} s")
            return
        try:
            body = json_loads(body_bytes.decode("utf-8")) if body_bytes.strip() else {}
        except MemorydError as exc:
            await self._error(send, exc.code, exc.message)
            return
        except ValueError as exc:
            await self._error(send, "invalid_input", f"the body is not JSON ({exc})")
            return
        if not isinstance(body, dict):
            await self._error(send, "invalid_input", "the body must be a JSON object")
            return
        name = path[len("/v1/") :]
        try:
            answer = await anyio.to_thread.run_sync(self._dispatch, name, headers, body)
        except _ClientError as exc:
            await self._error(send, exc.code, exc.message)
            return
        except MemorydError as exc:
            from .operator import error_body

            await self._json(send, _STATUS.get(exc.code, 500), {"error": error_body(exc)})
            return
        except Exception as exc:
            log.exception("%s failed", path)
            await self._error(send, "internal", f"{name} failed unexpectedly ({type(exc).__name__}); "
                                                f"{self.paths.log} has the details")  # fmt: skip
            return
        await self._json(send, 200, answer)

    def _dispatch(self, name: str, headers: dict[bytes, bytes], body: dict[str, Any]) -> Any:
        from .api import ENDPOINTS

        if name == "observe":
            return self._observe(headers, body)
        if name == "operator":
            from .operator import run

            return run(self.views.operator(headers), body)
        if name == "console":
            return self.consoles.start(self.views.operator(headers, console=True), port=body.get("port", 0),
                                       allowed_host=body.get("allowed_host", []))  # fmt: skip
        if name == "console/stop":
            return self.consoles.stop(body.get("id"))
        if name == "console/keep":
            return self.consoles.keep(body.get("id"))
        fn = ENDPOINTS.get(name)
        if fn is None:
            raise _ClientError("not_found", f"no endpoint /v1/{name}; docs/LOCAL_API.md lists them")
        return fn(self.views.for_headers(headers), body)

    def _observe(self, headers: dict[bytes, bytes], body: dict[str, Any]) -> dict[str, Any]:
        """`/v1/observe` on a background thread (at most as many at once as `observers` allows): a hook at session
        end returns at once, and the transcript is read while the daemon runs."""
        from .api import observe

        view = self.views.for_headers(headers)
        for key in ("session_id", "transcript_path"):
            if not isinstance(body.get(key), str) or not body[key]:
                raise _ClientError("invalid_input", f"{key} is required")

        def work() -> None:
            with self.observers:
                try:
                    log.info("observe %s: %s", body.get("event", "session-end"), observe(view, body)["summary"])
                except Exception:
                    log.exception("observing the transcript of session %s failed", body.get("session_id"))

        threading.Thread(target=work, name="memoryd-observe", daemon=True).start()
        return {"started": True}

    def health(self) -> dict[str, Any]:
        return {"ok": True, "version": self.version, "api": API, "pid": os.getpid(), "home": str(self.paths.home),
                "settings": self.digest, "calls": self.calls, "uptime": round(time.time() - self.started, 3),
                "engine": "ready" if self.handle.ready else "opening", "models": self._models()}  # fmt: skip

    def _models(self) -> str:
        """ "ready" once the embedding model has loaded ("loading" until then: it loads from the daemon's start)."""
        if not self.handle.ready:
            return "loading"
        try:
            return "ready" if getattr(self.handle.get().embedder, "loaded", True) else "loading"
        except Exception:  # the engine failed to open: `engine` says so
            return "failed"


# -- the process ------------------------------------------------------------------------------------------


def _lock(paths: Paths) -> int:
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise AlreadyRunning(f"a memoryd daemon already runs for {paths.home}") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def _listen(paths: Paths) -> socket.socket:
    path = str(paths.socket)
    if paths.socket.parent != paths.home:
        private_dir(paths.socket.parent)
    if os.path.lexists(path):
        os.unlink(path)  # a dead daemon's (this process holds the lock, so no live one owns it)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(256)
    return sock


def _setup_log(paths: Paths) -> None:
    try:
        if paths.log.exists() and paths.log.stat().st_size > LOG_MAX_BYTES:
            os.replace(paths.log, paths.log.with_name("daemon.log.1"))
    except OSError:
        pass
    handler = logging.FileHandler(paths.log, encoding="utf-8")
    handler.setFormatter(logging.Formatter(f"%(asctime)s [{os.getpid()}] %(name)s %(levelname)s: %(message)s"))
    handler.setLevel(logging.INFO)
    for name in ("memoryd", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    logging.getLogger("mcp").setLevel(logging.WARNING)


def serve(root: Path, idle: float) -> int:
    """Run the daemon for the data home `root` until idle, asked to stop, or signalled."""
    import uvicorn

    from ..engine.core import private_home

    paths = Paths(root)
    problem = _settings_problem()
    if problem is not None:  # as `memoryd-mcp` refuses to start: the client falls back and says the same
        print(f"memoryd daemon: {problem}", file=sys.stderr)
        return 2
    private_home(root, sqlite=not os.environ.get("MEMORYD_DB"))
    try:
        lock_fd = _lock(paths)
    except AlreadyRunning as exc:
        print(f"memoryd daemon: {exc}", file=sys.stderr)
        return 3
    _setup_log(paths)
    try:
        sock = _listen(paths)
    except OSError as exc:
        msg = f"cannot create the socket {paths.socket}: {exc}"
        log.error(msg)
        print(f"memoryd daemon: {msg}", file=sys.stderr)
        return 4
    inode = os.stat(paths.socket).st_ino
    try:
        daemon = Daemon(paths, idle)
        config = uvicorn.Config(daemon, log_level="warning", http=_protocol_class(), lifespan="on",
                                timeout_keep_alive=5, access_log=False)  # fmt: skip
        server = uvicorn.Server(config)
        daemon.server = server
        log.info("memoryd %s daemon listening on %s (idle exit %s)", daemon.version, paths.socket,
                 f"{idle:g} s" if idle > 0 else "off")  # fmt: skip
        server.run(sockets=[sock])
        log.info("stopped after %d requests", daemon.calls)
        daemon.handle.close()
    finally:
        try:
            info = json.loads(paths.info.read_text())
            if info.get("pid") == os.getpid():
                paths.info.unlink()
        except (OSError, ValueError):
            pass
        try:
            if os.path.lexists(paths.socket) and os.stat(paths.socket).st_ino == inode:  # ours, not a successor's
                os.unlink(paths.socket)
        except OSError:
            pass
        sock.close()
        os.close(lock_fd)
    return 0


def _settings_problem() -> str | None:
    """Why this configuration cannot be served (a bad MEMORYD_* value, a missing extra), or None."""
    from pydantic import ValidationError

    from ..shared.config import Settings
    from ..shared.errors import MemorydError
    from ..shared.extras import check_settings

    try:
        check_settings(Settings())
    except ValidationError as exc:
        return "; ".join(f"MEMORYD_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
    except MemorydError as exc:
        return exc.message
    return None


def idle_seconds(value: str | None) -> float:
    if value is None or not value.strip():
        return DEFAULT_IDLE
    try:
        seconds = float(value)
    except ValueError:
        raise SystemExit(f"memoryd daemon: MEMORYD_DAEMON_IDLE must be a number of seconds, got {value!r}") from None
    return max(0.0, seconds)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memoryd.daemon")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("--idle", type=float, default=None, help="exit after this many idle seconds (0: never)")
    args = parser.parse_args(argv)
    idle = args.idle if args.idle is not None else idle_seconds(os.environ.get("MEMORYD_DAEMON_IDLE"))
    return serve(home(), idle)
