"""`memoryd ui`: open the engine, bind, print the one line with the address, serve."""

from __future__ import annotations

import atexit
import errno
import html
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import create_app
from .security import allowed_hosts, console_path, resolve_token

if TYPE_CHECKING:
    from ..engine import Embedder, Engine
    from ..shared.config import Settings

__all__ = ["DEFAULT_PORT", "bind_loopback", "loopback_address", "open_console_engine", "open_in_browser", "serve"]

DEFAULT_PORT = 8767


def loopback_address() -> str:
    """A new loopback address for one run, 127.a.b.c (never 127.0.0.1 or Debian's 127.0.1.1).

    Cookies ignore ports: a cookie set by 127.0.0.1:8767 is sent to every server on 127.0.0.1, so any
    local process serving a page there would receive the console's credential. A cookie set by a
    per-run address goes only to that address, and a page elsewhere is another site (SameSite=Strict).
    """
    while True:
        a, b, c = secrets.randbelow(256), secrets.randbelow(256), 1 + secrets.randbelow(254)
        if (a, b) not in ((0, 0), (0, 1)):
            return f"127.{a}.{b}.{c}"


def bind_loopback(port: int) -> tuple[str, socket.socket]:
    """Bind a per-run loopback address; where only 127.0.0.1 exists (macOS), that one, with a warning."""
    try:
        address = loopback_address()
        return address, _bind(address, port)
    except OSError as exc:
        if exc.errno != errno.EADDRNOTAVAIL:
            raise
    print("memoryd ui: warning: this system offers no loopback address but 127.0.0.1, so a page served by "
          "another local program on 127.0.0.1 can receive the console's cookie", file=sys.stderr)  # fmt: skip
    return "127.0.0.1", _bind("127.0.0.1", port)


def open_in_browser(url: str, *, keep_seconds: float = 60.0) -> Path:
    """Open `url` without putting it on a command line (`/proc/<pid>/cmdline` is readable by every local user).

    The launcher gets a private file (0600, in a 0700 folder) that forwards to `url`; only its path is on
    the command line. The file is removed after `keep_seconds`, or at exit. Returns its path.
    """
    folder = Path(tempfile.mkdtemp(prefix="memoryd-ui-"))  # mode 0700
    page = folder / "open.html"
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f'<!doctype html><meta charset=utf-8><meta http-equiv="refresh" content="0;url={html.escape(url)}">'
                f"<title>memoryd ui</title><p>Opening the memoryd console…</p>")  # fmt: skip

    def remove() -> None:
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    timer = threading.Timer(keep_seconds, remove)
    timer.daemon = True
    timer.start()
    threading.Thread(target=webbrowser.open, args=(page.as_uri(),), daemon=True).start()
    return page


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def open_console_engine(cwd: Path | None = None, settings: Settings | None = None, *,
                        embedder: Embedder | None = None) -> Engine:  # fmt: skip
    """The engine the console serves: the person (authority "operator": every scope, as at the CLI), but a
    sensitive scope without a running grant stays locked (a grant is requested on the Health page and
    given with `memoryd scope grant`, never bypassed)."""
    from ..engine import Engine

    return Engine.open(settings, cwd=cwd, embedder=embedder, authority="operator", enforce_sensitive=True)


def serve(*, host: str | None = None, port: int = DEFAULT_PORT, open_browser: bool = True,
          cwd: Path | None = None, allowed_host: Sequence[str] = ()) -> int:  # fmt: skip
    """Serve the console until interrupted; returns an exit code (2 when the address or token is refused).

    `host`: None (the default) is a new loopback address per run (`loopback_address`).
    `allowed_host`: more host names the browser may use (the transport's `--allowed-host`).
    """
    import uvicorn

    from .security import TokenError

    try:
        token = resolve_token(host or "127.0.0.1", os.environ.get("MEMORYD_TOKEN"))
    except TokenError as exc:
        print(f"memoryd ui: {exc}", file=sys.stderr)
        return 2
    try:
        if host is None:
            host, sock = bind_loopback(port)
        else:
            sock = _bind(host, port)
    except OSError as exc:
        print(f"memoryd ui: cannot listen on {host}:{port}: {exc.strerror}; pick another --port (0 = any free one)",
              file=sys.stderr)  # fmt: skip
        return 2
    bound = sock.getsockname()[1]
    engine = open_console_engine(cwd)
    threading.Thread(target=engine.warm, name="memoryd-ui-warm", daemon=True).start()
    url_host = f"[{host}]" if ":" in host else host
    path = console_path()
    url = f"http://{url_host}:{bound}{path}/?token={token}"
    app = create_app(engine, token=token, hosts=allowed_hosts(host, bound, allowed_host),
                     cookie_name=f"memoryd_ui_{bound}", path=path)  # fmt: skip
    print(f"memoryd ui: {url}", flush=True)
    if open_browser:
        open_in_browser(url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        engine.close()
    return 0
