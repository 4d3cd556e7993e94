"""Codex itself (npm @openai/codex) reads the [mcp_servers.*] tables `memoryd install codex` writes."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import make_repo
from .node import BIN, MEMORYD, client_env, need, run

THEIRS = """# my codex settings
model = "o3"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # keep me
"""

# a user-scope entry names the command, which PATH finds (this same install), not its path (issue 25)
ON_PATH = "memoryd-mcp"


def test_codex_lists_and_gets_what_install_wrote_and_forgets_it_after_uninstall(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(THEIRS, encoding="utf-8")
    (tmp_path / "home").mkdir()
    repo = make_repo(tmp_path / "widgets")
    env = client_env(tmp_path / "home", tmp_path / "data", CODEX_HOME=str(codex_home))
    codex = str(need(BIN / "codex"))

    def ok(*args: str) -> str:
        r = run([*args], env, repo)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    ok(MEMORYD, "install", "codex")
    ok(MEMORYD, "install", "codex", "--profile", "hmg")
    listed = {s["name"]: s for s in json.loads(ok(codex, "mcp", "list", "--json"))}
    assert set(listed) == {"docs", "memoryd", "hmg"}
    assert listed["memoryd"]["enabled"] is True
    assert listed["memoryd"]["transport"] == {"type": "stdio", "command": ON_PATH, "args": [], "env": None,
                                              "env_vars": [], "cwd": None}  # fmt: skip
    assert listed["hmg"]["transport"]["args"] == ["--profile", "hmg"]
    assert listed["docs"]["transport"]["args"] == ["-y", "docs-mcp"]  # theirs, parsed as before

    table = ok(codex, "mcp", "list")
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:] if line.strip()}
    assert rows["memoryd"][1:3] == [ON_PATH, "-"] and "enabled" in rows["memoryd"]
    assert rows["hmg"][1:4] == [ON_PATH, "--profile", "hmg"]

    got = [line.strip() for line in ok(codex, "mcp", "get", "memoryd").splitlines()]
    assert got[0] == "memoryd"
    assert {"enabled: true", "transport: stdio", f"command: {ON_PATH}", "args: -"} <= set(got), got

    ok(MEMORYD, "uninstall", "codex")
    ok(MEMORYD, "uninstall", "codex", "--profile", "hmg")
    assert (codex_home / "config.toml").read_text(encoding="utf-8") == THEIRS
    missing = run([codex, "mcp", "get", "memoryd"], env, repo)
    assert missing.returncode != 0 and "No MCP server named 'memoryd' found" in missing.stderr
    assert [s["name"] for s in json.loads(ok(codex, "mcp", "list", "--json"))] == ["docs"]
