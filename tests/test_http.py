"""Streamable HTTP transport: loopback by default, bearer token required elsewhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from .mcp.clients import HEADERS, INIT, SERVER, free_port, http_server

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
