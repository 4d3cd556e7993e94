"""What every host's install shares: the hook events, executables on PATH or absolute, and the file
plumbing (read, plan, back up, write atomically, restore) that makes every edit reversible."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...shared.errors import InvalidInput

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
    r"""(?:^|[\s/\\"'])memoryd(?:\.exe|\.hooks|\.agents\.hooks)?["']?\s+hook\s+(?:session-start|user-prompt-submit|pre-tool-use|session-end|pre-compact)\b"""
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
    return [
        f"{what} is registered as {command}: `{Path(command).name}` on PATH is not this install, so the entry "
        "names this environment's path, which breaks if it moves or is reinstalled; `uv tool install` / "
        "`pipx install` put the command on PATH (then install again)"
    ]


def _guard_absent(hook_command: str) -> str:
    """A project file's hook prefix that is a silent no-op where the command is not installed (a teammate
    without memoryd): `command -v memoryd >/dev/null 2>&1 || exit 0; memoryd`, then ` hook <event>`."""
    first = shlex.split(hook_command)[0]
    return f"command -v {shlex.quote(first)} >/dev/null 2>&1 || exit 0; {hook_command}"


def _hook_executable(command: str | None, hook_command: str | None) -> tuple[str, str | None]:
    """The shell prefix the hooks run (`<prefix> hook <event>`), and the file it needs (for a note).

    `hook_command` is taken as a shell fragment as given (e.g. `/venv/bin/python -m memoryd.agents.hooks`);
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
    from ..remote import RemoteError, check_target

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
    """Replace `path` with `data` in one rename, keeping the old file's permissions (a new one is 0600)."""
    from ...shared.files import atomic_bytes

    atomic_bytes(path, data, new_mode=0o600)


def backup_dir() -> Path:
    """Where install keeps the files as they were: `<MEMORYD_HOME or the platform data dir>/install-backups`,
    never next to the file (a project's files are committed and shared)."""
    from ...shared.home import data_home

    return data_home() / "install-backups"


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
