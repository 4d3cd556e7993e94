"""Claude Code and Codex read what `memoryd install … --remote` wrote; Claude Code's health check goes through
`memoryd connect` to a real `memoryd-mcp --transport http`, the token coming from the environment only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ..conftest import make_repo
from ..mcp.clients import http_server
from .node import BIN, MEMORYD, client_env, need, run

pytestmark = pytest.mark.slow
TOKEN = "t0ken-for-remote-clients-0123456789abcdef"
VAR = "MEMORYD_TEAM_TOKEN"


def test_claude_code_connects_through_memoryd_connect_with_the_token_from_its_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = make_repo(tmp_path / "widgets")
    claude = str(need(BIN / "claude"))
    with http_server(tmp_path / "server", make_repo(tmp_path / "served"), MEMORYD_TOKEN=TOKEN,
                     MEMORYD_EMBEDDER="hash") as port:  # fmt: skip
        url = f"http://127.0.0.1:{port}/mcp"
        good = client_env(home, tmp_path / "data", **{VAR: TOKEN})
        bad = client_env(home, tmp_path / "data", **{VAR: "not-the-token-0123456789-0123456789"})
        r = run([MEMORYD, "install", "claude", "--scope", "user", "--remote", url, "--token-env", VAR], good, repo)
        assert r.returncode == 0, r.stderr

        def status(env: dict[str, str]) -> str:
            out = run([claude, "mcp", "list"], env, repo)
            assert out.returncode == 0, out.stderr
            return dict(m.groups() for m in re.finditer(r"^([\w-]+): (.+)$", out.stdout, re.M))["memoryd"]

        assert status(good).endswith("✔ Connected")
        assert "✘ Failed to connect" in status(bad)
    files = [home / ".claude.json", *home.rglob("*.json")]
    assert all(TOKEN not in p.read_text() for p in files if p.is_file())
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["memoryd"]
    assert entry["args"] == ["connect", url, "--token-env", VAR]
    assert run([MEMORYD, "uninstall", "claude", "--scope", "user"], good, repo).returncode == 0
    assert "memoryd" not in json.loads((home / ".claude.json").read_text()).get("mcpServers", {})


def test_codex_reads_the_remote_table_with_the_token_variable_in_env_vars(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (tmp_path / "home").mkdir()
    repo = make_repo(tmp_path / "widgets")
    env = client_env(tmp_path / "home", tmp_path / "data", CODEX_HOME=str(codex_home), **{VAR: TOKEN})
    codex = str(need(BIN / "codex"))
    url = "https://memory.example.com/mcp"
    r = run([MEMORYD, "install", "codex", "--remote", url, "--token-env", VAR], env, repo)
    assert r.returncode == 0, r.stderr
    listed = {s["name"]: s for s in json.loads(run([codex, "mcp", "list", "--json"], env, repo).stdout)}
    transport = listed["memoryd"]["transport"]
    assert transport["type"] == "stdio" and Path(transport["command"]).name == "memoryd"
    assert transport["args"] == ["connect", url, "--token-env", VAR] and transport["env_vars"] == [VAR]
    assert TOKEN not in (codex_home / "config.toml").read_text()
    assert run([MEMORYD, "uninstall", "codex"], env, repo).returncode == 0
    assert not (codex_home / "config.toml").exists()
