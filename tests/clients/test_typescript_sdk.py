"""The official TypeScript SDK client (npm @modelcontextprotocol/sdk) against memoryd-mcp, stdio and HTTP.

clients/sdk_client.mjs connects, lists the tools and runs a plan of calls; the SDK checks every
structured result against the tool's published output schema and throws when it does not match,
so a plan that passes shows every tool's output schema is honest, error results included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memoryd import __version__
from memoryd.mcp.hmg import TOOL_NAMES as HMG_TOOLS
from memoryd.mcp.mem import ADMIN_TOOLS, AGENT_TOOLS

from ..conftest import make_repo
from ..mcp.clients import http_server
from .node import CLIENTS, MEMORYD, NODE22, SERVER, client_env, need, run
from .plans import SURFACES, verify

pytestmark = pytest.mark.slow
TRANSPORTS = ["stdio", "http"]
EXPECTED_TOOLS = {"hmg": HMG_TOOLS, "memoryd": AGENT_TOOLS, "memoryd-admin": AGENT_TOOLS + ADMIN_TOOLS}


@contextmanager
def sdk_target(transport: str, data: Path, repo: Path, env: dict[str, str], *args: str) -> Iterator[dict[str, Any]]:
    """What sdk_client.mjs connects to: `memoryd-mcp ARGS` spawned by the SDK, or one on HTTP for the block."""
    if transport == "stdio":
        yield {"transport": "stdio", "command": SERVER, "args": list(args), "cwd": str(repo), "env": env}
        return
    with http_server(data, repo, *args) as port:
        yield {"transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}


def sdk(tmp_path: Path, target: dict[str, Any], steps: list[dict[str, Any]], env: dict[str, str]) -> dict[str, Any]:
    """Run sdk_client.mjs on node 22 with this plan; its JSON report."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({**target, "steps": steps}), encoding="utf-8")
    r = run([str(need(NODE22)), str(CLIENTS / "sdk_client.mjs"), str(plan)], env, tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def where(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    (tmp_path / "home").mkdir()
    data, repo = tmp_path / "data", make_repo(tmp_path / "widgets")
    return data, repo, client_env(tmp_path / "home", data)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("surface", ["hmg", "memoryd-admin"])
def test_every_tool_once_with_schema_checked_results(
    transport: str, surface: str, tmp_path: Path, where: tuple[Path, Path, dict[str, str]]
) -> None:
    data, repo, env = where
    args, plan = SURFACES[surface]
    assert {s.tool for s in plan} == set(EXPECTED_TOOLS[surface])  # a new tool needs a step here
    with sdk_target(transport, data, repo, env, *args) as target:
        out = sdk(tmp_path, target, [s.as_json() for s in plan], env)
    assert out["server"] == {"name": "hmg" if surface == "hmg" else "memoryd", "version": __version__}
    assert "Scope is inferred" in out["instructions"]
    # Not declared, so -32601 is right for logging/setLevel and completion/complete (test_conformance.py).
    assert set(out["capabilities"]) == {"tools", "resources", "prompts"}
    tools = {t["name"]: t for t in out["tools"]}
    assert list(tools) == EXPECTED_TOOLS[surface]
    for name, t in tools.items():
        assert t["description"].strip() and t["inputSchema"]["type"] == "object" and "outputSchema" in t, name
    thrown = [s for s in out["steps"] if "error" in s]
    assert not thrown, thrown  # e.g. "Structured content does not match the tool's output schema"
    verify(plan, [(s["isError"], s["structuredContent"], s["text"]) for s in out["steps"]])


def test_error_cases(tmp_path: Path, where: tuple[Path, Path, dict[str, str]]) -> None:
    """Over HTTP (tests/mcp/test_mem_profile.py has the same -32001 over stdio, with the Python SDK)."""
    data, repo, env = where
    transport = "http"
    steps = [
        {"tool": "mem_save", "args": {"content": "Deploys to production happen only on Tuesdays", "type": "decision"},
         "capture": {"m1": "memory_id"}},
        {"tool": "no_such_tool", "args": {}},
        {"tool": "mem_search", "args": {"query": "deploys", "top_k": 0}},
        {"tool": "mem_save", "args": {"type": "decision"}},
        {"tool": "mem_get", "args": {"memory_id": "01NOSUCHMEMORY0000000000000"}},
        {"tool": "mem_timeline", "args": {"since": "yesterday"}},
    ]  # fmt: skip
    with sdk_target(transport, data, repo, env) as target:
        out = sdk(tmp_path, target, steps, env)
        assert [t["name"] for t in out["tools"]] == AGENT_TOOLS  # no admin tools without --admin
        saved, unknown, bad_range, missing, not_found, bad_since = out["steps"]
        assert not saved["isError"] and saved["structuredContent"]["status"] == "saved"
        assert unknown["isError"] and "no_such_tool" in unknown["text"]
        assert (
            bad_range["isError"] and "top_k" in bad_range["text"] and "greater than or equal to 1" in bad_range["text"]
        )
        assert missing["isError"] and "content" in missing["text"] and "required" in missing["text"].lower()
        # Tool errors carry text only: the SDK validates structured content even on errors.
        assert not_found["isError"] and not_found["structuredContent"] is None and "error" not in not_found
        assert not_found["text"].startswith("not_found: ") and "01NOSUCHMEMORY0000000000000" in not_found["text"]
        assert bad_since["isError"] and bad_since["text"].startswith("invalid_input: ") and "since" in bad_since["text"]

        # A person marks the scope sensitive: agent reads become the -32001 protocol error.
        r = run([MEMORYD, "scope", "mark-sensitive"], {**env, "MEMORYD_HOME": str(data)}, repo)
        assert r.returncode == 0, r.stderr
        gated = sdk(tmp_path, target, [
            {"tool": "mem_search", "args": {"query": "deploys"}},
            {"tool": "mem_get", "args": {"memory_id": saved["structuredContent"]["memory_id"]}},
            {"tool": "mem_request_sensitive_read", "args": {"reason": "need the deploy calendar to fix a cron bug"}},
        ], env)["steps"]  # fmt: skip
    for step in gated[:2]:
        assert step["error"]["code"] == -32001, step
        assert "AuthorizationRequired: " in step["error"]["message"], step
    request = gated[2]["structuredContent"]
    assert request["status"] == "pending" and "memoryd scope grant" in request["message"]
