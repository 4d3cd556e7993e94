"""The web console served by the daemon (`memoryd ui` with a daemon running): its warm engine, the same guard.
Both sides live here: `Consoles` (the daemon's) and `serve_by_daemon` (the `memoryd ui` process's client).

Each `memoryd ui` asks for a console of its own (`POST /v1/console`, internal): a new per-run loopback
address 127.x.y.z, capability path and token (or `MEMORYD_TOKEN`), the console's Host/Origin/path/cookie/CSRF
rules unchanged (memoryd.ui.security). The person's view of the scope the CLI sent (operator authority, a
sensitive scope still locked without a grant: `ui.server.open_console_engine`'s rules). The console stops
when that `memoryd ui` says so (`POST /v1/console/stop`, at Ctrl-C), LEASE seconds after it last renewed it
(`POST /v1/console/keep`: a `memoryd ui` killed with -9), or with the daemon. While one runs, the daemon
does not exit for idleness.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..shared.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["Consoles", "serve_by_daemon"]

log = logging.getLogger("memoryd.daemon")
MAX_CONSOLES = 8
LEASE = 30.0  # seconds a console outlives its `memoryd ui` (which renews it every KEEP seconds) when that is killed
KEEP = 5.0


class Consoles:
    """The consoles one daemon serves, by id."""

    def __init__(self) -> None:
        self._servers: dict[str, tuple[Any, threading.Thread]] = {}
        self._kept: dict[str, float] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def start(self, engine: Engine, *, port: int, allowed_host: Sequence[str]) -> dict[str, Any]:
        import uvicorn

        from ..ui import create_app
        from ..ui.security import TokenError, allowed_hosts, console_path, resolve_token
        from ..ui.server import bind_loopback

        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidInput(f"port must be 0-65535, got {port!r}")
        if not isinstance(allowed_host, list) or not all(isinstance(h, str) for h in allowed_host):
            raise InvalidInput("allowed_host must be a list of host names")
        with self._lock:
            if len(self._servers) >= MAX_CONSOLES:
                raise InvalidInput(f"this daemon serves {MAX_CONSOLES} consoles already; close one (Ctrl-C its "
                                   "`memoryd ui`) or stop the daemon")  # fmt: skip
        try:
            token = resolve_token("127.0.0.1", os.environ.get("MEMORYD_TOKEN"))
        except TokenError as exc:
            raise InvalidInput(str(exc)) from None
        try:
            host, sock = bind_loopback(port)
        except OSError as exc:
            raise InvalidInput(f"cannot listen on 127.x.y.z:{port}: {exc.strerror}; pick another --port (0 = any "
                               "free one)") from None  # fmt: skip
        bound = sock.getsockname()[1]
        path = console_path()
        app = create_app(engine, token=token, hosts=allowed_hosts(host, bound, allowed_host),
                         cookie_name=f"memoryd_ui_{bound}", path=path)  # fmt: skip
        # Ctrl-C in `memoryd ui` stops it: a browser's open keep-alive connections get 2 s, not until they close
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2))
        console_id = secrets.token_hex(8)
        thread = threading.Thread(target=self._run, args=(server, sock, console_id), name=f"memoryd-ui-{console_id}",
                                  daemon=True)  # fmt: skip
        with self._lock:
            self._servers[console_id] = (server, thread)
            self._kept[console_id] = time.monotonic()
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="memoryd-ui-lease", daemon=True)
                self._reaper.start()
        thread.start()
        log.info("console %s serving on %s:%d", console_id, host, bound)
        return {"id": console_id, "url": f"http://{host}:{bound}{path}/?token={token}", "pid": os.getpid()}

    def _run(self, server: Any, sock: Any, console_id: str) -> None:
        try:
            server.run(sockets=[sock])
        except Exception:
            log.exception("console %s failed", console_id)
        finally:
            sock.close()
            with self._lock:
                self._servers.pop(console_id, None)
                self._kept.pop(console_id, None)
            log.info("console %s stopped", console_id)

    def _reap(self) -> None:
        while True:
            time.sleep(KEEP)
            now = time.monotonic()
            with self._lock:
                late = [
                    (i, self._servers[i][0]) for i, t in self._kept.items() if now - t > LEASE and i in self._servers
                ]
            for console_id, server in late:
                log.warning("console %s: its memoryd ui stopped renewing it; closing it", console_id)
                server.should_exit = True

    def keep(self, console_id: object) -> dict[str, Any]:
        with self._lock:
            if not isinstance(console_id, str) or console_id not in self._servers:
                raise NotFound(f"no console {console_id!r} runs in this daemon")
            self._kept[console_id] = time.monotonic()
        return {"id": console_id}

    def stop(self, console_id: object) -> dict[str, Any]:
        with self._lock:
            entry = self._servers.get(console_id) if isinstance(console_id, str) else None
        if entry is None:
            raise NotFound(f"no console {console_id!r} runs in this daemon")
        server, thread = entry
        server.should_exit = True
        thread.join(timeout=10)
        return {"id": console_id, "stopped": not thread.is_alive()}

    def stop_all(self) -> None:
        with self._lock:
            ids = list(self._servers)
        for console_id in ids:
            try:
                self.stop(console_id)
            except NotFound:
                pass

    def __len__(self) -> int:
        with self._lock:
            return len(self._servers)


def serve_by_daemon(*, port: int, open_browser: bool = True, cwd: Path | None = None,
                    allowed_host: Sequence[str] = ()) -> int | None:  # fmt: skip
    """`memoryd ui` through the running daemon of this home (its warm engine), on its own per-run loopback
    address and token; this process prints the address, opens the browser, and holds the console until
    interrupted. None when no daemon of this home (version, settings) runs (`client.connect`): the caller
    serves in-process (`memoryd.ui.server.serve`)."""
    import signal

    from ..shared.errors import InvalidInput
    from ..ui.server import open_in_browser
    from .client import DaemonError, DaemonUnavailable, connect

    try:
        client = connect(start=False)
        scope = {"cwd": os.path.abspath(cwd if cwd is not None else os.getcwd())}
        console = client.call("/v1/console", {"port": port, "allowed_host": list(allowed_host)}, scope=scope)
    except DaemonUnavailable:  # none runs (or it exited since it answered its health): this process serves
        return None
    except DaemonError as exc:
        print(f"memoryd ui: {exc.message}" if exc.code == InvalidInput.code else
              f"memoryd ui: the daemon answered {exc.code}: {exc.message}", file=sys.stderr)  # fmt: skip
        return 2 if exc.code == InvalidInput.code else 1
    print(f"memoryd ui: {console['url']}", flush=True)
    print(f"memoryd ui: served by the memoryd daemon (pid {console['pid']}); Ctrl-C closes this console",
          file=sys.stderr, flush=True)  # fmt: skip
    if open_browser:
        open_in_browser(console["url"])

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            time.sleep(KEEP)
            try:
                client.call("/v1/console/keep", {"id": console["id"]}, scope=scope, timeout=KEEP)
            except DaemonError as exc:
                print(f"memoryd ui: the console is gone ({exc.code}: {exc.message})", file=sys.stderr)
                return 1
            except DaemonUnavailable as exc:
                print(f"memoryd ui: the console is gone (the daemon stopped: {exc})", file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        client.call("/v1/console/stop", {"id": console["id"]}, scope=scope, timeout=15.0)
    except (DaemonError, DaemonUnavailable):
        pass
    return 0
