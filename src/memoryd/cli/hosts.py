"""Around the store: install / uninstall per agent host, migrate, the web console, connect, hooks and
the resident daemon."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..shared.errors import MemorydError
from .common import _PLAIN, CwdOpt, JsonOpt, _emit, _fail, app

install_app = typer.Typer(help="Register memoryd with an agent: its MCP server, and (Claude Code) its hooks.",
                          **_PLAIN)  # type: ignore[arg-type]  # fmt: skip
uninstall_app = typer.Typer(help="Take out exactly what `memoryd install` added.", **_PLAIN)  # type: ignore[arg-type]
app.add_typer(install_app, name="install")
app.add_typer(uninstall_app, name="uninstall")

ProfileOpt = Annotated[
    str, typer.Option("--profile", help="memoryd (mem_* tools) or hmg (memory_* tools, server 'hmg').")
]
ClaudeScopeOpt = Annotated[str, typer.Option(
    "--scope", help="project: <dir>/.mcp.json and <dir>/.claude/settings.json; user: ~/.claude.json and "
                    "~/.claude/settings.json.")]  # fmt: skip
ProjectOpt = Annotated[Path | None, typer.Option("--project-dir", help="The project (default: here).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")]
CommandOpt = Annotated[
    str | None,
    typer.Option(
        "--command",
        help="The memoryd-mcp executable to register (default: for a user-scope file the one next to "
        "this memoryd, for a shared project file `memoryd-mcp` on PATH).",
    ),
]
RemoteOpt = Annotated[list[str] | None, typer.Option(
    "--remote", help="A team server's MCP URL: register `memoryd connect URL --token-env VAR` instead of a local "
                     "store, no hooks (repeat for replicas, tried in order).")]  # fmt: skip
TokenEnvOpt = Annotated[str | None, typer.Option(
    "--token-env", help="With --remote: the NAME of the environment variable holding your token (only the name is "
                        "written).")]  # fmt: skip
CodexHomeOpt = Annotated[Path | None, typer.Option(
    "--codex-home", help="Codex's folder (default: $CODEX_HOME, else ~/.codex).")]  # fmt: skip


def _report(fn: Callable[[], Any], as_json: bool) -> None:
    try:
        r = fn()
    except MemorydError as exc:  # InstallError (a file that does not parse) is invalid_input: exit 2
        _fail(exc)
    _emit(r.as_dict(), as_json, r.render)


@install_app.command("claude")
def install_claude_cmd(
    scope: ClaudeScopeOpt = "project",
    profile: ProfileOpt = "memoryd",
    project_dir: ProjectOpt = None,
    command: CommandOpt = None,
    hook_command: Annotated[
        str | None,
        typer.Option(
            "--hook-command",
            help="Shell prefix the hooks run as `<prefix> hook <event>` (default: user scope this "
            "memoryd, project scope `memoryd` on PATH).",
        ),
    ] = None,
    remote: RemoteOpt = None,
    token_env: TokenEnvOpt = None,
    approve: Annotated[
        bool,
        typer.Option(
            "--approve",
            help="Project scope: approve the server for this project now, in <dir>/.claude/settings.local.json "
            "(enabledMcpjsonServers; honoured once the folder is trusted), instead of at Claude "
            "Code's prompt.",
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add the MCP server and the SessionStart / UserPromptSubmit / PreToolUse / SessionEnd / PreCompact hooks
    to Claude Code. Project scope writes only commands on PATH (memoryd-mcp, memoryd) into the shared files.
    With --remote: the server is `memoryd connect` to a team server, and no hooks."""
    from ..agents.install import install_claude

    _report(lambda: install_claude(scope, profile, home=Path.home(), project_dir=project_dir or Path.cwd(),  # type: ignore[arg-type]
                                   command=command, hook_command=hook_command, remote=remote, token_env=token_env,
                                   approve=approve, dry_run=dry_run), json_)  # fmt: skip


@uninstall_app.command("claude")
def uninstall_claude_cmd(
    scope: ClaudeScopeOpt = "project",
    profile: ProfileOpt = "memoryd",
    project_dir: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Remove memoryd's server and hooks from Claude Code (the original files come back when unchanged)."""
    from ..agents.install import uninstall_claude

    _report(lambda: uninstall_claude(scope, profile, home=Path.home(), project_dir=project_dir or Path.cwd(),  # type: ignore[arg-type]
                                     dry_run=dry_run), json_)  # fmt: skip


@install_app.command("codex")
def install_codex_cmd(
    profile: ProfileOpt = "memoryd",
    codex_home: CodexHomeOpt = None,
    command: CommandOpt = None,
    hooks: Annotated[
        bool,
        typer.Option(
            "--hooks",
            help="Also add memoryd's hooks to $CODEX_HOME/hooks.json (brief, prompt recall, scope pin, transcripts).",
        ),
    ] = False,
    remote: RemoteOpt = None,
    token_env: TokenEnvOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add [mcp_servers.memoryd] to Codex's config.toml (comments and other tables kept), and with --hooks its
    hooks to hooks.json. With --remote: `memoryd connect` to a team server, its token variable in env_vars."""
    from ..agents.install import install_codex

    _report(lambda: install_codex(Path.home(), codex_home, profile, command, hooks=hooks, remote=remote,  # type: ignore[arg-type]
                                  token_env=token_env, dry_run=dry_run), json_)  # fmt: skip


@uninstall_app.command("codex")
def uninstall_codex_cmd(
    profile: ProfileOpt = "memoryd", codex_home: CodexHomeOpt = None,
    hooks: Annotated[bool, typer.Option(
        "--hooks", help="Accepted for symmetry with `install codex --hooks`: memoryd's hooks in hooks.json are "
                        "always taken out with its table.")] = False,
    dry_run: DryRunOpt = False, json_: JsonOpt = False,
) -> None:  # fmt: skip
    """Remove memoryd's table from Codex's config.toml, and its hooks from hooks.json."""
    from ..agents.install import uninstall_codex

    _report(lambda: uninstall_codex(Path.home(), codex_home, profile, dry_run=dry_run), json_)  # type: ignore[arg-type]


@install_app.command("claude-desktop")
def install_claude_desktop_cmd(
    profile: ProfileOpt = "memoryd",
    project_dir: Annotated[
        Path | None,
        typer.Option(
            "--project-dir", help="The folder whose scope Claude Desktop's memoryd serves (default: your home)."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="claude_desktop_config.json to edit (default: Claude Desktop's, for this OS)."),
    ] = None,
    command: CommandOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add memoryd to Claude Desktop's mcpServers (claude_desktop_config.json)."""
    from ..agents.install import install_claude_desktop

    _report(lambda: install_claude_desktop(profile, home=Path.home(), config_path=config, project_dir=project_dir,  # type: ignore[arg-type]
                                           command=command, dry_run=dry_run), json_)  # fmt: skip


@uninstall_app.command("claude-desktop")
def uninstall_claude_desktop_cmd(
    profile: ProfileOpt = "memoryd",
    config: Annotated[Path | None, typer.Option("--config", help="claude_desktop_config.json to edit.")] = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Remove memoryd from Claude Desktop's mcpServers."""
    from ..agents.install import uninstall_claude_desktop

    _report(lambda: uninstall_claude_desktop(profile, home=Path.home(), config_path=config, dry_run=dry_run), json_)  # type: ignore[arg-type]


OpenClawOpt = Annotated[str, typer.Option("--openclaw", help="OpenClaw's CLI (default: `openclaw` on PATH).")]


@install_app.command("openclaw")
def install_openclaw_cmd(
    openclaw: OpenClawOpt = "openclaw",
    plugin: Annotated[
        Path | None, typer.Option("--plugin", help="A built plugin folder (default: the one inside this memoryd).")
    ] = None,
    command: Annotated[
        str | None, typer.Option("--command", help="The memoryd the plugin starts the daemon with.")
    ] = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Install memoryd as OpenClaw's memory plugin (plugins install, memory slot, hook access) with OpenClaw's CLI."""
    from ..agents.install import install_openclaw

    _report(lambda: install_openclaw(openclaw, plugin_dir=plugin, command=command, dry_run=dry_run), json_)


@uninstall_app.command("openclaw")
def uninstall_openclaw_cmd(
    openclaw: OpenClawOpt = "openclaw", dry_run: DryRunOpt = False, json_: JsonOpt = False
) -> None:
    """Remove memoryd's OpenClaw plugin and put the memory slot and memory-core back as they were."""
    from ..agents.install import uninstall_openclaw

    _report(lambda: uninstall_openclaw(openclaw, dry_run=dry_run), json_)


CursorScopeOpt = Annotated[
    str,
    typer.Option(
        "--scope", help="user: ~/.cursor/mcp.json; project: <dir>/.cursor/mcp.json (shared: memoryd-mcp on PATH)."
    ),
]


@install_app.command("cursor")
def install_cursor_cmd(
    scope: CursorScopeOpt = "user",
    profile: ProfileOpt = "memoryd",
    project_dir: ProjectOpt = None,
    command: CommandOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add memoryd to Cursor's mcp.json, its scope following the open project (${workspaceFolder})."""
    from ..agents.install import install_cursor

    _report(lambda: install_cursor(scope, profile, home=Path.home(), project_dir=project_dir or Path.cwd(),  # type: ignore[arg-type]
                                   command=command, dry_run=dry_run), json_)  # fmt: skip


@uninstall_app.command("cursor")
def uninstall_cursor_cmd(
    scope: CursorScopeOpt = "user",
    profile: ProfileOpt = "memoryd",
    project_dir: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Remove memoryd from Cursor's mcp.json."""
    from ..agents.install import uninstall_cursor

    _report(lambda: uninstall_cursor(scope, profile, home=Path.home(), project_dir=project_dir or Path.cwd(),  # type: ignore[arg-type]
                                     dry_run=dry_run), json_)  # fmt: skip


@app.command()
def migrate(
    from_: Annotated[str, typer.Option("--from", help="sqlite:///path/to/memoryd.db (or a data root).")],
    to: Annotated[str, typer.Option("--to", help="postgresql://user@host/db (an empty database).")],
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Move a whole SQLite store into PostgreSQL, verified by counts, the chain and sample recalls."""
    from tqdm import tqdm

    from ..engine.migrate import migrate as run_migrate
    from ..shared.config import Settings

    bars: dict[str, Any] = {}

    def progress(table: str, done: int, total: int) -> None:
        bar = bars.get(table)
        if bar is None:
            bar = bars[table] = tqdm(total=total, desc=table, unit="row", disable=json_, leave=False)
        bar.update(done - bar.n)

    try:
        r = run_migrate(from_, to, settings=Settings(), cwd=cwd, progress=progress)
    except MemorydError as exc:
        _fail(exc)
    finally:
        for bar in bars.values():
            bar.close()
    _emit(r, json_, lambda: "\n".join(f"{k}: {v}" for k, v in r["copied"].items())
          + f"\nchain verified ({r['chain_events']} events), {r['recalls_checked']} sample recalls agree")  # fmt: skip


@app.command()
def ui(
    port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on (0 = any free one).")] = 8767,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            help="Address to bind (default: a new loopback address "
            "127.x.y.z per run, so no other local page shares the "
            "console's cookie); anything but loopback needs "
            "MEMORYD_TOKEN (at least 32 characters).",
        ),
    ] = None,  # fmt: skip
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open a browser.")] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A host name the browser may use (repeatable; default: the bind address and localhost).",
        ),
    ] = None,  # fmt: skip
    cwd: CwdOpt = None,
) -> None:
    """Serve the web console: browse, search, review, correct, govern and audit memories.

    Prints one line, `memoryd ui: http://127.x.y.z:PORT/PATH/?token=…`; the address, the path and the
    token are new on every start (or --host, MEMORYD_TOKEN). Sensitive scopes stay locked without a grant.
    With the memoryd daemon running (and no --host), the daemon serves it with its warm engine
    until Ctrl-C here.
    """
    from ..daemon.console import serve_by_daemon
    from ..ui.server import serve

    try:
        by_daemon = None if host is not None else serve_by_daemon(port=port, open_browser=not no_browser, cwd=cwd,
                                                                    allowed_host=allowed_host or [])  # fmt: skip
        if by_daemon is not None:
            raise typer.Exit(by_daemon)
        code = serve(host=host, port=port, open_browser=not no_browser, cwd=cwd, allowed_host=allowed_host or [])
    except MemorydError as exc:
        _fail(exc)
    raise typer.Exit(code)


@app.command("connect", context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
             add_help_option=False)  # fmt: skip
def connect(ctx: typer.Context) -> None:
    """Serve MCP on stdio, forwarding to a team server: `connect URL [URL…] --token-env VAR [--cwd DIR]
    [--timeout S]`. The scope is inferred here and sent with each request; the token stays in VAR."""
    from ..agents.remote import main as connect_main

    raise typer.Exit(connect_main(ctx.args))


@app.command("hook")
def hook(
    event: Annotated[
        str, typer.Argument(help="session-start | user-prompt-submit | pre-tool-use | session-end | pre-compact")
    ],
) -> None:
    """Run one Claude Code hook: its JSON on stdin, its answer on stdout; always exits 0 (errors go to hooks.log)."""
    from ..agents import hooks

    raise typer.Exit(hooks.main([event]))


daemon_app = typer.Typer(
    help="The resident memoryd: one warm process per data home that every surface talks to.",
    **_PLAIN,  # type: ignore[arg-type]
)
app.add_typer(daemon_app, name="daemon")


@daemon_app.command("start")
def daemon_start() -> None:
    """Start the daemon of this data home (MEMORYD_HOME) unless it runs; clients also start it on demand."""
    from ..daemon.client import Client, DaemonUnavailable

    client = Client()
    try:
        client.start()
    except DaemonUnavailable as exc:
        typer.echo(f"error [daemon_unavailable]: {exc}", err=True)
        raise typer.Exit(1) from None
    info = client.health() or {}
    typer.echo(f"memoryd daemon {'started' if client.started else 'running'}: pid {info.get('pid')}, "
               f"{client.paths.socket}")  # fmt: skip


@daemon_app.command("status")
def daemon_status(as_json: JsonOpt = False) -> None:
    """Whether the daemon runs, its pid, version, uptime and requests served; exit code 3 when it does not run."""
    from ..daemon.client import Client

    client = Client(autostart=False)
    info = client.health()
    data = info or {"ok": False, "home": str(client.paths.home)}
    _emit(data, as_json, lambda: f"memoryd daemon running: pid {data['pid']}, version {data['version']}, up "
                                 f"{data['uptime']:.0f} s, {data['calls']} requests, socket {client.paths.socket}"
          if info else f"memoryd daemon: not running for {client.paths.home}")  # fmt: skip
    if info is None:
        raise typer.Exit(3)


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon (it finishes the requests in flight); agents' next calls start it again."""
    from ..daemon.client import Client

    pid = Client(autostart=False).stop()
    typer.echo("memoryd daemon: not running" if pid is None else f"memoryd daemon stopped (pid {pid})")


@daemon_app.command("logs")
def daemon_logs(lines: Annotated[int, typer.Option("--lines", "-n", help="How many of the last lines.")] = 50) -> None:
    """The end of the daemon's log (<home>/daemon.log)."""
    from ..daemon.client import Paths, home

    path = Paths(home()).log
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        typer.echo(f"memoryd daemon: no log yet ({path})")
        return
    for line in text.splitlines()[-max(1, lines) :]:
        typer.echo(line)


@daemon_app.command("serve")
def daemon_serve(idle: Annotated[float | None, typer.Option("--idle", help="Exit after this many idle seconds "
                                                                          "(0: never; default MEMORYD_DAEMON_IDLE or 1800).")] = None) -> None:  # fmt: skip
    """Run the daemon in the foreground (what `start` and the clients run in the background)."""
    import os

    from ..daemon.client import home
    from ..daemon.server import idle_seconds, serve

    raise typer.Exit(serve(home(), idle if idle is not None else idle_seconds(os.environ.get("MEMORYD_DAEMON_IDLE"))))
