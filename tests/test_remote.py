"""`memoryd connect`: the real SDK stdio client → `memoryd connect` → a real `memoryd-mcp --transport http`.

Misbehaving servers (a 500, an answer cut short, a socket that never answers) are small stdlib HTTP
servers in a thread: what they do wrong is the point, and `memoryd connect` cannot tell them apart
from a real one.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import make_repo
from .mcp.clients import free_port, http_server, ok, server_env

pytestmark = pytest.mark.anyio
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
TOKEN = "t0ken-for-remote-tests-0123456789abcdef"
VAR = "MEMORYD_TEAM_TOKEN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(cwd: Path, *args: str, errlog: Path, token: str | None = TOKEN) -> AsyncIterator[ClientSession]:
    """An initialized SDK session to `memoryd connect ARGS --token-env VAR` started in `cwd`."""
    env = server_env(cwd / ".no-home", **({VAR: token} if token is not None else {}))
    params = StdioServerParameters(command=MEMORYD, args=["connect", *args, "--token-env", VAR], cwd=str(cwd), env=env)
    with errlog.open("a") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            yield s


async def refused(cwd: Path, *args: str, errlog: Path, token: str | None = TOKEN) -> str:
    """The error `initialize` gets through `memoryd connect ARGS` (it must get one)."""
    try:
        async with connect(cwd, *args, errlog=errlog, token=token):
            pass
    except BaseException as exc:  # the SDK's task groups wrap it
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        assert isinstance(exc, MCPError), repr(exc)
        return str(exc)
    raise AssertionError("initialize succeeded")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """Today's single-token HTTP server (stateful: it sets Mcp-Session-Id, answers in SSE)."""
    with http_server(tmp_path / "home", make_repo(tmp_path / "served"), MEMORYD_TOKEN=TOKEN,
                     MEMORYD_EMBEDDER="hash") as port:  # fmt: skip
        yield f"http://127.0.0.1:{port}/mcp"


async def test_save_and_search_through_connect(server: str, repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "connect.log"
    async with connect(repo, server, errlog=log) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert "mem_save" in names and "mem_search" in names
        saved = await ok(s, "mem_save", {"content": "The billing service retries webhooks three times", "type": "fact"})
        assert saved["status"] == "saved"
        found = await ok(s, "mem_search", {"query": "billing webhooks retries"})
        assert found["results"][0]["memory_id"] == saved["memory_id"]
        bad = await s.call_tool("mem_search", {"query": " "})  # a tool error passes through as a tool error
        assert bad.is_error and "invalid_input: query is empty" in bad.content[0].text  # type: ignore[union-attr]
    assert TOKEN not in log.read_text()


async def test_a_bad_token_is_a_clear_error_that_never_shows_the_token(server: str, repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "connect.log"
    wrong = "wrong-token-that-must-not-leak-0123456789"
    msg = await refused(repo, server, errlog=log, token=wrong)
    assert f"{server} answered HTTP 401: the server did not accept the token in ${VAR}" in msg
    assert wrong not in msg and wrong not in log.read_text()


async def test_an_unreachable_server_answers_at_once(repo: Path, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    with anyio.fail_after(30):
        msg = await refused(repo, dead, errlog=tmp_path / "log")
    assert msg.startswith(f"memoryd connect: cannot reach the memoryd server: {dead} (")
    assert "Is the server running and the URL right?" in msg


async def test_the_next_replica_answers_when_the_first_is_down(server: str, repo: Path, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    async with connect(repo, dead, "--url", server, errlog=tmp_path / "log") as s:
        saved = await ok(s, "mem_save", {"content": "Replicas share one PostgreSQL database", "type": "fact"})
        assert saved["status"] == "saved"
        assert (await ok(s, "mem_get", {"memory_id": saved["memory_id"]}))["body"].startswith("Replicas share")


async def test_a_restarted_server_gets_a_new_session(repo: Path, tmp_path: Path) -> None:
    """The server forgets its sessions when it restarts (404 on the old id): connect starts a new one."""
    home, served, port = tmp_path / "home", make_repo(tmp_path / "served"), free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "connect.log"
    first = http_server(home, served, port=port, MEMORYD_TOKEN=TOKEN, MEMORYD_EMBEDDER="hash")
    first.__enter__()
    try:
        async with connect(repo, url, errlog=log) as s:
            saved = await ok(s, "mem_save", {"content": "Sessions live in one server process", "type": "fact"})
            first.__exit__(None, None, None)
            first = None
            with http_server(home, served, port=port, MEMORYD_TOKEN=TOKEN, MEMORYD_EMBEDDER="hash"):
                got = await ok(s, "mem_get", {"memory_id": saved["memory_id"]})
                assert got["body"] == "Sessions live in one server process"
    finally:
        if first is not None:
            first.__exit__(None, None, None)
    assert "the server no longer knows the session" in log.read_text()


# -- a scripted server: what memoryd connect sends, and what it does with odd answers -------------------------


class Script(BaseHTTPRequestHandler):
    """Answers each POST by `self.server.plan` (status, headers, body or None to hang up); records requests."""

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.seen.append((dict(self.headers), json.loads(body)))  # type: ignore[attr-defined]
        status, headers, payload = self.server.plan(json.loads(body))  # type: ignore[attr-defined]
        if status == 0:  # hang up without a word
            self.close_connection = True
            return
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def scripted(plan: Any) -> Iterator[tuple[str, list[tuple[dict[str, str], Any]]]]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Script)
    httpd.plan, httpd.seen = plan, []  # type: ignore[attr-defined]
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp", httpd.seen  # type: ignore[attr-defined]
    finally:
        httpd.shutdown()
        httpd.server_close()


def run_connect(cwd: Path, lines: list[Any], *args: str, token: str | None = TOKEN, timeout: float = 30,
                ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = server_env(cwd / ".no-home", **({VAR: token} if token is not None else {}))
    stdin = "".join(json.dumps(m) + "\n" if not isinstance(m, str) else m for m in lines)
    return subprocess.run([MEMORYD, "connect", *args], input=stdin, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def answers(r: subprocess.CompletedProcess[str]) -> list[Any]:
    return [json.loads(line) for line in r.stdout.splitlines()]


def req(i: Any, method: str = "tools/call") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": {}}


def as_json(obj: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return 200, {"content-type": "application/json", **headers}, json.dumps(obj).encode()


def test_each_request_carries_the_token_the_scope_and_the_session(repo: Path) -> None:
    def plan(m: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if "id" not in m:
            return 202, {}, b""
        result = {"protocolVersion": "2025-06-18"} if m["method"] == "initialize" else {"n": m["id"]}
        return as_json({"jsonrpc": "2.0", "id": m["id"], "result": result}, **{"mcp-session-id": "s-1"})

    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    with scripted(plan) as (url, seen):
        r = run_connect(sub, [req(0, "initialize"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                              req(1), req("x")], url, "--token-env", VAR)  # fmt: skip
    assert r.returncode == 0, r.stderr
    got = {json.dumps(a["id"]): a for a in answers(r)}
    assert set(got) == {"0", "1", '"x"'} and got['"x"']["result"] == {"n": "x"}  # the notification: no output
    scope = {"workspace": "acme", "repository": "widgets", "branch": "main", "root": str(repo.resolve())}
    for i, (headers, _) in enumerate(seen):
        assert headers["Authorization"] == f"Bearer {TOKEN}"
        assert json.loads(headers["Memoryd-Scope"]) == scope and headers["Memoryd-Scope"].isascii()
        assert headers["Accept"] == "application/json, text/event-stream"
        if i:  # after initialize: its session and protocol version
            assert headers["mcp-session-id"] == "s-1" and headers["mcp-protocol-version"] == "2025-06-18"
    assert "mcp-session-id" not in seen[0][0]


def test_the_scope_of_a_folder_outside_git_is_local(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    with scripted(lambda m: as_json({"jsonrpc": "2.0", "id": m["id"], "result": {}})) as (url, seen):
        r = run_connect(tmp_path, [req(1)], url, "--token-env", VAR, "--cwd", str(folder))
    assert answers(r) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert json.loads(seen[0][0]["Memoryd-Scope"]) == {"workspace": "local", "repository": "notes", "branch": "",
                                                        "root": str(folder.resolve())}  # fmt: skip


def test_an_event_stream_answer_is_written_message_by_message(repo: Path) -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
    done = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "a\nb"}]}}
    stream = f": keep-alive\n\nevent: message\ndata: {json.dumps(progress)}\n\nid: 2\ndata: {json.dumps(done)}\n\n"
    with scripted(lambda m: (200, {"content-type": "text/event-stream"}, stream.encode())) as (url, _):
        r = run_connect(repo, [req(7)], url, "--token-env", VAR)
    assert answers(r) == [progress, done]


@pytest.mark.parametrize(("status", "body", "expected"), [
    (403, {"error": "forbidden", "message": "acme/widgets is outside this token's scopes"},
     "answered HTTP 403: the token may not act on this repository (its --scope list) or do this (forbidden: "
     "acme/widgets is outside this token's scopes)"),
    (400, {"error": "invalid_input", "message": "Memoryd-Scope needs a repository"},
     "answered HTTP 400: the server refused the request (invalid_input: Memoryd-Scope needs a repository)"),
    (502, "<html>Bad Gateway</html>", "answered HTTP 502: the server failed (<html>Bad Gateway</html>)"),
    (404, "", "answered HTTP 404: no MCP endpoint there (the URL usually ends in /mcp)"),
])  # fmt: skip
def test_http_errors_are_answered_as_errors_of_that_request(repo: Path, status: int, body: Any, expected: str) -> None:
    payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    with scripted(lambda m: (status, {"content-type": "application/json"}, payload)) as (url, _):
        r = run_connect(repo, [req(1), req(2)], url, "--token-env", VAR)
    assert r.returncode == 0
    got = sorted(answers(r), key=lambda a: a["id"])
    assert [a["id"] for a in got] == [1, 2]
    for a in got:
        assert a["error"]["code"] == -32001 and a["error"]["data"] == {"url": url, "status": status}
        assert a["error"]["message"] == f"memoryd connect: {url} {expected}"


def test_an_answer_cut_short_is_an_error_and_not_sent_again(repo: Path) -> None:
    with scripted(lambda m: (0, {}, b"")) as (url, seen):
        r = run_connect(repo, [req(1)], url, "--token-env", VAR)
    [a] = answers(r)
    assert a["id"] == 1 and a["error"]["code"] == -32003
    assert "broke before the answer was complete" in a["error"]["message"]
    assert "may or may not have been applied" in a["error"]["message"]
    assert len(seen) == 1  # a write may have landed: never sent twice
    with scripted(lambda m: (200, {"content-type": "text/event-stream"}, b": only a comment\n\n")) as (url, _):
        [b] = answers(run_connect(repo, [req(2)], url, "--token-env", VAR))
    assert b["error"]["message"] == (f"memoryd connect: {url} ended its answer (HTTP 200, text/event-stream) "
                                     "without a response to this request")  # fmt: skip


def test_a_server_that_never_answers_times_out(repo: Path) -> None:
    with socket.socket() as silent:  # accepts the connection (the kernel's backlog), never reads
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        start = time.monotonic()
        r = run_connect(repo, [req(1)], url, "--token-env", VAR, "--timeout", "1")
    assert time.monotonic() - start < 20
    [a] = answers(r)
    assert a["error"] == {"code": -32002, "message": f"memoryd connect: {url} did not answer within 1 s (--timeout "
                                                     "sets the limit)", "data": {"url": url}}  # fmt: skip


def test_a_line_that_is_not_json_gets_a_parse_error_and_the_rest_goes_on(repo: Path) -> None:
    with scripted(lambda m: as_json({"jsonrpc": "2.0", "id": m["id"], "result": {}})) as (url, _):
        r = run_connect(repo, ["{not json\n", "\n", req(3)], url, "--token-env", VAR)
    first, second = answers(r)
    assert first["id"] is None and first["error"]["code"] == -32700
    assert second == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.parametrize(("args", "env", "expected"), [
    (["http://h/mcp", "--token-env", VAR], None, f"the environment variable {VAR} is not set"),
    (["http://h/mcp", "--token-env", VAR], "", f"the environment variable {VAR} is empty"),
    (["http://h/mcp", "--token-env", VAR], "  ", f"the environment variable {VAR} is empty"),
    (["http://h/mcp", "--token-env", VAR], TOKEN + "\n", "has spaces or line breaks around it"),
    (["http://h/mcp", "--token-env", TOKEN], TOKEN, "--token-env takes the NAME of an environment variable"),
    ([TOKEN, "--token-env", VAR], TOKEN, "each URL must start with http:// or https://"),
    (["--token-env", VAR], TOKEN, "give the team server's URL"),
])  # fmt: skip
def test_start_is_refused_with_a_clear_message(tmp_path: Path, args: list[str], env: str | None, expected: str) -> None:
    r = run_connect(tmp_path, [], *args, token=env)
    assert r.returncode == 2 and r.stdout == ""
    assert expected in r.stderr
    assert TOKEN not in r.stderr


def test_plain_http_to_another_host_is_warned_about(tmp_path: Path) -> None:
    r = run_connect(tmp_path, [], "http://memory.example.invalid/mcp", "--token-env", VAR)
    assert r.returncode == 0
    assert "http://memory.example.invalid/mcp is plain http: the token crosses the network unencrypted" in r.stderr


def test_connect_starts_without_the_engine_or_numpy(tmp_path: Path) -> None:
    code = ("import sys; sys.argv = ['memoryd', 'connect', 'http://127.0.0.1:9/mcp', '--token-env', 'V']\n"
            "from memoryd._launch import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('numpy', 'memoryd.engine', 'memoryd.storage', "
            "'typer', 'mcp')))\nprint(bad)")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], input="", capture_output=True, text=True, timeout=60,
                       env={**os.environ, "V": TOKEN}, cwd=tmp_path)  # fmt: skip
    assert r.stdout.strip() == "[]", r.stderr


# -- install --remote: the agent starts `memoryd connect`; the token stays in the environment -----------------

URL, URL2 = "https://memory.example.com/mcp", "https://memory2.example.com/mcp"
SECRET = "mdt_01JTEAMTOKEN_s3cr3t-value-that-never-lands-in-a-file"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(home, project), the backups under MEMORYD_HOME, and the token set in this environment."""
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "data"))
    monkeypatch.setenv(VAR, SECRET)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for d in ("home", "proj"):
        (tmp_path / d).mkdir()
    return tmp_path / "home", tmp_path / "proj"


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def no_secret(root: Path) -> None:
    for name, data in files(root).items():
        assert SECRET.encode() not in data, name


def test_install_claude_remote_project_registers_connect_and_no_hooks(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    from memoryd.agents.install import install_claude, uninstall_claude

    home, project = places
    (project / ".mcp.json").write_text('{"mcpServers": {"docs": {"command": "docs-mcp"}}}\n')
    before = files(tmp_path)
    report = install_claude("project", home=home, project_dir=project, remote=[URL, URL2], token_env=VAR)
    assert [(c.path, c.action) for c in report.changes] == [(str(project / ".mcp.json"), "updated")]
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"] == {
        "docs": {"command": "docs-mcp"},
        "memoryd": {"type": "stdio", "command": "memoryd", "args": ["connect", URL, URL2, "--token-env", VAR]},
    }
    assert not (project / ".claude").exists()  # no hooks: they need a local store
    assert any("no hooks with --remote" in n for n in report.notes)
    assert any(f"only the NAME {VAR} is in the file" in n for n in report.notes)
    no_secret(tmp_path)
    assert not install_claude("project", home=home, project_dir=project, remote=[URL, URL2], token_env=VAR).changed
    out = uninstall_claude("project", home=home, project_dir=project)
    assert [c.action for c in out.changes if c.action != "unchanged"] == ["restored"]
    assert files(tmp_path) == before


def test_install_claude_remote_user_scope_uses_this_memoryd(places: tuple[Path, Path], tmp_path: Path) -> None:
    from memoryd.agents.install import default_executable, install_claude, uninstall_claude

    home, project = places
    report = install_claude("user", home=home, project_dir=project, remote=[URL], token_env=VAR)
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["memoryd"]
    assert entry == {"type": "stdio", "command": default_executable("memoryd"), "args": ["connect", URL, "--token-env",
                                                                                          VAR]}  # fmt: skip
    assert not (home / ".claude" / "settings.json").exists() and report.changes[0].action == "created"
    no_secret(tmp_path)
    uninstall_claude("user", home=home, project_dir=project)
    assert not (home / ".claude.json").exists()


def test_install_remote_over_a_local_install_says_the_hooks_are_still_there(places: tuple[Path, Path]) -> None:
    from memoryd.agents.install import install_claude

    home, project = places
    install_claude("project", home=home, project_dir=project)
    report = install_claude("project", home=home, project_dir=project, remote=[URL], token_env=VAR)
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["memoryd"]["args"][0] == "connect"
    assert any("still has memoryd's hooks from a local install" in n for n in report.notes)


def test_install_codex_remote_names_the_variable_in_env_vars(places: tuple[Path, Path], tmp_path: Path) -> None:
    import tomllib

    from memoryd.agents.install import install_codex, uninstall_codex

    home, _ = places
    codex = tmp_path / "codex"
    codex.mkdir()
    theirs = '# mine\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "npx"  # keep\n'
    (codex / "config.toml").write_text(theirs)
    report = install_codex(home, codex, command="/opt/bin/memoryd", remote=[URL], token_env=VAR)
    text = (codex / "config.toml").read_text()
    assert text.startswith(theirs)
    assert tomllib.loads(text)["mcp_servers"]["memoryd"] == {
        "command": "/opt/bin/memoryd", "args": ["connect", URL, "--token-env", VAR], "env_vars": [VAR]}  # fmt: skip
    assert report.changes[0].action == "updated" and len(report.changes) == 1
    no_secret(tmp_path)
    assert not install_codex(home, codex, command="/opt/bin/memoryd", remote=[URL], token_env=VAR).changed
    out = uninstall_codex(home, codex)
    assert out.changes[0].action == "restored" and (codex / "config.toml").read_text() == theirs


def test_install_codex_remote_keeps_the_users_env_vars(places: tuple[Path, Path], tmp_path: Path) -> None:
    import tomllib

    from memoryd.agents.install import InstallError, install_codex

    home, _ = places
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "config.toml").write_text(
        '[mcp_servers.memoryd]\ncommand = "x"\nenv_vars = ["HTTPS_PROXY"]\n'
    )
    report = install_codex(home, tmp_path / "codex", command="/opt/bin/memoryd", remote=[URL], token_env=VAR)
    table = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())["mcp_servers"]["memoryd"]
    assert table["env_vars"] == ["HTTPS_PROXY", VAR]
    assert report.changes[0].items == ["mcp_servers.memoryd.command", "mcp_servers.memoryd.args",
                                       "mcp_servers.memoryd.env_vars"]  # fmt: skip
    (tmp_path / "codex" / "config.toml").write_text('[mcp_servers.memoryd]\nenv_vars = "HTTPS_PROXY"\n')
    with pytest.raises(InstallError, match="'mcp_servers.memoryd.env_vars' is not a list; left untouched"):
        install_codex(home, tmp_path / "codex", command="/opt/bin/memoryd", remote=[URL], token_env=VAR)


@pytest.mark.parametrize(("kw", "expected"), [
    ({"remote": [URL]}, "--remote needs --token-env VAR"),
    ({"remote": [URL], "token_env": SECRET}, "--token-env takes the NAME of an environment variable"),
    ({"remote": [URL], "token_env": "abcdefghijklmnopqrstuvwxyzABCDEF0123"}, "--token-env takes the NAME"),
    ({"remote": [URL], "token_env": "mdt_01jteam_abcdef"}, "--token-env takes the NAME"),
    ({"remote": ["https://alice:" + SECRET + "@memory.example.com/mcp"], "token_env": VAR},
     "a URL holds a user name or password"),
    ({"remote": ["memory.example.com"], "token_env": VAR}, "each URL must start with http:// or https://"),
    ({"remote": [URL], "token_env": VAR, "hooks": True}, "--hooks needs a local store"),
])  # fmt: skip
def test_install_remote_refuses_what_would_not_work(places: tuple[Path, Path], tmp_path: Path, kw: dict[str, Any],
                                                    expected: str) -> None:  # fmt: skip
    from memoryd.agents.install import install_claude, install_codex
    from memoryd.shared.errors import InvalidInput

    home, project = places
    calls = [lambda: install_codex(home, tmp_path / "codex", **kw)]
    if "hooks" not in kw:
        calls.append(lambda: install_claude("project", home=home, project_dir=project, **kw))
    for call in calls:
        with pytest.raises(InvalidInput) as exc:
            call()
        assert expected in exc.value.message and SECRET not in exc.value.message
    assert files(tmp_path) == {}


def test_install_remote_project_scope_refuses_a_path_on_this_machine(places: tuple[Path, Path]) -> None:
    from memoryd.agents.install import install_claude
    from memoryd.shared.errors import InvalidInput

    home, project = places
    with pytest.raises(InvalidInput, match="is a path on this machine"):
        install_claude(
            "project", home=home, project_dir=project, command="/opt/bin/memoryd", remote=[URL], token_env=VAR
        )


def test_the_install_command_line_takes_remote_and_token_env(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    env = {**server_env(tmp_path / "data"), "HOME": str(home), VAR: SECRET}
    r = subprocess.run([MEMORYD, "install", "claude", "--remote", URL, "--remote", URL2, "--token-env", VAR, "--json"],
                       cwd=project, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["changes"][0]["items"] == ["mcpServers.memoryd"]
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["memoryd"]["args"] == [
        "connect", URL, URL2, "--token-env", VAR]  # fmt: skip
    assert SECRET not in r.stdout + r.stderr
    bad = subprocess.run([MEMORYD, "install", "codex", "--remote", URL], cwd=project, env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "--remote needs --token-env VAR" in bad.stderr
    no_secret(tmp_path)
