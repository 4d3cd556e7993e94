"""`memoryd install` / `uninstall` for Claude Code and Codex: merge, idempotence, exact reversal."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.agents.install import (
    ABSENT_MARK,
    BACKUP_SUFFIX,
    InstallError,
    backup_dir,
    install_claude,
    install_codex,
    uninstall_claude,
    uninstall_codex,
)
from memoryd.agents.install.common import _backup_path
from memoryd.shared.errors import InvalidInput

MCP = "/opt/memoryd/.venv/bin/memoryd-mcp"  # user scope: this machine's files take absolute paths
HOOK = "/opt/memoryd/.venv/bin/memoryd"
PMCP = "memoryd-mcp"  # project scope: commands on PATH, nothing machine-specific
PHOOK = "command -v memoryd >/dev/null 2>&1 || exit 0; memoryd"  # … and a silent no-op where memoryd is absent


@pytest.fixture(autouse=True)
def data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Backups go under MEMORYD_HOME, never beside the files."""
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "data"))
    return tmp_path / "data"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes (and every directory, as None-like b'<dir>')."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def claude(scope: str, home: Path, project: Path, profile: str = "memoryd", **kw: object):  # type: ignore[no-untyped-def]
    paths = {"command": MCP, "hook_command": HOOK} if scope == "user" else {}
    return install_claude(scope, profile, home=home, project_dir=project, **paths, **kw)  # type: ignore[arg-type]


def unclaude(scope: str, home: Path, project: Path, profile: str = "memoryd"):  # type: ignore[no-untyped-def]
    return uninstall_claude(scope, profile, home=home, project_dir=project)  # type: ignore[arg-type]


def load(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text(encoding="utf-8"))


# -- Claude Code ----------------------------------------------------------------------------------------------


def test_project_install_into_an_empty_project_and_back(home: Path, project: Path, data_root: Path) -> None:
    before = {**tree(project), **tree(home)}
    report = claude("project", home, project)
    assert report.changed and [c.action for c in report.changes] == ["created", "created"]
    assert load(project / ".mcp.json") == {"mcpServers": {"memoryd": {"type": "stdio", "command": PMCP, "args": []}}}
    hooks = load(project / ".claude" / "settings.json")["hooks"]
    assert hooks == {
        "SessionStart": [{"hooks": [{"type": "command", "command": f"{PHOOK} hook session-start", "timeout": 10}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"{PHOOK} hook user-prompt-submit",
                                         "timeout": 10}]}],
        "PreToolUse": [{"matcher": "mcp__memoryd__.*",
                        "hooks": [{"type": "command", "command": f"{PHOOK} hook pre-tool-use", "timeout": 5}]},
                       {"matcher": "Read|Edit|Write|MultiEdit|NotebookEdit",  # memories anchored to the file
                        "hooks": [{"type": "command", "command": f"{PHOOK} hook pre-tool-use", "timeout": 5}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": f"{PHOOK} hook session-end", "timeout": 15}]}],
        "PreCompact": [{"hooks": [{"type": "command", "command": f"{PHOOK} hook pre-compact", "timeout": 30}]}],
    }  # fmt: skip
    # Nothing machine-specific in the shared files, and no backup in the repository.
    for name in (".mcp.json", ".claude/settings.json"):
        text = (project / name).read_text(encoding="utf-8")
        assert str(project.parent) not in text and "/.venv/" not in text and sys.executable not in text
    assert sorted(tree(project)) == [".claude", ".claude/settings.json", ".mcp.json"]
    assert {c.backup for c in report.changes} == {
        str(_backup_path(project / ".mcp.json")),
        str(_backup_path(project / ".claude" / "settings.json")),
    }
    assert all(Path(c.backup).read_bytes() == ABSENT_MARK and Path(c.backup).parent == data_root / "install-backups"
               for c in report.changes if c.backup)  # fmt: skip
    assert any("enabledMcpjsonServers" in n for n in report.notes)  # how to approve, not approved silently
    assert "enabledMcpjsonServers" not in json.dumps(load(project / ".claude" / "settings.json"))
    installed = tree(project.parent)
    again = claude("project", home, project)
    assert not again.changed and tree(project.parent) == installed  # idempotent
    out = unclaude("project", home, project)
    assert [c.action for c in out.changes] == ["deleted", "deleted"]
    assert {**tree(project), **tree(home)} == before
    assert list(backup_dir().iterdir()) == []


def test_project_scope_refuses_machine_paths_and_says_what_is_not_on_path(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for kw in (
        {"command": MCP},
        {"hook_command": f"{sys.executable} -m memoryd.agents.hooks"},
        {"command": "~/bin/memoryd-mcp"},
    ):
        with pytest.raises(InvalidInput) as exc:
            install_claude("project", home=home, project_dir=project, **kw)  # type: ignore[arg-type]
        assert "is a path on this machine" in exc.value.message and "--scope user" in exc.value.message
    assert tree(project) == {}
    monkeypatch.setenv("PATH", str(project))  # neither command can be found
    report = install_claude("project", home=home, project_dir=project)
    assert [n for n in report.notes if "is not on PATH here" in n] == [
        n for n in report.notes if n.startswith(("'memoryd-mcp' is not on PATH", "'memoryd' is not on PATH"))
    ]
    assert len([n for n in report.notes if "is not on PATH here" in n]) == 2
    relative = install_claude("project", home=home, project_dir=project, command="./tools/memoryd-mcp")
    assert load(project / ".mcp.json")["mcpServers"]["memoryd"]["command"] == "./tools/memoryd-mcp" and relative.changed


def test_an_older_backup_beside_the_file_moves_out_of_the_repository(home: Path, project: Path) -> None:
    seed(project)
    legacy = project / (".mcp.json" + BACKUP_SUFFIX)
    legacy.write_text(ORIGINAL_MCP, encoding="utf-8")  # what memoryd < 0.1.1 left in the repository
    claude("project", home, project)
    assert not legacy.exists() and _backup_path(project / ".mcp.json").read_text(encoding="utf-8") == ORIGINAL_MCP
    unclaude("project", home, project)
    assert (project / ".mcp.json").read_text(encoding="utf-8") == ORIGINAL_MCP and not legacy.exists()


ORIGINAL_MCP = """{
    "mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "资料库": {"type": "http", "url": "https://example.com/mcp"}
    }
}
"""
ORIGINAL_SETTINGS = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {"allow": ["Bash(npm run lint)", "mcp__github"], "deny": ["Read(./.env)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/check.sh", "timeout": 30}]}
    ],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat .claude/context.md"}]}]
  },
  "model": "opus"
}"""


def seed(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".mcp.json").write_text(ORIGINAL_MCP, encoding="utf-8")
    (project / ".claude" / "settings.json").write_text(ORIGINAL_SETTINGS, encoding="utf-8")


def test_install_merges_keeps_a_backup_and_uninstall_restores_the_bytes(home: Path, project: Path) -> None:
    seed(project)
    before = tree(project)
    report = claude("project", home, project)
    assert [c.action for c in report.changes] == ["updated", "updated"]
    mcp = load(project / ".mcp.json")
    assert list(mcp["mcpServers"]) == ["github", "资料库", "memoryd"]
    assert mcp["mcpServers"]["github"] == json.loads(ORIGINAL_MCP)["mcpServers"]["github"]
    assert (project / ".mcp.json").read_text(encoding="utf-8").startswith('{\n    "mcpServers"')  # indent kept
    settings = load(project / ".claude" / "settings.json")
    assert settings["permissions"] == json.loads(ORIGINAL_SETTINGS)["permissions"] and settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "Bash"  # theirs first, untouched
    assert settings["hooks"]["SessionStart"][0]["matcher"] == "startup"
    assert len(settings["hooks"]["SessionStart"]) == 2
    for name, text in ((".mcp.json", ORIGINAL_MCP), (".claude/settings.json", ORIGINAL_SETTINGS)):
        assert _backup_path(project / name).read_text(encoding="utf-8") == text
        assert not (project / (name + BACKUP_SUFFIX)).exists()
    # a second install changes nothing, not even the backups
    snap = tree(project)
    assert not claude("project", home, project).changed and tree(project) == snap
    out = unclaude("project", home, project)
    assert [c.action for c in out.changes] == ["restored", "restored"]
    assert tree(project) == before  # byte for byte, backups gone
    assert not unclaude("project", home, project).changed


def test_uninstall_after_later_edits_takes_out_only_memoryd(home: Path, project: Path) -> None:
    seed(project)
    claude("project", home, project)
    mcp_path, settings_path = project / ".mcp.json", project / ".claude" / "settings.json"
    mcp = load(mcp_path)
    mcp["mcpServers"]["sentry"] = {"command": "sentry-mcp"}
    mcp_path.write_text(json.dumps(mcp, indent=4), encoding="utf-8")
    s = load(settings_path)
    s["hooks"]["SessionEnd"].insert(0, {"hooks": [{"type": "command", "command": "notify-send bye"}]})
    s["env"] = {"FOO": "1"}
    settings_path.write_text(json.dumps(s, indent=2), encoding="utf-8")
    out = unclaude("project", home, project)
    assert [c.action for c in out.changes] == ["updated", "updated"]
    expected_mcp = json.loads(ORIGINAL_MCP)
    expected_mcp["mcpServers"]["sentry"] = {"command": "sentry-mcp"}
    assert load(mcp_path) == expected_mcp
    expected = json.loads(ORIGINAL_SETTINGS)
    expected["hooks"]["SessionEnd"] = [{"hooks": [{"type": "command", "command": "notify-send bye"}]}]
    expected["env"] = {"FOO": "1"}
    assert load(settings_path) == expected
    assert any("pre-install copy stays" in n for n in out.notes)


def test_user_scope_edits_claude_json_and_user_settings(home: Path, project: Path) -> None:
    state = {"numStartups": 42, "theme": "dark", "projects": {str(project): {"allowedTools": [], "mcpServers": {}}},
             "mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["fs"], "env": {}}}}  # fmt: skip
    (home / ".claude.json").write_text(json.dumps(state, indent=2), encoding="utf-8")
    before = tree(home)
    report = claude("user", home, project, profile="hmg")
    data = load(home / ".claude.json")
    assert data["mcpServers"]["hmg"] == {"type": "stdio", "command": MCP, "args": ["--profile", "hmg"]}
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {k: v for k, v in state.items() if k != "mcpServers"}
    hooks = load(home / ".claude" / "settings.json")["hooks"]
    assert hooks["PreToolUse"][0]["matcher"] == "mcp__hmg__.*"
    assert not any("enabledMcpjsonServers" in n for n in report.notes)  # user servers need no approval
    assert not (project / ".mcp.json").exists()
    unclaude("user", home, project, profile="hmg")
    assert tree(home) == before


def test_both_profiles_share_the_session_hooks_and_come_out_cleanly(home: Path, project: Path) -> None:
    seed(project)
    before = tree(project)
    claude("project", home, project, profile="memoryd")
    claude("project", home, project, profile="hmg")
    hooks = load(project / ".claude" / "settings.json")["hooks"]
    files = "Read|Edit|Write|MultiEdit|NotebookEdit"  # the file hook: one entry for both profiles
    assert [g.get("matcher") for g in hooks["PreToolUse"]] == ["Bash", "mcp__memoryd__.*", files, "mcp__hmg__.*"]
    assert len(hooks["SessionStart"]) == 2  # theirs + one memoryd entry for both profiles
    unclaude("project", home, project, profile="memoryd")
    hooks = load(project / ".claude" / "settings.json")["hooks"]
    assert [g.get("matcher") for g in hooks["PreToolUse"]] == ["Bash", files, "mcp__hmg__.*"]
    assert len(hooks["SessionStart"]) == 2 and len(hooks["SessionEnd"]) == 1  # hmg still needs them
    assert list(load(project / ".mcp.json")["mcpServers"]) == ["github", "资料库", "hmg"]
    unclaude("project", home, project, profile="hmg")
    assert tree(project) == before


def test_the_plugin_registers_the_same_hooks_as_the_install(home: Path, project: Path) -> None:
    """plugin/hooks/hooks.json carries every hook `memoryd install claude` writes, the file handler's
    matcher once (filehook.FILE_TOOLS_MATCHER), with the plugin server's tool names."""
    from memoryd.agents.filehook import FILE_TOOLS, FILE_TOOLS_MATCHER
    from memoryd.agents.install import HOOK_EVENTS

    plugin = json.loads((Path(__file__).resolve().parents[1] / "plugin" / "hooks" / "hooks.json").read_text("utf-8"))
    claude("project", home, project)
    installed = load(project / ".claude" / "settings.json")["hooks"]
    assert list(plugin["hooks"]) == list(installed) == list(HOOK_EVENTS)
    for event, (name, timeout) in HOOK_EVENTS.items():
        for groups in (plugin["hooks"][event], installed[event]):
            assert all(g["hooks"] == [{"type": "command", "command": g["hooks"][0]["command"], "timeout": timeout}]
                       and g["hooks"][0]["command"].endswith(f"memoryd hook {name}") for g in groups)  # fmt: skip
    matchers = lambda groups: [g.get("matcher") for g in groups]  # noqa: E731
    assert matchers(plugin["hooks"]["PreToolUse"]) == ["mcp__plugin_memoryd_memoryd__.*", FILE_TOOLS_MATCHER]
    assert matchers(installed["PreToolUse"]) == ["mcp__memoryd__.*", FILE_TOOLS_MATCHER]
    assert FILE_TOOLS_MATCHER.split("|") == list(FILE_TOOLS)
    claude("project", home, project)  # again: no second entry for either matcher
    assert matchers(load(project / ".claude" / "settings.json")["hooks"]["PreToolUse"]) == matchers(
        installed["PreToolUse"]
    )


def test_an_existing_memoryd_entry_is_replaced_and_comes_back_on_uninstall(home: Path, project: Path) -> None:
    old = {"mcpServers": {"memoryd": {"command": "/old/venv/bin/memoryd-mcp", "args": []}}}
    (project / ".mcp.json").write_text(json.dumps(old), encoding="utf-8")
    (project / ".claude").mkdir()
    stale = {
        "hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": "/old/venv/bin/memoryd hook session-start"}]}]
        }
    }
    (project / ".claude" / "settings.json").write_text(json.dumps(stale), encoding="utf-8")
    before = tree(project)
    claude("project", home, project)
    assert load(project / ".mcp.json")["mcpServers"]["memoryd"]["command"] == PMCP
    starts = load(project / ".claude" / "settings.json")["hooks"]["SessionStart"]
    assert starts == [{"hooks": [{"type": "command", "command": f"{PHOOK} hook session-start", "timeout": 10}]}]
    unclaude("project", home, project)
    assert tree(project) == before


@pytest.mark.parametrize("broken", [".mcp.json", ".claude/settings.json"])
def test_malformed_json_is_named_and_nothing_is_written(home: Path, project: Path, broken: str) -> None:
    seed(project)
    (project / broken).write_text('{"mcpServers": {"x": 1,}}', encoding="utf-8")
    before = tree(project)
    with pytest.raises(InstallError) as exc:
        claude("project", home, project)
    assert str(project / broken) in exc.value.message and "line 1" in exc.value.message
    assert exc.value.code == "invalid_input"
    assert tree(project) == before  # neither file touched, no backup
    with pytest.raises(InstallError):
        unclaude("project", home, project)
    assert tree(project) == before


def test_wrong_shapes_are_refused(home: Path, project: Path) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": []}', encoding="utf-8")
    with pytest.raises(InstallError, match="mcpServers"):
        claude("project", home, project)
    (project / ".mcp.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InstallError, match="not an object"):
        claude("project", home, project)
    (project / ".mcp.json").unlink()
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": {"SessionStart": {}}}', encoding="utf-8")
    with pytest.raises(InstallError, match="hooks.SessionStart"):
        claude("project", home, project)
    assert not (project / ".mcp.json").exists()


def test_approve_writes_this_projects_own_settings_and_uninstall_takes_it_out(home: Path, project: Path) -> None:
    """`--approve`: the person's consent, written where it approves this project only (settings.local.json, once the
    folder is trusted), never ~/.claude/settings.json; uninstall takes out exactly that approval."""
    local = project / ".claude" / "settings.local.json"
    before = {**tree(project), **tree(home)}
    plain = claude("project", home, project)
    assert not local.exists()  # never without consent
    assert any("`memoryd install claude --approve` adds it to" in n and str(local) in n for n in plain.notes)
    unclaude("project", home, project)
    report = claude("project", home, project, approve=True)
    assert load(local) == {"enabledMcpjsonServers": ["memoryd"]}
    assert [c.path for c in report.changes][-1] == str(local)
    assert any(f"approved in {local}, which Claude Code honours once you trust the folder" in n for n in report.notes)
    assert not (home / ".claude" / "settings.json").exists()
    again = claude("project", home, project, approve=True)
    assert not again.changed  # idempotent
    (home / ".claude.json").write_text(json.dumps({"projects": {str(project.resolve()): {
        "hasTrustDialogAccepted": True}}}), encoding="utf-8")  # fmt: skip
    assert any(f"is already approved ({local})" in n for n in claude("project", home, project).notes)
    (home / ".claude.json").unlink()
    out = unclaude("project", home, project)
    assert [c.action for c in out.changes] == ["deleted", "deleted", "deleted"]
    assert {**tree(project), **tree(home)} == before

    # The person's own settings.local.json: the entry is added beside theirs and only it is taken out again.
    local.parent.mkdir()
    mine = '{\n  "permissions": {"allow": ["Bash(make test)"]},\n  "enabledMcpjsonServers": ["docs"]\n}\n'
    local.write_text(mine, encoding="utf-8")
    claude("project", home, project, approve=True)
    assert load(local)["enabledMcpjsonServers"] == ["docs", "memoryd"]
    unclaude("project", home, project)
    assert local.read_text(encoding="utf-8") == mine
    # An approval the person made before is theirs: uninstall leaves it.
    local.write_text('{"enabledMcpjsonServers": ["memoryd"]}', encoding="utf-8")
    claude("project", home, project, approve=True)
    (project / ".claude" / "settings.json").write_text("{}", encoding="utf-8")  # a teammate's edit
    unclaude("project", home, project)
    assert load(local) == {"enabledMcpjsonServers": ["memoryd"]}


def test_approve_respects_a_disabled_server_a_bad_file_and_the_user_scope(home: Path, project: Path) -> None:
    local = project / ".claude" / "settings.local.json"
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"disabledMcpjsonServers": ["memoryd"]}', encoding="utf-8")
    report = claude("project", home, project, approve=True)
    assert not local.exists() and any("disabledMcpjsonServers, so Claude Code will not start it" in n
                                      for n in report.notes)  # fmt: skip
    (home / ".claude" / "settings.json").unlink()
    local.parent.mkdir(exist_ok=True)
    local.write_text('{"enabledMcpjsonServers": "memoryd"}', encoding="utf-8")
    with pytest.raises(InstallError, match="'enabledMcpjsonServers' is a str, expected a list; left untouched"):
        claude("project", home, project, approve=True)
    report = claude("user", home, project, approve=True)
    assert "--approve: servers of the user scope need no approval" in report.notes


def test_approval_is_reported_from_the_users_settings(home: Path, project: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"enabledMcpjsonServers": ["memoryd"]}', encoding="utf-8")
    report = claude("project", home, project)
    assert any("already approved" in n for n in report.notes)
    (home / ".claude" / "settings.json").write_text('{"disabledMcpjsonServers": ["memoryd"]}', encoding="utf-8")
    report = claude("project", home, project)
    assert any("disabledMcpjsonServers" in n for n in report.notes)


def test_dry_run_writes_nothing(home: Path, project: Path) -> None:
    seed(project)
    before = tree(project)
    report = claude("project", home, project, dry_run=True)
    assert report.changed and report.dry_run and tree(project) == before
    assert "dry run" in report.render()


def test_default_paths_and_quoting(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spaced = tmp_path / "my project"
    spaced.mkdir()
    report = install_claude("project", home=home, project_dir=spaced, hook_command=None)
    assert load(spaced / ".mcp.json")["mcpServers"]["memoryd"]["command"] == "memoryd-mcp"
    cmd = load(spaced / ".claude" / "settings.json")["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert cmd == "command -v memoryd >/dev/null 2>&1 || exit 0; memoryd hook session-start"
    assert report.as_dict()["changes"][0]["path"] == str(spaced / ".mcp.json")
    # user scope, this install not on PATH: its absolute paths (the user's own files), quoted, and a note
    monkeypatch.setenv("PATH", str(tmp_path))
    report = install_claude("user", home=home, project_dir=spaced, hook_command=None)
    assert any("on PATH is not this install" in n for n in report.notes), report.notes
    server = load(home / ".claude.json")["mcpServers"]["memoryd"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).name.startswith("memoryd-mcp")
    assert Path(server["command"]).parent == Path(sys.executable).parent.absolute()
    cmd = load(home / ".claude" / "settings.json")["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    exe, *rest = shlex.split(cmd)
    assert rest == ["hook", "session-start"] and Path(exe).is_absolute() and Path(exe).name.startswith("memoryd")


def test_the_installed_hook_command_runs(tmp_path: Path, home: Path, project: Path) -> None:
    """The command string written to settings.json works as Claude Code runs it: through a shell."""
    claude_settings = home / ".claude" / "settings.json"
    install_claude("user", home=home, project_dir=project, command=MCP,
                   hook_command=f"{shlex.quote(sys.executable)} -m memoryd.agents.hooks")  # fmt: skip
    hooks = load(claude_settings)["hooks"]
    env = {**os.environ, "MEMORYD_HOME": str(tmp_path / "data")}
    start = hooks["SessionStart"][0]["hooks"][0]["command"]
    r = subprocess.run(start, shell=True, input=json.dumps({"session_id": "s", "cwd": str(project),
                       "hook_event_name": "SessionStart", "transcript_path": "/x"}), capture_output=True, text=True,
                       env=env, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    # and uninstall recognises that form as memoryd's own
    unclaude("user", home, project)
    assert not claude_settings.exists()


# -- Codex -------------------------------------------------------------------------------------------------------

CODEX = """# Codex configuration — edited by hand
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.context7.env]
DEBUG = "0"

# profiles below
[profiles.fast]
model = "gpt-5-mini"
"""


def test_codex_install_preserves_style_and_uninstall_restores_bytes(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(CODEX, encoding="utf-8")
    before = tree(codex)
    report = install_codex(codex_home=codex, command=MCP)
    assert report.changes[0].action == "updated"
    text = (codex / "config.toml").read_text(encoding="utf-8")
    assert text.startswith(CODEX.split("# profiles below")[0])  # everything before stays as it was
    assert f'[mcp_servers.memoryd]\ncommand = "{MCP}"\nargs = []\n' in text
    assert "# profiles below\n[profiles.fast]" in text and "# the default model" in text
    import tomllib

    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["memoryd"] == {"command": MCP, "args": []}
    assert parsed["mcp_servers"]["context7"]["env"] == {"DEBUG": "0"}
    assert _backup_path(codex / "config.toml").read_text(encoding="utf-8") == CODEX
    snap = tree(codex)
    assert not install_codex(codex_home=codex, command=MCP).changed and tree(codex) == snap
    hmg = install_codex(codex_home=codex, profile="hmg", command=MCP)
    assert tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["hmg"]["args"] == ["--profile", "hmg"]
    assert hmg.changed
    uninstall_codex(codex_home=codex, profile="memoryd")
    assert "memoryd" not in tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]
    out = uninstall_codex(codex_home=codex, profile="hmg")
    assert out.changes[0].action == "restored"
    assert tree(codex) == before


def test_codex_defaults_to_codex_home_and_creates_and_deletes_its_file(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    report = install_codex(home=home, command=MCP)
    path = home / ".codex" / "config.toml"
    assert report.changes[0].path == str(path) and report.changes[0].action == "created"
    assert path.read_text() == f'[mcp_servers.memoryd]\ncommand = "{MCP}"\nargs = []\n'
    uninstall_codex(home=home)
    assert tree(home) == {}
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    install_codex(home=home, command=MCP)
    assert (tmp_path / "ch" / "config.toml").exists() and not (home / ".codex").exists()


def test_codex_keeps_user_additions_to_its_entry(tmp_path: Path) -> None:
    text = '[mcp_servers.memoryd]\ncommand = "/old/memoryd-mcp"\nargs = []\nstartup_timeout_sec = 30\n\n' \
           '[mcp_servers.memoryd.env]\nMEMORYD_HOME = "/data/memoryd"\n'  # fmt: skip
    (tmp_path / "config.toml").write_text(text)
    install_codex(codex_home=tmp_path, command=MCP)
    import tomllib

    entry = tomllib.loads((tmp_path / "config.toml").read_text())["mcp_servers"]["memoryd"]
    assert entry == {"command": MCP, "args": [], "startup_timeout_sec": 30, "env": {"MEMORYD_HOME": "/data/memoryd"}}
    uninstall_codex(codex_home=tmp_path)
    assert (tmp_path / "config.toml").read_text() == text


def test_codex_malformed_toml_is_named_and_untouched(tmp_path: Path) -> None:
    bad = "[mcp_servers.x\ncommand = 1\n"
    (tmp_path / "config.toml").write_text(bad)
    with pytest.raises(InstallError) as exc:
        install_codex(codex_home=tmp_path, command=MCP)
    assert str(tmp_path / "config.toml") in exc.value.message
    assert tree(tmp_path) == {"config.toml": bad.encode()}
    (tmp_path / "config.toml").write_text('mcp_servers = "nope"\n')
    with pytest.raises(InstallError, match="not a table"):
        install_codex(codex_home=tmp_path, command=MCP)


def test_bad_profile_and_scope_are_invalid_input(home: Path, project: Path) -> None:
    from memoryd.shared.errors import InvalidInput

    with pytest.raises(InvalidInput):
        install_claude("project", "nope", home=home, project_dir=project)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        install_claude("global", home=home, project_dir=project)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        install_codex(codex_home=home, profile="nope")  # type: ignore[arg-type]
    assert tree(home) == {} and tree(project) == {}


# -- Claude Desktop and Cursor ---------------------------------------------------------------------------------

DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"]
    },
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/Users/me/memory.jsonl"}}
  },
  "globalShortcut": "Alt+Space",
  "preferences": {"quickEntryShortcut": "off", "menuBarEnabled": false}
}
"""


def test_claude_desktop_gets_an_entry_with_the_folder_its_scope_comes_from(home: Path, project: Path) -> None:
    from memoryd.agents.install import claude_desktop_config, install_claude_desktop, uninstall_claude_desktop

    config = claude_desktop_config(home)
    assert config.name == "claude_desktop_config.json" and config.parent.name == "Claude"
    config.parent.mkdir(parents=True)
    config.write_text(DESKTOP, encoding="utf-8")
    before = tree(home)
    report = install_claude_desktop(home=home, project_dir=project, command=MCP)
    data = load(config)
    assert list(data["mcpServers"]) == ["filesystem", "memory", "memoryd"]
    assert data["mcpServers"]["memoryd"] == {"command": MCP, "args": ["--cwd", str(project)]}
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {k: v for k, v in json.loads(DESKTOP).items()
                                                                    if k != "mcpServers"}  # fmt: skip
    assert config.read_text(encoding="utf-8").startswith('{\n  "mcpServers"')  # its layout kept
    assert any(f"scope of {project}" in n for n in report.notes) and report.agent == "claude-desktop"
    assert not install_claude_desktop(home=home, project_dir=project, command=MCP).changed
    hmg = install_claude_desktop("hmg", home=home, command=MCP)  # default folder: home
    assert load(config)["mcpServers"]["hmg"]["args"] == ["--profile", "hmg", "--cwd", str(home)] and hmg.changed
    uninstall_claude_desktop("hmg", home=home)
    assert [c.action for c in uninstall_claude_desktop(home=home).changes] == ["restored"]
    assert tree(home) == before


def test_claude_desktop_install_into_no_config_and_back(home: Path) -> None:
    from memoryd.agents.install import claude_desktop_config, install_claude_desktop, uninstall_claude_desktop

    install_claude_desktop(home=home, command=MCP)
    assert load(claude_desktop_config(home))["mcpServers"]["memoryd"]["command"] == MCP
    assert [c.action for c in uninstall_claude_desktop(home=home).changes] == ["deleted"]
    assert not any("Claude" in p for p in tree(home))  # the Claude folder install created is gone too


CURSOR = """{
  "mcpServers": {
    "playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]},
    "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}}
  }
}
"""


@pytest.mark.parametrize("scope", ["user", "project"])
def test_cursor_entry_follows_the_open_workspace(home: Path, project: Path, scope: str) -> None:
    from memoryd.agents.install import install_cursor, uninstall_cursor

    path = (home if scope == "user" else project) / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(CURSOR, encoding="utf-8")
    before = {**tree(home), **tree(project)}
    report = install_cursor(scope, home=home, project_dir=project, command=MCP if scope == "user" else None)  # type: ignore[arg-type]
    entry = load(path)["mcpServers"]["memoryd"]
    assert entry == {"type": "stdio", "command": MCP if scope == "user" else "memoryd-mcp",
                     "args": ["--cwd", "${workspaceFolder}"]}  # fmt: skip
    assert list(load(path)["mcpServers"])[:2] == ["playwright", "github"] and report.changed
    assert not (path.parent / ("mcp.json" + BACKUP_SUFFIX)).exists()
    if scope == "project":
        with pytest.raises(InvalidInput, match="is a path on this machine"):
            install_cursor("project", home=home, project_dir=project, command=MCP)
    assert [c.action for c in uninstall_cursor(scope, home=home, project_dir=project).changes] == ["restored"]  # type: ignore[arg-type]
    assert {**tree(home), **tree(project)} == before


def test_the_server_takes_its_scope_from_cwd_and_ignores_an_unexpanded_variable(tmp_path: Path) -> None:
    from .conftest import make_repo

    repo = make_repo(tmp_path / "widgets")
    env = {**os.environ, "MEMORYD_HOME": str(tmp_path / "data"), "MEMORYD_EMBEDDER": "hash"}
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = str(Path(sys.executable).with_name("memoryd-mcp"))

    async def project_of(*args: str) -> str:
        params = StdioServerParameters(command=server, args=[*args, "--admin"], cwd=str(tmp_path), env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("mem_current_project", {})
            return str(r.structured_content["scope_name"])

    assert anyio.run(project_of, "--cwd", str(repo)) == "acme/widgets"
    assert anyio.run(project_of, "--cwd", "${workspaceFolder}") == f"local/{tmp_path.name}"


def test_codex_hooks_go_to_hooks_json_and_come_out_again(home: Path, tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    (codex / "hooks.json").write_text(json.dumps(theirs, indent=2), encoding="utf-8")
    before = tree(codex)
    report = install_codex(home, codex, command=MCP, hooks=True, hook_command=HOOK)
    assert [c.path for c in report.changes] == [str(codex / "config.toml"), str(codex / "hooks.json")]
    hooks = load(codex / "hooks.json")["hooks"]
    assert hooks["Stop"] == theirs["hooks"]["Stop"]
    assert hooks["PreToolUse"] == [{"matcher": "mcp__memoryd__.*", "hooks": [
        {"type": "command", "command": f"{HOOK} hook pre-tool-use", "timeout": 5}]}]  # fmt: skip
    assert set(hooks) == {"Stop", "SessionStart", "UserPromptSubmit", "PreToolUse", "SessionEnd", "PreCompact"}
    assert not install_codex(home, codex, command=MCP, hooks=True, hook_command=HOOK).changed
    out = uninstall_codex(home, codex)
    assert [c.action for c in out.changes] == ["deleted", "restored"]
    assert tree(codex) == before


# -- issue 25: a newcomer's install ------------------------------------------------------------------------------


def test_user_scope_and_codex_use_the_command_on_path(tmp_path: Path, home: Path, project: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A pipx / uv tool install links memoryd into a PATH folder: user files name the command, not the venv path
    (which the next reinstall moves)."""
    linked = tmp_path / "bin"
    linked.mkdir()
    for name in ("memoryd", "memoryd-mcp"):
        (linked / name).symlink_to(Path(sys.executable).parent / name)
    monkeypatch.setenv("PATH", f"{linked}{os.pathsep}/usr/bin{os.pathsep}/bin")
    report = install_claude("user", home=home, project_dir=project)
    assert load(home / ".claude.json")["mcpServers"]["memoryd"]["command"] == "memoryd-mcp"
    cmd = load(home / ".claude" / "settings.json")["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert cmd == "memoryd hook session-start"
    assert not any("not this install" in n or "does not exist" in n for n in report.notes), report.notes
    codex = tmp_path / "codex"
    install_codex(home, codex, hooks=True)
    assert 'command = "memoryd-mcp"' in (codex / "config.toml").read_text()
    assert load(codex / "hooks.json")["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == "memoryd hook session-end"


def test_project_hooks_are_silent_no_ops_where_memoryd_is_absent(tmp_path: Path, home: Path, project: Path) -> None:
    """A teammate without memoryd: every hook command of the committed settings exits 0 and prints nothing."""
    install_claude("project", home=home, project_dir=project)
    hooks = load(project / ".claude" / "settings.json")["hooks"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}  # no memoryd anywhere on it
    for event, groups in hooks.items():
        for g in groups:
            r = subprocess.run(["/bin/sh", "-c", g["hooks"][0]["command"]], input='{"session_id": "s"}',
                               capture_output=True, text=True, env=env, timeout=30, check=False)  # fmt: skip
            assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), (event, r)
    # where memoryd is on PATH the same command runs it
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "memoryd").symlink_to(Path(sys.executable).parent / "memoryd")
    start = hooks["SessionStart"][0]["hooks"][0]["command"]
    r = subprocess.run(["/bin/sh", "-c", start], input=json.dumps({"session_id": "s", "cwd": str(project),
                       "hook_event_name": "SessionStart", "transcript_path": "/x"}), capture_output=True, text=True,
                       env={**env, "PATH": f"{bindir}:/usr/bin:/bin", "MEMORYD_HOME": str(tmp_path / "data")},
                       timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0 and json.loads(r.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    # an older plain entry is refreshed in place, and uninstall still recognises the guarded form
    unclaude("project", home, project)
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()


def test_project_and_user_installs_in_one_repository_are_detected(home: Path, project: Path) -> None:
    first = claude("project", home, project)
    assert not any("both the project and the user scope" in n for n in first.notes)
    second = claude("user", home, project)
    (note,) = [n for n in second.notes if "both the project and the user scope" in n]
    assert str(project / ".mcp.json") in note and "runs both sets of hooks" in note
    assert "memoryd uninstall claude --scope user" in note
    again = claude("project", home, project)  # the project side says so too
    assert any(str(home / ".claude.json") in n for n in again.notes if "both the project" in n)
    unclaude("user", home, project)
    assert not any("both the project" in n for n in claude("project", home, project).notes)


def test_cli_uninstall_codex_takes_hooks_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from memoryd.cli import app

    codex = tmp_path / "codex"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    runner = CliRunner()
    r = runner.invoke(app, ["install", "codex", "--hooks", "--codex-home", str(codex), "--command", MCP])
    assert r.exit_code == 0, r.output
    assert (codex / "hooks.json").exists()
    r = runner.invoke(app, ["uninstall", "codex", "--hooks", "--codex-home", str(codex)])
    assert r.exit_code == 0, r.output
    assert "deleted" in r.output and not (codex / "hooks.json").exists() and not (codex / "config.toml").exists()


def test_openclaw_install_says_when_this_memoryd_carries_no_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin is package data (`make openclaw-plugin` builds it in); a memoryd built without it says what to do
    before it runs OpenClaw's CLI at all."""
    import memoryd.agents.install.openclaw as oc

    assert (oc.openclaw_plugin_dir() / "dist" / "index.js").is_file()  # this one carries it
    monkeypatch.setattr(oc, "openclaw_plugin_dir", lambda: tmp_path / "openclaw_plugin")
    with pytest.raises(InstallError) as caught:
        oc.install_openclaw(str(tmp_path / "no-openclaw"))
    assert caught.value.message == (f"this memoryd has no OpenClaw plugin built in ({tmp_path / 'openclaw_plugin'} is "
                                    "missing): in a checkout, run `make openclaw-plugin` (a wheel made by `make "
                                    "wheel` carries it)")  # fmt: skip
