"""memoryd's MCP server: entry point (`memoryd-mcp`) and tool registration per profile."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer

from .mcp_tools import hmg, mem
from .mcp_tools.common import EngineHandle

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["PROFILES", "build_server", "list_tool_names", "main"]

PROFILES = ("memoryd", "hmg")

_INSTRUCTIONS = (
    "memoryd keeps long-term memory for this repository. Recall before relying on assumptions; memorize "
    "durable decisions, constraints and preferences as single sentences; correct outdated memories instead of "
    "adding new ones; write a handoff when a task ends. Scope is inferred: never pass one."
)


def build_server(
    profile: str = "memoryd",
    *,
    include_admin: bool = False,
    settings: Settings | None = None,
    cwd: str | Path | None = None,
) -> MCPServer[Any]:
    """Build an MCP server for `profile`; the engine opens in the background on first use."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; available: {', '.join(PROFILES)}")
    handle: EngineHandle | None = None

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if handle is not None:
                handle.close()

    from . import __version__

    mcp: MCPServer[Any] = MCPServer(
        name="hmg" if profile == "hmg" else "memoryd", version=__version__, instructions=_INSTRUCTIONS,
        lifespan=lifespan,
    )  # fmt: skip
    handle = EngineHandle(settings, cwd)
    if profile == "hmg":
        hmg.register(mcp, handle)
    else:
        mem.register(mcp, handle, include_admin=include_admin)
    return mcp


async def list_tool_names(mcp: MCPServer[Any]) -> list[str]:
    """The names of the tools `mcp` serves, in registration order."""
    return [t.name for t in await mcp.list_tools()]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memoryd-mcp", description="Serve memoryd over MCP (stdio by default).")
    parser.add_argument(
        "--profile", choices=PROFILES, default="memoryd",
        help="tool surface: memoryd (22 mem_* tools, default) or hmg (6 memory_* tools)",
    )  # fmt: skip
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8766, help="HTTP port (default: 8766)")
    parser.add_argument(
        "--admin", action="store_true", default=os.environ.get("MEMORYD_MCP_ADMIN") == "1",
        help="also register admin tools (or MEMORYD_MCP_ADMIN=1)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    mcp = build_server(args.profile, include_admin=args.admin)
    if args.transport == "stdio":
        mcp.run("stdio")
        return
    token = os.environ.get("MEMORYD_TOKEN")
    if not _is_loopback(args.host) and not token:
        sys.exit(f"memoryd-mcp: binding {args.host} needs MEMORYD_TOKEN set; every request must then carry it")
    _serve_http(mcp, args.host, args.port, token)


def _serve_http(mcp: MCPServer[Any], host: str, port: int, token: str | None) -> None:
    import uvicorn
    from starlette.responses import JSONResponse
    from starlette.types import ASGIApp, Receive, Send
    from starlette.types import Scope as ASGIScope

    app: ASGIApp = mcp.streamable_http_app(host=host)
    if token:
        inner = app
        expected = f"Bearer {token}".encode()

        async def guarded(scope: ASGIScope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
                await JSONResponse(
                    {"error": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": 'Bearer realm="memoryd"'}
                )(scope, receive, send)
                return
            await inner(scope, receive, send)

        app = guarded
    uvicorn.run(app, host=host, port=port, log_level="warning")


if __name__ == "__main__":
    main()
