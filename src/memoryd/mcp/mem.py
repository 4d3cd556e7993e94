"""The memoryd profile: the 22 `mem_*` tools of seed 004 (16 agent tier + 6 admin tier)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from ..shared.errors import Rejected
from ..shared.models import CodeChange, Freshness, MemorizeResult
from .common import EngineHandle, register_tools, tool

if TYPE_CHECKING:
    from ..engine import Engine
    from ..shared.models import Atom

__all__ = ["ADMIN", "ADMIN_TOOLS", "AGENT", "AGENT_TOOLS", "register"]

MemType = Literal["session", "decision", "preference", "fact", "playbook", "warning"]
ScopeArg = Annotated[
    str, Field(description='"auto" = this repository (from the working directory), "global" = all your projects.')
]
_REPLACES = Field(description="Optional: the memory_id of the memory this one replaces; it becomes superseded.")
_WRITTEN_AT = Field(
    description="Optional: when it was written at its source, ISO 8601 (2025-03-15 or 2025-03-15T09:30:00Z); "
    "default now. An older note never replaces a newer one."
)


# -- output models ---------------------------------------------------------------------------


class SaveOut(BaseModel):
    status: Literal["saved", "pending", "rejected", "duplicate", "merged"]
    memory_id: str | None = Field(None, description="The memory; merged: the existing one it restates.")
    path: str | None = Field(None, description="The memory's markdown file.")
    promotion_id: int | None = Field(None, description="For pending saves: approve with mem_promote.")
    deduped_with: str | None = None
    reasoning: str | None = Field(None, description="DURA scores and cues (pending / rejected).")
    warning: str | None = Field(
        None, description="Set when the scope argument named another repository: where the call went."
    )
    anchors: list[str] | None = Field(None, description="Code it is anchored to: path or path::symbol.")
    anchor_note: str | None = Field(None, description="Why the code it names was not anchored.")
    supersedes: str | None = Field(None, description="The memory it replaced, now superseded.")
    superseded_by: str | None = Field(None, description="A newer memory that already replaces it (an older note).")
    review: str | None = Field(None, description="A memory it may replace: listed for review, not applied.")
    restatement_id: str | None = Field(None, description="merged: the record keeping this wording and source.")
    link_reason: str | None = Field(None, description="Why it merged, superseded or was suggested.")


def _save_out(r: MemorizeResult, warning: str | None) -> SaveOut:
    """A stored save's answer (`mem_save`, `mem_capture_passive`): saved, pending, duplicate or merged."""
    linked = {"supersedes": r.supersedes, "superseded_by": r.superseded_by, "review": r.review,
              "link_reason": r.reason if r.supersedes or r.superseded_by or r.review else None}  # fmt: skip
    if r.effect == "no_op":
        return SaveOut(status="duplicate", memory_id=r.atom_id, path=r.path, deduped_with=r.deduped_with,
                       warning=warning)  # fmt: skip
    if r.effect == "merged":
        return SaveOut(status="merged", memory_id=r.atom_id, path=r.path, restatement_id=r.restatement_id,
                       link_reason=r.reason, warning=warning)  # fmt: skip
    code = {"anchors": r.anchors, "anchor_note": r.anchor_note}
    if r.status == "pending":
        return SaveOut(status="pending", memory_id=r.atom_id, promotion_id=r.promotion_id, reasoning=r.reason,
                       warning=warning, **code)  # fmt: skip
    return SaveOut(status="saved", memory_id=r.atom_id, path=r.path, warning=warning, **code, **linked)


class UpdateOut(BaseModel):
    memory_id: str
    status: Literal["updated"]
    path: str | None = None
    updated_fields: list[str]


class DeleteOut(BaseModel):
    memory_id: str
    deleted: bool
    path: str | None = None


class GetOut(BaseModel):
    memory_id: str
    type: str
    scope_hash: str
    status: str
    frontmatter: dict[str, Any]
    body: str = Field(description="The memory; a placeholder for quarantined, sealed or tombstoned ones.")
    path: str | None = None


class Preview(BaseModel):
    memory_id: str
    type: str
    title: str | None = None
    content_preview: str
    created_at: datetime
    freshness: Freshness | None = Field(
        None, description="Memories tied to code only: current, or code_changed when that code moved on since."
    )
    code_changes: list[CodeChange] | None = Field(None, description="What changed (code_changed only).")
    written_at: datetime | None = Field(None, description="When it was written at its source (imported notes).")
    superseded_by: str | None = Field(None, description="Superseded memories only: the newer one that replaces it.")


class Result(Preview):
    score: float = Field(description="Relevance, 0.0 to 1.0.")
    tags: list[str]
    scope_hash: str
    path: str | None = None


class SearchOut(BaseModel):
    results: list[Result]
    warning: str | None = Field(
        None, description="Set when the scope argument named another repository: where the call went."
    )


class ContextOut(BaseModel):
    before: list[Preview]
    anchor: Preview
    after: list[Preview]


class TimelineOut(BaseModel):
    memories: list[Preview]
    since: datetime
    warning: str | None = Field(
        None, description="Set when the scope argument named another repository: where the call went."
    )


class SessionStartOut(BaseModel):
    session_id: str
    path: str | None = None
    warning: str | None = Field(
        None, description="Set when the scope argument named another repository: where the call went."
    )


class SessionEndOut(BaseModel):
    session_id: str
    status: Literal["closed", "already_closed"]
    summary: str | None = None


class SessionSummaryOut(BaseModel):
    session_id: str
    body: str


class JudgmentOut(BaseModel):
    type: Literal["supersedes", "contradicts", "duplicates", "refines", "unrelated"]
    confidence: float
    reason: str
    source: Literal["llm", "heuristic"]


class JudgeOut(BaseModel):
    judgment: JudgmentOut
    band: Literal["auto", "review", "ignore"]
    source: Literal["llm", "heuristic"]


class CompareOut(BaseModel):
    a: Preview
    b: Preview
    diff_lines: list[str]
    judgment: JudgmentOut
    band: Literal["auto", "review", "ignore"]


class DuraScores(BaseModel):
    durability: float
    utility: float
    relevance: float
    accuracy: float
    average: float


class PendingItem(BaseModel):
    promotion_id: int
    memory_id: str
    type: str
    content: str
    scope_hash: str
    dura: DuraScores
    reasoning: str
    created_at: datetime


class ReviewOut(BaseModel):
    pending: list[PendingItem]
    count: int


class Skipped(BaseModel):
    promotion_id: int
    reason: str


class PromoteOut(BaseModel):
    promoted: list[int]
    skipped: list[Skipped]


class RejectOut(BaseModel):
    rejected: list[int]
    skipped: list[Skipped]


class AccessRequestOut(BaseModel):
    request_id: int | None = None
    scope_hash: str
    status: Literal["pending", "granted", "not_needed"]
    message: str
    warning: str | None = Field(
        None, description="Set when the scope argument named another repository: where the call went."
    )


class StatsDetailOut(BaseModel):
    total: int
    by_type: dict[str, int]
    by_scope: dict[str, dict[str, Any]]
    by_decay: dict[str, int]
    top_entities: list[dict[str, Any]]


class MergeOut(BaseModel):
    would_move: int
    would_dedup: int
    samples: list[dict[str, Any]]
    dry_run: bool
    moved: int | None = None
    deduped: int | None = None


class CurrentProjectOut(BaseModel):
    scope_hash: str
    scope_name: str
    scope_root: str


class DoctorOut(BaseModel):
    data_root: str
    index_db: str
    embeddings: str
    llm: str
    kg: str
    sync: str


class PromptOut(BaseModel):
    name: str
    path: str


class TopicKeyOut(BaseModel):
    topic_key: str
    source: Literal["llm", "heuristic"]


# -- shaping helpers ---------------------------------------------------------------------------


def _preview(atom: Atom, drift: dict[str, Any] | None = None) -> Preview:
    from ..engine import visible_content

    fresh, changes = (drift or {}).get(atom.id, (None, None))
    return Preview(memory_id=atom.id, type=atom.type, title=atom.title, content_preview=visible_content(atom)[:200],
                   created_at=atom.created_at, freshness=fresh, code_changes=changes or None,
                   written_at=atom.written_at,
                   superseded_by=atom.superseded_by if atom.status == "superseded" else None)  # fmt: skip


def _path(engine: Engine, atom: Atom) -> str | None:
    p = engine.path_of(atom)
    return str(p) if p else None


def _judgment(j: Any) -> JudgmentOut:
    return JudgmentOut(type=j.type, confidence=j.confidence, reason=j.reason, source=j.source)


# -- the tools: one module-level handler each (see `common.tool`) ---------------------------------


@tool("Save memory",
      "Save one long-term memory (decision, preference, fact, playbook, warning, session note) as a self-"
      "contained sentence. Useful saves are stored; unclear ones wait for review (status pending); junk is "
      "rejected with reasoning; a reworded restatement merges into the memory it restates (status merged); a "
      "change of a memory supersedes it (supersedes). Pass replaces when you know which memory it replaces. "
      "Returns memory_id and the markdown path.", idempotent=True)  # fmt: skip
def mem_save(
    e: Engine,
    content: Annotated[str, Field(description="The memory, one self-contained statement.")],
    type: Annotated[MemType, Field(description="session | decision | preference | fact | playbook | warning")] = "fact",
    scope: ScopeArg = "auto",
    tags: Annotated[list[str] | None, Field(description="Labels, e.g. ['frontend'].")] = None,
    triggers: Annotated[list[str] | None, Field(description="Words that should recall it.")] = None,
    title: Annotated[str | None, Field(description="Short title.")] = None,
    anchors: Annotated[
        list[str] | None,
        Field(
            description="Optional: code it is about beyond what it names: 'path', 'path::Class.method' or 'Symbol'. "
            "Files and symbols named in the content are anchored anyway."
        ),
    ] = None,
    replaces: Annotated[str | None, _REPLACES] = None,
    written_at: Annotated[str | None, _WRITTEN_AT] = None,
) -> SaveOut:
    target, warning = e.resolve_scope_arg(scope)
    try:
        r = e.memorize(content, source="agent", type=type, title=title, tags=tags or [], triggers=triggers or [],
                       gate="review", scope=target, anchors=anchors, replaces=replaces, written_at=written_at)  # fmt: skip
    except Rejected as exc:  # the seed's answer for junk: a result with the reasoning, not an error
        return SaveOut(status="rejected", reasoning=exc.message, warning=warning)
    return _save_out(r, warning)


@tool("Update memory", "Patch a memory in place: its body (content), tags, triggers or title. Pass only what changes.")
def mem_update(
    e: Engine,
    memory_id: str,
    content: str | None = None,
    tags: list[str] | None = None,
    triggers: list[str] | None = None,
    title: str | None = None,
) -> UpdateOut:
    r = e.patch(memory_id, content=content, tags=tags, triggers=triggers, title=title)
    return UpdateOut(memory_id=r.atom.id, status="updated", path=r.path, updated_fields=r.updated_fields)


@tool(
    "Delete memory",
    "Delete a memory for good: its markdown file and its row (an audit event remains).",
    destructive=True,
)
def mem_delete(e: Engine, memory_id: str) -> DeleteOut:
    path = e.delete(memory_id)
    return DeleteOut(memory_id=memory_id, deleted=True, path=path or None)


@tool("Get memory", "Get one memory in full: frontmatter and markdown body.", read_only=True, idempotent=True)
def mem_get(e: Engine, memory_id: str) -> GetOut:
    from ..engine import atom_frontmatter, visible_content

    atom = e.get(memory_id)
    fm = atom_frontmatter(atom)
    return GetOut(memory_id=atom.id, type=atom.type, scope_hash=atom.scope_hash, status=atom.status,
                  frontmatter=fm, body=visible_content(atom), path=_path(e, atom))  # fmt: skip


@tool("Search memories",
      "Search memories (keyword + semantic + entity). Use noun phrases with key names; types filters the "
      "results, entity_ids (e.g. entity:library:Solid) boosts memories that mention them, path / symbol keep "
      "only memories anchored to that code. freshness=code_changed: the code it describes moved on since.",
      read_only=True, idempotent=True)  # fmt: skip
def mem_search(
    e: Engine,
    query: str,
    scope: ScopeArg = "auto",
    top_k: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 10,
    types: list[MemType] | None = None,
    entity_ids: list[str] | None = None,
    path: Annotated[str | None, Field(description="Only memories anchored to this file or directory.")] = None,
    symbol: Annotated[
        str | None, Field(description="Only memories anchored to this symbol, e.g. Table.insert_all.")
    ] = None,
    include_superseded: Annotated[
        bool, Field(description="Also memories a newer one replaced (with superseded_by, ranked below it).")
    ] = False,
) -> SearchOut:
    target, warning = e.resolve_scope_arg(scope)
    hits = e.search(query, scope=target, top_k=top_k, types=types, entity_ids=entity_ids, path=path,
                    symbol=symbol, include_superseded=include_superseded).hits  # fmt: skip
    drift = {h.atom.id: (h.freshness, h.code_changes) for h in hits if h.freshness}
    return SearchOut(results=[
        Result(**_preview(h.atom, drift).model_dump(), score=h.score, tags=h.atom.tags,
               scope_hash=h.atom.scope_hash, path=_path(e, h.atom))
        for h in hits
    ], warning=warning)  # fmt: skip


@tool(
    "Memory context",
    "The memories saved just before and after one memory, in the same scope.",
    read_only=True,
    idempotent=True,
)
def mem_context(
    e: Engine, memory_id: str, neighbors: Annotated[int, Field(ge=0, le=50, description="How many on each side.")] = 3
) -> ContextOut:
    before, anchor, after = e.context(memory_id, neighbors=neighbors)
    drift = e.code_changes([a.id for a in (*before, anchor, *after) if a.scope_hash == e.scope.scope_hash])
    return ContextOut(before=[_preview(a, drift) for a in before], anchor=_preview(anchor, drift),
                      after=[_preview(a, drift) for a in after])  # fmt: skip


@tool("Memory timeline",
      "Recent memories of a scope, newest first (soft-forgotten ones left out). since: 30d, 2w, 6m or 1y.",
      read_only=True, idempotent=True)  # fmt: skip
def mem_timeline(
    e: Engine,
    scope: ScopeArg = "auto",
    since: Annotated[str, Field(description="How far back: <n>d, <n>w, <n>m or <n>y.")] = "30d",
    types: list[MemType] | None = None,
    limit: Annotated[int, Field(ge=1, le=1000)] = 100,
) -> TimelineOut:
    target, warning = e.resolve_scope_arg(scope)
    t = e.timeline_window(scope=target, since=since, types=types, limit=limit)
    return TimelineOut(memories=[_preview(a) for a in t.memories], since=t.since, warning=warning)


@tool(
    "Start session", "Open a session record at the start of an agent session; keep the session_id for mem_session_end."
)
def mem_session_start(
    e: Engine,
    scope: ScopeArg = "auto",
    source: Annotated[str, Field(description="Who runs the session: claude-code, codex, manual, …")] = "manual",
    title: str | None = None,
) -> SessionStartOut:
    target, warning = e.resolve_scope_arg(scope)
    s = e.session_start(scope=target, source=source, title=title)
    return SessionStartOut(session_id=s.id, path=_path(e, e.get(s.id)), warning=warning)


@tool(
    "End session",
    "Close a session with its summary. Idempotent: a second call keeps the first summary.",
    idempotent=True,
)
def mem_session_end(e: Engine, session_id: str, summary: str) -> SessionEndOut:
    s, closed = e.session_end(session_id, summary)
    return SessionEndOut(session_id=s.id, status="closed" if closed else "already_closed", summary=s.summary)


@tool("Session summary", "The session's markdown body (title, start, summary).", read_only=True, idempotent=True)
def mem_session_summary(e: Engine, session_id: str) -> SessionSummaryOut:
    return SessionSummaryOut(session_id=session_id, body=e.session_summary(session_id))


@tool("Capture observation",
      "Save an observation from a trusted mirror or importer, skipping review (not for ordinary agent saves).",
      idempotent=True)  # fmt: skip
def mem_capture_passive(
    e: Engine,
    content: str,
    source: Annotated[str, Field(description="The trusted source, e.g. openclaw.")],
    scope: ScopeArg = "auto",
    type: Literal["fact", "decision", "preference", "playbook", "warning"] = "fact",
    tags: list[str] | None = None,
    triggers: list[str] | None = None,
    replaces: Annotated[str | None, _REPLACES] = None,
    written_at: Annotated[str | None, _WRITTEN_AT] = None,
) -> SaveOut:
    target, warning = e.resolve_scope_arg(scope)
    try:
        r = e.capture_passive(content, source=source, scope=target, type=type, tags=tags or [],
                              triggers=triggers or [], replaces=replaces, written_at=written_at)  # fmt: skip
    except Rejected as exc:
        return SaveOut(status="rejected", reasoning=exc.message, warning=warning)
    return _save_out(r, warning)


@tool(
    "Judge new text",
    "Judge whether new_text supersedes, contradicts, duplicates or refines an existing memory. Applies "
    "nothing: band auto (≥0.85) / review / ignore tells you how sure it is.",
    read_only=True,
    idempotent=True,
)
def mem_judge(e: Engine, new_text: str, old_memory_id: str) -> JudgeOut:
    j, band = e.judge(new_text, old_memory_id)
    return JudgeOut(judgment=_judgment(j), band=band, source=j.source)


@tool("Compare memories", "Diff two memories and judge whether the newer supersedes the older. Applies nothing.",
      read_only=True, idempotent=True)  # fmt: skip
def mem_compare(e: Engine, memory_id_a: str, memory_id_b: str) -> CompareOut:
    a, b, diff, j, band = e.compare(memory_id_a, memory_id_b)
    return CompareOut(a=_preview(a), b=_preview(b), diff_lines=diff, judgment=_judgment(j), band=band)


@tool("Review pending saves",
      "List saves waiting for review, least certain first, with DURA scores and reasoning. Then approve with "
      "mem_promote or drop with mem_reject.", read_only=True, idempotent=True)  # fmt: skip
def mem_review_pending(
    e: Engine,
    scope: Annotated[str, Field(description='"global" = every scope, "auto" = this repository.')] = "global",
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
    max_score: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0,
    types: list[MemType] | None = None,
) -> ReviewOut:
    rows = e.review_pending(scope=scope, limit=limit, min_score=min_score, max_score=max_score, types=types)
    items = [
        PendingItem(promotion_id=p.id, memory_id=a.id, type=a.type, content=a.content, scope_hash=p.scope_hash,
                    dura=DuraScores(durability=p.durability, utility=p.utility, relevance=p.relevance,
                              accuracy=p.accuracy, average=p.average),
                    reasoning=p.reasoning, created_at=p.created_at)
        for p, a in rows
    ]  # fmt: skip
    return ReviewOut(pending=items, count=len(items))


@tool("Promote pending saves",
      "Approve pending saves: by promotion_ids, or auto_high=true for every candidate with DURA average ≥ "
      "threshold (limited to scope unless it is global).")  # fmt: skip
def mem_promote(
    e: Engine,
    promotion_ids: list[int] | None = None,
    auto_high: bool = False,
    threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.85,
    scope: Annotated[str, Field(description='"global" = every scope, "auto" = this repository.')] = "global",
) -> PromoteOut:
    done, skipped = e.promote(promotion_ids, auto_high=auto_high, threshold=threshold, scope=scope)
    return PromoteOut(promoted=done, skipped=[Skipped(**s) for s in skipped])


@tool("Reject pending saves", "Reject pending saves: no markdown file is written, the audit record stays.")
def mem_reject(e: Engine, promotion_ids: list[int]) -> RejectOut:
    done, skipped = e.reject(promotion_ids)
    return RejectOut(rejected=done, skipped=[Skipped(**s) for s in skipped])


@tool("Request sensitive read",
      "Ask the user for a time-limited grant to read a sensitive scope (after an AuthorizationRequired "
      "error). Say what you need and why; the user grants it from the memoryd CLI.")  # fmt: skip
def mem_request_sensitive_read(
    e: Engine, reason: Annotated[str, Field(description="What you need to read and why.")], scope: ScopeArg = "auto"
) -> AccessRequestOut:
    target, warning = e.resolve_scope_arg(scope)
    return AccessRequestOut(**e.request_sensitive_read(reason, scope=target), warning=warning)


# -- admin tier (`--admin`) ---------------------------------------------------------------------


@tool("Memory statistics",
      "Counts by type, scope, decay state, and the most mentioned entities. scope: a scope_hash, or empty "
      "for all.", read_only=True, idempotent=True)  # fmt: skip
def mem_stats(e: Engine, scope: str | None = None) -> StatsDetailOut:
    return StatsDetailOut(**e.stats_detail(scope))


@tool("Merge projects",
      "Merge scope_b into scope_a (scope hashes or owner/repo names). dry_run=true (default) only previews; "
      "the real run is irreversible.", destructive=True)  # fmt: skip
def mem_merge_projects(e: Engine, scope_a: str, scope_b: str, dry_run: bool = True) -> MergeOut:
    return MergeOut(**e.merge_projects(scope_a, scope_b, dry_run=dry_run))


@tool("Current project", "Which scope a directory maps to (default: the server's working directory).", read_only=True,
      idempotent=True)  # fmt: skip
def mem_current_project(e: Engine, cwd: str | None = None) -> CurrentProjectOut:
    return CurrentProjectOut(**e.current_project(cwd))


@tool("Health check", "Health check of data root, index database, embeddings, LLM, knowledge graph and vault sync.",
      read_only=True, idempotent=True)  # fmt: skip
def mem_doctor(e: Engine) -> DoctorOut:
    return DoctorOut(**e.doctor())


@tool("Save prompt", "Store a prompt template as <data_root>/prompts/<name>.md (overwrites a prompt of the same name).",
      idempotent=True)  # fmt: skip
def mem_save_prompt(
    e: Engine, name: Annotated[str, Field(description="File name: letters, digits, '.', '_' or '-'.")], content: str
) -> PromptOut:
    return PromptOut(name=name, path=str(e.save_prompt(name, content)))


@tool("Suggest topic key", "Suggest a stable kebab-case topic key for a text (LLM when configured, else a heuristic).",
      read_only=True, idempotent=True)  # fmt: skip
def mem_suggest_topic_key(e: Engine, content: str) -> TopicKeyOut:
    key, source = e.suggest_topic_key(content)
    return TopicKeyOut(topic_key=key, source=source)


AGENT = (
    mem_save, mem_update, mem_delete, mem_get, mem_search, mem_context, mem_timeline, mem_session_start, mem_session_end,
    mem_session_summary, mem_capture_passive, mem_judge, mem_compare, mem_review_pending, mem_promote, mem_reject,
    mem_request_sensitive_read,
)  # fmt: skip
ADMIN = (mem_stats, mem_merge_projects, mem_current_project, mem_doctor, mem_save_prompt, mem_suggest_topic_key)  # fmt: skip
AGENT_TOOLS = [t.name for t in AGENT]
ADMIN_TOOLS = [t.name for t in ADMIN]


def register(mcp: MCPServer, handle: EngineHandle, *, include_admin: bool) -> None:
    """Add the agent-tier tools, and the admin tier when asked, all served by one engine."""
    register_tools(mcp, handle, AGENT + ADMIN if include_admin else AGENT)
