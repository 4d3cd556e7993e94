"""`memoryd ui`: open the engine, bind, print the one line with the address, serve."""

from __future__ import annotations

import os
import socket
import sys
import threading
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import create_app
from .security import allowed_hosts, resolve_token

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine import Embedder, Engine

__all__ = ["DEFAULT_PORT", "open_console_engine", "serve"]

DEFAULT_PORT = 8767


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


def serve(*, host: str = "127.0.0.1", port: int = DEFAULT_PORT, open_browser: bool = True,
          cwd: Path | None = None, allowed_host: Sequence[str] = ()) -> int:  # fmt: skip
    """Serve the console until interrupted; returns an exit code (2 when the address or token is refused).

    `allowed_host`: more host names the browser may use (the transport's `--allowed-host`).
    """
    import uvicorn

    from .security import TokenError

    try:
        token = resolve_token(host, os.environ.get("MEMORYD_TOKEN"))
    except TokenError as exc:
        print(f"memoryd ui: {exc}", file=sys.stderr)
        return 2
    try:
        sock = _bind(host, port)
    except OSError as exc:
        print(f"memoryd ui: cannot listen on {host}:{port}: {exc.strerror}; pick another --port (0 = any free one)",
              file=sys.stderr)  # fmt: skip
        return 2
    bound = sock.getsockname()[1]
    engine = open_console_engine(cwd)
    threading.Thread(target=engine.warm, name="memoryd-ui-warm", daemon=True).start()
    url_host = f"[{host}]" if ":" in host else host
    url = f"http://{url_host}:{bound}/?token={token}"
    app = create_app(engine, token=token, hosts=allowed_hosts(host, bound, allowed_host),
                     cookie_name=f"memoryd_ui_{bound}")  # fmt: skip
    print(f"memoryd ui: {url}", flush=True)
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        engine.close()
    return 0
