"""Claude Desktop and Cursor: an `mcpServers` entry in one JSON file."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ...shared.errors import InvalidInput
from .claude import _add_server, _remove_server, _scoped_command
from .common import (
    ClaudeScope,
    InstallReport,
    Profile,
    _apply,
    _check_profile,
    _dirs,
    _missing_note,
    _plan_install_json,
    _plan_uninstall_json,
    _server_args,
    default_executable,
)


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
