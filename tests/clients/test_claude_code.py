"""Claude Code itself (npm @anthropic-ai/claude-code) reads what `memoryd install claude` wrote.

`claude mcp list` health-checks every approved server (a real MCP initialize) and prints one line per
server: `<name>: <command or url> [(HTTP)] - ✔ Connected`, `✘ Failed to connect — …`, or, for a
project `.mcp.json` server nobody approved, `⏸ Pending approval`. Each test gets its own HOME.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ..conftest import make_repo
from ..mcp.clients import http_server
from .node import BIN, MEMORYD, client_env, need, run

pytestmark = pytest.mark.slow

# a user-scope entry names the command, which PATH finds (this same install), not its path (issue 25)
ON_PATH = "memoryd-mcp"


class Claude:
    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.repo = make_repo(tmp_path / "widgets")
        self.env = client_env(self.home, tmp_path / "data")
        self.exe = str(need(BIN / "claude"))

    def memoryd(self, *args: str) -> str:
        r = run([MEMORYD, *args], self.env, self.repo)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def claude(self, *args: str) -> str:
        r = run([self.exe, *args], self.env, self.repo)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    def status(self) -> dict[str, str]:
        """`claude mcp list` as {server name: the rest of its line}."""
        out = self.claude("mcp", "list")
        return dict(m.groups() for m in re.finditer(r"^([\w-]+): (.+)$", out, re.M))

    def write(self, path: Path, data: dict[str, object]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")

    def trust(self) -> None:
        """What accepting Claude Code's workspace trust dialog records in ~/.claude.json."""
        state_path = self.home / ".claude.json"
        state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {}
        state.setdefault("projects", {}).setdefault(str(self.repo.resolve()), {})["hasTrustDialogAccepted"] = True
        state_path.write_text(json.dumps(state), encoding="utf-8")


@pytest.fixture
def c(tmp_path: Path) -> Claude:
    return Claude(tmp_path)


def test_project_install_waits_for_approval_and_the_install_notes_say_what_the_cli_does(c: Claude) -> None:
    out = c.memoryd("install", "claude")
    user_settings = c.home / ".claude" / "settings.json"
    local_settings = c.repo / ".claude" / "settings.local.json"
    assert f'"enabledMcpjsonServers": ["memoryd"] to {user_settings}' in out
    assert f"{local_settings} counts only once you have trusted the folder" in out
    # The shared file names the command on PATH, never this machine's virtualenv.
    assert json.loads((c.repo / ".mcp.json").read_text())["mcpServers"]["memoryd"]["command"] == "memoryd-mcp"
    assert c.status() == {"memoryd": "memoryd-mcp  - ⏸ Pending approval (run `claude` to approve)"}

    # The first way the note gives: the user's settings approve it, trusted folder or not.
    c.write(user_settings, {"enabledMcpjsonServers": ["memoryd"]})
    assert c.status() == {"memoryd": "memoryd-mcp  - ✔ Connected"}
    assert f"the project server 'memoryd' is already approved ({user_settings})" in c.memoryd("install", "claude")
    c.write(user_settings, {"enableAllProjectMcpServers": True})
    assert c.status()["memoryd"].endswith("✔ Connected")

    # The project's local settings are ignored until the folder is trusted, and install says so.
    user_settings.unlink()
    c.write(local_settings, {"enabledMcpjsonServers": ["memoryd"]})
    assert c.status()["memoryd"].endswith("⏸ Pending approval (run `claude` to approve)")
    assert "already approved" not in c.memoryd("install", "claude")
    c.trust()
    assert c.status()["memoryd"].endswith("✔ Connected")
    assert f"already approved ({local_settings})" in c.memoryd("install", "claude")

    # A disabledMcpjsonServers entry wins over any approval; install reports it.
    c.write(user_settings, {"disabledMcpjsonServers": ["memoryd"]})
    assert "memoryd" not in c.status()
    assert "disabledMcpjsonServers, so Claude Code will not start it" in c.memoryd("install", "claude")

    user_settings.unlink()
    c.memoryd("uninstall", "claude")
    assert "No MCP servers configured" in c.claude("mcp", "list")


def test_approve_approves_this_project_only_and_uninstall_takes_it_back(c: Claude, tmp_path: Path) -> None:
    """`memoryd install claude --approve`: what the real CLI then does, in this folder and in another one."""
    local = c.repo / ".claude" / "settings.local.json"
    out = c.memoryd("install", "claude", "--approve")
    assert json.loads(local.read_text()) == {"enabledMcpjsonServers": ["memoryd"]}
    assert f"approved in {local}, which Claude Code honours once you trust the folder" in out
    assert not (c.home / ".claude" / "settings.json").exists()  # nothing approved by name everywhere
    # the folder not trusted yet: Claude Code still asks (a cloned repository cannot approve its own servers) …
    assert c.status()["memoryd"].endswith("⏸ Pending approval (run `claude` to approve)")
    c.trust()  # … and once the person trusts it, memoryd connects with no MCP prompt
    assert c.status() == {"memoryd": "memoryd-mcp  - ✔ Connected"}
    assert f"the project server 'memoryd' is already approved ({local})" in c.memoryd("install", "claude")
    # another repository's .mcp.json naming a server `memoryd` is not approved by it, trusted or not
    other = make_repo(tmp_path / "other")
    (other / ".mcp.json").write_text(json.dumps({"mcpServers": {"memoryd": {"command": "memoryd-mcp"}}}))
    state = json.loads((c.home / ".claude.json").read_text())
    state["projects"][str(other.resolve())] = {"hasTrustDialogAccepted": True}
    (c.home / ".claude.json").write_text(json.dumps(state))
    listed = run([c.exe, "mcp", "list"], c.env, other)
    assert "memoryd: memoryd-mcp  - ⏸ Pending approval" in listed.stdout, listed.stdout
    # a trusted folder: --approve connects at once; uninstall takes the approval out with the rest
    c.memoryd("uninstall", "claude")
    assert not local.exists() and "No MCP servers configured" in c.claude("mcp", "list")
    c.memoryd("install", "claude", "--approve")
    assert c.status() == {"memoryd": "memoryd-mcp  - ✔ Connected"}
    c.memoryd("uninstall", "claude")
    assert not (c.repo / ".claude").exists()


def test_user_scope_install_of_both_profiles_connects_and_uninstalls(c: Claude) -> None:
    c.memoryd("install", "claude", "--scope", "user")
    c.memoryd("install", "claude", "--scope", "user", "--profile", "hmg")
    c.claude("mcp", "add", "broken", "--", "/bin/false")  # the control: a server that cannot start
    status = c.status()
    assert status["memoryd"] == f"{ON_PATH}  - ✔ Connected"
    assert status["hmg"] == f"{ON_PATH} --profile hmg - ✔ Connected"
    assert status["broken"].startswith("/bin/false  - ✘ Failed to connect")
    got = c.claude("mcp", "get", "hmg")
    for line in (
        "Scope: User config",
        "Status: ✔ Connected",
        "Type: stdio",
        f"Command: {ON_PATH}",
        "Args: --profile hmg",
    ):
        assert line in got, got
    c.memoryd("uninstall", "claude", "--scope", "user")
    c.memoryd("uninstall", "claude", "--scope", "user", "--profile", "hmg")
    assert set(c.status()) == {"broken"}


def test_http_registration_connects_and_the_token_is_enforced(c: Claude) -> None:
    with http_server(c.home.parent / "data", c.repo, MEMORYD_TOKEN="s3cret-s3cret-s3cret-s3cret-s3cret-0") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        c.claude(
            "mcp",
            "add",
            "--transport",
            "http",
            "memoryd-http",
            url,
            "--header",
            "Authorization: Bearer s3cret-s3cret-s3cret-s3cret-s3cret-0",
        )
        c.claude("mcp", "add", "--transport", "http", "memoryd-noauth", url)
        status = c.status()
        got = c.claude("mcp", "get", "memoryd-http")
    assert status["memoryd-http"] == f"{url} (HTTP) - ✔ Connected"
    assert status["memoryd-noauth"].startswith(f"{url} (HTTP) - ✘ Failed to connect")
    assert "401" in status["memoryd-noauth"]
    assert "Status: ✔ Connected" in got and "Type: http" in got


def test_the_file_hook_adds_anchored_memories_to_a_real_session_once(c: Claude) -> None:
    """`memoryd install claude` + a real `claude -p` session whose model (tests/clients/fake_api.py, offline)
    reads the same file twice: Claude Code runs the PreToolUse hook on Read and sends its context to the
    model once, with the memory and how its code changed.

    Every hook shares one "already injected" record per session, so the file hook is seen alone here:
    an earlier session's brief already reported this code change (the next brief leaves it out), and
    the prompt recall is off."""
    from .fake_api import fake_model

    (c.repo / "auth").mkdir()
    source = c.repo / "auth" / "session.py"
    source.write_text("def get_session(token):\n    return STORE.get(token)\n")
    for args in (["add", "-A"], ["commit", "-q", "-m", "code"]):
        run(["git", *args], c.env, c.repo)
    saved = json.loads(c.memoryd("memorize", "Sessions come from `get_session()` in auth/session.py", "--json"))
    assert saved["anchors"] == ["auth/session.py", "auth/session.py::get_session"]
    source.write_text("def get_session(token):\n    return STORE[token]\n")  # the code moves on
    c.memoryd("install", "claude")
    earlier = {"session_id": "earlier", "cwd": str(c.repo), "hook_event_name": "SessionStart", "source": "startup"}
    brief = subprocess.run([MEMORYD, "hook", "session-start"], input=json.dumps(earlier), env=c.env, cwd=c.repo,
                           capture_output=True, text=True, timeout=90)  # fmt: skip
    assert saved["atom_id"] in brief.stdout, brief  # the brief of a session reports the change once
    with fake_model([str(source), str(source)]) as model:
        env = {**c.env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model.port}", "ANTHROPIC_API_KEY": "sk-test-offline",
               "MEMORYD_PROMPT_CONTEXT_TOKENS": "0"}  # fmt: skip
        r = run([c.exe, "-p", "read auth/session.py", "--allowedTools", "Read", "--output-format", "json"], env, c.repo,
                timeout=180)  # fmt: skip
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert json.loads(r.stdout)["result"] == "done"
    final = json.dumps(model.requests[-1], ensure_ascii=False)
    marker = "PreToolUse:Read hook additional context: [memoryd · 1 memory anchored to auth/session.py · ~"
    assert final.count(marker) == 1, final[-3000:]  # two reads of the file, one injection
    assert f"[fact {saved['atom_id']}] Sessions come from `get_session()` in auth/session.py" in final
    assert "code changed: the definition of get_session (auth/session.py) changed since" in final
    assert final.count(saved["atom_id"]) == 1, final[-3000:]  # not in this session's brief too
    assert sum(1 for m in model.requests if "memoryd · 1 memory anchored" in json.dumps(m, ensure_ascii=False)) == 2
