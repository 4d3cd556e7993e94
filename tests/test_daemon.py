"""The resident memoryd (memoryd.daemon): real daemon processes, a real SQLite file, the real Unix socket.

Every daemon a test starts is stopped at its end (and conftest stops any left at the session's end).
The hashing embedder keeps start-up short; tests/clients/test_claude_code_daemon.py runs the real model.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.daemon.client import Client, DaemonError, DaemonUnavailable, Paths

from .conftest import make_repo

PY = sys.executable
MCP = str(Path(sys.executable).with_name("memoryd-mcp"))
MEMORYD = str(Path(sys.executable).with_name("memoryd"))


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return {**env, "MEMORYD_HOME": str(home), "MEMORYD_DAEMON": "on", "MEMORYD_EMBEDDER": "hash",
            "MEMORYD_TERM_EMBEDDER": "none", **extra}  # fmt: skip


def use_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """This process acts in `env`'s data home: its MEMORYD_* variables, and no other."""
    for k in [k for k in os.environ if k.startswith("MEMORYD_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        if k.startswith("MEMORYD_"):
            monkeypatch.setenv(k, v)


class D:
    """A data home with the daemon turned on for this process and its children."""

    def __init__(self, home: Path, repo: Path, env: dict[str, str]) -> None:
        self.home, self.repo, self.env = home, repo, env
        self.paths = Paths(home)

    def client(self, **kw: Any) -> Client:
        return Client(self.home, **kw)

    def scope(self) -> dict[str, str]:
        return {"cwd": str(self.repo)}

    def pid(self) -> int | None:
        info = self.client(autostart=False).health()
        return int(info["pid"]) if info else None


def daemon_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[D]:
    """A data home and a repository, the daemon turned on for this test (and stopped at its end)."""
    home = tmp_path / "home"
    env = _env(home)
    use_env(monkeypatch, env)
    daemon = D(home, make_repo(tmp_path / "widgets"), env)
    yield daemon
    Client(home, autostart=False).stop()


d = pytest.fixture(daemon_home, name="d")


def _daemons(home: Path) -> list[int]:
    """Live `memoryd.daemon serve` processes whose working directory is `home` (where clients start them)."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(p / "cwd")
            state = (p / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if b"memoryd.daemon" in cmd and b"serve" in cmd and cwd == str(home) and state != "Z":
            pids.append(int(p.name))
    return pids


def _wait(pred: Any, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


# -- the local API ---------------------------------------------------------------------------------------


def test_local_api_endpoints_scope_provenance_and_errors(d: D) -> None:
    c = d.client(client={"host": "openclaw", "agent": "main", "session": "s-1"})
    saved = c.call("/v1/memorize", {"content": "The billing service stores amounts as integer cents, never floats.",
                                    "type": "decision", "tags": ["billing"]}, scope=d.scope())  # fmt: skip
    assert saved["effect"] == "created" and saved["status"] == "active" and saved["id"]
    again = c.call("/v1/memorize", {"content": "The billing service stores amounts as integer cents, never floats."},
                   scope=d.scope())  # fmt: skip
    assert again["id"] == saved["id"] and again["effect"] == "duplicate" and again["reason"]
    junk = c.call("/v1/memorize", {"content": "ok"}, scope=d.scope())
    assert junk["effect"] == "rejected" and junk["id"] is None and junk["reason"]

    items = c.call("/v1/recall", {"query": "how are billing amounts stored", "limit": 3}, scope=d.scope())["items"]
    assert items[0]["id"] == saved["id"] and items[0]["scope"] == "acme/widgets" and items[0]["type"] == "decision"
    assert items[0]["score"] > 0 and items[0]["tags"] == ["billing"]
    # The same daemon serves another repository: its own scope, nothing of widgets.
    other = make_repo(d.repo.parent / "gadgets", remote="git@github.com:acme/gadgets.git")
    assert c.call("/v1/recall", {"query": "billing amounts"}, scope={"cwd": str(other)})["items"] == []
    explicit = {"workspace": "acme", "repository": "widgets", "branch": "main"}
    assert c.call("/v1/recall", {"query": "billing amounts"}, scope=explicit)["items"][0]["id"] == saved["id"]

    brief = c.call("/v1/brief", {}, scope=d.scope())
    assert "[memoryd · acme/widgets]" in brief["text"] and "integer cents" in brief["text"]
    assert brief["ids"] == [saved["id"]]
    ctx = c.call("/v1/context", {"path": "README"}, scope=d.scope())
    assert ctx["path"] == "README" and ctx["items"] == [] and ctx["text"] == ""
    # A memory anchored to a file: the file's context, once per session.
    (d.repo / "billing.py").write_text("def round_invoice(total):\n    return round(total)\n")
    subprocess.run(["git", "-C", str(d.repo), "add", "billing.py"], check=True)
    subprocess.run(["git", "-C", str(d.repo), "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q",
                    "-m", "billing"], check=True)  # fmt: skip
    anchored = c.call("/v1/memorize", {"content": "round_invoice() in billing.py rounds half to even, as the auditors "
                                                  "require."}, scope=d.scope())["id"]  # fmt: skip
    ctx = c.call("/v1/context", {"path": str(d.repo / "billing.py"), "session": "s-ctx"}, scope=d.scope())
    assert ctx["path"] == "billing.py" and [i["id"] for i in ctx["items"]] == [anchored]
    assert "rounds half to even" in ctx["text"]
    again = c.call("/v1/context", {"path": "billing.py", "session": "s-ctx"}, scope=d.scope())
    assert again["items"] == [] and again["text"] == ""

    # Provenance: the event names the client.
    con = sqlite3.connect(d.home / "memoryd.db")
    actors = [r[0] for r in con.execute("SELECT actor FROM events WHERE atom_id = ?", (saved["id"],))]
    con.close()
    assert actors and all(a.endswith("@openclaw/main#s-1") for a in actors), actors

    gone = c.call("/v1/forget", {"id": saved["id"], "reason": "moved to the ledger service"}, scope=d.scope())
    assert gone == {"id": saved["id"], "effect": "forgotten"}
    left = c.call("/v1/recall", {"query": "billing amounts integer cents"}, scope=d.scope())["items"]
    assert saved["id"] not in [i["id"] for i in left]

    def error(path: str, body: Any, scope: Any = None, **kw: Any) -> DaemonError:
        with pytest.raises(DaemonError) as info:
            Client(d.home, **kw).call(path, body, scope=d.scope() if scope is None else scope)
        return info.value

    e = error("/v1/recall", {"query": "x"}, scope="")
    assert (e.status, e.code) == (400, "invalid_input") and "Memoryd-Scope header is missing" in e.message
    e = error("/v1/recall", {"query": "x"}, scope={"cwd": "relative/dir"})
    assert e.code == "invalid_input" and "absolute path of a directory" in e.message
    e = error("/v1/recall", {"query": "x"}, scope={"cwd": str(d.repo), "workspace": "a"})
    assert e.code == "invalid_input" and '"cwd" goes alone' in e.message
    e = error("/v1/recall", {"query": "x"}, scope={"workspace": "acme"})
    assert e.code == "invalid_input" and "repository" in e.message
    e = error("/v1/recall", {"query": "x", "top": 3})
    assert e.code == "invalid_input" and "unknown fields ['top']" in e.message
    e = error("/v1/recall", {"query": ""})
    assert e.code == "invalid_input" and "query is empty" in e.message
    e = error("/v1/recall", {"query": "x", "limit": 1000})
    assert e.code == "invalid_input" and "max_results must be between 1 and 100" in e.message
    e = error("/v1/memorize", {"content": 5})
    assert e.code == "invalid_input" and "content must be a string" in e.message
    e = error("/v1/forget", {"id": "01NOSUCHMEMORY0000000000000"})
    assert (e.status, e.code) == (404, "not_found")
    e = error("/v1/nothing", {})
    assert (e.status, e.code) == (404, "not_found") and "docs/LOCAL_API.md" in e.message
    e = error("/v1/recall", {"query": "x"}, client={"host": "x", "who": "y"})
    assert e.code == "invalid_input" and "Memoryd-Client has an unknown key 'who'" in e.message
    e = error("/v1/recall", {"query": "x"}, client={"host": "a#b"})
    assert e.code == "invalid_input" and "without @ # /" in e.message
    status, body, _ = c.raw("POST", "/v1/recall", b"[1, 2", scope=d.scope())
    assert status == 400 and "the body is not JSON" in json.loads(body)["error"]["message"]
    status, body, _ = c.raw("POST", "/v1/recall", b"[1]", scope=d.scope())
    assert status == 400 and json.loads(body)["error"]["message"] == "the body must be a JSON object"
    status, body, _ = c.raw("POST", "/v1/recall", b"{}", scope=d.scope(), extra={"Memoryd-Version": "x/1; api=2"})
    assert status == 409 and "api=2" in json.loads(body)["error"]["message"]
    # A plugin's version with api=1 is served.
    status, body, _ = c.raw("POST", "/v1/recall", b'{"query": "cents"}', scope=d.scope(),
                            extra={"Memoryd-Version": "openclaw-memoryd/0.3.0; api=1"})  # fmt: skip
    assert status == 200


def test_files_modes_health_log_and_cli(d: D) -> None:
    r = subprocess.run([MEMORYD, "daemon", "status"], env=d.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and f"not running for {d.home}" in r.stdout
    r = subprocess.run([MEMORYD, "daemon", "start"], env=d.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "memoryd daemon started: pid" in r.stdout, r.stderr
    r = subprocess.run([MEMORYD, "daemon", "start"], env=d.env, capture_output=True, text=True, timeout=60)
    assert "memoryd daemon running: pid" in r.stdout
    assert stat.S_IMODE(d.home.stat().st_mode) == 0o700
    assert stat.S_IMODE(d.paths.socket.stat().st_mode) == 0o600 and stat.S_ISSOCK(d.paths.socket.stat().st_mode)
    info = json.loads(d.paths.info.read_text())
    assert info["api"] == 1 and info["socket"] == str(d.paths.socket) and info["pid"] == d.pid()
    r = subprocess.run([MEMORYD, "daemon", "status", "--json"], env=d.env, capture_output=True, text=True, timeout=60)
    status = json.loads(r.stdout)
    assert status["ok"] is True and status["home"] == str(d.home) and status["engine"] in ("ready", "opening")
    r = subprocess.run([MEMORYD, "daemon", "logs", "-n", "5"], env=d.env, capture_output=True, text=True, timeout=60)
    assert "daemon listening on" in r.stdout
    pid = d.pid()
    r = subprocess.run([MEMORYD, "daemon", "stop"], env=d.env, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == f"memoryd daemon stopped (pid {pid})"
    assert not d.paths.socket.exists() and not d.paths.info.exists()
    r = subprocess.run([MEMORYD, "daemon", "stop"], env=d.env, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "memoryd daemon: not running"
    # A second daemon for the same home refuses to run.
    d.client().start()
    r = subprocess.run([PY, "-m", "memoryd.daemon", "serve"], env=d.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and f"a memoryd daemon already runs for {d.home}" in r.stderr


def test_a_long_home_path_gets_a_short_private_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / ("h" * 60) / ("o" * 60)
    monkeypatch.setenv("MEMORYD_DAEMON", "on")
    monkeypatch.setenv("MEMORYD_EMBEDDER", "hash")
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    c = Client(home)
    try:
        assert c.paths.socket.parent.name == f"memoryd-{os.getuid()}" and len(str(c.paths.socket)) < 108
        assert c.call("/v1/health", method="GET")["home"] == str(home)
        assert stat.S_IMODE(c.paths.socket.parent.stat().st_mode) == 0o700
        assert json.loads((home / "daemon.json").read_text())["socket"] == str(c.paths.socket)
    finally:
        c.stop()


# -- one daemon, restarts, idle exit ---------------------------------------------------------------------------


RACE = """
import json, sys
from memoryd.daemon.client import Client
print(json.dumps(Client().call("/v1/health", method="GET", timeout=90)["pid"]))
"""


@pytest.mark.slow
def test_a_hundred_clients_starting_at_once_end_with_one_daemon(d: D) -> None:
    procs = [subprocess.Popen([PY, "-c", RACE], env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(100)]  # fmt: skip
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e.decode()[-500:] for _, e in outs if e][:3]
    pids = {int(o) for o, _ in outs}
    assert len(pids) == 1
    assert _daemons(d.home) == list(pids)
    log = d.paths.log.read_text()
    assert log.count("daemon listening on") == 1 and "already runs" not in log


OLD = """
import sys
import memoryd
memoryd.__version__ = "0.0.1-old"
from memoryd.daemon.server import main
sys.exit(main(["serve"]))
"""


def test_a_client_of_another_version_restarts_the_daemon(d: D) -> None:
    old = subprocess.Popen([PY, "-c", OLD], env=d.env, cwd=d.home.parent, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert _wait(lambda: (d.client(autostart=False).health() or {}).get("version") == "0.0.1-old")
        answer = d.client().call("/v1/recall", {"query": "anything"}, scope=d.scope())
        assert answer == {"items": []}
        assert old.wait(timeout=20) == 0  # asked to stop, it exited cleanly
        info = d.client(autostart=False).health()
        import memoryd

        assert info is not None and info["version"] == memoryd.__version__ and info["pid"] != old.pid
        # Other settings are a restart too (the daemon serves the settings it started with).
        before = info["pid"]
        c = d.client()
        os.environ["MEMORYD_BRIEF_MAX_CHARS"] = "1500"
        try:
            assert "text" in c.call("/v1/brief", {}, scope=d.scope())
        finally:
            del os.environ["MEMORYD_BRIEF_MAX_CHARS"]
        assert d.pid() not in (None, before)
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


def test_idle_daemon_exits_and_cleans_up(d: D, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_DAEMON_IDLE", "1")
    c = d.client()
    c.call("/v1/health", method="GET")
    pid = d.pid()
    assert pid is not None
    assert _wait(lambda: not _daemons(d.home), timeout=15)
    assert not d.paths.socket.exists() and not d.paths.info.exists()
    assert "idle for 1 s: exiting" in d.paths.log.read_text()
    # The next call starts it again.
    assert c.call("/v1/recall", {"query": "x y"}, scope=d.scope()) == {"items": []}
    assert d.pid() not in (None, pid)


# -- another user ------------------------------------------------------------------------------------------------

PEEK = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print(json.dumps({"connect": type(exc).__name__})); sys.exit(0)
s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(json.dumps({"answer": data.decode()}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None, reason="creates a user: needs root")
def test_another_user_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd
    import tempfile

    name = "memorydpeer"
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    user = pwd.getpwnam(name)
    top = Path(tempfile.mkdtemp(prefix="memoryd-peer-"))  # a path the other user may traverse (pytest's is 0700)
    os.chmod(top, 0o711)
    home = top / "home"
    monkeypatch.setenv("MEMORYD_DAEMON", "on")
    monkeypatch.setenv("MEMORYD_EMBEDDER", "hash")
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    c = Client(home)
    try:
        c.call("/v1/health", method="GET")
        python = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"

        def peek() -> dict[str, str]:
            r = subprocess.run([python, "-c", PEEK, str(c.paths.socket)], user=user.pw_uid, group=user.pw_gid,
                               capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"}, cwd="/")  # fmt: skip
            assert r.returncode == 0, r.stderr
            return dict(json.loads(r.stdout))

        # The home (0700) and the socket (0600) keep them out.
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        assert peek() == {"connect": "PermissionError"}
        # Were both opened up, the daemon still refuses them by their uid (SO_PEERCRED).
        os.chmod(home, 0o711)
        os.chmod(c.paths.socket, 0o666)
        try:
            answer = peek()["answer"]
        finally:
            os.chmod(home, 0o700)
            os.chmod(c.paths.socket, 0o600)
        assert answer.startswith("HTTP/1.1 403 Forbidden")
        assert json.loads(answer.split("\r\n\r\n", 1)[1])["error"] == {
            "code": "forbidden", "message": "this memoryd daemon serves its own user only"}  # fmt: skip
        assert f"refused a connection from uid {user.pw_uid}" in (home / "daemon.log").read_text()
        assert c.call("/v1/health", method="GET")["ok"] is True  # the owner is still served
    finally:
        c.stop()
        shutil.rmtree(top, ignore_errors=True)


# -- fallback -----------------------------------------------------------------------------------------------------


def test_fallback_in_process_when_the_socket_cannot_be_created(d: D) -> None:
    from memoryd.engine import Engine
    from memoryd.search.embed import HashEmbedder
    from memoryd.shared.config import Settings

    with Engine.open(Settings(home=d.home, embedder="hash"), cwd=d.repo, embedder=HashEmbedder(),
                     term_embedder=None) as engine:  # fmt: skip
        engine.memorize("The deploy pipeline runs database migrations before switching traffic.", source="user")
    d.paths.socket.mkdir()  # something that is not a socket, and cannot be removed as one
    (d.paths.socket / "keep").write_text("x")
    payload = {"session_id": "s-fb", "cwd": str(d.repo), "prompt": "when do database migrations run in the deploy?",
               "hook_event_name": "UserPromptSubmit"}  # fmt: skip
    r = subprocess.run([MEMORYD, "hook", "user-prompt-submit"], input=json.dumps(payload), env=d.env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0 and r.stderr == ""
    out = json.loads(r.stdout)["hookSpecificOutput"]
    assert "runs database migrations before switching traffic" in out["additionalContext"]
    lines = [x for x in (d.home / "hooks.log").read_text().splitlines() if "the daemon is not available" in x]
    assert len(lines) == 1 and "cannot create the socket" in lines[0] and "running in-process" in lines[0]
    # memoryd-mcp over stdio: serves in-process, one line on stderr.
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    r = subprocess.run([MCP], input=json.dumps(init) + "\n", env=d.env, cwd=d.repo, capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert json.loads(r.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "memoryd"
    said = [x for x in r.stderr.splitlines() if "daemon is not available" in x]
    assert len(said) == 1 and said[0].endswith("serving in-process")
    with pytest.raises(DaemonUnavailable, match="cannot create the socket"):
        d.client().call("/v1/health", method="GET")


def test_a_configuration_the_daemon_cannot_serve_is_refused_as_before(d: D) -> None:
    """A bad MEMORYD_* value: the daemon exits at start saying why, and `memoryd-mcp` refuses as in-process."""
    env = {**d.env, "MEMORYD_BRIEF_MAX_CHARS": "lots"}
    r = subprocess.run([MCP], input="", env=env, cwd=d.repo, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert (
        "the daemon exited at start (memoryd daemon: MEMORYD_BRIEF_MAX_CHARS: Input should be a valid integer"
        in lines[0]
    )
    assert lines[-1].startswith("memoryd-mcp: MEMORYD_BRIEF_MAX_CHARS: Input should be a valid integer")
    assert not _daemons(d.home)


def test_hook_budget_gives_up_with_no_output(d: D) -> None:
    """A daemon that does not answer (stopped with SIGSTOP) costs a hook its budget, never more."""
    d.client().call("/v1/health", method="GET")
    pid = d.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        payload = {"session_id": "s-b", "cwd": str(d.repo), "tool_name": "Read", "tool_input": {"file_path": "README"},
                   "hook_event_name": "PreToolUse"}  # fmt: skip
        started = time.monotonic()
        r = subprocess.run([MEMORYD, "hook", "pre-tool-use"], input=json.dumps(payload), env=d.env,
                           capture_output=True, text=True, timeout=30)  # fmt: skip
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert took < 3.0 + 1.5, took  # the pre-tool-use budget (hooks.BUDGETS) and a process start
    assert "the daemon answered timeout" in (d.home / "hooks.log").read_text()


def test_hooks_import_nothing_heavy(d: D) -> None:
    d.client().call("/v1/health", method="GET")
    probe = ("import sys, runpy; sys.argv = ['memoryd', 'hook', 'user-prompt-submit']\n"
             "from memoryd.agents import hooks\n"
             "code = hooks.main(['user-prompt-submit'])\n"
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'numpy', 'typer', 'mcp') "
             "or m.startswith(('memoryd.engine', 'memoryd.storage', 'memoryd.search', 'memoryd.shared.config')))\n"
             "print(repr(heavy), file=sys.stderr)\n")  # fmt: skip
    for event, payload in [
        ("user-prompt-submit", {"prompt": "how do we deploy the billing service?"}),
        ("session-start", {"source": "startup"}),
        ("pre-tool-use", {"tool_name": "mcp__memoryd__mem_search", "tool_input": {"query": "x"}}),
    ]:
        body = {"session_id": "s-h", "cwd": str(d.repo), "hook_event_name": event, **payload}
        r = subprocess.run([PY, "-c", probe.replace("user-prompt-submit", event)], input=json.dumps(body),
                           env=d.env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.stderr.strip().splitlines()[-1] == "[]", (event, r.stderr)
        if event == "session-start":
            assert "[memoryd · acme/widgets]" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
        if event == "pre-tool-use":
            assert json.loads(r.stdout)["hookSpecificOutput"]["updatedInput"]["scope"] == "auto"


def test_the_memoryd_hook_command_imports_only_the_thin_client(d: D) -> None:
    """`memoryd hook <event>` (what `memoryd install` registers): the imports of the whole process, listed by
    `-X importtime`, hold nothing heavy (the one hook client, `memoryd.agents.hooks`, is standard library only
    while the daemon answers)."""
    from memoryd.agents import hooks
    from memoryd.agents.install import HOOK_EVENTS

    assert set(hooks.BUDGETS) == set(hooks.EVENTS)
    for name, declared in HOOK_EVENTS.values():  # one deadline, under the timeout Claude Code is told
        assert hooks.BUDGETS[name] <= declared - 1.5, name
    d.client().call("/v1/health", method="GET")
    for event, payload in [
        ("user-prompt-submit", {"prompt": "how do we deploy the billing service?"}),
        ("session-start", {"source": "startup"}),
        ("pre-tool-use", {"tool_name": "Read", "tool_input": {"file_path": "README"}}),
    ]:
        body = {"session_id": "s-t", "cwd": str(d.repo), "hook_event_name": event, **payload}
        r = subprocess.run([PY, "-X", "importtime", MEMORYD, "hook", event], input=json.dumps(body), env=d.env,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        modules = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
        heavy = sorted(m for m in modules if m.split(".")[0] in ("pydantic", "numpy", "typer", "mcp", "typing",
                                                                 "http", "email", "ssl")
                       or m.startswith(("memoryd.engine", "memoryd.storage", "memoryd.search", "memoryd.shared.config",
                                        "memoryd.daemon.api", "memoryd.daemon.server")))  # fmt: skip
        assert heavy == [], (event, heavy)
        assert r.returncode == 0
        if event == "session-start":
            assert "[memoryd · acme/widgets]" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]


# -- crashes and orphans ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_during_four_writers_loses_no_acknowledged_write(d: D) -> None:
    d.client().call("/v1/health", method="GET")
    acked: list[str] = []
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w: int) -> None:
        c = d.client(client={"host": "cli", "session": f"w{w}"})
        i = 0
        while not stop.is_set() and i < 400:
            i += 1
            content = f"Service {w}-{i} answers its health check on port {10000 + w * 1000 + i} over plain HTTP."
            try:
                answer = c.call("/v1/memorize", {"content": content, "type": "fact"}, scope=d.scope(), timeout=30)
            except DaemonError as exc:  # in flight when the daemon died: an error answer, never a hang
                with lock:
                    errors.append(exc.code)
                continue
            if answer["id"]:
                with lock:
                    acked.append(answer["id"])

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    assert _wait(lambda: len(acked) >= 40, timeout=60)
    first = d.pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert _wait(lambda: (d.pid() or first) != first, timeout=30)  # the writers' next calls restarted it
    count = len(acked)
    assert _wait(lambda: len(acked) >= count + 40, timeout=60)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert set(errors) <= {"daemon_unreachable"}, errors
    con = sqlite3.connect(d.home / "memoryd.db")
    stored = {r[0] for r in con.execute("SELECT id FROM atoms")}
    con.close()
    assert not set(acked) - stored, f"{len(set(acked) - stored)} acknowledged writes lost"
    # Every later call is answered.
    for _ in range(5):
        assert d.client().call("/v1/recall", {"query": "health check port"}, scope=d.scope())["items"]
    assert len(_daemons(d.home)) == 1


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip


def _processes(*dirs: Path) -> set[int]:
    """Live processes working in one of `dirs` (the sessions' forwarders run in the repository)."""
    found = set()
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and os.readlink(p / "cwd") in {str(x) for x in dirs}:
                if (p / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":
                    found.add(int(p.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_no_orphans_after_200_session_cycles(d: D) -> None:
    d.client().call("/v1/health", method="GET")
    daemon = d.pid()
    before = _processes(d.repo, d.home)
    lines = "\n".join(json.dumps(m) for m in [
        INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "mem_search", "arguments": {"query": "port"}}},
    ]) + "\n"  # fmt: skip
    for i in range(200):
        r = subprocess.run([MCP], input=lines, env=d.env, cwd=d.repo, capture_output=True, text=True, timeout=60)
        answers = [json.loads(x) for x in r.stdout.splitlines()]
        assert [a["id"] for a in answers] == [1, 2] and "result" in answers[1], (i, r.stdout, r.stderr)
    assert d.pid() == daemon
    # An orphan is a process the sessions left behind; one that was already there may end meanwhile (a git
    # maintenance child of the test repository's setup, say) and is no orphan.
    assert _wait(lambda: not _processes(d.repo, d.home) - before, timeout=10), _processes(d.repo, d.home) - before


# -- the tool-profile suites, unchanged, through the daemon ----------------------------------------------------


@pytest.mark.slow
def test_both_tool_profile_suites_pass_through_the_daemon(tmp_path: Path) -> None:
    """tests/mcp (both profiles, stdio and HTTP) with MEMORYD_TEST_DAEMON=on: every stdio `memoryd-mcp` is the
    forwarder and the tools run in a daemon (HTTP transports stay in-process, as before)."""
    root = Path(__file__).resolve().parent
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}, "MEMORYD_TEST_DAEMON": "on"}
    base = tmp_path / "bt"
    r = subprocess.run([PY, "-m", "pytest", str(root / "mcp"), "-q", "-p", "no:cacheprovider", f"--basetemp={base}"],
                       env=env, cwd=root.parent, capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:]
    assert " passed" in r.stdout and "failed" not in r.stdout
    logs = list(base.glob("**/daemon.log"))
    assert len(logs) >= 10, "the stdio sessions did not go through the daemon"
    served = sum(int(x.rsplit("stopped after ", 1)[1].split()[0]) for log in logs
                 for x in log.read_text().splitlines() if "stopped after" in x)  # fmt: skip
    assert served >= 100
    assert not _daemons_under(base)


def _daemons_under(base: Path) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        try:
            if (
                p.name.isdigit()
                and os.readlink(p / "cwd").startswith(str(base))
                and b"memoryd.daemon" in (p / "cmdline").read_bytes()
            ):
                found.append(int(p.name))
        except OSError:
            continue
    return found
