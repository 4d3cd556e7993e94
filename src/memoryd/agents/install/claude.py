"""Claude Code: the MCP server entry (`.mcp.json` / `~/.claude.json`) and the hooks (`settings.json`)."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path
from typing import Any

from ...shared.errors import InvalidInput
from ..filehook import FILE_TOOLS_MATCHER
from .common import (
    _OUR_HOOK,
    _SHARED_EVENTS,
    HOOK_EVENTS,
    PROFILES,
    ClaudeScope,
    InstallError,
    InstallReport,
    Profile,
    _absolute_note,
    _apply,
    _check_profile,
    _dirs,
    _expect_dict,
    _guard_absent,
    _hook_executable,
    _load_json,
    _missing_note,
    _on_path_notes,
    _plan_install_json,
    _plan_uninstall_json,
    _read,
    _refuse_machine_path,
    _remote_args,
    _remote_notes,
    _server_args,
    default_executable,
    on_path_or_absolute,
)


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
    return {
        "matcher": FILE_TOOLS_MATCHER,
        "hooks": [{"type": "command", "command": f"{exe} hook {name}", "timeout": timeout}],
    }


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


def _local_settings(project_dir: Path) -> Path:
    return project_dir / ".claude" / "settings.local.json"


def _approval(name: str, home: Path, project_dir: Path) -> tuple[str, str]:
    """Whether Claude Code starts the project server `name` without asking: ("approved" | "disabled" | "pending",
    the note that says so and what to do). Never flips anything itself (`--approve` does, `_approve`).

    What the real CLI (2.1.x) honours, checked by tests/clients/test_claude_code.py: a
    `disabledMcpjsonServers` entry in any settings file hides the server; `~/.claude/settings.json`
    approves it anywhere; the project's own settings files and its `~/.claude.json` entry approve
    it only once the folder is trusted (`hasTrustDialogAccepted`, set by accepting the trust
    dialog in `claude`), so a cloned repository cannot approve its own servers.
    """
    user_settings = home / ".claude" / "settings.json"
    local = _local_settings(project_dir)
    places: list[tuple[Path, dict[str, Any], bool]] = []  # (file, settings, honoured while untrusted)
    for path, untrusted_ok in ((user_settings, True), (local, False),
                               (project_dir / ".claude" / "settings.json", False)):  # fmt: skip
        try:
            places.append((path, _load_json(path, _read(path)), untrusted_ok))
        except InstallError:
            continue
    trusted = _trusted(home, project_dir)
    try:
        entry = _project_state(home, project_dir)
        if entry is not None:
            places.append((home / ".claude.json", entry, False))
    except InstallError:
        pass
    for path, d, _ in places:
        if name in (d.get("disabledMcpjsonServers") or []):
            return "disabled", (f"{path} lists {name!r} in disabledMcpjsonServers, so Claude Code will not start it; "
                                "take it out of that list to use memoryd in this project")  # fmt: skip
    for path, d, untrusted_ok in places:
        if not (untrusted_ok or trusted):
            continue
        if d.get("enableAllProjectMcpServers") is True or name in (d.get("enabledMcpjsonServers") or []):
            return "approved", f"the project server {name!r} is already approved ({path})"
    if any(path == local and name in (d.get("enabledMcpjsonServers") or []) for path, d, _ in places):
        return "pending", (f"the project server {name!r} is approved in {local}, which Claude Code honours once you "
                           f"trust the folder: run `claude` in {project_dir} and accept its trust prompt (no MCP "
                           "prompt follows)")  # fmt: skip
    return "pending", (
        f"Claude Code asks before starting servers from {project_dir / '.mcp.json'} (`claude mcp list` shows "
        f"'Pending approval'). To approve {name!r}: `memoryd install claude --approve` adds it to "
        f'"enabledMcpjsonServers" in {local} (this project only; your own file, not the team\'s), or run `claude` '
        f"in {project_dir} and approve {name!r} at the prompt (or in /mcp), "
        f'or add "enabledMcpjsonServers": ["{name}"] to {user_settings} (it then counts in every project; '
        f'"enableAllProjectMcpServers": true there approves every project\'s servers). The setting in '
        f"{local} counts only once you have trusted the folder (accepted the trust dialog of `claude` there)."
    )


def _project_state(home: Path, project_dir: Path) -> dict[str, Any] | None:
    """This project's entry in `~/.claude.json` (Claude Code's own state), or None."""
    state = _load_json(home / ".claude.json", _read(home / ".claude.json"))
    projects = state.get("projects")
    entry = projects.get(str(project_dir.resolve())) if isinstance(projects, dict) else None
    return entry if isinstance(entry, dict) else None


def _trusted(home: Path, project_dir: Path) -> bool:
    """Has the person accepted Claude Code's trust dialog for this folder?"""
    try:
        entry = _project_state(home, project_dir)
    except InstallError:
        return False
    return entry is not None and entry.get("hasTrustDialogAccepted") is True


def _approval_notes(name: str, scope: str, home: Path, project_dir: Path) -> list[str]:
    """For project servers: is it approved already? If not, say exactly how (never flip it silently)."""
    return [] if scope != "project" else [_approval(name, home, project_dir)[1]]


def _approve(path: Path, data: dict[str, Any], name: str) -> list[str]:
    """`--approve`: `name` in the project's own `enabledMcpjsonServers` (settings.local.json)."""
    servers = data.get("enabledMcpjsonServers", [])
    if not isinstance(servers, list):
        raise InstallError(f"{path}: 'enabledMcpjsonServers' is a {type(servers).__name__}, expected a list; "
                           "left untouched")  # fmt: skip
    if name in servers:
        return []
    data["enabledMcpjsonServers"] = [*servers, name]
    return [f"enabledMcpjsonServers[{name}]"]


def _unapprove(path: Path, data: dict[str, Any], original: dict[str, Any] | None, name: str) -> list[str]:
    """Take out the approval `--approve` added: only from a file memoryd changed (it has a backup), and not when the
    file listed `name` before memoryd's first change."""
    servers = data.get("enabledMcpjsonServers")
    if original is None or not isinstance(servers, list) or name not in servers:
        return []
    before = original.get("enabledMcpjsonServers")
    if isinstance(before, list) and name in before:
        return []
    kept = [s for s in servers if s != name]
    if kept or "enabledMcpjsonServers" in original:
        data["enabledMcpjsonServers"] = kept
    else:
        del data["enabledMcpjsonServers"]
    return [f"enabledMcpjsonServers[{name}]"]


def _approval_plans(profile: str, scope: str, approve: bool, home: Path, project_dir: Path) -> list[Any]:
    """With `--approve` on a project install that is not approved (nor disabled) yet: the settings.local.json edit."""
    if not approve or scope != "project" or _approval(profile, home, project_dir)[0] != "pending":
        return []
    local = _local_settings(project_dir)
    return [_plan_install_json(local, lambda d: _approve(local, d, profile))]


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
    approve: bool = False,
    dry_run: bool = False,
) -> InstallReport:
    """Register the MCP server and the four hooks with Claude Code (see the module docstring).

    `remote` (team server URLs, replicas in order) with `token_env`: register `memoryd connect` instead
    (`command` is then the memoryd CLI), and no hooks.

    `approve` (the person's consent, `--approve`): a project server Claude Code would wait to have approved is
    approved for this project, in its `.claude/settings.local.json` (the person's own file; Claude Code honours it
    once the folder is trusted). Never in `~/.claude/settings.json`, where an approval by name would let any
    repository's `.mcp.json` start a server of that name unasked.

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
        return _install_claude_remote(scope, profile, home, project_dir, command, remote, token_env, approve=approve,
                                      dry_run=dry_run)  # fmt: skip
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
        *_approval_plans(profile, scope, approve, home, project_dir),
    ]
    report = InstallReport("claude", "install", profile, scope, profile, dry_run=dry_run)
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
    if approve and scope == "user":
        report.notes.append("--approve: servers of the user scope need no approval")
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
        report.notes.append(
            "the tools appear as mcp__hmg__memory_* (memorize, recall, correct, govern, handoff, stats)"
        )
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
    return [
        f"memoryd ({profile}) is installed in both the project and the user scope for {project_dir}: also in "
        f"{', '.join(found)}. Claude Code then shows the server in two scopes and runs both sets of hooks (each "
        f"event twice). Keep one: `memoryd uninstall claude --scope user` (keep the project's, which teammates "
        f"share) or `memoryd uninstall claude --project-dir {shlex.quote(str(project_dir))}` (keep your own)"
    ]


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
                           remote: list[str], token_env: str | None, *, approve: bool,
                           dry_run: bool) -> InstallReport:  # fmt: skip
    """The server entry `memoryd connect URL… --token-env VAR`; the hooks' file is left alone."""
    args = _remote_args(remote, token_env)
    assert token_env is not None
    mcp_path, settings_path = _claude_paths(scope, home, project_dir)
    command, notes = _scoped_command(scope, command, "memoryd", mcp_path, "the memoryd executable", on_path=True)
    entry = {"type": "stdio", "command": command, "args": args}
    plans = [_plan_install_json(mcp_path, lambda d: _add_server(mcp_path, d, profile, entry)),
             *_approval_plans(profile, scope, approve, home, project_dir)]  # fmt: skip
    report = InstallReport("claude", "install", profile, scope, profile, dry_run=dry_run)
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
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
    if scope == "project":  # the approval `--approve` added, when it did (listed only then)
        local = _local_settings(project_dir)
        plans += [p for p in [_plan_uninstall_json(local, lambda d, o: _unapprove(local, d, o, profile))]
                  if p.action != "unchanged"]  # fmt: skip
    report = InstallReport("claude", "uninstall", profile, scope, profile, dry_run=dry_run)
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
    if not report.changed:
        report.notes.append(f"nothing of memoryd ({profile}) was installed in the {scope} scope")
    return report
