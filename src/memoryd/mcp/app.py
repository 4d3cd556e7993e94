"""memoryd's MCP server: entry point (`memoryd-mcp`) and tool registration per profile."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer

from . import hmg, mem
from .common import EngineHandle, RequestHandle
from .server import MemorydServer
from .transport import http_guard

log = logging.getLogger("memoryd.server")

if TYPE_CHECKING:
    from ..shared.config import Settings

__all__ = ["PROFILES", "build_server", "list_tool_names", "main"]

PROFILES = ("memoryd", "hmg")

_INSTRUCTIONS = (
    "memoryd keeps long-term memory for this repository. Recall before relying on assumptions; memorize "
    "durable decisions, constraints and preferences as single sentences; correct outdated memories instead of "
    "adding new ones; write a handoff when a task ends. Scope is inferred: never pass one."
)


def build_server(
    profile: str = "memoryd",
    *,
    include_admin: bool = False,
    settings: Settings | None = None,
    cwd: str | Path | None = None,
    engine_handle: EngineHandle | None = None,
    team: bool = False,
) -> MemorydServer:
    """Build an MCP server for `profile`; the engine opens in the background on first use.

    `engine_handle` shares an already opening engine (the HTTP transport's console uses the same one).
    `team`: the team server: each request's tools act with the engine its token and scope header decided
    (`RequestHandle`; the HTTP guard decides it, see `_identify`).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; available: {', '.join(PROFILES)}")
    handle: EngineHandle | None = None

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if handle is not None:
                handle.close()

    from .. import __version__

    mcp = MemorydServer(
        name="hmg" if profile == "hmg" else "memoryd", version=__version__, instructions=_INSTRUCTIONS,
        lifespan=lifespan,
    )  # fmt: skip
    handle = engine_handle or EngineHandle(settings, cwd)
    if team:
        handle = RequestHandle(handle)
    mcp.engine_handle = handle  # prompts and resources (mcp/server.py)
    if profile == "hmg":
        hmg.register(mcp, handle)
    else:
        mem.register(mcp, handle, include_admin=include_admin)
    return mcp


async def list_tool_names(mcp: MCPServer[Any]) -> list[str]:
    """The names of the tools `mcp` serves, in registration order."""
    return [t.name for t in await mcp.list_tools()]


def _preflight() -> None:
    """Refuse to start on a configuration this install cannot serve (bad MEMORYD_* value, missing extra),
    with the reason on stderr, rather than fail every tool call later."""
    from pydantic import ValidationError

    from ..shared.config import Settings
    from ..shared.errors import MemorydError
    from ..shared.extras import check_settings

    try:
        check_settings(Settings())
    except ValidationError as exc:
        problems = "; ".join(f"MEMORYD_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        sys.exit(f"memoryd-mcp: {problems}")
    except MemorydError as exc:
        sys.exit(f"memoryd-mcp: {exc.message}")


def main(argv: list[str] | None = None) -> None:
    from .. import __version__

    agent, admin = len(mem.AGENT_TOOLS), len(mem.ADMIN_TOOLS)
    parser = argparse.ArgumentParser(prog="memoryd-mcp", description="Serve memoryd over MCP (stdio by default).")
    parser.add_argument("--version", action="version", version=f"memoryd-mcp {__version__}")
    parser.add_argument(
        "--profile", choices=PROFILES, default="memoryd",
        help=f"tool surface: memoryd ({agent} mem_* tools, {agent + admin} with --admin; the default) or hmg "
             f"({len(hmg.TOOL_NAMES)} memory_* tools)",
    )  # fmt: skip
    parser.add_argument(
        "--cwd", metavar="DIR",
        help="infer the scope from DIR instead of the working directory (for clients that start servers "
             "elsewhere: Claude Desktop, Cursor's ${workspaceFolder})",
    )  # fmt: skip
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8766, help="HTTP port (default: 8766)")
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME",
        help="HTTP: a host name clients may use in Host/Origin (repeatable; default: the bind address and "
        "localhost)",
    )  # fmt: skip
    parser.add_argument(
        "--admin", action="store_true", default=os.environ.get("MEMORYD_MCP_ADMIN") == "1",
        help=f"also register the {admin} admin tools (or MEMORYD_MCP_ADMIN=1)",
    )  # fmt: skip
    parser.add_argument(
        "--team", action="store_true",
        help="HTTP only: serve a team (tokens from `memoryd token create`, each request's repository from its "
             "Memoryd-Scope header; stateless, so replicas on one database answer any request)",
    )  # fmt: skip
    parser.add_argument(
        "--ui", action="store_true",
        help="HTTP only: also serve the web console under /ui (prints its address with a token)",
    )  # fmt: skip
    parser.add_argument(
        "--db", metavar="URL",
        help="the database (as MEMORYD_DB): postgresql://… for a team; with --db-read, the primary that takes "
             "every write (a libpq multi-host URL reaches the host that accepts writes)",
    )  # fmt: skip
    parser.add_argument(
        "--db-read", action="append", default=[], metavar="URL",
        help="--team with a PostgreSQL --db: a hot standby of it that serves recalls and listings (repeatable, "
             "or comma-separated; a multi-host URL names one standby per host). A person's reads wait up to "
             "MEMORYD_READ_WAIT_MS (500) for their own last write, else read the primary; a standby that fails "
             "or lags more than MEMORYD_READ_MAX_LAG_MS (5000) leaves the rotation until it recovers",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.db is not None:
        os.environ["MEMORYD_DB"] = args.db
    if args.db_read:
        _read_flags(args)
        os.environ["MEMORYD_DB_READ"] = ",".join(args.db_read)
    _preflight()
    cwd = args.cwd
    if cwd is not None and ("${" in cwd or not Path(cwd).is_dir()):
        print(f"memoryd-mcp: --cwd {cwd!r} is not a directory (a client that does not expand the variable?); "
              f"using the working directory {os.getcwd()}", file=sys.stderr)  # fmt: skip
        cwd = None
    if args.ui and args.transport != "http":
        sys.exit("memoryd-mcp: --ui needs --transport http (or run `memoryd ui`)")
    if args.team:
        if args.transport != "http":
            sys.exit("memoryd-mcp: --team needs --transport http")
        if args.ui or args.admin:
            sys.exit("memoryd-mcp: --team serves agents only: --ui and --admin act across every tenant; run "
                     "`memoryd ui` or the CLI on the server as its operator")  # fmt: skip
        if os.environ.get("MEMORYD_TOKEN"):
            sys.exit("memoryd-mcp: --team checks each person's token (`memoryd token create`); unset MEMORYD_TOKEN")
        from ..shared.http_security import allowed_names

        _serve_team(args.profile, args.host, args.port, allowed_names(args.host, args.allowed_host))
        return
    handle = EngineHandle(None, cwd) if args.ui else None
    mcp = build_server(args.profile, include_admin=args.admin, cwd=cwd, engine_handle=handle)
    if args.transport == "stdio":
        mcp.run("stdio")
        return
    from ..shared.http_security import TokenError, allowed_names, server_token

    try:
        token = server_token(args.host, os.environ.get("MEMORYD_TOKEN"))
    except TokenError as exc:
        sys.exit(f"memoryd-mcp: {exc}")
    allowed = allowed_names(args.host, args.allowed_host)
    console = _console(handle, args.host, args.port, token, allowed) if handle is not None else None
    _serve_http(mcp, args.host, args.port, token, allowed, console=console)


def _read_flags(args: argparse.Namespace) -> None:
    """`--db-read` is for a team server on PostgreSQL (exits with the reason otherwise)."""
    if not args.team:
        sys.exit("memoryd-mcp: --db-read needs --team: hot standbys serve a team server's reads (a person's own "
                 "memoryd reads its own store)")  # fmt: skip
    primary = os.environ.get("MEMORYD_DB", "")
    if not primary.startswith(("postgresql://", "postgres://")):
        sys.exit("memoryd-mcp: --db-read needs a PostgreSQL primary for the writes: --db postgresql://… (or "
                 "MEMORYD_DB)")  # fmt: skip
    for value in args.db_read:
        for url in (u.strip() for u in re.split(r",\s*(?=[a-z][a-z0-9+.-]*://)", value)):
            if url and not url.startswith(("postgresql://", "postgres://")):
                shown = url.split("://", 1)[0] + "://…" if "://" in url else "a value without a scheme"
                sys.exit(f"memoryd-mcp: --db-read {shown} is not a postgresql://… URL of a hot standby of --db")


def local_app(profile: str, handle: EngineHandle) -> tuple[MCPServer[Any], Any]:
    """The resident daemon's MCP endpoint for `profile` (memoryd.daemon): stateless streamable HTTP with JSON
    answers, each request acting with the engine view the daemon leaves in its ASGI scope (`memoryd.engine`,
    as the team server's guard does), bodies checked as on every transport. No DNS-rebinding check: it is
    served on a 0600 Unix socket no browser reaches. Returns (the server, whose session manager the daemon
    runs, the ASGI app)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from ..shared.http_security import LOCAL_S
    from .fast import tool_call

    mcp = build_server(profile, engine_handle=handle, team=True)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = mcp.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
    return mcp, http_guard(app, token=None, allowed_hosts={"localhost"}, post_only=True,
                           fast=tool_call(mcp, "/mcp"), body_s=LOCAL_S)  # fmt: skip


def _identify(handle: EngineHandle) -> Any:
    """The team server's identity check for `http_guard`: the request's token and Memoryd-Scope header → the
    engine it acts with (`Engine.authenticate`, `Engine.for_request`), or a Refusal with the engine's reason."""
    import anyio
    import anyio.to_thread

    from ..shared.errors import Forbidden, InvalidInput, MemorydError, TooManyAttempts, Unauthorized
    from ..shared.http_security import bearer_token
    from .transport import Refusal

    def decide(headers: dict[bytes, bytes], client: str | None) -> Any:
        engine = handle.get()
        scope = headers.get(b"memoryd-scope")
        principal = engine.authenticate(bearer_token(headers.get(b"authorization")), client=client,
                                        scope_header=None if scope is None else scope.decode("latin-1"))  # fmt: skip
        return engine.for_request(principal, None if scope is None else scope.decode("latin-1"))

    async def identify(headers: dict[bytes, bytes], client: str | None) -> Any:
        try:
            return await anyio.to_thread.run_sync(decide, headers, client)
        except TooManyAttempts as exc:
            if exc.pace:  # as long as a checked secret takes, without a thread or CPU (engine/token_gate.py)
                await anyio.sleep(exc.pace)
            return Refusal(exc.status, exc.code, exc.message, exc.retry_after)
        except (Unauthorized, Forbidden, InvalidInput) as exc:
            return Refusal(exc.status, exc.code, exc.message)
        except MemorydError as exc:  # the store is down or busy: the client may retry (another replica)
            # Nobody is authenticated yet: the database's host, port, name and user stay in the log.
            log.warning("refused a request with 503, the store failed: %s", exc.message)
            return Refusal(exc.status, exc.code, "the team server's store is unavailable; try again (another replica)")

    return identify


def _serve_team(profile: str, host: str, port: int, allowed: set[str]) -> None:
    """The team server: stateless streamable HTTP with JSON answers (no session lives in one process, so
    any replica answers any request), every request identified by `_identify`."""
    import uvicorn

    from ..shared.config import Settings
    from ..shared.http_security import is_loopback, parse_networks, timed_protocol

    logging.getLogger("mcp").setLevel(logging.WARNING)  # stateless: the SDK logs each request's transport at INFO
    if not is_loopback(host):
        print(f"memoryd-mcp: serving a team on {host}:{port} without TLS; put it behind a TLS proxy",
              file=sys.stderr)  # fmt: skip
    handle = EngineHandle(None, None, sync_vault=False)  # replicas' vaults are by-products: no "hand edits"
    if os.environ.get("MEMORYD_DB_READ"):  # a standby that is not one, or a bad URL: say so now, not per request
        from ..shared.errors import MemorydError

        try:
            handle.get()
        except MemorydError as exc:
            sys.exit(f"memoryd-mcp: {exc.message}")
    from .fast import tool_call

    mcp = build_server(profile, engine_handle=handle, team=True)
    app = http_guard(mcp.streamable_http_app(host=host, stateless_http=True, json_response=True), token=None,
                     allowed_hosts=allowed, identify=_identify(handle), post_only=True, fast=tool_call(mcp, "/mcp"),
                     trusted_proxies=parse_networks(Settings().trusted_proxies))  # fmt: skip
    # Keep-alive longer than a load balancer's idle timeout (commonly 60 s): a connection the server closes
    # while a client reuses it fails that request with no answer (seen in bench/team_load.py at uvicorn's 5 s).
    # proxy_headers off: uvicorn would otherwise take X-Forwarded-For from any peer on 127.0.0.1 as the client
    # address; here only MEMORYD_TRUSTED_PROXIES decides whose header counts (`http_security.client_address`).
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_keep_alive=75, http=timed_protocol(),
                proxy_headers=False)  # fmt: skip


def _console(handle: EngineHandle, host: str, port: int, token: str | None, allowed: set[str]) -> Any:
    """The web console for `/ui`, over the server's own store; prints its address.

    It follows the transport's rules (`memoryd.shared.http_security`): the same allowed hosts, and the
    server's token when there is one (on loopback without one, a token of its own).
    """
    from ..shared.http_security import new_token, origins
    from ..ui import create_app
    from ..ui.security import console_path

    ui_token = token or new_token()
    shown = f"[{host}]" if ":" in host else host
    path = console_path()
    print(f"memoryd ui: http://{shown}:{port}/ui{path}/?token={ui_token}", flush=True)
    person: list[Any] = []

    def console_engine() -> Any:
        # The tools act for the agent; the console for the person at the browser, who reaches every
        # scope but still needs a grant for a sensitive one (as `memoryd ui`).
        if not person:
            person.append(handle.get().acting_as("operator", enforce_sensitive=True))
        return person[0]

    return create_app(console_engine, token=ui_token, hosts=origins(allowed, port), cookie_name=f"memoryd_ui_{port}",
                      path=path)  # fmt: skip


def _serve_http(mcp: MCPServer[Any], host: str, port: int, token: str | None, allowed_hosts: set[str], *,
                console: Any = None) -> None:  # fmt: skip
    import uvicorn

    app = http_guard(mcp.streamable_http_app(host=host), token=token, allowed_hosts=allowed_hosts)
    if console is not None:  # /ui is the console's (its own guard, token and cookie); the rest is MCP's
        mcp_app = app

        async def with_console(scope: Any, receive: Any, send: Any) -> None:
            path = scope.get("path", "")
            if scope["type"] == "http" and (path == "/ui" or path.startswith("/ui/")):
                scope = {
                    **scope,
                    "root_path": scope.get("root_path", "") + "/ui",
                    "path": path if path != "/ui" else "/ui/",
                }
                await console(scope, receive, send)
                return
            await mcp_app(scope, receive, send)

        app = with_console
    uvicorn.run(app, host=host, port=port, log_level="warning")


if __name__ == "__main__":
    main()
