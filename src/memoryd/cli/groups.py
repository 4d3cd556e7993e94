"""Command groups of the store's operator: the vault, scopes (sensitive scopes, grants, shares), and
the team server's tokens and teams."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import _PLAIN, REJECTED_EXIT, CwdOpt, JsonOpt, _emit, _iso, _run, app

vault_app = typer.Typer(help="The markdown vault: one file per active memory.", **_PLAIN)  # type: ignore[arg-type]
scope_app = typer.Typer(help="Scopes: which project you are in, sensitive scopes and read grants.",
                        **_PLAIN)  # type: ignore[arg-type]  # fmt: skip
app.add_typer(vault_app, name="vault")
app.add_typer(scope_app, name="scope")


@vault_app.command("sync")
def vault_sync(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Import hand edits (as replace corrections), deletions and new files; report broken files."""
    r = _run(cwd, lambda e: e.vault_sync())
    _emit(r, json_, lambda: "\n".join(
        [f"{k}: {len(v)}" for k, v in r.items()] + [f"broken: {b['path']}: {b['error']}" for b in r["broken"]]
    ))  # fmt: skip
    if r["broken"]:
        raise typer.Exit(REJECTED_EXIT)


@vault_app.command("check")
def vault_check(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Show what `vault sync` would do, changing nothing."""
    r = _run(cwd, lambda e: e.vault_check())
    _emit(r, json_, lambda: "\n".join(f"{k}: {len(v)}" + "".join(f"\n  {x}" for x in v) for k, v in r.items()))


@scope_app.command("show")
def scope_show(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """The scope of this directory: hash, name, root, and whether it is sensitive."""
    r = _run(cwd, lambda e: e.scope_info())
    _emit(r, json_, lambda: "\n".join(f"{k}: {v}" for k, v in r.items()))


@scope_app.command("mark-sensitive")
def scope_mark(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Mark this scope sensitive: agents then need a grant for every read."""
    s = _run(cwd, lambda e: (e.mark_sensitive(True), e.scope_info())[1])
    _emit({"scope_hash": s["scope_hash"], "sensitive": True}, json_,
          lambda: f"{s['scope_name']} ({s['scope_hash']}) is sensitive")  # fmt: skip


@scope_app.command("unmark")
def scope_unmark(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Make this scope ordinary again (drops its grants)."""
    s = _run(cwd, lambda e: (e.mark_sensitive(False), e.scope_info())[1])
    _emit(
        {"scope_hash": s["scope_hash"], "sensitive": False}, json_, lambda: f"{s['scope_name']} is no longer sensitive"
    )


@scope_app.command("grant")
def scope_grant(
    minutes: Annotated[int, typer.Option("--minutes", "-m", help="How long agents may read (1-1440).")] = 30,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Let agents read this sensitive scope for a while."""
    r = _run(cwd, lambda e: e.grant(minutes, by="cli"))
    _emit(r, json_, lambda: f"agents may read {r['scope_name']} until {r['expires_at']}")


@scope_app.command("requests")
def scope_requests(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Read requests agents filed with mem_request_sensitive_read."""
    rows = _run(cwd, lambda e: e.access_requests())
    _emit(rows, json_, lambda: "\n".join(f"#{r['id']} {r['requested_at']} {r['scope_hash']}: {r['reason']}"
                                         for r in rows) or "no requests")  # fmt: skip


@scope_app.command("share")
def scope_share(
    repository: Annotated[str, typer.Argument(help="WORKSPACE/REPOSITORY as its git remote names it (acme/api).")],
    team: Annotated[str, typer.Option("--team", help="The team whose members read and write its memories.")],
    json_: JsonOpt = False,
) -> None:
    """Team server: share a repository with a team (its members then act on one scope of it)."""
    rows = _run(None, lambda e: e.share_scope(repository, team))
    data = [{"repository": f"{w}/{r}", "team": t} for w, r, t in rows]
    _emit(data, json_, lambda: f"{repository} is shared with {team}")


# -- the team server's operator: tokens and teams --------------------------------------------------

token_app = typer.Typer(help="Team server tokens: who may call `memoryd-mcp --team`, with which rights.",
                        **_PLAIN)  # type: ignore[arg-type]  # fmt: skip
team_app = typer.Typer(help="Team server teams: people who share repositories.", **_PLAIN)  # type: ignore[arg-type]
app.add_typer(token_app, name="token")
app.add_typer(team_app, name="team")


@token_app.command("create")
def token_create(
    tenant: Annotated[str, typer.Option("--tenant", help="The person the token acts for (letters, digits, ._@+-).")],
    expires: Annotated[str, typer.Option("--expires", help="Lifetime: 90d, 12h, 2w, 1y, or never.")] = "90d",
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Searches and reads only; every write refused.")
    ] = False,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="A repository (WORKSPACE/REPOSITORY) the token may act in, or `global` for the person's "
            "global scope; repeatable. A limited token reaches global only if named. Default: all.",
        ),
    ] = None,
    label: Annotated[str, typer.Option("--label", help="A note shown by `token list` (e.g. the laptop).")] = "",
    json_: JsonOpt = False,
) -> None:
    """Create a token: printed once on stdout (only its scrypt digest is stored)."""
    t = _run(None, lambda e: e.create_token(tenant, expires=expires, read_only=read_only, scopes=scope or [],
                                            label=label))  # fmt: skip
    if json_:
        _emit(t, True, str)
        return
    until = _iso(t["expires_at"]) if t["expires_at"] else "never"
    rights = ("read-only" if t["read_only"] else "read-write") + (
        f" in {', '.join(t['scopes'])}" if t["scopes"] else ""
    )
    typer.echo(f"token {t['id']} for {t['tenant']} ({rights}), expires {until}; shown once:", err=True)
    typer.echo(t["token"])


@token_app.command("list")
def token_list(json_: JsonOpt = False) -> None:
    """Every token (id, tenant, rights, state); never a secret."""
    rows = _run(None, lambda e: e.list_tokens())
    _emit(rows, json_, lambda: "\n".join(
        f"{r['id']}  {r['tenant']:<16} {r['state']:<8} {'ro' if r['read_only'] else 'rw'}  "
        f"expires {_iso(r['expires_at']) if r['expires_at'] else 'never'}  {','.join(r['scopes']) or '*'}  {r['label']}"
        for r in rows) or "no tokens")  # fmt: skip


@token_app.command("revoke")
def token_revoke(token_id: Annotated[str, typer.Argument(help="The token's id (`token list`).")],
                 json_: JsonOpt = False) -> None:  # fmt: skip
    """Revoke a token: every replica refuses it from its next request."""
    r = _run(None, lambda e: e.revoke_token(token_id))
    _emit(r, json_, lambda: f"token {r['id']} of {r['tenant']} is revoked")


@team_app.command("create")
def team_create(name: Annotated[str, typer.Argument(help="The team's name.")], json_: JsonOpt = False) -> None:
    """Create a team (then `team add`, `scope share`)."""
    r = _run(None, lambda e: e.create_team(name))
    _emit(r, json_, lambda: f"team {name} created")


@team_app.command("add")
def team_add(
    name: Annotated[str, typer.Argument(help="The team.")],
    tenants: Annotated[list[str], typer.Argument(help="People (tenants, as in `token create --tenant`).")],
    json_: JsonOpt = False,
) -> None:
    """Add people to a team."""
    r = _run(None, lambda e: e.add_members(name, tenants))
    _emit(r, json_, lambda: f"team {name}: {', '.join(r[name])}")


@team_app.command("list")
def team_list(json_: JsonOpt = False) -> None:
    """Teams, their members, and the repositories shared with them."""
    r = _run(None, lambda e: e.teams_overview())
    teams, shares = r["teams"], r["shares"]
    _emit(r, json_, lambda: "\n".join(
        [f"{t}: {', '.join(m) or '(no members)'}" for t, m in teams.items()]
        + [f"{s['repository']} -> {s['team']}" for s in shares]) or "no teams")  # fmt: skip
