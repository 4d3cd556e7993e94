"""Real MCP client sessions against a spawned `memoryd-mcp`, over stdio or streamable HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SERVER = str(Path(sys.executable).with_name("memoryd-mcp"))
# A raw streamable-HTTP initialize request and its headers (tests that speak HTTP without the SDK client).
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}  # fmt: skip
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_") or k.startswith("MEMORYD_DAEMON")}
    env.pop("ANTHROPIC_API_KEY", None)
    return {**env, "MEMORYD_HOME": str(home), **extra}


@asynccontextmanager
async def open_session(transport: str, home: Path, cwd: Path, *args: str) -> AsyncIterator[ClientSession]:
    """A connected, initialized client session to `memoryd-mcp ARGS` running in `cwd`."""
    if transport == "stdio":
        params = StdioServerParameters(command=SERVER, args=list(args), cwd=str(cwd), env=server_env(home))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            yield s
        return
    with http_server(home, cwd, *args) as port:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


@contextmanager
def http_server(home: Path, cwd: Path, *args: str, host: str = "127.0.0.1", port: int | None = None,
                **env: str) -> Iterator[int]:  # fmt: skip
    """`memoryd-mcp ARGS --transport http` on `port` (default: a free one), until the block ends; yields the port."""
    port = port or free_port()
    proc = subprocess.Popen(
        [SERVER, *args, "--transport", "http", "--host", host, "--port", str(port)], cwd=cwd,
        env=server_env(home, **env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode() if proc.stderr else "server exited")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def ok(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; its structured content."""
    r = await session.call_tool(name, args or {})
    assert not r.is_error, (name, r.content)
    assert r.structured_content is not None
    return r.structured_content


async def err(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> str:
    """Call a tool that must fail; the error text."""
    r = await session.call_tool(name, args or {})
    assert r.is_error, (name, r.structured_content)
    return " ".join(getattr(c, "text", "") for c in r.content)
