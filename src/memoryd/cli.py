"""`memoryd`: the command line for people. A thin adapter over the engine."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast

import typer

from .errors import EXIT_CODES, InvalidInput, MemorydError

# Plain click help (rich_markup_mode=None): typer's rich help prints a type such as `<bool>` beside
# every flag, which takes no value.
_PLAIN = {"rich_markup_mode": None, "no_args_is_help": True}
if TYPE_CHECKING:
    from .engine import Engine

T = TypeVar("T")

app = typer.Typer(
    name="memoryd",
    help="Local-first long-term memory for AI coding agents.",
    add_completion=False,
    pretty_exceptions_enable=False,
    **_PLAIN,  # type: ignore[arg-type]
)


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"memoryd {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,  # fmt: skip
) -> None:
    """Local-first long-term memory for AI coding agents."""

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
CwdOpt = Annotated[Path | None, typer.Option("--cwd", help="Act for this directory's scope (default: here).")]
REJECTED_EXIT = 4  # an effect "rejected" is reported like a conflict


# Commands that never go through a running daemon, and why. Every other command that reaches the store
# does, when a daemon for this MEMORYD_HOME runs (none is started for a command); else it runs in-process.
IN_PROCESS = {
    "export": "streams the whole store to this process's stdout or files",
    "import": "a long batched job: progress, Ctrl-C and resume belong to this terminal",
    "migrate": "copies a whole store into another database",
    "ui": "with a daemon running, the daemon serves the console (see `ui`)",
    "daemon": "manages the daemon itself",
    "hook": "the hooks' own thin client talks to the daemon",
    "connect": "forwards to a team server, not to this home's store",
    "install": "edits agents' configuration files only",
    "uninstall": "edits agents' configuration files only",
}


def _local_engine(cwd: Path | None) -> Engine:
    from .engine import Engine

    return Engine.open(cwd=cwd, authority="operator")  # the person: any scope, no sensitive gate


def _engine(cwd: Path | None) -> Engine:
    """The engine a command acts through: the running daemon's (memoryd.daemon.operator) unless the command
    is in IN_PROCESS or no daemon of this home runs, else this process's own."""
    import click

    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None and ctx.parent.parent is not None:
        ctx = ctx.parent  # up to the top command (`vault` of `memoryd vault sync`)
    if ctx is None or ctx.parent is None or ctx.info_name not in IN_PROCESS:
        from .daemon.operator import proxy_for

        proxy = proxy_for(cwd)
        if proxy is not None:
            return cast("Engine", proxy)
    return _local_engine(cwd)


def _fail(exc: MemorydError) -> NoReturn:
    typer.echo(f"error [{exc.code}]: {exc.message}", err=True)
    raise typer.Exit(EXIT_CODES.get(exc.code, 1))


def _run(cwd: Path | None, fn: Callable[[Engine], T]) -> T:
    from .daemon.client import DaemonError, DaemonUnavailable

    try:
        with _engine(cwd) as engine:
            try:
                return fn(engine)
            except DaemonUnavailable:
                if getattr(engine, "calls", 1):  # the daemon went away between calls of one command: say so
                    raise
        with _local_engine(cwd) as engine:  # it went away before answering anything: nothing was applied
            return fn(engine)
    except MemorydError as exc:
        _fail(exc)
    except (DaemonError, DaemonUnavailable) as exc:
        code, message = (exc.code, exc.message) if isinstance(exc, DaemonError) else ("daemon_unreachable", str(exc))
        typer.echo(f"error [{code}]: {message}; `memoryd daemon status` says whether it runs, and the command runs "
                   "in-process when none does", err=True)  # fmt: skip
        raise typer.Exit(1) from None


def _emit(data: Any, as_json: bool, human: Callable[[], str]) -> None:
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        typer.echo(human())


def _effect_exit(data: dict[str, Any]) -> None:
    if data.get("effect") == "rejected":
        raise typer.Exit(REJECTED_EXIT)


@app.command()
def memorize(
    content: Annotated[str, typer.Argument(help="The memory, one self-contained sentence.")],
    source: Annotated[str, typer.Option(help="user / agent / a custom source.")] = "user",
    type: Annotated[str | None, typer.Option("--type", help="decision, preference, fact, … (default: inferred)")] = None,
    anchor: Annotated[list[str] | None, typer.Option(
        "--anchor", help="Tie it to code: PATH, PATH::Class.method or a symbol (repeatable; files and symbols "
                         "the text names are anchored anyway).")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Save a memory through the full write path (redaction, dedup, admission, code anchors)."""
    r = _run(cwd, lambda e: e.memorize(content, source=source, type=type, anchors=anchor)).model_dump(exclude_none=True)
    _emit(r, json_, lambda: f"{r['effect']}: {r.get('atom_id', '-')}" + (f"  ({r['reason']})" if "reason" in r else "")
          + (f"\nanchored to: {', '.join(r['anchors'])}" if r.get("anchors") else "")
          + (f"\nnot anchored: {r['anchor_note']}" if r.get("anchor_note") else ""))  # fmt: skip
    _effect_exit(r)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to look for (noun phrases work best).")],
    max_results: Annotated[int, typer.Option("--max-results", "-n", help="How many results.")] = 10,
    include_negated: Annotated[bool, typer.Option(help="Include memories marked false.")] = False,
    path: Annotated[str | None, typer.Option("--path", help="Only memories anchored to this file or directory.")] = None,
    symbol: Annotated[str | None, typer.Option("--symbol", help="Only memories anchored to this symbol.")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Search memories of this repository and the global scope."""
    from .engine import visible_content

    hits = _run(cwd, lambda e: e.recall(query, max_results=max_results, include_negated=include_negated, path=path,
                                        symbol=symbol).hits)  # fmt: skip
    rows = [
        {"atom_id": h.atom.id, "score": h.score, "content": visible_content(h.atom), "type": h.atom.type,
         "status": h.atom.status, "created_at": h.atom.created_at.isoformat(), "source": h.atom.source,
         **({"freshness": h.freshness} if h.freshness else {}),
         **({"code_changes": [c.model_dump() for c in h.code_changes]} if h.code_changes else {})}
        for h in hits
    ]  # fmt: skip

    def line(r: dict[str, Any]) -> str:
        text = f"{r['score']:.2f}  {r['atom_id']}  {r['content']}"
        for c in r.get("code_changes", []):
            text += f"\n      code changed: {c['detail']}"
        return text

    _emit(rows, json_, lambda: "\n".join(line(r) for r in rows) or "no matching memories")


@app.command()
def correct(
    target_atom: Annotated[str, typer.Argument(help="Atom id.")],
    action: Annotated[str, typer.Argument(help="negate | confirm_actual | confirm_necessary | demote | replace")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why (required, audited).")],
    new_content: Annotated[str | None, typer.Option(help="Replacement text (replace only).")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Correct a memory; the old version stays in the audit chain."""
    r = _run(cwd, lambda e: e.correct(target_atom, action, reason, new_content, actor="cli")).model_dump(
        exclude_none=True
    )
    _emit(r, json_, lambda: f"{r['effect']}: {r['target_atom']}" + (f" → {r['new_atom_id']}" if "new_atom_id" in r
          else "") + (f"  ({r['reason']})" if "reason" in r else ""))  # fmt: skip
    _effect_exit(r)


@app.command()
def govern(
    target_atom: Annotated[str, typer.Argument(help="Atom id.")],
    action: Annotated[str, typer.Argument(help="quarantine | seal | tombstone | derive_lesson | restore")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why (required, audited).")],
    lesson_content: Annotated[str | None, typer.Option(help="The lesson (derive_lesson only).")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Quarantine, seal, tombstone, derive a lesson from, or restore a memory."""

    def run(e: Engine) -> Any:
        if action == "restore":
            return e.restore(target_atom, reason, actor="cli")
        return e.govern(target_atom, action, reason, lesson_content, actor="cli")

    r = _run(cwd, run).model_dump(exclude_none=True)
    _emit(r, json_, lambda: f"{r['effect']}: {r['target_atom']}" + (f" → lesson {r['lesson_atom_id']}"
          if "lesson_atom_id" in r else "") + (f"  ({r['reason']})" if "reason" in r else ""))  # fmt: skip
    _effect_exit(r)


@app.command()
def handoff(
    summary: Annotated[str, typer.Argument(help="What was done, why, verification, risks, next steps.")],
    source: Annotated[str, typer.Option(help="user / agent / custom.")] = "user",
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Write a session handoff."""
    r = _run(cwd, lambda e: e.handoff(summary, source=source)).model_dump(exclude_none=True)
    _emit(r, json_, lambda: f"{r['effect']}: {r.get('atom_id', '-')}" + (f"  ({r['reason']})" if "reason" in r else ""))
    _effect_exit(r)


@app.command()
def stats(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Counts, index coverage and snapshot version."""
    s = _run(cwd, lambda e: e.stats()).model_dump()
    _emit(s, json_, lambda: "\n".join(
        [f"atoms: {s['atoms']}", f"edges: {s['edges']}", f"snapshot_version: {s['snapshot_version']}"]
        + [f"index {k}: {v}" for k, v in s["indexes"].items()] + [f"status {k}: {v}" for k, v in s["by_status"].items()]
    ))  # fmt: skip


@app.command()
def history(
    atom_id: Annotated[str, typer.Argument(help="Atom id.")], json_: JsonOpt = False, cwd: CwdOpt = None
) -> None:
    """Every audit event of a memory, oldest first: the source a caller named apart from the person and
    token memoryd authenticated (team server; the daemon's client and session)."""
    from .engine.core import split_actor

    events = [_attributed(e.model_dump(mode="json"), split_actor(e.actor)) for e in _run(cwd, lambda e: e.history(atom_id))]
    _emit(events, json_, lambda: "\n".join(
        f"{e['at']}  {e['action']:<13} by {_one_line(e['source'])}"
        + (f"  [person {_one_line(e['person'])}, token {_one_line(e['token'])}]" if e["person"] else "")
        + (f"  reason: {_one_line(e['reason'])}" if e["reason"] else "")
        + (f"\n    {e['content']}" if e["content"] else "") for e in events
    ))  # fmt: skip


def _attributed(event: dict[str, Any], parts: tuple[str, str | None, str | None]) -> dict[str, Any]:
    """An event as `history` shows it: its actor split into source, person and token (None: no person)."""
    return {**event, "source": parts[0], "person": parts[1], "token": parts[2]}


def _one_line(text: str | None) -> str:
    """A short text on one line: control characters (a newline in an old source) shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text or "")


@app.command()
def verify(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Verify the audit chain; exits 8 when it does not verify."""
    r = _run(cwd, lambda e: e.verify_chain()).model_dump()
    _emit(r, json_, lambda: f"chain ok ({r['events']} events)" if r["ok"]
          else f"chain BROKEN at event {r['first_bad_seq']}: {r['problem']}")  # fmt: skip
    if not r["ok"]:
        raise typer.Exit(EXIT_CODES["integrity_error"])


@app.command()
def brief(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """The session-start brief: latest handoff, constraints, preferences, recent decisions."""
    b = _run(cwd, lambda e: e.agent_brief())
    _emit(b.model_dump(mode="json"), json_, lambda: b.text)


@app.command()
def export(
    output: Annotated[Path | None, typer.Argument(
        help="JSONL file to write (default: stdout); with --format markdown, the folder to write.")] = None,
    format: Annotated[str, typer.Option(
        "--format", help="jsonl: every atom and audit event; markdown: the active memories as linked notes.")] = "jsonl",
    cwd: CwdOpt = None,
) -> None:
    """Export every atom and audit event as JSON lines, or the memories as a markdown folder.

    \b
    --format markdown DIR writes one note per active memory
    (DIR/memories/<type>/<title> (<id tail>).md, YAML frontmatter and body) and
    one per entity (DIR/entities/<kind>/<name> (<kind>).md), joined by
    [[wikilinks]]: a memory links its entities and the memories it supersedes
    or is superseded by; an entity lists its memories. Obsidian and other
    wikilink-aware notes tools open DIR as a vault.
    """
    if format == "markdown":
        if output is None:
            _fail(InvalidInput("--format markdown needs the folder to write: memoryd export --format markdown DIR"))
        counts = _run(cwd, lambda e: e.export_markdown(output))
        typer.echo(f"wrote {counts['memories']} memories and {counts['entities']} entities to {output}", err=True)
        return
    if format != "jsonl":
        _fail(InvalidInput(f"unknown format {format!r}; expected jsonl or markdown"))
    if output is None:
        n = _run(cwd, lambda e: e.export(sys.stdout))
    else:
        with output.open("w", encoding="utf-8") as fh:
            n = _run(cwd, lambda e: e.export(fh))
        typer.echo(f"wrote {n} lines to {output}", err=True)


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="JSON-lines file (format above), or another tool's export (--format).")],
    format: Annotated[str, typer.Option(
        "--format", help="auto (detect) | jsonl | server-memory (Anthropic's memory.jsonl graph) | mem0 (export "
                         "JSON) | openmemory (export zip, memories.json or memories.jsonl.gz) | basic-memory (a folder "
                         "of notes) | memoryd-markdown (a `memoryd export --format markdown` folder). .gz files are "
                         "read decompressed.")] = "auto",
    gate: Annotated[str, typer.Option(help="trusted (no DURA gate) | admit (junk rejected) | review (grey zone "
                                           "held as pending).")] = "trusted",  # fmt: skip
    batch_size: Annotated[int, typer.Option("--batch-size", help="Lines per batch: one model call and one "
                                                                 "transaction each.")] = 256,  # fmt: skip
    source: Annotated[str | None, typer.Option(
        help="Source of lines that name none (default: import; for other tools' exports, the tool's name).")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Import memories from a JSON-lines file, in batches, resumable.

    \b
    One JSON object per line; only "content" is required:
      {"content": "…", "type": "decision", "title": "…", "tags": ["…"],
       "triggers": ["…"], "source": "…", "scope": "global"}
    type: session, decision, preference, fact, playbook, warning, handoff,
    lesson (default: inferred from the wording). scope: "global" (the
    tenant-wide scope) or omitted (this repository). source: default --source.

    \b
    A file written by `memoryd export` works too: its active atoms are
    imported with content, type, title, tags, triggers, source and scope;
    audit events and atoms in other states are ignored. Imported memories
    get new ids, new create events and new timestamps; epistemic and
    polarity are classified again (corrections are not carried over).

    \b
    Other tools' exports (--format, detected by default):
      server-memory  Anthropic's memory.jsonl graph: one memory per
                     observation ("<entity>: <text>") and per relation
      mem0           a mem0 export (get_all JSON): one memory per item,
                     categories as tags
      basic-memory   a folder of notes, read as basic-memory reads them:
                     one memory per observation ("- [category] text #tag"
                     or "- text #tag"), per relation, and one of each
                     note's prose
    They take the same write path and resume the same way; problems name
    the file and line they come from.

    \b
    Every line takes the memorize write path (validation, redaction, exact
    dedup, gate, classification, entities, markdown file). A batch is
    embedded in one model call and committed in one transaction together
    with a progress record keyed by the file's sha256: after Ctrl-C or a
    crash, run the same command again; it continues after the last
    committed batch. Bad lines (not UTF-8 or JSON, no content, wrong field
    types) and rejected lines are listed with their line numbers and do not
    stop the import (exit 0).
    """
    from tqdm import tqdm

    bar: Any = None
    committed = 0

    def progress(done: int, total: int) -> None:
        nonlocal bar, committed
        committed = done
        if bar is None:
            bar = tqdm(total=total, initial=done, desc="import", unit="line", disable=json_, file=sys.stderr)
        bar.update(done - bar.n)

    def resume_hint() -> str:
        return f"lines 1-{committed} are committed; run the same command again to continue" if committed else (
            "nothing was committed")  # fmt: skip

    try:
        with _local_engine(cwd) as engine:
            r = engine.import_file(file, format=format, batch_size=batch_size, gate=gate, source=source,
                                   progress=progress)  # fmt: skip
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        typer.echo(f"interrupted: {resume_hint()}", err=True)
        raise typer.Exit(130) from None
    except MemorydError as exc:
        if bar is not None:
            bar.close()
        if committed:
            typer.echo(resume_hint(), err=True)
        _fail(exc)
    except OSError as exc:  # the vault could not be written: the batch in flight was rolled back
        if bar is not None:
            bar.close()
        typer.echo(f"error [storage_error]: {exc}; {resume_hint()}", err=True)
        raise typer.Exit(EXIT_CODES["storage_error"]) from None
    if bar is not None:
        bar.close()
    data = r.as_dict()

    def human() -> str:
        lines = [f"{p.get('origin') or 'line ' + str(p['line'])}: {p['kind']}: {p['reason']}" for p in r.problems]
        if r.more_problems:
            lines.append(f"… and {r.more_problems} more problem lines (see --json)")
        return "\n".join([*lines, r.summary()])

    _emit(data, json_, human)


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
    s = _run(cwd, lambda e: e.mark_sensitive(True))
    _emit({"scope_hash": s.scope_hash, "sensitive": True}, json_, lambda: f"{s.name} ({s.scope_hash}) is sensitive")


@scope_app.command("unmark")
def scope_unmark(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Make this scope ordinary again (drops its grants)."""
    s = _run(cwd, lambda e: e.mark_sensitive(False))
    _emit({"scope_hash": s.scope_hash, "sensitive": False}, json_, lambda: f"{s.name} is no longer sensitive")


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
    read_only: Annotated[bool, typer.Option("--read-only", help="Searches and reads only; every write refused.")] = False,
    scope: Annotated[list[str] | None, typer.Option(
        "--scope", help="A repository (WORKSPACE/REPOSITORY) the token may act in, or `global` for the person's "
                    "global scope; repeatable. A limited token reaches global only if named. Default: all.")] = None,
    label: Annotated[str, typer.Option("--label", help="A note shown by `token list` (e.g. the laptop).")] = "",
    json_: JsonOpt = False,
) -> None:
    """Create a token: printed once on stdout (only its scrypt digest is stored)."""
    t = _run(None, lambda e: e.create_token(tenant, expires=expires, read_only=read_only, scopes=scope or [],
                                            label=label))  # fmt: skip
    if json_:
        _emit(t.model_dump(mode="json"), True, str)
        return
    until = t.expires_at.isoformat() if t.expires_at else "never"
    rights = ("read-only" if t.read_only else "read-write") + (f" in {', '.join(t.scopes)}" if t.scopes else "")
    typer.echo(f"token {t.id} for {t.tenant} ({rights}), expires {until}; shown once:", err=True)
    typer.echo(t.token)


@token_app.command("list")
def token_list(json_: JsonOpt = False) -> None:
    """Every token (id, tenant, rights, state); never a secret."""
    rows = _run(None, lambda e: e.list_tokens())
    _emit([r.model_dump(mode="json") for r in rows], json_, lambda: "\n".join(
        f"{r.id}  {r.tenant:<16} {r.state:<8} {'ro' if r.read_only else 'rw'}  "
        f"expires {r.expires_at.isoformat() if r.expires_at else 'never'}  {','.join(r.scopes) or '*'}  {r.label}"
        for r in rows) or "no tokens")  # fmt: skip


@token_app.command("revoke")
def token_revoke(token_id: Annotated[str, typer.Argument(help="The token's id (`token list`).")],
                 json_: JsonOpt = False) -> None:  # fmt: skip
    """Revoke a token: every replica refuses it from its next request."""
    r = _run(None, lambda e: e.revoke_token(token_id))
    _emit(r.model_dump(mode="json"), json_, lambda: f"token {r.id} of {r.tenant} is revoked")


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


@app.command()
def review(
    limit: Annotated[int, typer.Option("--limit", "-n")] = 10, json_: JsonOpt = False, cwd: CwdOpt = None
) -> None:
    """Saves waiting for review, least certain first."""
    rows = _run(cwd, lambda e: e.review_pending(limit=limit))
    data = [{"promotion_id": p.id, "average": p.average, "content": a.content, "reasoning": p.reasoning}
            for p, a in rows]  # fmt: skip
    _emit(data, json_, lambda: "\n".join(f"#{d['promotion_id']} ({d['average']:.2f}) {d['content']}\n    {d['reasoning']}"
                                         for d in data) or "nothing pending")  # fmt: skip


@app.command()
def promote(
    ids: Annotated[list[int] | None, typer.Argument(help="Promotion ids.")] = None,
    auto_high: Annotated[bool, typer.Option(help="Promote everything at or above --threshold.")] = False,
    threshold: float = 0.85,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Approve pending saves."""
    done, skipped = _run(cwd, lambda e: e.promote(ids or [], auto_high=auto_high, threshold=threshold, actor="cli"))
    _emit({"promoted": done, "skipped": skipped}, json_,
          lambda: f"promoted: {done}" + "".join(f"\nskipped #{s['promotion_id']}: {s['reason']}" for s in skipped))


@app.command()
def reject(
    ids: Annotated[list[int], typer.Argument(help="Promotion ids.")], json_: JsonOpt = False, cwd: CwdOpt = None
) -> None:
    """Reject pending saves (no file; the audit record stays)."""
    done, skipped = _run(cwd, lambda e: e.reject(ids, actor="cli"))
    _emit({"rejected": done, "skipped": skipped}, json_,
          lambda: f"rejected: {done}" + "".join(f"\nskipped #{s['promotion_id']}: {s['reason']}" for s in skipped))


@app.command()
def timeline(
    since: Annotated[str, typer.Option(help="30d, 2w, 6m or 1y.")] = "30d",
    limit: Annotated[int, typer.Option("--limit", "-n")] = 100,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """This project's memories, newest first."""
    atoms = _run(cwd, lambda e: e.timeline(since=since, limit=limit))
    data = [{"memory_id": a.id, "type": a.type, "created_at": a.created_at.isoformat(), "content": a.content}
            for a in atoms]  # fmt: skip
    _emit(data, json_, lambda: "\n".join(f"{d['created_at'][:16]}  {d['type']:<10} {d['content']}" for d in data)
          or "nothing in that window")  # fmt: skip


@app.command()
def show(atom_id: Annotated[str, typer.Argument(help="Memory id.")], json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """One memory with its file path and history."""
    def run(e: Engine) -> dict[str, Any]:
        a = e.get(atom_id)
        fresh, changes = e.code_changes([a.id]).get(a.id, (None, [])) if a.scope_hash == e.scope.scope_hash else (None, [])
        return {"memory": a.model_dump(mode="json"), "path": str(e.path_of(a) or ""),
                "anchors": [x.ref for x in e.anchors(a.id)], "freshness": fresh,
                "code_changes": [c.model_dump(exclude_none=True) for c in changes],
                "history": [ev.model_dump(mode="json") for ev in e.history(atom_id)]}  # fmt: skip

    r = _run(cwd, run)
    m = r["memory"]
    _emit(r, json_, lambda: f"{m['id']}  {m['type']}  {m['status']}  {m['epistemic']}/{m['polarity']}\n"
          f"{m['content']}\nfile: {r['path'] or '-'}\n"
          + (f"anchors: {', '.join(r['anchors'])} ({r['freshness']})\n" if r["anchors"] else "")
          + "".join(f"  code changed: {c['detail']}\n" for c in r["code_changes"]) + "\n".join(
              f"  {e['at'][:19]}  {e['action']} by {e['actor']}" + (f": {e['reason']}" if e["reason"] else "")
              for e in r["history"]))  # fmt: skip


@app.command()
def stale(
    confirm: Annotated[str | None, typer.Option("--confirm", help="Memory id: it still holds; re-anchor it to the "
                                                "code as it is now (audited).")] = None,
    reason: Annotated[str | None, typer.Option("--reason", "-r", help="Why it still holds (with --confirm).")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Memories of this repository whose anchored code changed (deleted, renamed, edited, moved, gone)."""
    if confirm:
        def run_confirm(e: Any) -> dict[str, Any]:
            anchors = e.confirm_anchors(confirm, reason=reason, actor="cli")
            return {"memory_id": confirm, "anchors": [a.ref for a in anchors]}

        r = _run(cwd, run_confirm)
        _emit(r, json_, lambda: f"re-anchored {r['memory_id']}: {', '.join(r['anchors']) or 'no anchor left'}")
        return

    def run(e: Any) -> dict[str, Any]:
        # `anchors` means what it means in `memorize --json`: a memory's anchors (path or path::symbol);
        # whether anchoring is on is `code_anchors` (issue 26). Every anchored memory is checked.
        found = e.stale()
        return {"code_anchors": e.code_status(), "checked": e.stale_checked(), "stale": [
            {"memory_id": s.atom.id, "type": s.atom.type, "content": s.atom.content,
             "anchors": [a.ref for a in e.anchors(s.atom.id)],
             "changes": [c.model_dump(exclude_none=True) for c in s.changes]} for s in found]}  # fmt: skip

    r = _run(cwd, run)

    def human() -> str:
        if not r["stale"]:
            return f"no memory's code changed ({r['checked']} anchored checked; code anchors {r['code_anchors']})"
        lines = []
        for item in r["stale"]:
            lines.append(f"{item['memory_id']}  {item['type']:<10} {item['content'][:120]}")
            lines += [f"    {c['detail']}" for c in item["changes"]]
        lines.append(f"{len(r['stale'])} of {r['checked']} anchored memories changed. Confirm one that still holds: "
                     "memoryd stale --confirm ID; replace one that does not: "
                     "memoryd correct ID replace --new-content …")  # fmt: skip
        return "\n".join(lines)

    _emit(r, json_, human)


@app.command()
def doctor(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Health of data root, database, embeddings, LLM, graph and vault; exits 6 on any error."""
    r = _run(cwd, lambda e: e.doctor())
    _emit(r, json_, lambda: "\n".join(f"{k:<11} {v}" for k, v in r.items()))
    if any(v.startswith("error") for v in r.values()):
        raise typer.Exit(EXIT_CODES["storage_error"])


install_app = typer.Typer(help="Register memoryd with an agent: its MCP server, and (Claude Code) its hooks.",
                          **_PLAIN)  # type: ignore[arg-type]  # fmt: skip
uninstall_app = typer.Typer(help="Take out exactly what `memoryd install` added.", **_PLAIN)  # type: ignore[arg-type]
app.add_typer(install_app, name="install")
app.add_typer(uninstall_app, name="uninstall")

ProfileOpt = Annotated[str, typer.Option("--profile", help="memoryd (mem_* tools) or hmg (memory_* tools, server 'hmg').")]
ClaudeScopeOpt = Annotated[str, typer.Option(
    "--scope", help="project: <dir>/.mcp.json and <dir>/.claude/settings.json; user: ~/.claude.json and "
                    "~/.claude/settings.json.")]  # fmt: skip
ProjectOpt = Annotated[Path | None, typer.Option("--project-dir", help="The project (default: here).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")]
CommandOpt = Annotated[str | None, typer.Option(
    "--command", help="The memoryd-mcp executable to register (default: for a user-scope file the one next to "
                      "this memoryd, for a shared project file `memoryd-mcp` on PATH).")]
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
    hook_command: Annotated[str | None, typer.Option(
        "--hook-command", help="Shell prefix the hooks run as `<prefix> hook <event>` (default: user scope this "
                               "memoryd, project scope `memoryd` on PATH).")] = None,
    remote: RemoteOpt = None,
    token_env: TokenEnvOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add the MCP server and the SessionStart / UserPromptSubmit / PreToolUse / SessionEnd / PreCompact hooks
    to Claude Code. Project scope writes only commands on PATH (memoryd-mcp, memoryd) into the shared files.
    With --remote: the server is `memoryd connect` to a team server, and no hooks."""
    from .install import install_claude

    _report(lambda: install_claude(scope, profile, home=Path.home(), project_dir=project_dir or Path.cwd(),  # type: ignore[arg-type]
                                   command=command, hook_command=hook_command, remote=remote, token_env=token_env,
                                   dry_run=dry_run), json_)  # fmt: skip


@uninstall_app.command("claude")
def uninstall_claude_cmd(
    scope: ClaudeScopeOpt = "project",
    profile: ProfileOpt = "memoryd",
    project_dir: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Remove memoryd's server and hooks from Claude Code (the original files come back when unchanged)."""
    from .install import uninstall_claude

    _report(lambda: uninstall_claude(scope, profile, home=Path.home(), project_dir=project_dir or Path.cwd(),  # type: ignore[arg-type]
                                     dry_run=dry_run), json_)  # fmt: skip


@install_app.command("codex")
def install_codex_cmd(
    profile: ProfileOpt = "memoryd",
    codex_home: CodexHomeOpt = None,
    command: CommandOpt = None,
    hooks: Annotated[bool, typer.Option(
        "--hooks", help="Also add memoryd's hooks to $CODEX_HOME/hooks.json (brief, prompt recall, scope pin, "
                        "transcripts).")] = False,
    remote: RemoteOpt = None,
    token_env: TokenEnvOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add [mcp_servers.memoryd] to Codex's config.toml (comments and other tables kept), and with --hooks its
    hooks to hooks.json. With --remote: `memoryd connect` to a team server, its token variable in env_vars."""
    from .install import install_codex

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
    from .install import uninstall_codex

    _report(lambda: uninstall_codex(Path.home(), codex_home, profile, dry_run=dry_run), json_)  # type: ignore[arg-type]


@install_app.command("claude-desktop")
def install_claude_desktop_cmd(
    profile: ProfileOpt = "memoryd",
    project_dir: Annotated[Path | None, typer.Option(
        "--project-dir", help="The folder whose scope Claude Desktop's memoryd serves (default: your home).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="claude_desktop_config.json to edit (default: Claude Desktop's, for this OS).")] = None,
    command: CommandOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Add memoryd to Claude Desktop's mcpServers (claude_desktop_config.json)."""
    from .install import install_claude_desktop

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
    from .install import uninstall_claude_desktop

    _report(lambda: uninstall_claude_desktop(profile, home=Path.home(), config_path=config, dry_run=dry_run), json_)  # type: ignore[arg-type]


OpenClawOpt = Annotated[str, typer.Option("--openclaw", help="OpenClaw's CLI (default: `openclaw` on PATH).")]


@install_app.command("openclaw")
def install_openclaw_cmd(
    openclaw: OpenClawOpt = "openclaw",
    plugin: Annotated[Path | None, typer.Option("--plugin", help="The built plugin (default: integrations/openclaw).")] = None,
    command: Annotated[str | None, typer.Option("--command", help="The memoryd the plugin starts the daemon with.")] = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Install memoryd as OpenClaw's memory plugin (plugins install, memory slot, hook access) with OpenClaw's CLI."""
    from .install import install_openclaw

    _report(lambda: install_openclaw(openclaw, plugin_dir=plugin, command=command, dry_run=dry_run), json_)


@uninstall_app.command("openclaw")
def uninstall_openclaw_cmd(openclaw: OpenClawOpt = "openclaw", dry_run: DryRunOpt = False, json_: JsonOpt = False) -> None:
    """Remove memoryd's OpenClaw plugin and put the memory slot and memory-core back as they were."""
    from .install import uninstall_openclaw

    _report(lambda: uninstall_openclaw(openclaw, dry_run=dry_run), json_)


CursorScopeOpt = Annotated[str, typer.Option(
    "--scope", help="user: ~/.cursor/mcp.json; project: <dir>/.cursor/mcp.json (shared: memoryd-mcp on PATH).")]


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
    from .install import install_cursor

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
    from .install import uninstall_cursor

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

    from .config import Settings
    from .engine.migrate import migrate as run_migrate

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
    host: Annotated[str | None, typer.Option("--host", help="Address to bind (default: a new loopback address "
                                                            "127.x.y.z per run, so no other local page shares the "
                                                            "console's cookie); anything but loopback needs "
                                                            "MEMORYD_TOKEN (at least 32 characters).")] = None,  # fmt: skip
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open a browser.")] = False,
    allowed_host: Annotated[list[str] | None, typer.Option(
        "--allowed-host", help="A host name the browser may use (repeatable; default: the bind address and "
                               "localhost).")] = None,  # fmt: skip
    cwd: CwdOpt = None,
) -> None:
    """Serve the web console: browse, search, review, correct, govern and audit memories.

    Prints one line, `memoryd ui: http://127.x.y.z:PORT/?token=…`; the address and the token are
    new on every start (or --host, MEMORYD_TOKEN). Sensitive scopes stay locked without a grant.
    With the memoryd daemon running (and no --host), the daemon serves it with its warm engine
    until Ctrl-C here.
    """
    from .ui.server import serve, serve_by_daemon

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
    from .remote import main as connect_main

    raise typer.Exit(connect_main(ctx.args))


@app.command("hook")
def hook(event: Annotated[str, typer.Argument(
        help="session-start | user-prompt-submit | pre-tool-use | session-end | pre-compact")]) -> None:
    """Run one Claude Code hook: its JSON on stdin, its answer on stdout; always exits 0 (errors go to hooks.log)."""
    from . import hooks

    raise typer.Exit(hooks.main([event]))


daemon_app = typer.Typer(help="The resident memoryd: one warm process per data home that every surface talks to.",
                         **_PLAIN)  # type: ignore[arg-type]
app.add_typer(daemon_app, name="daemon")


@daemon_app.command("start")
def daemon_start() -> None:
    """Start the daemon of this data home (MEMORYD_HOME) unless it runs; clients also start it on demand."""
    from .daemon.client import Client, DaemonUnavailable

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
    from .daemon.client import Client

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
    from .daemon.client import Client

    pid = Client(autostart=False).stop()
    typer.echo("memoryd daemon: not running" if pid is None else f"memoryd daemon stopped (pid {pid})")


@daemon_app.command("logs")
def daemon_logs(lines: Annotated[int, typer.Option("--lines", "-n", help="How many of the last lines.")] = 50) -> None:
    """The end of the daemon's log (<home>/daemon.log)."""
    from .daemon.client import Paths, home

    path = Paths(home()).log
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        typer.echo(f"memoryd daemon: no log yet ({path})")
        return
    for line in text.splitlines()[-max(1, lines):]:
        typer.echo(line)


@daemon_app.command("serve")
def daemon_serve(idle: Annotated[float | None, typer.Option("--idle", help="Exit after this many idle seconds "
                                                                          "(0: never; default MEMORYD_DAEMON_IDLE or 1800).")] = None) -> None:  # fmt: skip
    """Run the daemon in the foreground (what `start` and the clients run in the background)."""
    import os

    from .daemon.client import home
    from .daemon.server import idle_seconds, serve

    raise typer.Exit(serve(home(), idle if idle is not None else idle_seconds(os.environ.get("MEMORYD_DAEMON_IDLE"))))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
