"""Streamable HTTP transport: loopback by default, bearer token required elsewhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from .mcp.clients import HEADERS, INIT, SERVER, free_port, http_server, server_env

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_non_loopback_bind_without_token_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMORYD_TOKEN"}
    r = subprocess.run(
        [SERVER, "--profile", "hmg", "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
        env={**env, "MEMORYD_HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0
    assert "binding 0.0.0.0 needs MEMORYD_TOKEN" in r.stderr


async def test_loopback_http_serves_the_tools(tmp_path: Path) -> None:
    with http_server(tmp_path / "home", tmp_path, "--profile", "hmg") as port:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = [t.name for t in (await s.list_tools()).tools]
                assert "memory_recall" in names
                r = await s.call_tool(
                    "memory_memorize", {"content": "HTTP clients must send the bearer token on every request"}
                )
                assert r.structured_content and r.structured_content["effect"] == "applied"


async def test_token_is_required_when_bound_elsewhere(tmp_path: Path) -> None:
    token = "t0ken-for-tests-only-0123456789abcdef"
    with http_server(tmp_path / "home", tmp_path, "--profile", "hmg", host="0.0.0.0", MEMORYD_TOKEN=token) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as client:
            missing = await client.post(url, json=INIT, headers=HEADERS)
            assert missing.status_code == 401
            wrong = await client.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and wrong.json() == {"error": "unauthorized"}
            assert wrong.headers["www-authenticate"] == 'Bearer realm="memoryd"'
        authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with authed, streamable_http_client(url, http_client=authed) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                stats = await s.call_tool("memory_stats", {})
                assert stats.structured_content and stats.structured_content["atoms"] == 0


async def test_resuming_an_event_stream_is_refused_cleanly(tmp_path: Path) -> None:
    """Issue 37: a GET with Last-Event-ID on a real session ended in "ASGI callable returned without starting
    response" (HTTP 500): the SDK resumes only from an event store, which memoryd does not keep."""
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([SERVER, "--transport", "http", "--port", str(port)], cwd=tmp_path,
                                env=server_env(tmp_path / "home"), stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            async with httpx2.AsyncClient(timeout=60) as client:
                for _ in range(600):
                    try:
                        init = await client.post(url, json=INIT, headers=HEADERS)
                        break
                    except httpx2.ConnectError:
                        await anyio.sleep(0.05)
                session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
                await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                                  headers={**HEADERS, **session})  # fmt: skip
                for extra in (session, {}):  # with the live session, and without one
                    r = await client.get(
                        url, headers={"Accept": "text/event-stream", "Last-Event-ID": "abc-1", **extra}
                    )
                    assert r.status_code == 400, r.text
                    assert r.json()["error"] == "invalid_input" and "cannot be resumed" in r.json()["message"]
                # the session still works
                r = await client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                                      headers={**HEADERS, **session})  # fmt: skip
                assert r.status_code == 200 and "mem_search" in r.text
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    assert "ASGI callable returned without starting response" not in log.read_text(errors="replace")
    assert "Traceback" not in log.read_text(errors="replace")
