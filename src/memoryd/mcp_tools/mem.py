"""The memoryd profile: the 22 `mem_*` tools of seed 004 (16 agent tier + 6 admin tier)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ..models import CodeChange, Freshness
from .common import EngineHandle, call

if TYPE_CHECKING:
    from ..engine import Engine
    from ..models import Atom

__all__ = ["ADMIN_TOOLS", "AGENT_TOOLS", "register"]

AGENT_TOOLS = [
    "mem_save", "mem_update", "mem_delete", "mem_get", "mem_search", "mem_context", "mem_timeline",
    "mem_session_start", "mem_session_end", "mem_session_summary", "mem_capture_passive",
    "mem_judge", "mem_compare", "mem_review_pending", "mem_promote", "mem_reject", "mem_request_sensitive_read",
]  # fmt: skip
ADMIN_TOOLS = [
    "mem_stats", "mem_merge_projects", "mem_current_project", "mem_doctor", "mem_save_prompt", "mem_suggest_topic_key",
]  # fmt: skip

# Every tool carries a title (the name a client shows) and annotations; openWorldHint is false throughout:
# memoryd reads and writes only its own store.
TITLES = {
    "mem_save": "Save memory", "mem_update": "Update memory", "mem_delete": "Delete memory", "mem_get": "Get memory",
    "mem_search": "Search memories", "mem_context": "Memory context", "mem_timeline": "Memory timeline",
    "mem_session_start": "Start session", "mem_session_end": "End session", "mem_session_summary": "Session summary",
    "mem_capture_passive": "Capture observation", "mem_judge": "Judge new text", "mem_compare": "Compare memories",
    "mem_review_pending": "Review pending saves", "mem_promote": "Promote pending saves",
    "mem_reject": "Reject pending saves", "mem_request_sensitive_read": "Request sensitive read",
    "mem_stats": "Memory statistics", "mem_merge_projects": "Merge projects", "mem_current_project": "Current project",
    "mem_doctor": "Health check", "mem_save_prompt": "Save prompt", "mem_suggest_topic_key": "Suggest topic key",
}  # fmt: skip

MemType = Literal["session", "decision", "preference", "fact", "playbook", "warning"]
ScopeArg = Annotated[str, Field(description='"auto" = this repository (from the working directory), "global" = all your projects.')]


# -- output models ---------------------------------------------------------------------------


class SaveOut(BaseModel):
    status: Literal["saved", "pending", "rejected", "duplicate"]
    memory_id: str | None = None
    path: str | None = Field(None, description="The memory's markdown file.")
    promotion_id: int | None = Field(None, description="For pending saves: approve with mem_promote.")
    deduped_with: str | None = None
    reasoning: str | None = Field(None, description="DURA scores and cues (pending / rejected).")
    warning: str | None = Field(None, description="Set when the scope argument named another repository: where the call went.")
    anchors: list[str] | None = Field(None, description="Code it is anchored to: path or path::symbol.")
    anchor_note: str | None = Field(None, description="Why the code it names was not anchored.")


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


class Result(Preview):
    score: float = Field(description="Relevance, 0.0 to 1.0.")
    tags: list[str]
    scope_hash: str
    path: str | None = None


class SearchOut(BaseModel):
    results: list[Result]
    warning: str | None = Field(None, description="Set when the scope argument named another repository: where the call went.")


class ContextOut(BaseModel):
    before: list[Preview]
    anchor: Preview
    after: list[Preview]


class TimelineOut(BaseModel):
    memories: list[Preview]
    since: datetime
    warning: str | None = Field(None, description="Set when the scope argument named another repository: where the call went.")


class SessionStartOut(BaseModel):
    session_id: str
    path: str | None = None
    warning: str | None = Field(None, description="Set when the scope argument named another repository: where the call went.")


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
    warning: str | None = Field(None, description="Set when the scope argument named another repository: where the call went.")


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
                   created_at=atom.created_at, freshness=fresh, code_changes=changes or None)  # fmt: skip


def _path(engine: Engine, atom: Atom) -> str | None:
    p = engine.path_of(atom)
    return str(p) if p else None


def _judgment(j: Any) -> JudgmentOut:
    return JudgmentOut(type=j.type, confidence=j.confidence, reason=j.reason, source=j.source)


def register(mcp: MCPServer, handle: EngineHandle, *, include_admin: bool) -> None:
    """Add the agent-tier tools, and the admin tier when asked, all served by one engine."""

    def tool(description: str, *, read_only: bool = False, destructive: bool = False,
             idempotent: bool = False) -> Callable[[Any], Any]:  # fmt: skip
        def register(fn: Any) -> Any:
            title = TITLES[fn.__name__]
            ann = ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                                  idempotent_hint=idempotent, open_world_hint=False)  # fmt: skip
            return mcp.tool(title=title, description=description, annotations=ann)(fn)

        return register

    @tool("Save one long-term memory (decision, preference, fact, playbook, warning, session note) as a self-"
          "contained sentence. Useful saves are stored; unclear ones wait for review (status pending); junk is "
          "rejected with reasoning. Returns memory_id and the markdown path.", idempotent=True)  # fmt: skip
    async def mem_save(
        content: Annotated[str, Field(description="The memory, one self-contained statement.")],
        type: Annotated[MemType, Field(description="session | decision | preference | fact | playbook | warning")] = "fact",
        scope: ScopeArg = "auto",
        tags: Annotated[list[str] | None, Field(description="Labels, e.g. ['frontend'].")] = None,
        triggers: Annotated[list[str] | None, Field(description="Words that should recall it.")] = None,
        title: Annotated[str | None, Field(description="Short title.")] = None,
        anchors: Annotated[list[str] | None, Field(
            description="Optional: code it is about beyond what it names: 'path', 'path::Class.method' or 'Symbol'. "
                        "Files and symbols named in the content are anchored anyway.")] = None,
    ) -> Annotated[CallToolResult, SaveOut]:
        def run(e: Engine) -> SaveOut:
            target, warning = e.resolve_scope_arg(scope)
            r = e.memorize(content, source="agent", type=type, title=title, tags=tags or [], triggers=triggers or [],
                           gate="review", scope=target, anchors=anchors)  # fmt: skip
            if r.effect == "rejected":
                return SaveOut(status="rejected", reasoning=r.reason, warning=warning)
            if r.effect == "no_op":
                return SaveOut(status="duplicate", memory_id=r.atom_id, path=r.path, deduped_with=r.deduped_with,
                               warning=warning)  # fmt: skip
            code = {"anchors": r.anchors, "anchor_note": r.anchor_note}
            if r.status == "pending":
                return SaveOut(status="pending", memory_id=r.atom_id, promotion_id=r.promotion_id, reasoning=r.reason,
                               warning=warning, **code)  # fmt: skip
            return SaveOut(status="saved", memory_id=r.atom_id, path=r.path, warning=warning, **code)

        return await call(handle, run)

    @tool("Patch a memory in place: its body (content), tags, triggers or title. Pass only what changes.")
    async def mem_update(
        memory_id: str,
        content: str | None = None,
        tags: list[str] | None = None,
        triggers: list[str] | None = None,
        title: str | None = None,
    ) -> Annotated[CallToolResult, UpdateOut]:
        def run(e: Engine) -> UpdateOut:
            r = e.patch(memory_id, content=content, tags=tags, triggers=triggers, title=title)
            return UpdateOut(memory_id=r.atom.id, status="updated", path=r.path, updated_fields=r.updated_fields)

        return await call(handle, run)

    @tool("Delete a memory for good: its markdown file and its row (an audit event remains).", destructive=True)
    async def mem_delete(memory_id: str) -> Annotated[CallToolResult, DeleteOut]:
        def run(e: Engine) -> DeleteOut:
            path = e.delete(memory_id)
            return DeleteOut(memory_id=memory_id, deleted=True, path=path or None)

        return await call(handle, run)

    @tool("Get one memory in full: frontmatter and markdown body.", read_only=True, idempotent=True)
    async def mem_get(memory_id: str) -> Annotated[CallToolResult, GetOut]:
        def run(e: Engine) -> GetOut:
            from ..engine import atom_frontmatter, visible_content

            atom = e.get(memory_id)
            fm = atom_frontmatter(atom)
            return GetOut(memory_id=atom.id, type=atom.type, scope_hash=atom.scope_hash, status=atom.status,
                          frontmatter=fm, body=visible_content(atom), path=_path(e, atom))  # fmt: skip

        return await call(handle, run)

    @tool("Search memories (keyword + semantic + entity). Use noun phrases with key names; types filters the "
          "results, entity_ids (e.g. entity:library:Solid) boosts memories that mention them, path / symbol keep "
          "only memories anchored to that code. freshness=code_changed: the code it describes moved on since.",
          read_only=True, idempotent=True)  # fmt: skip
    async def mem_search(
        query: str,
        scope: ScopeArg = "auto",
        top_k: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 10,
        types: list[MemType] | None = None,
        entity_ids: list[str] | None = None,
        path: Annotated[str | None, Field(description="Only memories anchored to this file or directory.")] = None,
        symbol: Annotated[str | None, Field(description="Only memories anchored to this symbol, e.g. Table.insert_all.")] = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        def run(e: Engine) -> SearchOut:
            warning = e.resolve_scope_arg(scope)[1]
            hits = e.search(query, scope=scope, top_k=top_k, types=types, entity_ids=entity_ids, path=path,
                            symbol=symbol).hits  # fmt: skip
            drift = {h.atom.id: (h.freshness, h.code_changes) for h in hits if h.freshness}
            return SearchOut(results=[
                Result(**_preview(h.atom, drift).model_dump(), score=h.score, tags=h.atom.tags,
                       scope_hash=h.atom.scope_hash, path=_path(e, h.atom))
                for h in hits
            ], warning=warning)  # fmt: skip

        return await call(handle, run)

    @tool("The memories saved just before and after one memory, in the same scope.", read_only=True, idempotent=True)
    async def mem_context(
        memory_id: str, neighbors: Annotated[int, Field(ge=0, le=50, description="How many on each side.")] = 3
    ) -> Annotated[CallToolResult, ContextOut]:
        def run(e: Engine) -> ContextOut:
            before, anchor, after = e.context(memory_id, neighbors=neighbors)
            drift = e.code_changes([a.id for a in (*before, anchor, *after) if a.scope_hash == e.scope.scope_hash])
            return ContextOut(before=[_preview(a, drift) for a in before], anchor=_preview(anchor, drift),
                              after=[_preview(a, drift) for a in after])  # fmt: skip

        return await call(handle, run)

    @tool("Recent memories of a scope, newest first (soft-forgotten ones left out). since: 30d, 2w, 6m or 1y.",
          read_only=True, idempotent=True)  # fmt: skip
    async def mem_timeline(
        scope: ScopeArg = "auto",
        since: Annotated[str, Field(description="How far back: <n>d, <n>w, <n>m or <n>y.")] = "30d",
        types: list[MemType] | None = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 100,
    ) -> Annotated[CallToolResult, TimelineOut]:
        def run(e: Engine) -> TimelineOut:
            warning = e.resolve_scope_arg(scope)[1]
            t = e.timeline_window(scope=scope, since=since, types=types, limit=limit)
            return TimelineOut(memories=[_preview(a) for a in t.memories], since=t.since, warning=warning)

        return await call(handle, run)

    @tool("Open a session record at the start of an agent session; keep the session_id for mem_session_end.")
    async def mem_session_start(
        scope: ScopeArg = "auto",
        source: Annotated[str, Field(description="Who runs the session: claude-code, codex, manual, …")] = "manual",
        title: str | None = None,
    ) -> Annotated[CallToolResult, SessionStartOut]:
        def run(e: Engine) -> SessionStartOut:
            warning = e.resolve_scope_arg(scope)[1]
            s = e.session_start(scope=scope, source=source, title=title)
            return SessionStartOut(session_id=s.id, path=_path(e, e.get(s.id)), warning=warning)

        return await call(handle, run)

    @tool("Close a session with its summary. Idempotent: a second call keeps the first summary.", idempotent=True)
    async def mem_session_end(session_id: str, summary: str) -> Annotated[CallToolResult, SessionEndOut]:
        def run(e: Engine) -> SessionEndOut:
            s, closed = e.session_end(session_id, summary)
            return SessionEndOut(session_id=s.id, status="closed" if closed else "already_closed", summary=s.summary)

        return await call(handle, run)

    @tool("The session's markdown body (title, start, summary).", read_only=True, idempotent=True)
    async def mem_session_summary(session_id: str) -> Annotated[CallToolResult, SessionSummaryOut]:
        def run(e: Engine) -> SessionSummaryOut:
            return SessionSummaryOut(session_id=session_id, body=e.session_summary(session_id))

        return await call(handle, run)

    @tool("Save an observation from a trusted mirror or importer, skipping review (not for ordinary agent saves).",
          idempotent=True)  # fmt: skip
    async def mem_capture_passive(
        content: str,
        source: Annotated[str, Field(description="The trusted source, e.g. openclaw.")],
        scope: ScopeArg = "auto",
        type: Literal["fact", "decision", "preference", "playbook", "warning"] = "fact",
        tags: list[str] | None = None,
        triggers: list[str] | None = None,
    ) -> Annotated[CallToolResult, SaveOut]:
        def run(e: Engine) -> SaveOut:
            warning = e.resolve_scope_arg(scope)[1]
            r = e.capture_passive(content, source=source, scope=scope, type=type, tags=tags or [],
                                  triggers=triggers or [])  # fmt: skip
            if r.effect == "rejected":
                return SaveOut(status="rejected", reasoning=r.reason, warning=warning)
            status: Literal["saved", "duplicate"] = "duplicate" if r.effect == "no_op" else "saved"
            return SaveOut(status=status, memory_id=r.atom_id, path=r.path, deduped_with=r.deduped_with,
                           warning=warning)  # fmt: skip

        return await call(handle, run)

    @tool("Judge whether new_text supersedes, contradicts, duplicates or refines an existing memory. Applies "
          "nothing: band auto (≥0.85) / review / ignore tells you how sure it is.", read_only=True, idempotent=True)
    async def mem_judge(new_text: str, old_memory_id: str) -> Annotated[CallToolResult, JudgeOut]:
        def run(e: Engine) -> JudgeOut:
            j, band = e.judge(new_text, old_memory_id)
            return JudgeOut(judgment=_judgment(j), band=band, source=j.source)

        return await call(handle, run)

    @tool("Diff two memories and judge whether the newer supersedes the older. Applies nothing.",
          read_only=True, idempotent=True)  # fmt: skip
    async def mem_compare(memory_id_a: str, memory_id_b: str) -> Annotated[CallToolResult, CompareOut]:
        def run(e: Engine) -> CompareOut:
            a, b, diff, j, band = e.compare(memory_id_a, memory_id_b)
            return CompareOut(a=_preview(a), b=_preview(b), diff_lines=diff, judgment=_judgment(j), band=band)

        return await call(handle, run)

    @tool("List saves waiting for review, least certain first, with DURA scores and reasoning. Then approve with "
          "mem_promote or drop with mem_reject.", read_only=True, idempotent=True)  # fmt: skip
    async def mem_review_pending(
        scope: Annotated[str, Field(description='"global" = every scope, "auto" = this repository.')] = "global",
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
        max_score: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0,
        types: list[MemType] | None = None,
    ) -> Annotated[CallToolResult, ReviewOut]:
        def run(e: Engine) -> ReviewOut:
            rows = e.review_pending(scope=scope, limit=limit, min_score=min_score, max_score=max_score, types=types)
            items = [
                PendingItem(promotion_id=p.id, memory_id=a.id, type=a.type, content=a.content, scope_hash=p.scope_hash,
                            dura=DuraScores(durability=p.durability, utility=p.utility, relevance=p.relevance,
                                      accuracy=p.accuracy, average=p.average),
                            reasoning=p.reasoning, created_at=p.created_at)
                for p, a in rows
            ]  # fmt: skip
            return ReviewOut(pending=items, count=len(items))

        return await call(handle, run)

    @tool("Approve pending saves: by promotion_ids, or auto_high=true for every candidate with DURA average ≥ "
          "threshold (limited to scope unless it is global).")  # fmt: skip
    async def mem_promote(
        promotion_ids: list[int] | None = None,
        auto_high: bool = False,
        threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.85,
        scope: Annotated[str, Field(description='"global" = every scope, "auto" = this repository.')] = "global",
    ) -> Annotated[CallToolResult, PromoteOut]:
        def run(e: Engine) -> PromoteOut:
            done, skipped = e.promote(promotion_ids, auto_high=auto_high, threshold=threshold, scope=scope)
            return PromoteOut(promoted=done, skipped=[Skipped(**s) for s in skipped])

        return await call(handle, run)

    @tool("Reject pending saves: no markdown file is written, the audit record stays.")
    async def mem_reject(promotion_ids: list[int]) -> Annotated[CallToolResult, RejectOut]:
        def run(e: Engine) -> RejectOut:
            done, skipped = e.reject(promotion_ids)
            return RejectOut(rejected=done, skipped=[Skipped(**s) for s in skipped])

        return await call(handle, run)

    @tool("Ask the user for a time-limited grant to read a sensitive scope (after an AuthorizationRequired "
          "error). Say what you need and why; the user grants it from the memoryd CLI.")  # fmt: skip
    async def mem_request_sensitive_read(
        reason: Annotated[str, Field(description="What you need to read and why.")], scope: ScopeArg = "auto"
    ) -> Annotated[CallToolResult, AccessRequestOut]:
        def run(e: Engine) -> AccessRequestOut:
            warning = e.resolve_scope_arg(scope)[1]
            return AccessRequestOut(**e.request_sensitive_read(reason, scope=scope), warning=warning)

        return await call(handle, run)

    if not include_admin:
        return

    @tool("Counts by type, scope, decay state, and the most mentioned entities. scope: a scope_hash, or empty "
          "for all.", read_only=True, idempotent=True)  # fmt: skip
    async def mem_stats(scope: str | None = None) -> Annotated[CallToolResult, StatsDetailOut]:
        return await call(handle, lambda e: StatsDetailOut(**e.stats_detail(scope)))

    @tool("Merge scope_b into scope_a (scope hashes or owner/repo names). dry_run=true (default) only previews; "
          "the real run is irreversible.", destructive=True)  # fmt: skip
    async def mem_merge_projects(scope_a: str, scope_b: str, dry_run: bool = True) -> Annotated[CallToolResult, MergeOut]:
        return await call(handle, lambda e: MergeOut(**e.merge_projects(scope_a, scope_b, dry_run=dry_run)))

    @tool("Which scope a directory maps to (default: the server's working directory).", read_only=True,
          idempotent=True)  # fmt: skip
    async def mem_current_project(cwd: str | None = None) -> Annotated[CallToolResult, CurrentProjectOut]:
        return await call(handle, lambda e: CurrentProjectOut(**e.current_project(cwd)))

    @tool("Health check of data root, index database, embeddings, LLM, knowledge graph and vault sync.",
          read_only=True, idempotent=True)  # fmt: skip
    async def mem_doctor() -> Annotated[CallToolResult, DoctorOut]:
        return await call(handle, lambda e: DoctorOut(**e.doctor()))

    @tool("Store a prompt template as <data_root>/prompts/<name>.md (overwrites a prompt of the same name).",
          idempotent=True)  # fmt: skip
    async def mem_save_prompt(
        name: Annotated[str, Field(description="File name: letters, digits, '.', '_' or '-'.")], content: str
    ) -> Annotated[CallToolResult, PromptOut]:
        return await call(handle, lambda e: PromptOut(name=name, path=str(e.save_prompt(name, content))))

    @tool("Suggest a stable kebab-case topic key for a text (LLM when configured, else a heuristic).",
          read_only=True, idempotent=True)  # fmt: skip
    async def mem_suggest_topic_key(content: str) -> Annotated[CallToolResult, TopicKeyOut]:
        def run(e: Engine) -> TopicKeyOut:
            key, source = e.suggest_topic_key(content)
            return TopicKeyOut(topic_key=key, source=source)

        return await call(handle, run)
