"""Helpers of the security suite: real MCP sessions on either backend, and answers read as text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

from ..mcp.clients import SERVER, server_env


def env_for(settings: Settings, **extra: str) -> dict[str, str]:
    db = {"MEMORYD_DB": settings.db} if settings.db else {}
    return server_env(settings.home, MEMORYD_EMBEDDER="hash", **db, **extra)


@asynccontextmanager
async def session(settings: Settings, cwd: Path, *args: str) -> AsyncIterator[ClientSession]:
    """A real MCP client over stdio to `memoryd-mcp ARGS` started in `cwd`, on the test's backend."""
    params = StdioServerParameters(command=SERVER, args=list(args), cwd=str(cwd), env=env_for(settings))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def answer(s: ClientSession, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """("ok" | "error" | "rpc", text) of one call: a result, a tool error, or a JSON-RPC error."""
    try:
        r = await s.call_tool(tool, args)
    except MCPError as exc:
        return "rpc", {"code": exc.error.code, "message": exc.error.message}
    text = " ".join(getattr(c, "text", "") for c in r.content)
    if r.is_error:
        return "error", {"text": text}
    return "ok", r.structured_content


def person(settings: Settings, cwd: Path) -> Engine:
    """The store as the person at the CLI sees it (operator authority, every scope)."""
    return Engine.open(settings, cwd=cwd, embedder=HashEmbedder(), authority="operator")
