"""Hooks through the resident daemon: given means delivered, one deadline per hook, SessionStart warms it.

Real processes: `memoryd hook <event>` as Claude Code spawns it, a real daemon on a real SQLite home.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from memoryd.daemon.client import Client
from memoryd.shared.injected import InjectedRecord

from .test_daemon import MEMORYD, PY, D, _daemons, _env, _wait, daemon_home, use_env

d = pytest.fixture(daemon_home, name="d")
MEMORY = "The deploy pipeline runs database migrations before switching traffic."
PROMPT = "when do the database migrations run in the deploy pipeline?"

# `memoryd hook user-prompt-submit` with a 1.5 s budget whose daemon stops (SIGSTOP) once the prompt is sent.
STALLS = """
import os, signal, sys
import memoryd.daemon.client as C
from memoryd.agents import hooks
hooks.BUDGETS["user-prompt-submit"] = 1.5
pid = C.Client(autostart=False).health()["pid"]
send = C.Client._send

def stalled(self, method, path, body, headers, timeout):
    if path == "/v1/prompt":
        os.kill(pid, signal.SIGSTOP)
    return send(self, method, path, body, headers, timeout)

C.Client._send = stalled
sys.exit(hooks.main(["user-prompt-submit"]))
"""


def _seed(d: D) -> str:
    saved = d.client().call("/v1/memorize", {"content": MEMORY, "type": "fact"}, scope=d.scope())
    assert saved["effect"] == "created"
    return str(saved["id"])


def _prompt(d: D, session: str, *, probe: str | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    body = {"session_id": session, "cwd": str(d.repo), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    cmd = [PY, "-c", probe] if probe else [MEMORYD, "hook", "user-prompt-submit"]
    started = time.monotonic()
    r = subprocess.run(cmd, input=json.dumps(body), env=d.env, cwd=d.repo, capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    return r, time.monotonic() - started


def _context(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]) if r.stdout else ""


def test_a_hook_that_times_out_records_nothing(d: D) -> None:
    """The daemon answers after the hook gave up: the memories were never delivered, so the session is not told
    it has them, and its next prompt gets them."""
    memory = _seed(d)
    pid = d.pid()
    assert pid is not None
    try:
        r, took = _prompt(d, "s-late", probe=STALLS)
    finally:
        os.kill(pid, signal.SIGCONT)  # the daemon answers the stalled request now, to a hook long gone
    assert r.returncode == 0 and r.stdout == "" and took < 1.5 + 1.5, (r, took)
    assert "the daemon answered timeout" in (d.home / "hooks.log").read_text()
    assert _wait(lambda: int((d.client(autostart=False).health() or {"calls": 0})["calls"]) > 0)
    time.sleep(1.0)  # the late answer has been written by now (or failed on the closed connection)
    assert InjectedRecord(d.home, "s-late").ids() == set()
    r, _ = _prompt(d, "s-late")
    assert memory in _context(r)  # delivered now, and recorded
    assert InjectedRecord(d.home, "s-late").ids() == {memory}
    r, _ = _prompt(d, "s-late")
    assert _context(r) == ""  # once per session


def test_a_cold_hook_keeps_to_one_deadline(d: D) -> None:
    """No daemon, and another client holds the start lock past the hook's budget: the hook gives up at its one
    deadline (`hooks.BUDGETS`, 8.5 s from its start: the host's timeout is 10 s), with nothing in-process after
    it, and records nothing."""
    from memoryd.agents.hooks import BUDGETS
    from memoryd.engine import Engine
    from memoryd.shared.config import Settings

    with Engine.open(Settings(home=d.home), cwd=d.repo) as e:
        e.memorize(MEMORY, source="user")
    d.home.mkdir(parents=True, exist_ok=True)
    with open(d.home / "daemon.start.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        r, took = _prompt(d, "s-cold")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert took < BUDGETS["user-prompt-submit"] + 1.2, took
    log = (d.home / "hooks.log").read_text()
    assert "another client is starting the daemon and it did not listen in time" in log
    assert "no time left to run in-process" in log
    assert InjectedRecord(d.home, "s-cold").ids() == set() and not _daemons(d.home)


@pytest.mark.slow
def test_session_start_warms_the_daemon_for_the_first_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real model: SessionStart finds no daemon, starts it (its models load in the background) and
    answers the brief; by the session's first prompt the model is ready and the prompt gets its memory."""
    from .conftest import make_repo

    home, repo = tmp_path / "home", make_repo(tmp_path / "widgets")
    env = {**_env(home), "MEMORYD_EMBEDDER": "use"}
    env.pop("MEMORYD_TERM_EMBEDDER")
    use_env(monkeypatch, env)
    d = D(home, repo, env)
    try:
        start = {"session_id": "s-warm", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
        r = subprocess.run([MEMORYD, "hook", "session-start"], input=json.dumps(start), env=env, cwd=repo,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        # The brief, unless the daemon's cold start (its imports, its engine open beside the models loading) took
        # longer than the hook's 8.5 s on a busy machine: then nothing, said in hooks.log, and nothing recorded; the
        # daemon it started goes on starting.
        brief = _context(r)
        said = (home / "hooks.log").read_text() if (home / "hooks.log").exists() else ""
        assert r.returncode == 0 and ("[memoryd · acme/widgets]" in brief if brief else
                                      "did not listen within the time left" in said or "answered timeout" in said)  # fmt: skip
        assert InjectedRecord(home, "s-warm").ids() == set() or brief
        assert _wait(lambda: Client(home, autostart=False).health() is not None) and len(_daemons(home)) == 1
        assert _wait(lambda: (Client(home, autostart=False).health() or {}).get("models") == "ready", timeout=120)
        memory = _seed(d)
        r, _ = _prompt(d, "s-warm")
        assert memory in _context(r)
    finally:
        Client(home, autostart=False).stop()


def test_the_prompt_scope_and_observe_endpoints_answer_and_check_their_input(d: D, tmp_path: Path) -> None:
    """`/v1/prompt` is the engine's decision (what the hook prints, nothing recorded); `/v1/scope` the request's
    scope; `/v1/observe` starts reading a transcript; each refuses a malformed body with the field named."""
    from memoryd.daemon.client import DaemonError

    memory = _seed(d)
    c = d.client(client={"host": "openclaw", "agent": "main"})
    answer = c.call("/v1/prompt", {"prompt": PROMPT, "limit": 3}, scope=d.scope())
    assert [i["id"] for i in answer["items"]] == [memory] and answer["semantic"] is True
    assert answer["text"] == f"{answer['header']}\n{answer['items'][0]['line']}"
    assert answer["header"] == "[memoryd · acme/widgets] memories relevant to this prompt:"
    assert c.call("/v1/prompt", {"prompt": PROMPT, "given": [memory]}, scope=d.scope())["items"] == []
    assert c.call("/v1/prompt", {"prompt": "what is the capital of Peru?"}, scope=d.scope())["text"] == ""
    assert not (d.home / "sessions").exists()  # nothing recorded by the daemon
    scope = c.call("/v1/scope", {}, scope=d.scope())
    assert (scope["workspace"], scope["repository"], scope["name"]) == ("acme", "widgets", "acme/widgets")
    for path, body, message in [
        ("/v1/prompt", {}, "prompt is required"),
        ("/v1/prompt", {"prompt": "x", "within_ms": -1}, "within_ms must be a whole number of milliseconds, got -1"),
        ("/v1/prompt", {"prompt": "x", "limit": 0}, "limit must be an integer between 1 and 100, got 0"),
        ("/v1/prompt", {"prompt": "x", "given": "01ABC"}, "given must be a list of strings"),
        ("/v1/prompt", {"prompt": "x", "given": ["a"] * 10_001}, "given lists 10001 ids; the limit is 10000"),
        ("/v1/prompt", {"prompt": "x", "top": 3}, "unknown fields ['top']; expected ['given', 'limit', 'prompt', 'within_ms']"),
        ("/v1/scope", {"cwd": "/"}, "unknown fields ['cwd']; expected []"),
        ("/v1/context", {"path": "README", "record": "no"}, "record must be true or false"),
        ("/v1/observe", {"transcript_path": "/x.jsonl"}, "session_id is required"),
    ]:  # fmt: skip
        with pytest.raises(DaemonError) as info:
            c.call(path, body, scope=d.scope())
        assert (info.value.status, info.value.code, info.value.message) == (400, "invalid_input", message), path
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    started = c.call("/v1/observe", {"session_id": "s-o", "transcript_path": str(transcript), "event": "pre-compact"},
                     scope=d.scope())  # fmt: skip
    assert started == {"started": True}
    assert _wait(lambda: "observe pre-compact:" in (d.home / "daemon.log").read_text())
