"""The stateless HTTP fast path (`memoryd.mcp.fast`, issue 27) answers exactly what the SDK answers.

The same requests go to two copies of the resident daemon's MCP endpoint over one real SQLite store: one with
the fast path (as `local_app` builds it, and the team server alike), one without (the SDK alone). Every answer
(status, content type, JSON body) must be equal; requests the fast path must leave alone (initialize, listings,
notifications, batches, `_meta`, sessions, other protocol versions, odd media types, unknown tools) must reach
the SDK, and the plain tool calls must not. The team server's suites (tests/team) run their real MCP clients
through the fast path too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.server.transport_security import TransportSecuritySettings

from memoryd.engine import Engine
from memoryd.mcp.app import build_server
from memoryd.mcp.common import EngineHandle
from memoryd.mcp.fast import tool_call
from memoryd.mcp.transport import http_guard
from memoryd.shared.config import Settings

from ..conftest import make_repo

pytestmark = pytest.mark.anyio
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _call(tool: str, arguments: Any = None, rid: Any = 7, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params, **extra}


# (what, extra headers, body, whether the fast path answers it; None: the guard refuses it before)
CASES: list[tuple[str, dict[str, str], Any, bool | None]] = [
    ("search", {}, _call("mem_search", {"query": "billing cents", "top_k": 3}), True),
    ("search, string id", {}, _call("mem_search", {"query": "deploy"}, rid="a-1"), True),
    ("search, no version header", {"MCP-Protocol-Version": ""}, _call("mem_search", {"query": "deploy"}), True),
    ("search, 2025-03-26", {"MCP-Protocol-Version": "2025-03-26"}, _call("mem_search", {"query": "deploy"}), True),
    ("search, JSON accepted only", {"Accept": "application/json"}, _call("mem_search", {"query": "x"}), True),
    ("search, charset", {"Content-Type": "application/json; charset=utf-8"}, _call("mem_search", {"query": "x"}), True),
    ("a bad argument type", {}, _call("mem_search", {"query": "x", "top_k": "many"}), True),
    ("an argument out of range", {}, _call("mem_search", {"query": "x", "top_k": 0}), True),
    ("a missing argument", {}, _call("mem_search", {}), True),
    ("no arguments at all", {}, _call("mem_search"), True),
    ("an unknown argument", {}, _call("mem_search", {"query": "x", "shoe_size": 9}), True),
    ("an engine error", {}, _call("mem_get", {"memory_id": "01K0000000000000000000000Z"}), True),
    ("an empty query", {}, _call("mem_search", {"query": "  "}), True),
    ("a save", {}, _call("mem_save", {"content": "The fast path keeps answers identical.", "type": "fact"}), True),
    ("pending memories", {}, _call("mem_review_pending", {}), True),
    ("an admin tool this profile does not serve", {}, _call("mem_stats", {}), False),
    ("a sensitive scope without a grant", {"X-Test-Repo": "payroll"}, _call("mem_search", {"query": "salary"}), True),
    # left to the SDK
    ("an unknown tool", {}, _call("mem_nope", {}), False),
    (
        "initialize",
        {},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        False,
    ),
    ("tools/list", {}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, False),
    ("a notification", {}, {"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
    ("a batch", {}, [_call("mem_search", {"query": "x"})], None),  # refused by the guard (issue 36)
    (
        "_meta",
        {},
        {
            **_call("mem_search", {"query": "x"}),
            "params": {"name": "mem_search", "arguments": {"query": "x"}, "_meta": {"progressToken": 1}},
        },
        False,
    ),
    ("a session header", {"Mcp-Session-Id": "abc"}, _call("mem_search", {"query": "x"}), False),
    ("a 2026 version", {"MCP-Protocol-Version": "2026-07-28"}, _call("mem_search", {"query": "x"}), False),
    ("an unknown version", {"MCP-Protocol-Version": "1999-01-01"}, _call("mem_search", {"query": "x"}), False),
    ("event streams only", {"Accept": "text/event-stream"}, _call("mem_search", {"query": "x"}), False),
    ("text/plain", {"Content-Type": "text/plain"}, _call("mem_search", {"query": "x"}), False),
    ("params not an object", {}, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ["x"]}, None),
    ("a name that is no string", {}, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 5}}, False),
    ("arguments not an object", {}, _call("mem_search", ["x"]), False),
    ("a boolean id", {}, _call("mem_search", {"query": "x"}, rid=True), False),
    ("a null id", {}, _call("mem_search", {"query": "x"}, rid=None), False),
]


@pytest.fixture(scope="module")
async def apps(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Any, Any, list[bool]]]:
    tmp = tmp_path_factory.mktemp("fast")
    repo, payroll = make_repo(tmp / "widgets"), make_repo(tmp / "payroll", remote="git@github.com:acme/payroll.git")
    settings = Settings(home=tmp / "home")
    with Engine.open(settings, cwd=repo) as e:
        e.memorize("The billing service stores amounts as integer cents, never floats.", type="decision")
        e.memorize("Deploys are frozen on Friday afternoons.", type="warning")
    with Engine.open(settings, cwd=payroll) as e:
        e.memorize("Salaries are paid on the 25th.", type="fact")
        e.mark_sensitive(True)
    handle = EngineHandle(settings, repo)
    engines = {"widgets": handle.get(), "payroll": Engine.open(settings, cwd=payroll, authority="agent")}
    answered: list[bool] = []  # what the fast path did with each request

    def endpoint(with_fast: bool) -> tuple[Any, Any]:
        """`local_app`'s endpoint (the daemon's; the team server's differs only in its identity check)."""
        mcp = build_server("memoryd", engine_handle=handle, team=True)
        inner = mcp.streamable_http_app(stateless_http=True, json_response=True,
                                        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))  # fmt: skip
        real = tool_call(mcp, "/mcp")

        async def spy(headers: dict[bytes, bytes], scope: dict[str, Any], text: str) -> bytes | None:
            answer = await real(headers, scope, text)
            answered.append(answer is not None)
            return answer

        app = http_guard(
            inner, token=None, allowed_hosts={"localhost"}, post_only=True, fast=spy if with_fast else None
        )

        async def with_engine(scope: Any, receive: Any, send: Any) -> None:  # as the daemon hands it over
            repo = dict(scope["headers"]).get(b"x-test-repo", b"widgets").decode()
            await app({**scope, "memoryd.engine": engines[repo]}, receive, send)

        return mcp, with_engine

    (fast_mcp, fast_app), (slow_mcp, slow_app) = endpoint(True), endpoint(False)
    async with fast_mcp.session_manager.run(), slow_mcp.session_manager.run():
        yield fast_app, slow_app, answered
    engines["payroll"].close()
    handle.close()


async def _post(app: Any, headers: dict[str, str], body: Any) -> tuple[int, str, Any]:
    sent = {k: v for k, v in {**HEADERS, **headers}.items() if v}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://localhost") as c:
        r = await c.post("/mcp", content=json.dumps(body).encode(), headers=sent)
    kind = r.headers.get("content-type", "").split(";")[0]
    return r.status_code, kind, r.json() if kind == "application/json" and r.content else r.text


@pytest.mark.parametrize(("what", "headers", "body", "taken"), CASES, ids=[c[0] for c in CASES])
async def test_the_fast_path_answers_as_the_sdk_does(apps: tuple[Any, Any, list[bool]], what: str,
                                                     headers: dict[str, str], body: Any, taken: bool | None) -> None:  # fmt: skip
    fast, slow, answered = apps
    answered.clear()
    got = await _post(fast, headers, body)
    want = await _post(slow, headers, body)
    assert answered == ([] if taken is None else [taken]), what
    if what == "a save":  # the same text again is a duplicate of the first: the same shape, its own status
        assert got[:2] == want[:2] == (200, "application/json")
        saved, again = got[2]["result"]["structuredContent"], want[2]["result"]["structuredContent"]
        assert (saved["status"], again["status"]) == ("saved", "duplicate") and saved["memory_id"] == again["memory_id"]
        assert got[2]["result"].keys() == want[2]["result"].keys() and got[2]["id"] == want[2]["id"]
        return
    assert got == want, what
    # and the answers are the ones meant, not two equal failures
    body = got[2] if isinstance(got[2], dict) else {}
    result = body.get("result", {})
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    if what == "search":
        assert "integer cents" in json.dumps(result["structuredContent"]["results"][0]) and not result["isError"]
    if what in ("a bad argument type", "an argument out of range", "a missing argument", "an empty query"):
        assert result["isError"] and text.startswith("invalid_input: "), (what, text)
    if what == "an engine error":
        assert result["isError"] and text.startswith("not_found: "), text
    if what == "a sensitive scope without a grant":
        assert body["error"]["code"] == -32001 and body["error"]["message"].startswith("AuthorizationRequired:")


async def test_the_fast_path_logs_a_failed_tool_where_the_sdk_does(apps: tuple[Any, Any, list[bool]],
                                                                   caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    """Same logger, level and text as the SDK's own line (servers quiet the "mcp" loggers), nothing in memoryd's log."""
    fast, slow, _ = apps
    caplog.set_level(logging.INFO)
    logged = []
    for app in (fast, slow):
        caplog.clear()
        await _post(app, {}, _call("mem_search", {"query": "x", "top_k": "many"}))
        await _post(app, {}, _call("mem_get", {"memory_id": "01K0000000000000000000000Z"}))
        logged.append(sorted((r.name, r.levelname, r.getMessage()) for r in caplog.records
                             if r.name == "memoryd" or r.name.startswith("mcp.server.mcpserver")))  # fmt: skip
    # the engine's own refusals (not found) are results, logged by neither; a bad argument is the SDK's line
    assert logged[0] == logged[1] == [("mcp.server.mcpserver.server", "INFO", "Tool 'mem_search' failed: "
                                       "'invalid_input: top_k: Input should be a valid integer, unable to parse "
                                       "string as an integer'")], logged  # fmt: skip


async def test_a_server_with_sessions_or_event_streams_gets_no_fast_path(tmp_path: Path) -> None:
    body = json.dumps(_call("mem_search", {"query": "x"}))
    headers = {k.lower().encode(): v.encode() for k, v in HEADERS.items()}
    for stateless, json_response in ((False, True), (True, False)):
        mcp = build_server("memoryd", settings=Settings(home=tmp_path / "home"), cwd=tmp_path, team=True)
        mcp.streamable_http_app(stateless_http=stateless, json_response=json_response)
        assert await tool_call(mcp, "/mcp")(headers, {"path": "/mcp"}, body) is None, (stateless, json_response)
