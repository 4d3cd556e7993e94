"""memoryd's web console: `memoryd ui` (or `memoryd-mcp --transport http --ui`, under /ui).

Server-rendered pages (Jinja2 on Starlette) over one Engine, with htmx and cytoscape.js served
from `static/vendor/` (no CDN, no build step). `create_app` returns the guarded ASGI app;
`security` holds the token, cookie, Host/Origin, CSRF and header rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .app import build_app
from .security import ConsoleGuard

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from ..engine import Engine

__all__ = ["create_app"]


def create_app(
    engine: Engine | Callable[[], Engine],
    *,
    token: str,
    hosts: Iterable[str],
    cookie_name: str = "memoryd_ui",
    path: str = "",
) -> ASGIApp:
    """The console over `engine`, answering only to `hosts` (Host header values) and to `token`, under the
    capability path `path` (`security.console_path()`; "" for none)."""
    return ConsoleGuard(build_app(engine), token=token, hosts=hosts, cookie_name=cookie_name, path=path)
