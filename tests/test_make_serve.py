"""`make --no-print-directory -C <checkout> serve` (README) is usable as an MCP command: from a fresh
state (no virtualenv yet) the first line a client reads on stdout is the server's JSON-RPC answer; the
install and make's own lines go to stderr."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .mcp.clients import server_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_make_serve_from_a_fresh_state_writes_only_json_rpc_to_stdout(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    checkout = tmp_path / "memoryd"
    checkout.mkdir()
    for name in ("Makefile", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, checkout / name)
    shutil.copytree(ROOT / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = server_env(tmp_path / "data")
    env.pop("VIRTUAL_ENV", None)
    env.pop("MAKEFLAGS", None)
    for key in ("MAKELEVEL", "MFLAGS", "MAKEFILES"):  # an MCP client is not a make: under `make test` these
        env.pop(key, None)  # would make the inner make print "Entering directory" on stdout
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "make-serve-test", "version": "0"}}}  # fmt: skip
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen(["make", "--no-print-directory", "-C", str(checkout), "serve"], cwd=tmp_path, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)  # fmt: skip
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            first = proc.stdout.readline()
            proc.stdin.close()  # end of input: the server exits
            rest = proc.stdout.read()
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    err = log.read_text()
    assert (checkout / ".venv" / ".serve-stamp").exists(), err[-2000:]  # it did install, from nothing
    answer = json.loads(first)  # the very first line: no make echo, no pip output before it
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 1, first
    assert answer["result"]["serverInfo"]["name"] == "memoryd"
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0", line
    assert "pip install" in err or "venv" in err  # make's own lines went to stderr
    assert os.path.exists(checkout / ".venv" / "bin" / "memoryd-mcp")
