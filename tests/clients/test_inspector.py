"""The MCP Inspector in CLI mode (npm @modelcontextprotocol/inspector, `inspector --cli`) against memoryd-mcp.

Each Inspector run is one process, one connection, one method; over stdio it also starts one server,
so stdio gets the tool lists (with --strict schema portability checks) and a call per surface, and
HTTP, where one server stays up, gets one call of every tool of every surface.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryd.mcp.hmg import TOOL_NAMES as HMG_TOOLS
from memoryd.mcp.mem import ADMIN_TOOLS, AGENT_TOOLS

from ..conftest import make_repo
from ..mcp.clients import http_server
from .node import BIN, CLIENTS, MEMORYD, NODE22, SERVER, client_env, need, run
from .plans import SURFACES, Step, verify

pytestmark = pytest.mark.slow
EXPECTED_TOOLS = {"hmg": HMG_TOOLS, "memoryd": AGENT_TOOLS, "memoryd-admin": AGENT_TOOLS + ADMIN_TOOLS}


class Inspector:
    def __init__(self, tmp_path: Path) -> None:
        (tmp_path / "home").mkdir()
        self.data, self.repo = tmp_path / "data", make_repo(tmp_path / "widgets")
        self.env = client_env(tmp_path / "home", self.data)
        self.bin = str(need(BIN / "inspector"))

    def stdio_target(self, *args: str) -> list[str]:
        # The Inspector passes only a few variables to a stdio server; MEMORYD_HOME goes with -e.
        return ["-e", f"MEMORYD_HOME={self.data}", "--cwd", str(self.repo), SERVER, *args]

    def __call__(self, target: list[str], *args: str, npx: bool = False) -> tuple[int, Any, Any]:
        """(exit code, stdout JSON, stderr JSON) of one `inspector --cli --format json -q` run; None where empty.

        A result goes to stdout (a tool's isError result too, with an error envelope on stderr); a
        failure with no result (unknown tool, a JSON-RPC error) only to stderr.
        """
        if npx:  # the documented invocation; resolves to the same clients/node_modules/.bin/inspector
            cmd = ["npx", "--offline", "@modelcontextprotocol/inspector"]
        else:
            cmd = [str(need(NODE22)), self.bin]
        r = run([*cmd, "--cli", "--format", "json", "-q", *target, *args], self.env, CLIENTS)
        err = json.loads(r.stderr) if r.stderr.strip().startswith("{") else None
        assert r.stdout.strip() or err, (r.returncode, r.stderr)
        return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, err

    def tools(self, target: list[str], npx: bool = False) -> list[dict[str, Any]]:
        rc, out, err = self(target, "--method", "tools/list", "--strict", npx=npx)
        assert rc == 0 and err is None, (rc, err)  # --strict: exit 6 on a schema portability error
        return out["result"]["tools"]  # type: ignore[no-any-return]

    def call(self, target: list[str], tool: str, args: dict[str, Any]) -> tuple[int, Any, Any]:
        return self(target, "--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(args))

    def run_plan(self, target: list[str], plan: list[Step]) -> None:
        captured: dict[str, Any] = {}

        def subst(v: Any) -> Any:
            if isinstance(v, str) and v.startswith("$"):
                return captured[v[1:]]
            if isinstance(v, list):
                return [subst(x) for x in v]
            return v

        results = []
        for step in plan:
            rc, out, err = self.call(target, step.tool, {k: subst(v) for k, v in step.args.items()})
            result = out["result"]
            text = " ".join(c.get("text", "") for c in result["content"])
            if result.get("isError"):
                assert rc == 5 and err["error"]["code"] == "tool_is_error", (rc, err)
            else:
                assert rc == 0 and err is None, (step.tool, rc, err)
            data = result.get("structuredContent")
            assert data is None or json.loads(text) == data  # the text block mirrors the structured content
            for name, field in step.capture.items():
                captured[name] = data[field]
            results.append((bool(result.get("isError")), data, text))
        verify(plan, results)


@pytest.fixture
def inspector(tmp_path: Path) -> Inspector:
    return Inspector(tmp_path)


def test_stdio_lists_every_surface_and_calls_a_tool_of_each(inspector: Inspector) -> None:
    for surface, (args, _) in SURFACES.items():
        tools = inspector.tools(inspector.stdio_target(*args), npx=surface == "memoryd")
        assert [t["name"] for t in tools] == EXPECTED_TOOLS[surface]
        assert all(t["description"].strip() and "outputSchema" in t for t in tools)
    rc, out, _ = inspector.call(inspector.stdio_target(), "mem_save",
                                {"content": "Release branches are cut every second Monday", "type": "decision"})  # fmt: skip
    assert rc == 0 and out["result"]["structuredContent"]["status"] == "saved"
    rc, out, _ = inspector.call(
        inspector.stdio_target("--profile", "hmg"), "memory_recall", {"query": "release branches"}
    )
    assert rc == 0 and "second Monday" in out["result"]["structuredContent"]["atoms"][0]["content"]  # same store


@pytest.mark.parametrize("surface", list(SURFACES))
def test_http_calls_every_tool_of_the_surface(inspector: Inspector, surface: str) -> None:
    args, plan = SURFACES[surface]
    assert {s.tool for s in plan} == set(EXPECTED_TOOLS[surface])
    with http_server(inspector.data, inspector.repo, *args) as port:
        target = [f"http://127.0.0.1:{port}/mcp"]
        assert [t["name"] for t in inspector.tools(target)] == EXPECTED_TOOLS[surface]
        if surface != "memoryd":  # memoryd-admin runs the same agent steps
            inspector.run_plan(target, plan)
            return
        rc, out, err = inspector.call(target, "mem_stats", {})  # admin only
        assert rc == 5 and out is None
        assert err == {"error": {"code": "tool_not_found", "message": "Tool 'mem_stats' not found on server."}}
        rc, out, err = inspector.call(target, "mem_search", {"query": "x", "top_k": 0})
        assert rc == 5 and err["error"]["code"] == "tool_is_error"
        assert "Input should be greater than or equal to 1" in out["result"]["content"][0]["text"]
        rc, out, _ = inspector.call(target, "mem_get", {"memory_id": "nope"})
        assert rc == 5 and out["result"]["content"][0]["text"].startswith("not_found: ")
        assert "structuredContent" not in out["result"]  # text only: the Inspector validates it against the schema
        r = run([MEMORYD, "scope", "mark-sensitive"], {**inspector.env, "MEMORYD_HOME": str(inspector.data)},
                inspector.repo)  # fmt: skip
        assert r.returncode == 0, r.stderr
        rc, out, err = inspector.call(target, "mem_search", {"query": "deploys"})
        assert rc != 0 and out is None and "AuthorizationRequired: " in err["error"]["message"], (rc, out, err)
