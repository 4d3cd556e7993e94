"""Commands on memories: memorize, recall, correct, govern, handoff, stats, history, verify, brief,
export and import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..shared.display import shown_content, split_actor
from ..shared.errors import EXIT_CODES, InvalidInput, MemorydError
from .common import CwdOpt, JsonOpt, _change, _effect_exit, _emit, _fail, _iso, _local_engine, _run, app

if TYPE_CHECKING:
    from ..daemon.operator import Operator


@app.command()
def memorize(
    content: Annotated[str, typer.Argument(help="The memory, one self-contained sentence.")],
    source: Annotated[str, typer.Option(help="user / agent / a custom source.")] = "user",
    type: Annotated[
        str | None, typer.Option("--type", help="decision, preference, fact, … (default: inferred)")
    ] = None,
    anchor: Annotated[
        list[str] | None,
        typer.Option(
            "--anchor",
            help="Tie it to code: PATH, PATH::Class.method or a symbol (repeatable; files and symbols "
            "the text names are anchored anyway).",
        ),
    ] = None,
    replaces: Annotated[
        str | None, typer.Option("--replaces", help="Id of the memory this one replaces (it becomes superseded).")
    ] = None,
    written_at: Annotated[
        str | None,
        typer.Option("--written-at", help="When it was written at its source, ISO 8601 (default: now)."),
    ] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Save a memory through the full write path (redaction, dedup, admission, code anchors). A reworded
    restatement merges into the memory it restates; a change supersedes the memory it changes."""
    r = _change(cwd, lambda e: e.memorize(content, source=source, type=type, anchors=anchor, replaces=replaces,
                                          written_at=written_at))  # fmt: skip
    links = {"supersedes": "supersedes", "superseded_by": "superseded by", "review": "may supersede (for review)",
             "restatement_id": "the new wording kept as"}  # fmt: skip
    _emit(r, json_, lambda: f"{r['effect']}: {r.get('atom_id', '-')}" + (f"  ({r['reason']})" if "reason" in r else "")
          + "".join(f"\n{label}: {r[key]}" for key, label in links.items() if r.get(key))
          + (f"\nanchored to: {', '.join(r['anchors'])}" if r.get("anchors") else "")
          + (f"\nnot anchored: {r['anchor_note']}" if r.get("anchor_note") else ""))  # fmt: skip
    _effect_exit(r)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to look for (noun phrases work best).")],
    max_results: Annotated[int, typer.Option("--max-results", "-n", help="How many results.")] = 10,
    include_negated: Annotated[bool, typer.Option(help="Include memories marked false.")] = False,
    path: Annotated[
        str | None, typer.Option("--path", help="Only memories anchored to this file or directory.")
    ] = None,
    symbol: Annotated[str | None, typer.Option("--symbol", help="Only memories anchored to this symbol.")] = None,
    include_superseded: Annotated[
        bool, typer.Option(help="Include memories a newer one replaced (ranked below it).")
    ] = False,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Search memories of this repository and the global scope."""
    hits = _run(cwd, lambda e: e.recall(query, max_results=max_results, include_negated=include_negated, path=path,
                                        symbol=symbol, include_superseded=include_superseded)["hits"])  # fmt: skip
    rows = [
        {"atom_id": h["atom"]["id"], "score": h["score"], "content": shown_content(h["atom"]), "type": h["atom"]["type"],
         "status": h["atom"]["status"], "created_at": _iso(h["atom"]["created_at"]), "source": h["atom"]["source"],
         **({"written_at": _iso(h["atom"]["written_at"])} if h["atom"].get("written_at") else {}),
         **({"superseded_by": h["atom"]["superseded_by"]} if h["atom"]["status"] == "superseded" else {}),
         **({"freshness": h["freshness"]} if h.get("freshness") else {}),
         **({"code_changes": h["code_changes"]} if h.get("code_changes") else {})}
        for h in hits
    ]  # fmt: skip

    def line(r: dict[str, Any]) -> str:
        text = f"{r['score']:.2f}  {r['atom_id']}  {r['content']}"
        if r.get("superseded_by"):
            text += f"  [superseded by {r['superseded_by']}]"
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
    r = _change(
        cwd, lambda e: e.correct(target_atom, action, reason, new_content, actor="cli"), target_atom=target_atom
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
    """Quarantine, seal, tombstone, derive a lesson from, or restore a memory (restore: a quarantined one, or a
    superseded one, undoing the supersession or merge)."""

    def run(e: Operator) -> Any:
        if action == "restore":
            return e.restore(target_atom, reason, actor="cli")
        return e.govern(target_atom, action, reason, lesson_content, actor="cli")

    r = _change(cwd, run, target_atom=target_atom)
    _emit(r, json_, lambda: f"{r['effect']}: {r['target_atom']}" + (f" → lesson {r['lesson_atom_id']}"
          if "lesson_atom_id" in r else "") + (f"  ({r['reason']})" if "reason" in r else ""))  # fmt: skip
    _effect_exit(r)


@app.command()
def supersede(
    atom_id: Annotated[str, typer.Argument(help="The newer memory's id.")],
    older: Annotated[str, typer.Argument(help="The id of the memory it replaces.")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why (required, audited).")],
    dismiss: Annotated[
        bool, typer.Option("--dismiss", help="Drop the suggestion that it does instead (both stay current).")
    ] = False,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Let a memory supersede an older one (a suggestion of `memoryd review --links`, or a change the write path
    missed), or dismiss that suggestion. `memoryd govern OLDER restore` undoes a supersession or a merge."""
    if dismiss:
        r = _change(cwd, lambda e: e.dismiss_link(atom_id, older, reason, actor="cli"))
    else:
        r = _change(cwd, lambda e: e.supersede(atom_id, older, reason, actor="cli"))
    verb = "no longer suggested to supersede" if dismiss else "now supersedes"
    _emit(r, json_, lambda: f"{r['effect']}: {atom_id} {verb} {older}" if r["effect"] != "rejected"
          else f"rejected: {r['reason']}")  # fmt: skip
    _effect_exit(r)


@app.command()
def handoff(
    summary: Annotated[str, typer.Argument(help="What was done, why, verification, risks, next steps.")],
    source: Annotated[str, typer.Option(help="user / agent / custom.")] = "user",
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Write a session handoff."""
    r = _change(cwd, lambda e: e.handoff(summary, source=source))
    _emit(r, json_, lambda: f"{r['effect']}: {r.get('atom_id', '-')}" + (f"  ({r['reason']})" if "reason" in r else ""))
    _effect_exit(r)


@app.command()
def stats(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Counts, index coverage and snapshot version."""
    s = _run(cwd, lambda e: e.stats())
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
    events = [_attributed(e, split_actor(e["actor"])) for e in _run(cwd, lambda e: e.history(atom_id))]
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
    r = _run(cwd, lambda e: e.verify_chain())
    _emit(r, json_, lambda: f"chain ok ({r['events']} events)" if r["ok"]
          else f"chain BROKEN at event {r['first_bad_seq']}: {r['problem']}")  # fmt: skip
    if not r["ok"]:
        raise typer.Exit(EXIT_CODES["integrity_error"])


@app.command()
def brief(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """The session-start brief: latest handoff, constraints, preferences, recent decisions."""
    b = _run(cwd, lambda e: e.agent_brief())
    _emit(b, json_, lambda: b["text"])


@app.command()
def export(
    output: Annotated[
        Path | None,
        typer.Argument(help="JSONL file to write (default: stdout); with --format markdown, the folder to write."),
    ] = None,
    format: Annotated[
        str,
        typer.Option(
            "--format", help="jsonl: every atom and audit event; markdown: the active memories as linked notes."
        ),
    ] = "jsonl",
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
    if output is None:  # a stream: this process's own engine writes it
        try:
            with _local_engine(cwd) as engine:
                engine.export(sys.stdout)
        except MemorydError as exc:
            _fail(exc)
        return
    n = _run(cwd, lambda e: e.export_file(output))  # written whole or not at all
    typer.echo(f"wrote {n} lines to {output}", err=True)


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="JSON-lines file (format above), or another tool's export (--format).")],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto (detect) | jsonl | server-memory (Anthropic's memory.jsonl graph) | mem0 (export "
            "JSON) | openmemory (export zip, memories.json or memories.jsonl.gz) | basic-memory (a folder "
            "of notes) | memoryd-markdown (a `memoryd export --format markdown` folder). .gz files are "
            "read decompressed.",
        ),
    ] = "auto",
    gate: Annotated[
        str, typer.Option(help="trusted (no DURA gate) | admit (junk rejected) | review (grey zone held as pending).")
    ] = "trusted",  # fmt: skip
    batch_size: Annotated[
        int, typer.Option("--batch-size", help="Lines per batch: one model call and one transaction each.")
    ] = 256,  # fmt: skip
    source: Annotated[
        str | None,
        typer.Option(
            help="Source of lines that name none (default: import; for other tools' exports, the tool's name)."
        ),
    ] = None,
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
