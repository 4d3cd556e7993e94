"""`memoryd <command>` with a daemon running: answered by the daemon's warm engine, exactly as in-process.

Real processes throughout: the CLI as a subprocess, the daemon it finds (never one it starts), a real
SQLite home. A probe runs the CLI with `Engine.open` replaced by a failure, which proves the answer came
from the daemon (this process never opened the store nor loaded a model).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.daemon.client import Client, Paths

from .conftest import make_repo
from .test_daemon import MEMORYD, PY, _daemons, _env, use_env

# The CLI with Engine.open made to fail: it can only answer through the daemon. argv[1:] are its arguments.
PROBE = """
import sys
import memoryd.engine as E

def refuse(*a, **k):
    print("PROBE: Engine.open was called in the CLI process", file=sys.stderr)
    raise SystemExit(99)

E.Engine.open = refuse
from memoryd.cli import app
app(sys.argv[1:], prog_name="memoryd")
"""

# The daemon stops answering once the request is sent (SIGSTOP), then dies (SIGKILL): the CLI is mid-command.
DIES = """
import os, signal, sys, threading
import memoryd.daemon.client as C
pid = C.Client(autostart=False).health()["pid"]
send = C.Client._send

def dying(self, method, path, body, headers, timeout):
    if path == "/v1/operator":
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
    return send(self, method, path, body, headers, timeout)

C.Client._send = dying
from memoryd.cli import app
app(sys.argv[1:], prog_name="memoryd")
"""


class Home:
    def __init__(self, home: Path, repo: Path) -> None:
        self.home, self.repo = home, repo
        self.env = _env(home)

    def cli(self, *args: str, daemon: bool = True, probe: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "MEMORYD_DAEMON": "on" if daemon else "off"}
        cmd = [PY, "-c", probe, *args] if probe else [MEMORYD, *args]
        return subprocess.run(cmd, env=env, cwd=self.repo, capture_output=True, text=True, timeout=120)

    def client(self) -> Client:
        return Client(self.home, autostart=False)

    def calls(self) -> int:
        info = self.client().health()
        assert info is not None
        return int(info["calls"])


@pytest.fixture
def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    home = Home(tmp_path / "home", make_repo(tmp_path / "widgets"))
    use_env(monkeypatch, home.env)
    yield home
    Client(home.home, autostart=False).stop()


def _seed(h: Home) -> list[str]:
    (h.repo / "billing.py").write_text("def round_invoice(total):\n    return round(total)\n")
    ids = []
    for text, extra in [
        ("The billing service stores amounts as integer cents, never floats.", ["--type", "decision"]),
        ("round_invoice in billing.py rounds half to even, as the accountants asked.", ["--anchor", "billing.py"]),
        ("Deploys run database migrations before switching traffic.", []),
    ]:
        r = h.cli("memorize", text, *extra, "--json", daemon=False)
        assert r.returncode == 0, r.stderr
        ids.append(json.loads(r.stdout)["atom_id"])
    r = h.cli("correct", ids[2], "confirm_actual", "-r", "checked in the runbook", daemon=False)
    assert r.returncode == 0, r.stderr
    (h.repo / "billing.py").write_text("def round_total(total):\n    return round(total, 2)\n")  # the anchor is stale
    return ids


def test_no_daemon_is_started_for_a_command(h: Home) -> None:
    r = h.cli("stats", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["atoms"] == 0
    assert not _daemons(h.home) and not Paths(h.home).socket.exists()


def test_commands_answered_by_the_daemon_match_in_process(h: Home) -> None:
    ids = _seed(h)
    Client(h.home).start()
    commands: list[list[str]] = [
        ["recall", "how are billing amounts stored", "--json"],
        ["recall", "rounding", "--path", "billing.py", "--json"],
        ["timeline", "--json"],
        ["show", ids[1], "--json"],
        ["history", ids[2], "--json"],
        ["stale", "--json"],
        ["stats", "--json"],
        ["verify", "--json"],
        ["scope", "show", "--json"],
        ["brief", "--json"],
        ["review", "--json"],
    ]
    for args in commands:
        before = h.calls()
        local = h.cli(*args, daemon=False)
        served = h.cli(*args, probe=PROBE)
        assert served.returncode == local.returncode == 0, (args, served.stderr, local.stderr)
        assert served.stderr == local.stderr == "", args
        assert json.loads(served.stdout) == json.loads(local.stdout), args
        assert h.calls() > before + 1, args  # the health check, then the command's calls
    assert json.loads(h.cli("recall", "billing amounts", "--json", probe=PROBE).stdout)[0]["atom_id"] == ids[0]
    # Writes go through it too; the event names the CLI as in-process (no client name is added).
    r = h.cli("govern", ids[0], "quarantine", "-r", "double-check with finance", "--json", probe=PROBE)
    assert r.returncode == 0 and json.loads(r.stdout)["effect"] == "applied", r.stderr
    events = json.loads(h.cli("history", ids[0], "--json", daemon=False).stdout)
    assert events[-1]["action"] == "quarantine" and events[-1]["source"] == "cli" and events[-1]["person"] is None
    # The human output is the same text.
    assert h.cli("timeline", probe=PROBE).stdout == h.cli("timeline", daemon=False).stdout
    assert "daemon listening on" in (h.home / "daemon.log").read_text() and len(_daemons(h.home)) == 1


def test_errors_keep_code_exit_code_and_message_through_the_daemon(h: Home) -> None:
    ids = _seed(h)
    Client(h.home).start()
    for args, code in [
        (["show", "01NOSUCHMEMORY000000000000"], 3),
        (["correct", ids[0], "nonsense", "-r", "why"], 4),  # an effect "rejected", reported on stdout
        (["recall", "billing", "-n", "0"], 2),
        (["scope", "grant", "--minutes", "0"], 2),
        (["timeline", "--since", "forever"], 2),
    ]:
        local = h.cli(*args, daemon=False)
        served = h.cli(*args, probe=PROBE)
        assert served.returncode == local.returncode == code, (args, served.stderr, local.stderr)
        assert served.stderr == local.stderr and served.stdout == local.stdout, args
        assert served.stderr.startswith("error [") if code != 4 else "rejected" in served.stdout, args


def test_a_daemon_that_dies_mid_command_fails_it_clearly(h: Home) -> None:
    _seed(h)
    Client(h.home).start()
    r = h.cli("memorize", "The invoice PDF is rendered by the reports service, not billing.", probe=DIES)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error [daemon_unreachable]: the connection to the daemon broke before its answer "
                               "to /v1/operator"), r.stderr  # fmt: skip
    assert "may or may not have been applied" in r.stderr and "`memoryd daemon status`" in r.stderr
    assert not _daemons(h.home)
    # The next command finds no daemon and runs in-process (it starts none).
    r = h.cli("stats", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["atoms"] in (3, 4) and not _daemons(h.home)


def test_a_daemon_gone_before_its_first_answer_means_in_process(h: Home) -> None:
    _seed(h)
    Client(h.home).start()
    gone = DIES.replace('os.kill(pid, signal.SIGSTOP)\n        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()',
                        'os.kill(pid, signal.SIGKILL)\n        os.waitpid(pid, 0) if False else __import__("time").sleep(0.5)')  # fmt: skip
    r = h.cli("recall", "billing amounts", "--json", probe=gone)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "integer cents" in json.loads(r.stdout)[0]["content"]


def test_another_version_or_other_settings_mean_in_process(h: Home) -> None:
    _seed(h)
    Client(h.home).start()
    pid = Client(h.home, autostart=False).health()["pid"]  # type: ignore[index]
    env: dict[str, Any] = {**h.env, "MEMORYD_BRIEF_MAX_CHARS": "900"}
    r = subprocess.run([PY, "-c", PROBE, "stats"], env=env, cwd=h.repo, capture_output=True, text=True, timeout=60)
    assert r.returncode == 99 and "Engine.open was called" in r.stderr  # not through the daemon of other settings
    r = subprocess.run([MEMORYD, "stats", "--json"], env=env, cwd=h.repo, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["atoms"] == 3
    assert Client(h.home, autostart=False).health()["pid"] == pid  # type: ignore[index]  # left as it was


def test_the_operator_endpoint_refuses_what_it_does_not_serve(h: Home) -> None:
    from memoryd.daemon.client import DaemonError

    _seed(h)
    c = Client(h.home)
    scope = {"cwd": str(h.repo)}

    def error(body: Any) -> DaemonError:
        with pytest.raises(DaemonError) as info:
            c.call("/v1/operator", body, scope=scope)
        return info.value

    e = error({"v": 2, "method": "close", "args": {}})  # not part of the engine's API (Engine.api())
    assert (e.status, e.code) == (404, "not_found") and e.message.startswith(
        "no operator method 'close'; the daemon serves the engine's API"
    )
    e = error({"v": 2, "method": "export", "args": {}})  # in the API, but it writes to a stream
    assert (e.status, e.code) == (404, "not_found") and e.message.startswith(
        "no operator method 'export': its parameter out is not JSON (a callback or a stream): it runs in the "
        "caller's process"
    )
    e = error({"v": 1, "method": "stats"})
    assert (e.code, e.message) == ("invalid_input", "operator call version 1; this daemon speaks 2")
    e = error({"v": 2, "method": "stats", "args": ["x"]})
    assert (e.code, e.message) == (
        "invalid_input",
        "args must be a JSON object of the method's parameters (and pos a list)",
    )
    e = error({"v": 2, "method": "recall", "args": {"query": "x", "top": 3}})
    assert (e.code, e.message) == ("invalid_input", "recall: unknown parameters ['top']")
    e = error({"v": 2, "method": "recall", "args": {"query": "x", "max_results": "many"}})
    assert e.code == "invalid_input" and e.message.startswith("recall: max_results: Input should be a valid integer")
    e = error({"v": 2, "method": "stats", "pos": [1, 2]})
    assert (e.code, e.message) == ("invalid_input", "stats: too many positional arguments")
    e = error({"v": 2, "method": "get", "pos": ["01NOSUCHMEMORY000000000000"]})
    assert (e.status, e.code) == (404, "not_found") and "01NOSUCHMEMORY000000000000" in e.message
    e = error({"v": 2, "method": "memorize", "args": {"content": "ok"}})  # a refusal keeps the gate's scores
    assert (e.status, e.code) == (422, "rejected") and set(e.extra["dura"]) >= {"durability", "utility"}
    # Without a scope: refused as on every endpoint that reads memories.
    with pytest.raises(DaemonError, match="Memoryd-Scope"):
        c.call("/v1/operator", {"v": 2, "method": "stats"})
    assert c.call("/v1/operator", {"v": 2, "method": "stats", "args": {}}, scope=scope)["atoms"] == 3


def test_console_requests_are_checked(h: Home) -> None:
    from memoryd.daemon.client import DaemonError

    c = Client(h.home)
    scope = {"cwd": str(h.repo)}
    for body, message in [
        ({"port": 70000}, "port must be 0-65535, got 70000"),
        ({"port": "8767"}, "port must be 0-65535, got '8767'"),
        ({"allowed_host": "example.org"}, "allowed_host must be a list of host names"),
    ]:
        with pytest.raises(DaemonError) as info:
            c.call("/v1/console", body, scope=scope)
        assert (info.value.code, info.value.message) == ("invalid_input", message)
    for path in ("/v1/console/keep", "/v1/console/stop"):
        with pytest.raises(DaemonError) as info:
            c.call(path, {"id": "nope"}, scope=scope)
        assert (info.value.code, info.value.message) == ("not_found", "no console 'nope' runs in this daemon")
