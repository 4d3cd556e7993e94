"""Codex: `[mcp_servers.<name>]` in `$CODEX_HOME/config.toml`, edited with tomlkit (comments and order kept)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from ...shared.errors import InvalidInput
from .claude import _add_hooks, _remove_hooks
from .common import (
    ABSENT_MARK,
    Change,
    InstallError,
    InstallReport,
    Profile,
    _absolute_note,
    _apply,
    _check_profile,
    _hook_executable,
    _missing_note,
    _Plan,
    _plan_install_json,
    _plan_uninstall_json,
    _read,
    _read_backup,
    _remote_args,
    _remote_notes,
    _server_args,
    on_path_or_absolute,
)


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
    del body[n + first :]
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
        plans.append(
            _plan_install_json(hooks_path, lambda d: _add_hooks(hooks_path, d, exe, profile, file_tools=False))
        )
    report.changes = [_apply(p, dry_run=dry_run, notes=report.notes) for p in plans]
    report.notes += _missing_note(command, "the memoryd executable" if remote else "the MCP server executable")
    report.notes += [] if explicit else _absolute_note(command, "the MCP server")
    if remote:
        assert token_env is not None
        report.notes += _remote_notes(token_env, "Codex")
    report.notes.append(
        "Codex starts MCP servers in the session's working directory, so the scope follows the "
        "repository you run codex in" + ("" if hooks or remote else "; --hooks adds memoryd's hooks too")
    )
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
