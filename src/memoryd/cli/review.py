"""Review and inspection: review / promote / reject pending saves, timeline, show, stale, doctor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..shared.errors import EXIT_CODES
from .common import CwdOpt, JsonOpt, _emit, _iso, _run, app

if TYPE_CHECKING:
    from ..daemon.operator import Operator


@app.command()
def review(
    limit: Annotated[int, typer.Option("--limit", "-n")] = 10,
    links: Annotated[
        bool, typer.Option("--links", help="Suggested supersessions instead: a memory that may replace another.")
    ] = False,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Saves waiting for review, least certain first; with --links, suggested supersessions (decide each with
    `memoryd supersede NEW OLD -r …`, or `--dismiss`)."""
    if links:
        found = _run(cwd, lambda e: e.review_links(scope="global", limit=limit))
        items = [{"memory_id": s["atom"]["id"], "content": s["atom"]["content"], "may_supersede": s["older"]["id"],
                  "older_content": s["older"]["content"], "why": s["why"]} for s in found]  # fmt: skip
        _emit(items, json_, lambda: "\n".join(f"{d['memory_id']}  {d['content']}\n  may supersede {d['may_supersede']}  "
                                              f"{d['older_content']}\n  {d['why']}" for d in items)
              or "no suggested supersession")  # fmt: skip
        return
    rows = _run(cwd, lambda e: e.review_pending(limit=limit))
    data = [{"promotion_id": p["id"], "average": p["average"], "content": a["content"], "reasoning": p["reasoning"]}
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
    _emit(
        {"promoted": done, "skipped": skipped},
        json_,
        lambda: f"promoted: {done}" + "".join(f"\nskipped #{s['promotion_id']}: {s['reason']}" for s in skipped),
    )


@app.command()
def reject(
    ids: Annotated[list[int], typer.Argument(help="Promotion ids.")], json_: JsonOpt = False, cwd: CwdOpt = None
) -> None:
    """Reject pending saves (no file; the audit record stays)."""
    done, skipped = _run(cwd, lambda e: e.reject(ids, actor="cli"))
    _emit(
        {"rejected": done, "skipped": skipped},
        json_,
        lambda: f"rejected: {done}" + "".join(f"\nskipped #{s['promotion_id']}: {s['reason']}" for s in skipped),
    )


@app.command()
def timeline(
    since: Annotated[str, typer.Option(help="30d, 2w, 6m or 1y.")] = "30d",
    limit: Annotated[int, typer.Option("--limit", "-n")] = 100,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """This project's memories, newest first."""
    atoms = _run(cwd, lambda e: e.timeline_window(since=since, limit=limit)["memories"])
    data = [{"memory_id": a["id"], "type": a["type"], "created_at": _iso(a["created_at"]), "content": a["content"]}
            for a in atoms]  # fmt: skip
    _emit(data, json_, lambda: "\n".join(f"{d['created_at'][:16]}  {d['type']:<10} {d['content']}" for d in data)
          or "nothing in that window")  # fmt: skip


@app.command()
def show(
    atom_id: Annotated[str, typer.Argument(help="Memory id.")], json_: JsonOpt = False, cwd: CwdOpt = None
) -> None:
    """One memory with its file path and history."""

    def run(e: Operator) -> dict[str, Any]:
        a = e.get(atom_id)
        here = a["scope_hash"] == e.scope_info()["scope_hash"]  # code anchors are checked in this checkout only
        fresh, changes = e.code_changes([a["id"]]).get(a["id"], (None, [])) if here else (None, [])
        return {"memory": a, "path": e.path_of(a) or "", "anchors": [_ref(x) for x in e.anchors(a["id"])],
                "freshness": fresh, "code_changes": [_no_none(c) for c in changes],
                "history": e.history(atom_id)}  # fmt: skip

    r = _run(cwd, run)
    m = r["memory"]
    _emit(r, json_, lambda: f"{m['id']}  {m['type']}  {m['status']}  {m['epistemic']}/{m['polarity']}\n"
          f"{m['content']}\nfile: {r['path'] or '-'}\n"
          + f"stored: {m['created_at'][:19]}" + (f"  written: {m['written_at'][:19]}" if m.get("written_at") else "")
          + "\n" + (f"superseded by: {m['superseded_by']}\n" if m.get("superseded_by") else "")
          + (f"supersedes: {m['supersedes']}\n" if m.get("supersedes") else "")
          + (f"anchors: {', '.join(r['anchors'])} ({r['freshness']})\n" if r["anchors"] else "")
          + "".join(f"  code changed: {c['detail']}\n" for c in r["code_changes"]) + "\n".join(
              f"  {e['at'][:19]}  {e['action']} by {e['actor']}" + (f": {e['reason']}" if e["reason"] else "")
              for e in r["history"]))  # fmt: skip


@app.command()
def stale(
    confirm: Annotated[
        str | None,
        typer.Option("--confirm", help="Memory id: it still holds; re-anchor it to the code as it is now (audited)."),
    ] = None,
    reason: Annotated[str | None, typer.Option("--reason", "-r", help="Why it still holds (with --confirm).")] = None,
    json_: JsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Memories of this repository whose anchored code changed (deleted, renamed, edited, moved, gone)."""
    if confirm:

        def run_confirm(e: Operator) -> dict[str, Any]:
            anchors = e.confirm_anchors(confirm, reason=reason, actor="cli")
            return {"memory_id": confirm, "anchors": [_ref(a) for a in anchors]}

        r = _run(cwd, run_confirm)
        _emit(r, json_, lambda: f"re-anchored {r['memory_id']}: {', '.join(r['anchors']) or 'no anchor left'}")
        return

    def run(e: Operator) -> dict[str, Any]:
        # `anchors` means what it means in `memorize --json`: a memory's anchors (path or path::symbol);
        # whether anchoring is on is `code_anchors` (issue 26). Every anchored memory is checked.
        found = e.stale()
        return {"code_anchors": e.code_status(), "checked": e.stale_checked(), "stale": [
            {"memory_id": s["atom"]["id"], "type": s["atom"]["type"], "content": s["atom"]["content"],
             "anchors": [_ref(a) for a in e.anchors(s["atom"]["id"])],
             "changes": [_no_none(c) for c in s["changes"]]} for s in found]}  # fmt: skip

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


def _ref(anchor: list[Any]) -> str:
    """An anchor (`memoryd.anchors.model.Anchor`, a named tuple: JSON as [path, symbol, …]) as people write it."""
    path, symbol = anchor[0], anchor[1]
    return f"{path}::{symbol}" if symbol else str(path)


def _no_none(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}


@app.command()
def doctor(json_: JsonOpt = False, cwd: CwdOpt = None) -> None:
    """Health of data root, database, embeddings, LLM, graph and vault; exits 6 on any error."""
    r = _run(cwd, lambda e: e.doctor())
    _emit(r, json_, lambda: "\n".join(f"{k:<11} {v}" for k, v in r.items()))
    if any(v.startswith("error") for v in r.values()):
        raise typer.Exit(EXIT_CODES["storage_error"])
