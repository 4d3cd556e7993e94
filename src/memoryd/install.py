"""Register memoryd with Claude Code and Codex, and take it out again.

Claude Code (formats from the Claude Code docs: MCP scopes and the hooks reference):

- MCP server: `<project>/.mcp.json` (project scope, shared) or `~/.claude.json` (user scope), both
  `{"mcpServers": {"<name>": {"type": "stdio", "command": "...", "args": [...]}}}`. A project's
  `.mcp.json` servers wait for the user's approval (`enabledMcpjsonServers` /
  `enableAllProjectMcpServers` in the user's settings); install says so and never approves silently.
- Hooks: `<project>/.claude/settings.json` or `~/.claude/settings.json`,
  `{"hooks": {"<Event>": [{"matcher": "<regex>", "hooks": [{"type": "command", "command": "...",
  "timeout": <seconds>}]}]}}`. memoryd adds SessionStart, PreToolUse (matcher = its own tools,
  `mcp__memoryd__.*` or `mcp__hmg__.*`, and a second one, shared by both profiles, for the file
  tools `Read|Edit|Write|MultiEdit|NotebookEdit`), SessionEnd and PreCompact, each running
  `<abs path>/memoryd hook <event>`.

Codex: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), table
`[mcp_servers.<name>]` with `command` and `args`, edited with tomlkit so comments, order and the
other tables stay as they were.

Team server (`--remote URL --token-env VAR`): the MCP server registered is `memoryd connect URL
--token-env VAR` (stdio, started in the agent's working directory, so the scope still follows the
repository the agent works in); Codex's table adds `env_vars = ["VAR"]`, the list of variables it
passes on to the server. Only the variable's NAME is written: the token stays in the person's
environment. No hooks: they read and write a local store, which a team server's person does not
have (the report says so).

Every edit merges (other servers and hooks are never touched), is idempotent (a second install
changes nothing), keeps `<file>.memoryd-backup` of the file as it was before memoryd's first
change, and is reversed by uninstall: when nothing else changed in between the original bytes
come back exactly; otherwise only memoryd's entries are taken out (and whatever they replaced is
put back). A file that does not parse is reported by name and left untouched.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import InvalidInput
from .filehook import FILE_TOOLS_MATCHER

__all__ = [
    "BACKUP_SUFFIX",
    "HOOK_EVENTS",
    "Change",
    "InstallError",
    "InstallReport",
    "default_executable",
    "backup_dir",
    "claude_desktop_config",
    "install_claude",
    "install_claude_desktop",
    "install_codex",
    "install_cursor",
    "install_openclaw",
    "uninstall_claude",
    "uninstall_claude_desktop",
    "uninstall_codex",
    "uninstall_cursor",
    "uninstall_openclaw",
]

BACKUP_SUFFIX = ".memoryd-backup"
# The backup of a file install created: not JSON or TOML, so never mistaken for a real original.
ABSENT_MARK = b"# memoryd: this file did not exist before `memoryd install`; uninstall deletes it\n"
ClaudeScope = Literal["project", "user"]  # where a Claude Code install goes (not a memory scope)
Profile = Literal["memoryd", "hmg"]
PROFILES: tuple[str, ...] = ("memoryd", "hmg")

# Claude Code event -> (memoryd hook name, timeout in seconds). SessionEnd hooks share a 1.5 s
# budget unless a hook declares a longer timeout, so every entry declares one.
HOOK_EVENTS: dict[str, tuple[str, int]] = {
    "SessionStart": ("session-start", 10),
    "UserPromptSubmit": ("user-prompt-submit", 10),
    "PreToolUse": ("pre-tool-use", 5),
    "SessionEnd": ("session-end", 15),
    "PreCompact": ("pre-compact", 30),
}
_SHARED_EVENTS = ("SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact")  # one entry serves both profiles
# A second PreToolUse entry, shared too (one for both profiles): the hooks' `file` handler, the memories
# anchored to a file the agent reads or edits. Its matcher is filehook.FILE_TOOLS_MATCHER (defined once,
# beside the tools' input fields).
_OUR_HOOK = re.compile(
    r"""(?:^|[\s/\\"'])memoryd(?:\.exe|\.hooks)?["']?\s+hook\s+(?:session-start|user-prompt-submit|pre-tool-use|session-end|pre-compact)\b"""
)


class InstallError(InvalidInput):
    """A configuration file memoryd cannot safely edit (it does not parse, or has the wrong shape)."""


@dataclass
class Change:
    """What happened to one file."""

    path: str
    action: Literal["created", "updated", "unchanged", "restored", "deleted"]
    items: list[str] = field(default_factory=list)
    backup: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "action": self.action, "items": self.items, "backup": self.backup}


@dataclass
class InstallReport:
    """The outcome of one install or uninstall: files touched, and what a person should know."""

    agent: Literal["claude", "codex", "claude-desktop", "cursor", "openclaw"]
    operation: Literal["install", "uninstall"]
    profile: str
    scope: str
    server_name: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent, "operation": self.operation, "profile": self.profile, "scope": self.scope,
            "server_name": self.server_name, "changed": self.changed, "dry_run": self.dry_run,
            "changes": [c.as_dict() for c in self.changes], "notes": self.notes,
        }  # fmt: skip

    def render(self) -> str:
        head = f"{self.operation} {self.agent} ({self.scope}, server {self.server_name!r})"
        if self.dry_run:
            head += " [dry run: nothing written]"
        lines = [head]
        for c in self.changes:
            detail = f": {', '.join(c.items)}" if c.items else ""
            lines.append(f"  {c.action:<9} {c.path}{detail}")
            if c.backup:
                lines.append(f"            backup: {c.backup}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


# -- executables -------------------------------------------------------------------------------


def default_executable(name: str) -> str:
    """Absolute path of a console script installed next to the running interpreter.

    Falls back to PATH, then to the path where it would be (the report notes if it is missing).
    """
    bindir = Path(sys.executable).parent
    for candidate in (bindir / name, bindir / f"{name}.exe"):
        if candidate.exists():
            return str(candidate.absolute())
    found = shutil.which(name)
    return str(Path(found).absolute()) if found else str((bindir / name).absolute())


def on_path_or_absolute(name: str) -> str:
    """`name` when the command found on PATH is this install's (a pipx / uv tool install links it there,
    and the link survives a reinstall), else this install's absolute path (the report notes it)."""
    here = default_executable(name)
    found = shutil.which(name)
    if found and os.path.realpath(found) == os.path.realpath(here):
        return name
    return here


def _absolute_note(command: str, what: str) -> list[str]:
    """For a user file given an absolute path because the command on PATH is not this install's."""
    if not os.path.isabs(command) or not Path(command).exists():
        return []
    return [f"{what} is registered as {command}: `{Path(command).name}` on PATH is not this install, so the entry "
            "names this environment's path, which breaks if it moves or is reinstalled; `uv tool install` / "
            "`pipx install` put the command on PATH (then install again)"]


def _guard_absent(hook_command: str) -> str:
    """A project file's hook prefix that is a silent no-op where the command is not installed (a teammate
    without memoryd): `command -v memoryd >/dev/null 2>&1 || exit 0; memoryd`, then ` hook <event>`."""
    first = shlex.split(hook_command)[0]
    return f"command -v {shlex.quote(first)} >/dev/null 2>&1 || exit 0; {hook_command}"


def _hook_executable(command: str | None, hook_command: str | None) -> tuple[str, str | None]:
    """The shell prefix the hooks run (`<prefix> hook <event>`), and the file it needs (for a note).

    `hook_command` is taken as a shell fragment as given (e.g. `/venv/bin/python -m memoryd.hooks`);
    the default is the memoryd CLI next to `command`, else next to this interpreter, quoted.
    """
    if hook_command:
        return hook_command, None
    exe = None
    if command and not os.path.isabs(command):  # a command on PATH: the memoryd beside it, by name too
        exe = on_path_or_absolute("memoryd")
        return exe, (None if exe == "memoryd" else exe)
    if command:
        sibling = Path(command).with_name("memoryd" + Path(command).suffix)
        if sibling.exists():
            exe = str(sibling)
    exe = exe or default_executable("memoryd")
    return shlex.quote(exe), exe


def _is_machine_path(command: str) -> bool:
    """Whether a command (a shell fragment) starts with an absolute or home-relative path."""
    try:
        first = shlex.split(command)[0] if command.strip() else ""
    except ValueError:
        first = command.split()[0] if command.split() else ""
    return first.startswith("~") or os.path.isabs(first) or bool(re.match(r"^[A-Za-z]:[\\/]", first))


def _refuse_machine_path(command: str, option: str, target: Path) -> None:
    if _is_machine_path(command):
        raise InvalidInput(
            f"{option} {command!r} is a path on this machine, and {target} is a project file a team shares; "
            "use a command on PATH (install memoryd with `pipx install memoryd` or `uv tool install memoryd`), "
            "or register this install for yourself only with --scope user"
        )


def _on_path_notes(*commands: str) -> list[str]:
    out = []
    for command in commands:
        first = shlex.split(command)[0]
        if shutil.which(first) is None:
            out.append(f"{first!r} is not on PATH here, and the project files run it by name: install memoryd with "
                       "`pipx install memoryd` or `uv tool install memoryd` (both put it on PATH), or use --scope "
                       "user to register this install's absolute path for yourself only")  # fmt: skip
    return out


def _dirs(home: Path | None, project_dir: Path | None) -> tuple[Path, Path]:
    """The home and project folders an install acts on (default: the user's home, this directory)."""
    return (Path(home) if home is not None else Path.home(),
            Path(project_dir) if project_dir is not None else Path.cwd())  # fmt: skip


def _check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise InvalidInput(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile


def _server_args(profile: str) -> list[str]:
    return ["--profile", "hmg"] if profile == "hmg" else []


def _remote_args(remote: list[str], token_env: str | None) -> list[str]:
    """`connect URL… --token-env VAR`, after the checks `memoryd connect` makes at start."""
    from .remote import RemoteError, check_target

    if not token_env:
        raise InvalidInput("--remote needs --token-env VAR: the name of the environment variable that holds the token")
    try:
        check_target(remote, token_env)
    except RemoteError as exc:
        raise InvalidInput(str(exc)) from exc
    return ["connect", *remote, "--token-env", token_env]


def _remote_notes(token_env: str, agent: str) -> list[str]:
    notes = [f"the agent starts `memoryd connect`, which forwards to the team server; only the NAME {token_env} is "
             f"in the file: export {token_env} (your token) in the environment {agent} starts from"]  # fmt: skip
    if not os.environ.get(token_env):
        notes.append(f"{token_env} is not set in this shell: `memoryd connect` refuses to start without it")
    notes.append("no hooks with --remote: memoryd's hooks (session brief, prompt recall, transcripts) read and write "
                 "a local store; the tools reach the team server")  # fmt: skip
    return notes


def _missing_note(path: str, what: str) -> list[str]:
    if not os.path.isabs(path) and shutil.which(path):
        return []  # a command on PATH
    return [] if Path(path).exists() else [f"{what} {path} does not exist (yet); the agent will fail to start it"]


# -- file plumbing -------------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename, keeping the old file's permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def backup_dir() -> Path:
    """Where install keeps the files as they were: `<MEMORYD_HOME or the platform data dir>/install-backups`,
    never next to the file (a project's files are committed and shared)."""
    env = os.environ.get("MEMORYD_HOME")
    import platformdirs

    return (Path(env) if env else Path(platformdirs.user_data_dir("memoryd", appauthor=False))) / "install-backups"


def _backup_path(path: Path) -> Path:
    """`<backup_dir>/<16 hex of the file's absolute path>-<file name>.memoryd-backup`."""
    key = hashlib.sha256(os.path.realpath(path).encode("utf-8")).hexdigest()[:16]
    return backup_dir() / f"{key}-{path.name}{BACKUP_SUFFIX}"


def _legacy_backup(path: Path) -> Path:
    """Where memoryd before 0.1.1 kept the backup: beside the file."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def _read_backup(path: Path) -> bytes | None:
    return _read(_backup_path(path)) if _backup_path(path).exists() else _read(_legacy_backup(path))


class _Format:
    """How a JSON file was laid out, so a rewrite looks like the original."""

    def __init__(self, raw: bytes | None) -> None:
        text = raw.decode("utf-8-sig") if raw else ""
        self.indent: int | str | None = 2
        self.newline = True if raw is None else text.endswith("\n")
        if text.strip() and re.sub(r"\s", "", text) not in ("{}", "[]"):
            m = re.search(r"^[{\[][ \t]*\r?\n([ \t]+)\S", text, re.MULTILINE)
            if m:
                ws = m.group(1)
                self.indent = ws if "\t" in ws else len(ws)
            elif "\n" not in text.strip():
                self.indent = None

    def dump(self, data: Any) -> bytes:
        text = json.dumps(data, indent=self.indent, ensure_ascii=False)
        return (text + ("\n" if self.newline else "")).encode("utf-8")


def _load_json(path: Path, raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path} is not UTF-8 text ({exc}); left untouched") from exc
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); left untouched — "
            "fix or move the file and run the command again"
        ) from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a JSON {type(data).__name__}, not an object; left untouched")
    return data


def _expect_dict(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InstallError(f"{path}: {key!r} is a {type(value).__name__}, expected an object; left untouched")
    return value


@dataclass
class _Plan:
    path: Path
    raw: bytes | None
    new: bytes | None  # None = delete the file
    action: str
    items: list[str]
    restore_backup: bool = False
    uninstall: bool = False


def _apply(plan: _Plan, *, dry_run: bool, notes: list[str]) -> Change:
    """Write one planned edit: back up before the first change, restore or delete on the way out."""
    backup, legacy = _backup_path(plan.path), _legacy_backup(plan.path)
    change = Change(path=str(plan.path), action=plan.action, items=plan.items)  # type: ignore[arg-type]
    if plan.action == "unchanged" or dry_run:
        return change
    if not plan.uninstall:
        if not backup.exists():  # the file as it was before memoryd's first change
            backup.parent.mkdir(parents=True, exist_ok=True)
            if legacy.exists():  # an older install's backup leaves the repository
                shutil.move(str(legacy), backup)
            elif plan.raw is None:
                backup.write_bytes(ABSENT_MARK)
            else:
                shutil.copy2(plan.path, backup)
        change.backup = str(backup)
    if plan.new is None:
        plan.path.unlink(missing_ok=True)
        backup.unlink(missing_ok=True)
        legacy.unlink(missing_ok=True)
        parent = plan.path.parent
        try:
            if parent.name in (".claude", ".codex", ".cursor", "Claude") and not any(parent.iterdir()):
                parent.rmdir()  # the folder install created for this file
        except OSError:
            pass
        return change
    _atomic_write(plan.path, plan.new)
    if plan.restore_backup:
        backup.unlink(missing_ok=True)
        legacy.unlink(missing_ok=True)
    elif plan.uninstall and (backup.exists() or legacy.exists()):
        backup = backup if backup.exists() else legacy
        notes.append(f"{plan.path} has other changes since memoryd's first install (another profile, or edits), "
                     f"so only these entries were taken out; the pre-install copy stays at {backup}")  # fmt: skip
    return change


def _plan_install_json(path: Path, edit: Callable[[dict[str, Any]], list[str]]) -> _Plan:
    raw = _read(path)
    data = _load_json(path, raw)
    new = copy.deepcopy(data)
    items = edit(new)
    if raw is not None and new == data:
        return _Plan(path, raw, raw, "unchanged", [])
    return _Plan(path, raw, _Format(raw).dump(new), "created" if raw is None else "updated", items)


def _plan_uninstall_json(path: Path, edit: Callable[[dict[str, Any], dict[str, Any] | None], list[str]]) -> _Plan:
    """Take memoryd's entries out; give the original bytes back when the result is the original."""
    raw = _read(path)
    if raw is None:
        return _Plan(path, raw, raw, "unchanged", [])
    data = _load_json(path, raw)
    braw = _read_backup(path)
    original: dict[str, Any] | None = None
    if braw == ABSENT_MARK:
        original = {}
    elif braw is not None:
        try:
            original = _load_json(path, braw)
        except InstallError:
            original = None  # a mangled backup is ignored, never trusted
    new = copy.deepcopy(data)
    items = edit(new, original)
    if new == data:
        return _Plan(path, raw, raw, "unchanged", [])
    if new == {} and braw in (None, ABSENT_MARK):
        return _Plan(path, raw, None, "deleted", items, uninstall=True)  # install created this file
    if braw is not None and braw != ABSENT_MARK and original is not None and new == original:
        return _Plan(path, raw, braw, "restored", items, restore_backup=True, uninstall=True)
    return _Plan(path, raw, _Format(raw).dump(new), "updated", items, uninstall=True)


# -- Claude Code -----------------------------------------------------------------------------------


def _claude_paths(scope: str, home: Path, project_dir: Path) -> tuple[Path, Path]:
    if scope == "project":
        return project_dir / ".mcp.json", project_dir / ".claude" / "settings.json"
    if scope == "user":
        return home / ".claude.json", home / ".claude" / "settings.json"
    raise InvalidInput(f"unknown scope {scope!r}; expected project or user")


def _server_entry(command: str, profile: str) -> dict[str, Any]:
    return {"type": "stdio", "command": command, "args": _server_args(profile)}


def _matcher(profile: str) -> str:
    return f"mcp__{profile}__.*"


def _hook_group(event: str, exe: str, profile: str) -> dict[str, Any]:
    name, timeout = HOOK_EVENTS[event]
    handler = {"type": "command", "command": f"{exe} hook {name}", "timeout": timeout}
    group: dict[str, Any] = {"hooks": [handler]}
    if event == "PreToolUse":
        group = {"matcher": _matcher(profile), **group}
    return group


def _file_group(exe: str) -> dict[str, Any]:
    name, timeout = HOOK_EVENTS["PreToolUse"]
    return {"matcher": FILE_TOOLS_MATCHER, "hooks": [{"type": "command", "command": f"{exe} hook {name}", "timeout": timeout}]}


def _is_file_group(group: Any) -> bool:
    return _is_our_group(group, "PreToolUse") and group.get("matcher") == FILE_TOOLS_MATCHER


def _is_our_handler(handler: Any) -> bool:
    return (
        isinstance(handler, dict) and handler.get("type", "command") == "command"
        and isinstance(handler.get("command"), str) and _OUR_HOOK.search(handler["command"]) is not None
    )  # fmt: skip


def _is_our_group(group: Any, event: str, profile: str | None = None) -> bool:
    """A matcher group memoryd wrote: only memoryd hook commands (PreToolUse: this profile's matcher)."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list) or not group["hooks"]:
        return False
    if not all(_is_our_handler(h) for h in group["hooks"]):
        return False
    if event == "PreToolUse" and profile is not None:
        return group.get("matcher") == _matcher(profile)
    return True


def _hooks_table(path: Path, data: dict[str, Any], *, create: bool) -> dict[str, Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' is a {type(hooks).__name__}, expected an object; left untouched")
    for event in HOOK_EVENTS:
        if event in hooks and not isinstance(hooks[event], list):
            raise InstallError(f"{path}: 'hooks.{event}' is not a list; left untouched")
    return hooks


def _add_hooks(path: Path, data: dict[str, Any], exe: str, profile: str, *, file_tools: bool = True) -> list[str]:
    """memoryd's hook entries; `file_tools`: also the file handler's PreToolUse entry (Claude Code's Read,
    Edit… tools; Codex's tools are `shell` and `apply_patch`, which name no file)."""
    hooks = _hooks_table(path, data, create=True)
    assert hooks is not None
    items = []
    for event in HOOK_EVENTS:
        want = _hook_group(event, exe, profile)
        groups = hooks.setdefault(event, [])
        ours = [i for i, g in enumerate(groups) if _is_our_group(g, event, profile)]
        if any(groups[i] == want for i in ours):
            continue
        if ours:
            groups[ours[0]] = want  # an older memoryd entry (moved venv, other timeout): refresh in place
        else:
            groups.append(want)
        items.append(f"hooks.{event}")
    groups = hooks["PreToolUse"]
    want = _file_group(exe)
    if file_tools and want not in groups:
        ours = [i for i, g in enumerate(groups) if _is_file_group(g)]
        if ours:
            groups[ours[0]] = want
        else:
            groups.append(want)
        items.append(f"hooks.PreToolUse[{FILE_TOOLS_MATCHER}]")
    return items


def _remove_hooks(path: Path, data: dict[str, Any], original: dict[str, Any] | None, profile: str) -> list[str]:
    hooks = _hooks_table(path, data, create=False)
    if hooks is None:
        return []
    other = [p for p in PROFILES if p != profile]
    still_used = any(
        _is_our_group(g, "PreToolUse", p) for p in other for g in hooks.get("PreToolUse", [])
    )  # the other profile's install still needs the shared entries
    orig_hooks = (original or {}).get("hooks") if isinstance((original or {}).get("hooks"), dict) else {}
    items = []
    for event in HOOK_EVENTS:
        if event not in hooks or (event in _SHARED_EVENTS and still_used):
            continue
        groups = hooks[event]
        kept = [g for g in groups if not _is_our_group(g, event, profile)
                and not (event == "PreToolUse" and not still_used and _is_file_group(g))]  # fmt: skip
        # Older memoryd entries the backup had (a previous install) come back as they were.
        kept += [g for g in (orig_hooks or {}).get(event, []) if (_is_our_group(g, event, profile) or (
            event == "PreToolUse" and not still_used and _is_file_group(g))) and g not in kept]  # fmt: skip
        if kept != groups:
            items.append(f"hooks.{event}")
        if kept or event in (orig_hooks or {}):
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks and "hooks" not in (original or {}):
        del data["hooks"]
    return items


def _add_server(path: Path, data: dict[str, Any], name: str, entry: dict[str, Any]) -> list[str]:
    servers = _expect_dict(path, data, "mcpServers")
    data["mcpServers"] = servers
    if servers.get(name) == entry:
        return []
    servers[name] = entry
    return [f"mcpServers.{name}"]


def _remove_server(path: Path, data: dict[str, Any], original: dict[str, Any] | None, name: str) -> list[str]:
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or name not in servers:
        return []
    orig_servers = (original or {}).get("mcpServers")
    orig_servers = orig_servers if isinstance(orig_servers, dict) else {}
    if name in orig_servers:
        if servers[name] == orig_servers[name]:
            return []
        servers[name] = copy.deepcopy(orig_servers[name])  # what install replaced comes back
    else:
        del servers[name]
        if not servers and "mcpServers" not in (original or {}):
            del data["mcpServers"]
    return [f"mcpServers.{name}"]


def _approval_notes(name: str, scope: str, home: Path, project_dir: Path) -> list[str]:
    """For project servers: is it approved already? If not, say how (never flip it silently).

    What the real CLI (2.1.x) honours, checked by tests/clients/test_claude_code.py: a
    `disabledMcpjsonServers` entry in any settings file hides the server; `~/.claude/settings.json`
    approves it anywhere; the project's own settings files and its `~/.claude.json` entry approve
    it only once the folder is trusted (`hasTrustDialogAccepted`, set by accepting the trust
    dialog in `claude`), so a cloned repository cannot approve its own servers.
    """
    if scope != "project":
        return []
    user_settings = home / ".claude" / "settings.json"
    places: list[tuple[Path, dict[str, Any], bool]] = []  # (file, settings, honoured while untrusted)
    for path, untrusted_ok in ((user_settings, True), (project_dir / ".claude" / "settings.local.json", False),
                               (project_dir / ".claude" / "settings.json", False)):  # fmt: skip
        try:
            places.append((path, _load_json(path, _read(path)), untrusted_ok))
        except InstallError:
            continue
    trusted = False
    try:
        state = _load_json(home / ".claude.json", _read(home / ".claude.json"))
        projects = state.get("projects")
        entry = projects.get(str(project_dir.resolve())) if isinstance(projects, dict) else None
        if isinstance(entry, dict):
            trusted = entry.get("hasTrustDialogAccepted") is True
            places.append((home / ".claude.json", entry, False))
    except InstallError:
        pass
    for path, d, _ in places:
        if name in (d.get("disabledMcpjsonServers") or []):
            return [(f"{path} lists {name!r} in disabledMcpjsonServers, so Claude Code will not start it; "
                     "take it out of that list to use memoryd in this project")]  # fmt: skip
    for path, d, untrusted_ok in places:
        if not (untrusted_ok or trusted):
            continue
        if d.get("enableAllProjectMcpServers") is True or name in (d.get("enabledMcpjsonServers") or []):
            return [f"the project server {name!r} is already approved ({path})"]
    local = project_dir / ".claude" / "settings.local.json"
    return [(
        f"Claude Code asks before starting servers from {project_dir / '.mcp.json'} (`claude mcp list` shows "
        f"'Pending approval'): run `claude` in {project_dir} and approve {name!r} at the prompt (or in /mcp), "
        f"or add \"enabledMcpjsonServers\": [\"{name}\"] to {user_settings} (it then counts in every project; "
        f"\"enableAllProjectMcpServers\": true there approves every project's servers). The same setting in "
        f"{local} counts only once you have trusted the folder (accepted the trust dialog of `claude` there). "
        "memoryd does not change that setting for you."
    )]


def install_claude(
    scope: ClaudeScope = "project",
    profile: Profile = "memoryd",
    *,
    home: Path | None = None,
    project_dir: Path | None = None,
    command: str | None = None,
    hook_command: str | None = None,
    remote: list[str] | None = None,
    token_env: str | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Register the MCP server and the four hooks with Claude Code (see the module docstring).

    `remote` (team server URLs, replicas in order) with `token_env`: register `memoryd connect` instead
    (`command` is then the memoryd CLI), and no hooks.

    `command` is the memoryd-mcp executable, `hook_command` the memoryd CLI the hooks run. User
    scope: by default the ones next to this interpreter, as absolute paths (the files are this
    machine's). Project scope writes files a team commits, so nothing machine-specific goes in:
    the commands are `memoryd-mcp` and `memoryd` found on PATH (a pipx / uv tool install puts
    them there), and an absolute `command` or `hook_command` is refused. Raises InstallError (a
    file does not parse; nothing is written) or InvalidInput.
    """
    profile = _check_profile(profile)  # type: ignore[assignment]
    home, project_dir = _dirs(home, project_dir)
    mcp_path, settings_path = _claude_paths(scope, home, project_dir)
    explicit = command is not None
    if remote:
        return _install_claude_remote(scope, profile, home, project_dir, command, remote, token_env, dry_run=dry_run)
    path_notes: list[str] = []
    if scope == "project":
        command = command or "memoryd-mcp"
        hook_command = hook_command or "memoryd"
        _refuse_machine_path(command, "--command", mcp_path)
        _refuse_machine_path(hook_command, "--hook-command", settings_path)
        path_notes = _on_path_notes(command, hook_command)
        exe, exe_file = _guard_absent(hook_command), None
    else:
        command = command or on_path_or_absolute("memoryd-mcp")
        exe, exe_file = _hook_executable(command, hook_command)
    entry = _server_entry(command, profile)
    # Plan both files before writing either: a malformed second file must leave the first untouched.
    plans = [
        _plan_install_json(mcp_path, lambda d: _add_server(mcp_path, d, profile, entry)),
        _plan_install_json(settings_path, lambda d: _add_hooks(settings_path, d, exe, profile)),
    ]
    report = InstallReport("claude", "install", profile, scope, profile, dry_run=dry_run)
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
    if scope == "project":
        report.notes += path_notes
    else:
        report.notes += _missing_note(command, "the MCP server executable")
        report.notes += [] if explicit else _absolute_note(command, "the MCP server")
    if exe_file:
        report.notes += _missing_note(exe_file, "the hook executable")
    report.notes += _approval_notes(profile, scope, home, project_dir)
    report.notes += both_scopes_notes(scope, profile, home, project_dir)
    if scope == "user" and report.changed and not dry_run:
        report.notes.append(f"Claude Code rewrites {mcp_path} while it runs: if it was open, quit it and check that "
                            f"mcpServers.{profile} is still there (`claude mcp list`)")  # fmt: skip
    if profile == "hmg":
        report.notes.append("the tools appear as mcp__hmg__memory_* (memorize, recall, correct, govern, handoff, stats)")
    if report.changed and not dry_run:
        report.notes.append("restart Claude Code (or run /mcp and /hooks) to pick the changes up")
    return report


def _scope_has(scope: str, profile: str, home: Path, project_dir: Path) -> list[str]:
    """What of memoryd (`profile`) a Claude Code scope holds: its server entry and / or its hooks."""
    mcp_path, settings_path = _claude_paths(scope, home, project_dir)
    found = []
    try:
        servers = _load_json(mcp_path, _read(mcp_path)).get("mcpServers")
        if isinstance(servers, dict) and profile in servers:
            found.append(f"{mcp_path} (mcpServers.{profile})")
        hooks = _hooks_table(settings_path, _load_json(settings_path, _read(settings_path)), create=False) or {}
        if any(_is_our_group(g, e) for e in HOOK_EVENTS for g in hooks.get(e, [])):
            found.append(f"{settings_path} (hooks)")
    except InstallError:
        pass
    return found


def both_scopes_notes(scope: str, profile: str, home: Path, project_dir: Path) -> list[str]:
    """A project install and a user install both in effect in `project_dir`: Claude Code then lists the server
    in two scopes and runs both sets of hooks (every event twice). Say so, and how to keep one."""
    other = "user" if scope == "project" else "project"
    if not _scope_has(scope, profile, home, project_dir):
        return []
    found = _scope_has(other, profile, home, project_dir)
    if not found:
        return []
    return [f"memoryd ({profile}) is installed in both the project and the user scope for {project_dir}: also in "
            f"{', '.join(found)}. Claude Code then shows the server in two scopes and runs both sets of hooks (each "
            f"event twice). Keep one: `memoryd uninstall claude --scope user` (keep the project's, which teammates "
            f"share) or `memoryd uninstall claude --project-dir {shlex.quote(str(project_dir))}` (keep your own)"]


def _scoped_command(scope: str, command: str | None, name: str, path: Path, what: str, *,
                    on_path: bool = False) -> tuple[str, list[str]]:  # fmt: skip
    """The command an entry runs and notes about it: in a project file `name` on PATH (an absolute path is
    refused: the file is shared), in a user file this install's absolute executable."""
    if scope == "project":
        command = command or name
        _refuse_machine_path(command, "--command", path)
        return command, _on_path_notes(command)
    command = command or (on_path_or_absolute(name) if on_path else default_executable(name))
    return command, _missing_note(command, what)


def _install_claude_remote(scope: str, profile: str, home: Path, project_dir: Path, command: str | None,
                           remote: list[str], token_env: str | None, *, dry_run: bool) -> InstallReport:  # fmt: skip
    """The server entry `memoryd connect URL… --token-env VAR`; the hooks' file is left alone."""
    args = _remote_args(remote, token_env)
    assert token_env is not None
    mcp_path, settings_path = _claude_paths(scope, home, project_dir)
    command, notes = _scoped_command(scope, command, "memoryd", mcp_path, "the memoryd executable", on_path=True)
    entry = {"type": "stdio", "command": command, "args": args}
    plan = _plan_install_json(mcp_path, lambda d: _add_server(mcp_path, d, profile, entry))
    report = InstallReport("claude", "install", profile, scope, profile, dry_run=dry_run)
    report.changes = [_apply(plan, dry_run=dry_run, notes=report.notes)]
    report.notes += notes + _remote_notes(token_env, "Claude Code")
    try:
        hooks = _hooks_table(settings_path, _load_json(settings_path, _read(settings_path)), create=False) or {}
    except InstallError:
        hooks = {}
    if any(_is_our_group(g, e) for e in HOOK_EVENTS for g in hooks.get(e, [])):
        report.notes.append(f"{settings_path} still has memoryd's hooks from a local install; `memoryd uninstall "
                            "claude` takes them out (and this server: install --remote again after)")  # fmt: skip
    report.notes += _approval_notes(profile, scope, home, project_dir)
    if report.changed and not dry_run:
        report.notes.append("restart Claude Code (or run /mcp) to pick the server up")
    return report


def uninstall_claude(
    scope: ClaudeScope = "project",
    profile: Profile = "memoryd",
    *,
    home: Path | None = None,
    project_dir: Path | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Reverse `install_claude` for this scope and profile; other servers and hooks stay."""
    profile = _check_profile(profile)  # type: ignore[assignment]
    home, project_dir = _dirs(home, project_dir)
    mcp_path, settings_path = _claude_paths(scope, home, project_dir)
    plans = [
        _plan_uninstall_json(mcp_path, lambda d, o: _remove_server(mcp_path, d, o, profile)),
        _plan_uninstall_json(settings_path, lambda d, o: _remove_hooks(settings_path, d, o, profile)),
    ]
    report = InstallReport("claude", "uninstall", profile, scope, profile, dry_run=dry_run)
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
    if not report.changed:
        report.notes.append(f"nothing of memoryd ({profile}) was installed in the {scope} scope")
    return report


# -- Codex ---------------------------------------------------------------------------------------


def _codex_config(home: Path | None, codex_home: Path | None) -> Path:
    if codex_home is not None:
        return Path(codex_home) / "config.toml"
    env = os.environ.get("CODEX_HOME")
    if env:
        return Path(env) / "config.toml"
    return (Path(home) if home is not None else Path.home()) / ".codex" / "config.toml"


def _load_toml(path: Path, raw: bytes | None) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    if raw is None:
        return tomlkit.document()
    try:
        return tomlkit.parse(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path} is not UTF-8 text ({exc}); left untouched") from exc
    except TOMLKitError as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}); left untouched — fix the file and run again") from exc


def _codex_servers(path: Path, doc: Any, *, create: bool) -> Any:
    import tomlkit

    servers = doc.get("mcp_servers")
    if servers is None:
        if not create:
            return None
        servers = tomlkit.table(is_super_table=True)  # renders as [mcp_servers.<name>] only
        doc.add("mcp_servers", servers)
        servers = doc["mcp_servers"]
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: 'mcp_servers' is not a table; left untouched")
    return servers


def _last_table(table: Any) -> Any:
    """The table whose body ends where `table` ends in the file (its last sub-table, recursively)."""
    from tomlkit.items import Table

    while True:
        subs = [v for k, v in table.value.body if k is not None and isinstance(v, Table)]
        if not subs:
            return table
        table = subs[-1]


def _pop_trailing_comments(table: Any) -> list[Any]:
    """Take the comments (and what follows them) off the end of a table's body.

    tomlkit keeps a comment that stands above the next section inside the table before it; a
    table inserted after that one must carry the comment along, or it would end up above memoryd.
    """
    from tomlkit.items import Comment, Whitespace

    body = table.value.body
    n = len(body)
    while n and body[n - 1][0] is None and isinstance(body[n - 1][1], Whitespace | Comment):
        n -= 1
    trailing = body[n:]
    first = next((i for i, (_, item) in enumerate(trailing) if isinstance(item, Comment)), None)
    if first is None:
        return []
    moved = [item for _, item in trailing[first:]]
    del body[n + first:]
    return moved


def _insert_codex_table(doc: Any, servers: Any, name: str, command: str, args: list[str], **extra: Any) -> None:
    import tomlkit
    from tomlkit.items import Table

    existing = [v for k, v in servers.value.body if k is not None and isinstance(v, Table)]
    moved = _pop_trailing_comments(_last_table(existing[-1])) if existing else []
    table = tomlkit.table()
    table.add("command", command)
    table.add("args", args)
    for key, value in extra.items():
        table.add(key, value)
    if moved:
        table.add(tomlkit.nl())
        for item in moved:
            table.value.append(None, item)
    elif list(doc.keys())[-1] != "mcp_servers":
        table.add(tomlkit.nl())  # keep a blank line before the table that follows
    servers.add(name, table)


def _remove_codex_table(servers: Any, name: str) -> None:
    """Delete memoryd's table, handing the comments it carried back to the table before it."""
    from tomlkit.items import Table

    keys = [k.key for k, v in servers.value.body if k is not None and isinstance(v, Table)]
    moved = _pop_trailing_comments(_last_table(servers[name])) if name in keys else []
    at = keys.index(name) if name in keys else -1
    del servers[name]
    if moved and at > 0:
        target = _last_table(servers[keys[at - 1]])
        for item in moved:
            target.value.append(None, item)


def install_codex(
    home: Path | None = None,
    codex_home: Path | None = None,
    profile: Profile = "memoryd",
    command: str | None = None,
    *,
    hooks: bool = False,
    hook_command: str | None = None,
    remote: list[str] | None = None,
    token_env: str | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Add `[mcp_servers.<profile>]` to Codex's config.toml; comments and other tables stay.

    `remote` with `token_env`: the table runs `memoryd connect URL… --token-env VAR` (`command` is then
    the memoryd CLI) and lists VAR in `env_vars` (Codex passes a server only the variables named there
    and a few of its own, such as PATH and HOME); no hooks.

    `hooks`: also add memoryd's hooks to `$CODEX_HOME/hooks.json` (Codex's hook file has Claude Code's
    layout: event → matcher groups → command handlers, the same events memoryd uses, MCP tools matched as
    `mcp__<server>__<tool>`), each running `memoryd hook <event>` (this install's absolute path).
    """
    import tomlkit

    profile = _check_profile(profile)  # type: ignore[assignment]
    path = _codex_config(home, codex_home)
    explicit = command is not None
    if remote:
        if hooks:
            raise InvalidInput("--hooks needs a local store; with --remote only the MCP server is registered")
        args = _remote_args(remote, token_env)
        command = command or on_path_or_absolute("memoryd")
    else:
        args = _server_args(profile)
        command = command or on_path_or_absolute("memoryd-mcp")
    raw = _read(path)
    doc = _load_toml(path, raw)
    servers = _codex_servers(path, doc, create=True)
    current = servers.get(profile)
    if current is not None and not isinstance(current, dict):
        raise InstallError(f"{path}: 'mcp_servers.{profile}' is not a table; left untouched")
    items: list[str] = []
    if current is None:
        # with --remote, env_vars names the token's variable: Codex passes a server only the ones listed
        _insert_codex_table(doc, servers, profile, command, args, **({"env_vars": [token_env]} if remote else {}))
        items.append(f"mcp_servers.{profile}")
    else:  # keep what the user added (env, startup_timeout_sec, …); set what memoryd owns
        for key, value in (("command", command), ("args", args)):
            if current.get(key) != value:
                current[key] = value
                items.append(f"mcp_servers.{profile}.{key}")
        names = current.get("env_vars")
        if remote and names is not None and not isinstance(names, list):
            raise InstallError(f"{path}: 'mcp_servers.{profile}.env_vars' is not a list; left untouched")
        if remote and token_env not in (names or []):  # other names the user listed stay
            if names is None:
                current["env_vars"] = [token_env]
            else:
                names.append(token_env)
            items.append(f"mcp_servers.{profile}.env_vars")
    action = "unchanged" if not items else ("created" if raw is None else "updated")
    plan = _Plan(path, raw, raw if not items else tomlkit.dumps(doc).encode("utf-8"), action, items)
    report = InstallReport("codex", "install", profile, "user", profile, dry_run=dry_run)
    plans = [plan]
    if hooks:
        hooks_path = path.with_name("hooks.json")
        exe, exe_file = _hook_executable(command, hook_command)
        plans.append(_plan_install_json(hooks_path, lambda d: _add_hooks(hooks_path, d, exe, profile, file_tools=False)))
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
    report.notes += _missing_note(command, "the memoryd executable" if remote else "the MCP server executable")
    report.notes += [] if explicit else _absolute_note(command, "the MCP server")
    if remote:
        assert token_env is not None
        report.notes += _remote_notes(token_env, "Codex")
    report.notes.append("Codex starts MCP servers in the session's working directory, so the scope follows the "
                        "repository you run codex in" + ("" if hooks or remote else "; --hooks adds memoryd's hooks too"))
    if report.changed and not dry_run:
        report.notes.append("restart Codex to pick the server up (`/mcp` lists it)")
    return report


def uninstall_codex(
    home: Path | None = None, codex_home: Path | None = None, profile: Profile = "memoryd", *, dry_run: bool = False
) -> InstallReport:
    """Reverse `install_codex`: the original file comes back byte for byte when nothing else changed."""
    import tomlkit

    profile = _check_profile(profile)  # type: ignore[assignment]
    path = _codex_config(home, codex_home)
    report = InstallReport("codex", "uninstall", profile, "user", profile, dry_run=dry_run)
    raw = _read(path)
    if raw is None:
        report.changes = [Change(str(path), "unchanged")]
        report.notes.append(f"nothing of memoryd ({profile}) was installed in {path}")
        return report
    doc = _load_toml(path, raw)
    braw = _read_backup(path)
    original = None
    if braw == ABSENT_MARK:
        original = tomlkit.document()
    elif braw is not None:
        try:
            original = _load_toml(path, braw)
        except InstallError:
            original = None
    servers = _codex_servers(path, doc, create=False)
    items: list[str] = []
    if servers is not None and profile in servers:
        orig_servers = original.get("mcp_servers") if original is not None else None
        if isinstance(orig_servers, dict) and profile in orig_servers:
            if servers[profile].unwrap() != orig_servers[profile].unwrap():
                servers[profile] = copy.deepcopy(orig_servers[profile])
                items.append(f"mcp_servers.{profile}")
        else:
            _remove_codex_table(servers, profile)
            items.append(f"mcp_servers.{profile}")
            if not servers and (original is None or "mcp_servers" not in original):
                del doc["mcp_servers"]
    if not items:
        plan = _Plan(path, raw, raw, "unchanged", [])
    elif braw in (None, ABSENT_MARK) and not doc.unwrap() and not tomlkit.dumps(doc).strip():
        plan = _Plan(path, raw, None, "deleted", items, uninstall=True)  # install created this file
    elif braw not in (None, ABSENT_MARK) and original is not None and doc.unwrap() == original.unwrap():
        plan = _Plan(path, raw, braw, "restored", items, restore_backup=True, uninstall=True)
    else:
        plan = _Plan(path, raw, tomlkit.dumps(doc).encode("utf-8"), "updated", items, uninstall=True)
    report.changes = [_apply(plan, dry_run=dry_run, notes=report.notes)]
    hooks_path = path.with_name("hooks.json")
    if hooks_path.exists():
        hooks_plan = _plan_uninstall_json(hooks_path, lambda d, o: _remove_hooks(hooks_path, d, o, profile))
        if hooks_plan.action != "unchanged":
            report.changes.append(_apply(hooks_plan, dry_run=dry_run, notes=report.notes))
    if not report.changed:
        report.notes.append(f"nothing of memoryd ({profile}) was installed in {path}")
    return report


# -- Claude Desktop and Cursor: an mcpServers entry in one JSON file -----------------------------------------


def claude_desktop_config(home: Path | None = None) -> Path:
    """Claude Desktop's config file: macOS `~/Library/Application Support/Claude/`, Windows
    `%APPDATA%\\Claude\\`, elsewhere `$XDG_CONFIG_HOME/Claude/` (default `~/.config`), then
    `claude_desktop_config.json`."""
    home = Path(home) if home is not None else Path.home()
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def _install_entry(agent: str, scope: str, path: Path, name: str, entry: dict[str, Any], *,
                   dry_run: bool) -> InstallReport:  # fmt: skip
    plan = _plan_install_json(path, lambda d: _add_server(path, d, name, entry))
    report = InstallReport(agent, "install", name, scope, name, dry_run=dry_run)  # type: ignore[arg-type]
    report.changes = [_apply(plan, dry_run=dry_run, notes=report.notes)]
    return report


def _uninstall_entry(agent: str, scope: str, path: Path, name: str, *, dry_run: bool) -> InstallReport:
    plan = _plan_uninstall_json(path, lambda d, o: _remove_server(path, d, o, name))
    report = InstallReport(agent, "uninstall", name, scope, name, dry_run=dry_run)  # type: ignore[arg-type]
    report.changes = [_apply(plan, dry_run=dry_run, notes=report.notes)]
    if not report.changed:
        report.notes.append(f"nothing of memoryd ({name}) was installed in {path}")
    return report


def install_claude_desktop(
    profile: Profile = "memoryd",
    *,
    home: Path | None = None,
    config_path: Path | None = None,
    project_dir: Path | None = None,
    command: str | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Add memoryd to Claude Desktop's `mcpServers` (file: `claude_desktop_config`).

    Claude Desktop starts servers in no particular directory, so the entry names the folder whose
    scope memoryd serves: `--cwd <project_dir>` (default: the home directory, a scope of its own;
    recall always adds the global scope). The command is this install's absolute path (the file
    is this machine's).
    """
    profile = _check_profile(profile)  # type: ignore[assignment]
    home = Path(home) if home is not None else Path.home()
    path = Path(config_path) if config_path is not None else claude_desktop_config(home)
    command = command or default_executable("memoryd-mcp")
    folder = Path(project_dir if project_dir is not None else home).absolute()
    entry = {"command": command, "args": [*_server_args(profile), "--cwd", str(folder)]}
    report = _install_entry("claude-desktop", "user", path, profile, entry, dry_run=dry_run)
    report.notes += _missing_note(command, "the MCP server executable")
    report.notes.append(f"memories are read and written for the scope of {folder} (plus the global scope); "
                        "--project-dir picks another folder")  # fmt: skip
    if report.changed and not dry_run:
        report.notes.append("quit and restart Claude Desktop to pick the server up")
    return report


def uninstall_claude_desktop(
    profile: Profile = "memoryd", *, home: Path | None = None, config_path: Path | None = None, dry_run: bool = False
) -> InstallReport:
    """Reverse `install_claude_desktop`: the original bytes come back when nothing else changed."""
    profile = _check_profile(profile)  # type: ignore[assignment]
    path = Path(config_path) if config_path is not None else claude_desktop_config(home)
    return _uninstall_entry("claude-desktop", "user", path, profile, dry_run=dry_run)


# Cursor expands ${workspaceFolder} in mcp.json values, so one entry follows whichever project is open.
CURSOR_WORKSPACE = "${workspaceFolder}"


def _cursor_path(scope: str, home: Path, project_dir: Path) -> Path:
    if scope == "project":
        return project_dir / ".cursor" / "mcp.json"
    if scope == "user":
        return home / ".cursor" / "mcp.json"
    raise InvalidInput(f"unknown scope {scope!r}; expected project or user")


def install_cursor(
    scope: ClaudeScope = "user",
    profile: Profile = "memoryd",
    *,
    home: Path | None = None,
    project_dir: Path | None = None,
    command: str | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Add memoryd to Cursor's `mcpServers`: `~/.cursor/mcp.json` (user, default) or
    `<project>/.cursor/mcp.json` (project, shared: the command is `memoryd-mcp` on PATH).

    The entry passes `--cwd ${workspaceFolder}`, which Cursor expands to the open project, so the
    scope follows the project whichever directory Cursor starts the server in.
    """
    profile = _check_profile(profile)  # type: ignore[assignment]
    home, project_dir = _dirs(home, project_dir)
    path = _cursor_path(scope, home, project_dir)
    command, notes = _scoped_command(scope, command, "memoryd-mcp", path, "the MCP server executable")
    entry = {"type": "stdio", "command": command, "args": [*_server_args(profile), "--cwd", CURSOR_WORKSPACE]}
    report = _install_entry("cursor", scope, path, profile, entry, dry_run=dry_run)
    report.notes += notes
    if report.changed and not dry_run:
        report.notes.append("Cursor lists it under Settings → MCP; enable it there (or reload the window)")
    return report


def uninstall_cursor(
    scope: ClaudeScope = "user",
    profile: Profile = "memoryd",
    *,
    home: Path | None = None,
    project_dir: Path | None = None,
    dry_run: bool = False,
) -> InstallReport:
    """Reverse `install_cursor` for this scope and profile."""
    profile = _check_profile(profile)  # type: ignore[assignment]
    home, project_dir = _dirs(home, project_dir)
    return _uninstall_entry("cursor", scope, _cursor_path(scope, home, project_dir), profile, dry_run=dry_run)


# -- OpenClaw: the native memory plugin (integrations/openclaw), installed with OpenClaw's own CLI -------

OPENCLAW_PLUGIN_ID = "memoryd"
# What install sets (besides the plugin itself), as config paths; uninstall puts each back as it was.
_OPENCLAW_PATHS = ("plugins.slots.memory", "plugins.entries.memoryd", "plugins.entries.memory-core")


def openclaw_plugin_dir() -> Path:
    """The plugin in this checkout (integrations/openclaw), built (`make openclaw-plugin`)."""
    return Path(__file__).resolve().parents[2] / "integrations" / "openclaw"


def _openclaw_record() -> Path:
    return backup_dir() / "openclaw-install.json"


def _openclaw(openclaw: str, *args: str, stdin: str | None = None, timeout: float = 180) -> str:
    import subprocess

    try:
        r = subprocess.run([openclaw, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                           stdin=None if stdin is not None else subprocess.DEVNULL)  # fmt: skip
    except FileNotFoundError:
        raise InstallError(f"OpenClaw's CLI {openclaw!r} was not found: install OpenClaw (npm i -g openclaw) or "
                           "pass --openclaw PATH") from None  # fmt: skip
    except subprocess.TimeoutExpired:
        raise InstallError(f"`openclaw {' '.join(args[:3])}` did not finish within {timeout:.0f} s") from None
    if r.returncode != 0:
        tail = (r.stderr.strip() or r.stdout.strip())[-600:]
        raise InstallError(f"`openclaw {' '.join(args[:3])}` failed (exit {r.returncode}): {tail}")
    return r.stdout


def _dig(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _openclaw_state(openclaw: str) -> tuple[Path, dict[str, Any]]:
    """OpenClaw's config file (as `openclaw config file` names it) and its content ({} when absent)."""
    lines = [ln.strip() for ln in _openclaw(openclaw, "config", "file").splitlines() if ln.strip()]
    path = Path(os.path.expanduser(lines[-1])) if lines else Path.home() / ".openclaw" / "openclaw.json"
    raw = _read(path)
    if raw is None:
        return path, {}
    try:
        data = json.loads(raw)
    except ValueError:
        data = {}  # JSON5 with comments: the prior values are then read as absent
    return path, data if isinstance(data, dict) else {}


def _patch_for(values: dict[str, Any]) -> dict[str, Any]:
    """A `config patch` object setting each dotted path to its value (None deletes it)."""
    out: dict[str, Any] = {}
    for dotted, value in values.items():
        node = out
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def install_openclaw(openclaw: str = "openclaw", *, plugin_dir: Path | None = None, command: str | None = None,
                     dry_run: bool = False) -> InstallReport:  # fmt: skip
    """Install the memoryd plugin into OpenClaw with OpenClaw's CLI: `plugins install`, then one `config patch`
    binding `plugins.slots.memory` to it, granting the conversation access its hooks need, giving it the memoryd
    command (to start the daemon) and MEMORYD_HOME, and disabling `memory-core` (whose memory_search/memory_get
    would otherwise stay offered next to memoryd's tools). The values found before are kept for uninstall.
    """
    plugin = (plugin_dir or openclaw_plugin_dir()).resolve()
    if not (plugin / "openclaw.plugin.json").is_file():
        raise InstallError(f"no OpenClaw plugin at {plugin} (openclaw.plugin.json is missing)")
    if not (plugin / "dist" / "index.js").is_file():
        raise InstallError(f"the plugin at {plugin} is not built: run `make openclaw-plugin` (tsc) first")
    exe = command or default_executable("memoryd")
    config_path, before = _openclaw_state(openclaw)
    plugin_config: dict[str, Any] = {"command": exe}
    if os.environ.get("MEMORYD_HOME"):
        plugin_config["home"] = os.environ["MEMORYD_HOME"]
    entry = {"enabled": True, "hooks": {"allowConversationAccess": True}, "config": plugin_config}
    report = InstallReport("openclaw", "install", "memoryd", "user", OPENCLAW_PLUGIN_ID, dry_run=dry_run)
    items = [f"plugin {OPENCLAW_PLUGIN_ID} from {plugin}", "plugins.slots.memory = memoryd",
             "plugins.entries.memoryd.hooks.allowConversationAccess = true",
             f"plugins.entries.memoryd.config = {json.dumps(plugin_config)}",
             "plugins.entries.memory-core.enabled = false"]  # fmt: skip
    report.changes.append(Change(str(config_path), "updated", items))
    if dry_run:
        return report
    record = _openclaw_record()
    if not record.exists():  # a reinstall keeps what was there before the first install
        prior = {p: _dig(before, p) for p in _OPENCLAW_PATHS}
        agents = _dig(before, "agents.entries")
        prior["agents.entries"] = sorted(agents) if isinstance(agents, dict) else None
        record.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(record, json.dumps({"config": str(config_path), "prior": prior}, indent=2).encode())
    _openclaw(openclaw, "plugins", "install", str(plugin), "--force", "--accept-capabilities")
    patch = _patch_for({"plugins.slots.memory": OPENCLAW_PLUGIN_ID, "plugins.entries.memoryd": entry,
                        "plugins.entries.memory-core.enabled": False})  # fmt: skip
    _openclaw(openclaw, "config", "patch", "--stdin", stdin=json.dumps(patch))
    report.notes.append(f"what was there before is kept in {record}; `memoryd uninstall openclaw` puts it back")
    report.notes.append("a running OpenClaw Gateway picks the plugin up on its next start (openclaw gateway restart)")
    return report


def uninstall_openclaw(openclaw: str = "openclaw", *, dry_run: bool = False) -> InstallReport:
    """Reverse `install_openclaw`: `plugins uninstall memoryd`, then the slot, the plugin's entry and memory-core's
    `enabled` put back as they were before the install (absent ones removed)."""
    report = InstallReport("openclaw", "uninstall", "memoryd", "user", OPENCLAW_PLUGIN_ID, dry_run=dry_run)
    record = _openclaw_record()
    config_path, now = _openclaw_state(openclaw)
    if not record.exists() and not isinstance(_dig(now, "plugins.entries.memoryd"), dict):
        report.changes.append(Change(str(config_path), "unchanged"))
        report.notes.append("memoryd is not installed in OpenClaw")
        return report
    prior: dict[str, Any] = {}
    if record.exists():
        prior = json.loads(record.read_text(encoding="utf-8")).get("prior") or {}
    restore = {p: prior.get(p) for p in _OPENCLAW_PATHS}
    core = restore["plugins.entries.memory-core"]
    if isinstance(core, dict):  # merged back; `enabled` removed again when it was not set before
        restore["plugins.entries.memory-core"] = {**core, "enabled": core.get("enabled")}
    items = [f"plugin {OPENCLAW_PLUGIN_ID} removed"] + [
        f"{p} = {json.dumps(v)}" if v is not None else f"{p} removed" for p, v in restore.items()]  # fmt: skip
    report.changes.append(Change(str(config_path), "restored", items))
    if dry_run:
        return report
    if _dig(now, "plugins.installs.memoryd") is not None or (config_path.parent / "extensions" / "memoryd").exists():
        _openclaw(openclaw, "plugins", "uninstall", OPENCLAW_PLUGIN_ID, "--force")
    # `plugins uninstall` leaves an empty `agents.entries.<id>` for agents it visited: those were not there before
    after = _load_json(config_path, _read(config_path)) if config_path.exists() else {}
    agents, known = _dig(after, "agents.entries"), prior.get("agents.entries")
    if isinstance(agents, dict):
        new_empty = [a for a, v in agents.items() if v == {} and (known is None or a not in known)]
        if known is None and new_empty and len(new_empty) == len(agents):  # there was no agents.entries before
            restore["agents" if set(_dig(after, "agents") or {}) == {"entries"} else "agents.entries"] = None
        else:
            restore.update({f"agents.entries.{a}": None for a in new_empty})
    _openclaw(openclaw, "config", "patch", "--stdin", stdin=json.dumps(_patch_for(restore)))
    record.unlink(missing_ok=True)
    return report
