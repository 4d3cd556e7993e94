"""The local API's endpoints (docs/LOCAL_API.md): each takes the request's engine view and its JSON body.

Every input is checked by the engine as for any other surface (limits, types); what is checked here is
the body's shape, with `invalid_input` and the field named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..shared.errors import InvalidInput, Rejected
from ..shared.limits import LIMITS

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["ENDPOINTS"]


def _str(body: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidInput(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key} must be a string, got {type(value).__name__}")
    return value


def _strs(body: dict[str, Any], key: str) -> list[str] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{key} must be a list of strings")
    return value


def _known(body: dict[str, Any], keys: set[str]) -> None:
    unknown = sorted(set(body) - keys)
    if unknown:
        raise InvalidInput(f"unknown fields {unknown}; expected {sorted(keys)}")


def _item(atom: Any, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": atom.id, "type": atom.type, "title": atom.title, "content": atom.content,
                           "tags": list(atom.tags), "scope": atom.scope.name,
                           "created_at": atom.created_at.isoformat()}  # fmt: skip
    if atom.written_at is not None:
        out["written_at"] = atom.written_at.isoformat()
    if atom.status == "superseded":
        out["status"], out["superseded_by"] = atom.status, atom.superseded_by
    if score is not None:
        out["score"] = round(float(score), 6)
    return out


def recall(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    _known(body, {"query", "limit", "types", "include_superseded"})
    query = _str(body, "query", required=True)
    limit = body.get("limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput(f"limit must be an integer between 1 and 100, got {limit!r}")
    superseded = body.get("include_superseded", False)
    if not isinstance(superseded, bool):
        raise InvalidInput("include_superseded must be true or false")
    hits = engine.recall(query or "", max_results=limit, types=_strs(body, "types"),
                         include_superseded=superseded).hits  # fmt: skip
    return {"items": [_item(h.atom, h.score) for h in hits]}


_EFFECT = {"applied": "created", "no_op": "duplicate", "merged": "merged"}


def memorize(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    _known(body, {"content", "type", "title", "tags", "source", "replaces", "written_at"})
    content = _str(body, "content", required=True)
    try:
        result = engine.memorize(content or "", source=_str(body, "source") or "agent", type=_str(body, "type"),
                                 title=_str(body, "title"), tags=_strs(body, "tags") or (), gate="admit",
                                 replaces=_str(body, "replaces"), written_at=_str(body, "written_at"))  # fmt: skip
    except Rejected as exc:  # the admission gate's answer (docs/LOCAL_API.md), not an error
        return {"id": None, "effect": "rejected", "reason": exc.message}
    effect = _EFFECT[result.effect]
    if result.effect == "applied" and result.status == "pending":
        effect = "pending"  # held for review (the grey zone of the admission gate)
    out: dict[str, Any] = {"id": result.atom_id, "effect": effect}
    if result.reason:
        out["reason"] = result.reason
    if result.status:
        out["status"] = result.status
    for key in ("supersedes", "superseded_by", "review", "restatement_id"):
        if getattr(result, key):
            out[key] = getattr(result, key)
    return out


def forget(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    _known(body, {"id", "reason"})
    memory_id = _str(body, "id", required=True) or ""
    reason = _str(body, "reason") or "forgotten through the local API"
    engine.get(memory_id)  # NotFound (404) for an unknown id or one out of this scope's reach
    try:
        engine.govern(memory_id, "tombstone", reason)
    except Rejected as exc:
        return {"id": memory_id, "effect": "rejected", "reason": exc.message}
    return {"id": memory_id, "effect": "forgotten"}


def brief(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    _known(body, {"mark_session"})
    mark = body.get("mark_session", False)
    if not isinstance(mark, bool):
        raise InvalidInput("mark_session must be true or false")
    ctx = engine.session_context(mark_session=mark)
    return {"text": ctx.text, "ids": list(ctx.shown or [])}


def context(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    _known(body, {"path", "session", "record"})
    path = _str(body, "path", required=True) or ""
    session = _str(body, "session")
    record = body.get("record", True)
    if not isinstance(record, bool):
        raise InvalidInput("record must be true or false")
    fc = engine.memories_for_path(path, session_id=session or None, record=bool(session) and record)
    atoms = [engine.get(i) for i in fc.memory_ids]
    return {"path": fc.path, "text": fc.text, "items": [_item(a) for a in atoms if a is not None],
            "left_out": fc.left_out}  # fmt: skip


def _ids(body: dict[str, Any], key: str) -> list[str]:
    ids = _strs(body, key) or []
    if len(ids) > LIMITS["given"][0]:
        raise InvalidInput(f"{key} lists {len(ids)} ids; the limit is {LIMITS['given'][0]}")
    return ids


def prompt(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    """What a prompt is given (`Engine.prompt_context`: the engine's relevance decision within the token budget)."""
    _known(body, {"prompt", "given", "within_ms", "limit"})
    text = _str(body, "prompt", required=True) or ""
    within, limit = body.get("within_ms"), body.get("limit")
    if within is not None and (isinstance(within, bool) or not isinstance(within, int) or within < 0):
        raise InvalidInput(f"within_ms must be a whole number of milliseconds, got {within!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100):
        raise InvalidInput(f"limit must be an integer between 1 and 100, got {limit!r}")
    ctx = engine.prompt_context(text, given=_ids(body, "given"), within=None if within is None else within / 1000,
                                limit=limit)  # fmt: skip
    return {"text": ctx.text, "header": ctx.header, "semantic": ctx.semantic,
            "items": [i.model_dump() for i in ctx.items]}  # fmt: skip


def scope(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    """The scope the request acts in (as `Memoryd-Scope` resolved it)."""
    _known(body, set())
    s = engine.scope
    return {"tenant_id": s.tenant_id, "workspace": s.workspace, "repository": s.repository, "branch": s.branch,
            "name": s.name, "scope_hash": s.scope_hash}  # fmt: skip


OBSERVE_BUDGET = 30.0  # seconds of transcript reading per hook (a long transcript is read in slices until then)


def observe(engine: Engine, body: dict[str, Any]) -> dict[str, Any]:
    """A session's transcript turned into observations held for review (`Engine.observe_transcript`), in slices
    until done or OBSERVE_BUDGET is spent; at session end, a handoff when the session wrote none."""
    import time

    _known(body, {"session_id", "transcript_path", "event"})
    session, path = _str(body, "session_id", required=True) or "", _str(body, "transcript_path", required=True) or ""
    event = _str(body, "event") or "session-end"
    if event not in ("session-end", "pre-compact"):
        raise InvalidInput(f"event must be session-end or pre-compact, got {event!r}")
    started = time.monotonic()
    deadline = started + OBSERVE_BUDGET
    reports = []
    while True:
        report = engine.observe_transcript(path, session, final=event == "session-end", event=event,
                                           budget_seconds=max(1.0, deadline - time.monotonic()))  # fmt: skip
        reports.append(report.summary())
        if not report.truncated or time.monotonic() >= deadline:
            break
    return {"summary": "; ".join(reports), "seconds": round(time.monotonic() - started, 2)}


ENDPOINTS = {"recall": recall, "memorize": memorize, "forget": forget, "brief": brief, "context": context,
             "prompt": prompt, "scope": scope, "observe": observe}  # fmt: skip
