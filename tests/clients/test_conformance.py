"""The MCP conformance suite (npm @modelcontextprotocol/conformance, node 22) against `memoryd-mcp --transport http`.

Only the scenarios that need no fixture of the suite's own (tools such as `test_simple_text`,
resources under `test://`, prompts such as `test_simple_prompt`) are run; docs/TESTING.md lists the rest
and why they are skipped. Two scenarios call methods of capabilities memoryd does not declare, so
the spec's answer, -32601, is the expected result there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..conftest import make_repo
from ..mcp.clients import http_server
from .node import BIN, NODE22, client_env, need, run

pytestmark = pytest.mark.slow

PASS = ["server-initialize", "ping", "tools-list", "resources-list", "prompts-list", "dns-rebinding-protection",
        "server-sse-multiple-streams"]  # fmt: skip
# memoryd sends no log notifications and has no prompts or resource templates to complete, so it
# declares neither `logging` nor `completions`; these scenarios call the methods regardless.
UNDECLARED = {"logging-set-level": "logging", "completion-complete": "completions"}


def scenario(tmp_path: Path, env: dict[str, str], url: str, name: str) -> list[dict[str, Any]]:
    out = tmp_path / "conformance" / name
    r = run([str(need(NODE22)), str(need(BIN / "conformance")), "server", "--url", url, "--scenario", name,
             "-o", str(out)], env, tmp_path)  # fmt: skip
    files = list(out.glob("*/checks.json"))
    assert len(files) == 1, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    checks: list[dict[str, Any]] = json.loads(files[0].read_text(encoding="utf-8"))
    assert checks and (r.returncode == 0) == all(c["status"] != "FAILURE" for c in checks), r.stdout[-2000:]
    return checks


def test_conformance_scenarios(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    data, repo = tmp_path / "data", make_repo(tmp_path / "widgets")
    env = client_env(tmp_path / "home", data)
    with http_server(data, repo) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        for name in PASS:
            checks = scenario(tmp_path, env, url, name)
            assert [c for c in checks if c["status"] not in ("SUCCESS", "INFO")] == [], name
        for name in UNDECLARED:
            (check,) = scenario(tmp_path, env, url, name)
            assert (
                check["status"] == "FAILURE" and check["errorMessage"] == "Failed: MCP error -32601: Method not found"
            )


@pytest.mark.parametrize("args", [["--profile", "hmg"], ["--admin"]], ids=["hmg", "memoryd-admin"])
def test_tools_list_of_the_other_surfaces(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "home").mkdir()
    data, repo = tmp_path / "data", make_repo(tmp_path / "widgets")
    env = client_env(tmp_path / "home", data)
    with http_server(data, repo, *args) as port:
        (check,) = scenario(tmp_path, env, f"http://127.0.0.1:{port}/mcp", "tools-list")
    assert check["status"] == "SUCCESS", check
