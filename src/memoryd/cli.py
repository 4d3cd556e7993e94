"""`memoryd`: the command line for people. A thin adapter over the engine."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .errors import EXIT_CODES, MemorydError

app = typer.Typer(
    name="memoryd",
    help="Local-first long-term memory for AI coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
CwdOpt = Annotated[Path | None, typer.Option("--cwd", help="Act for this directory's scope (default: here).")]
REJECTED_EXIT = 4  # an effect "rejected" is reported like a conflict


def _engine(cwd: Path | None) -> Any:
    from .engine import Engine

    return Engine.open(cwd=cwd)


def _fail(exc: MemorydError) -> NoReturn:
    typer.echo(f"error [{exc.code}]: {exc.message}", err=True)
    raise typer.Exit(EXIT_CODES.get(exc.code, 1))


def _run(cwd: Path | None, fn: Callable[[Any], Any]) -> Any:
    try:
        with _engine(cwd) as engine:
            return fn(engine)
    except MemorydError as exc:
        _fail(exc)


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
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Save a memory through the full write path (redaction, dedup, admission)."""
    r = _run(cwd, lambda e: e.memorize(content, source=source, type=type)).model_dump(exclude_none=True)
    _emit(r, json_, lambda: f"{r['effect']}: {r.get('atom_id', '-')}" + (f"  ({r['reason']})" if "reason" in r else ""))
    _effect_exit(r)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to look for (noun phrases work best).")],
    max_results: Annotated[int, typer.Option("--max-results", "-n", help="How many results.")] = 10,
    include_negated: Annotated[bool, typer.Option(help="Include memories marked false.")] = False,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Search memories of this repository and the global scope."""
    from .engine import visible_content

    hits = _run(cwd, lambda e: e.recall(query, max_results=max_results, include_negated=include_negated).hits)
    rows = [
        {"atom_id": h.atom.id, "score": h.score, "content": visible_content(h.atom), "type": h.atom.type,
         "status": h.atom.status, "created_at": h.atom.created_at.isoformat(), "source": h.atom.source}
        for h in hits
    ]  # fmt: skip
    _emit(rows, json_, lambda: "\n".join(f"{r['score']:.2f}  {r['atom_id']}  {r['content']}" for r in rows)
          or "no matching memories")  # fmt: skip


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

    def run(e: Any) -> Any:
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
    """Every audit event of a memory, oldest first."""
    events = [e.model_dump(mode="json") for e in _run(cwd, lambda e: e.history(atom_id))]
    _emit(events, json_, lambda: "\n".join(
        f"{e['at']}  {e['action']:<13} by {e['actor']}" + (f"  reason: {e['reason']}" if e["reason"] else "")
        + (f"\n    {e['content']}" if e["content"] else "") for e in events
    ))  # fmt: skip


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
    output: Annotated[Path | None, typer.Argument(help="JSONL file to write (default: stdout).")] = None,
    cwd: CwdOpt = None,
) -> None:
    """Export every atom and audit event as JSON lines."""
    if output is None:
        n = _run(cwd, lambda e: e.export(sys.stdout))
    else:
        with output.open("w", encoding="utf-8") as fh:
            n = _run(cwd, lambda e: e.export(fh))
        typer.echo(f"wrote {n} lines to {output}", err=True)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
