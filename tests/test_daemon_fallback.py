"""Fallback when the daemon cannot start, with file permissions that hold: a read-only home, and a home whose
socket cannot be created. The surfaces (a hook, `memoryd-mcp` over stdio) answer in-process exactly as with
the daemon off, one line says why, and a hook stays within its budget.

The suite runs as root, which ignores permissions; these processes run as root without any capability
(`setpriv`: no bounding set, `noroot` securebits), for which permissions apply as for any user. (A separate
user, as tests/test_daemon.py creates, cannot reach an interpreter installed under root's 0700 home.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.daemon.client import Paths

from .conftest import make_repo
from .test_daemon import MCP, MEMORYD, _daemons, _env

SETPRIV = shutil.which("setpriv")
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="drops root's capabilities: needs root")
UNPRIVILEGED = [SETPRIV or "setpriv", "--bounding-set=-all", "--inh-caps=-all",
                "--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked", "--"]  # fmt: skip
PROMPT_BUDGET = 8.5  # memoryd.agents.hooks.BUDGETS['user-prompt-submit']
MEMORY = "The deploy pipeline runs database migrations before switching traffic."


def _seed(home: Path, repo: Path) -> None:
    from memoryd.engine import Engine
    from memoryd.search.embed import HashEmbedder
    from memoryd.shared.config import Settings

    with Engine.open(Settings(home=home, embedder="hash"), cwd=repo, embedder=HashEmbedder(),
                     term_embedder=None) as engine:  # fmt: skip
        engine.memorize(MEMORY, source="user")


def _hook(env: dict[str, str], repo: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    payload = {"session_id": "s-ro", "cwd": str(repo), "prompt": "when do database migrations run in the deploy?",
               "hook_event_name": "UserPromptSubmit"}  # fmt: skip
    started = time.monotonic()
    r = subprocess.run([*UNPRIVILEGED, MEMORYD, "hook", "user-prompt-submit"], input=json.dumps(payload), env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    return r, time.monotonic() - started


def _mcp(env: dict[str, str], repo: Path) -> tuple[list[dict[str, object]], str]:
    """initialize, then a mem_search; the answers, and stderr."""
    proc = subprocess.Popen([*UNPRIVILEGED, MCP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=repo, text=True)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "mem_search", "arguments": {"query": "database migrations deploy"}}},
    ]  # fmt: skip
    answers = []
    try:
        for m in messages:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                answers.append(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return answers, proc.stderr.read()


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Path]:
    """XDG_RUNTIME_DIR for the processes (the log of a read-only home, a long home's socket)."""
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    yield path
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            os.chmod(p, 0o700)  # what a test made read-only, back for pytest's clean-up


def test_a_read_only_home(tmp_path: Path, runtime: Path) -> None:
    home, repo = tmp_path / "home", make_repo(tmp_path / "widgets")
    _seed(home, repo)
    for p in [home, *home.rglob("*")]:
        os.chmod(p, 0o500 if p.is_dir() else 0o400)
    env = _env(home, XDG_RUNTIME_DIR=str(runtime))
    off = {**env, "MEMORYD_DAEMON": "off"}
    hook, took = _hook(env, repo)
    as_before, _ = _hook(off, repo)
    assert hook.returncode == 0 and hook.stderr == "" and hook.stdout == as_before.stdout
    assert took < PROMPT_BUDGET + 1.5, took
    log = (runtime / f"memoryd-{os.getuid()}" / "hooks.log").read_text()  # the home takes no log
    said = [x for x in log.splitlines() if "the daemon is not available" in x]
    assert len(said) == 1 and f"the data home {home} is not writable); running in-process" in said[0], log
    answers, stderr = _mcp(env, repo)
    before, before_err = _mcp(off, repo)
    assert answers == before and answers[0]["result"]["serverInfo"]["name"] == "memoryd"  # type: ignore[index]
    assert before_err == ""
    assert stderr.splitlines() == [f"memoryd-mcp: the memoryd daemon is not available (the data home {home} is not "
                                   "writable); serving in-process"]  # fmt: skip
    assert not _daemons(home) and not Paths(home).socket.exists()


def test_a_socket_that_cannot_be_created(tmp_path: Path, runtime: Path) -> None:
    """A home path too long for a socket, and the short place for it not writable: bind is impossible."""
    home, repo = tmp_path / ("h" * 60) / ("o" * 60), make_repo(tmp_path / "widgets")
    _seed(home, repo)
    os.chmod(runtime, 0o500)
    env = _env(home, XDG_RUNTIME_DIR=str(runtime))
    hook, took = _hook(env, repo)
    assert hook.returncode == 0 and hook.stderr == ""
    assert MEMORY in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]  # the full recall, in-process
    assert took < PROMPT_BUDGET + 1.5, took
    said = [x for x in (home / "hooks.log").read_text().splitlines() if "the daemon is not available" in x]
    assert len(said) == 1 and "cannot create the socket" in said[0] and "Permission denied" in said[0], said
    assert said[0].endswith("running in-process")
    answers, stderr = _mcp(env, repo)
    assert MEMORY in json.dumps(answers[1])
    lines = stderr.splitlines()
    assert len(lines) == 1 and "cannot create the socket" in lines[0] and lines[0].endswith("serving in-process")
    assert not _daemons(home)
