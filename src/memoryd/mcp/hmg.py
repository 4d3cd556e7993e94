"""The HMG profile: the six `memory_*` tools of seed 000, with its exact fields and defaults."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from ..shared.errors import Rejected
from ..shared.models import CodeChange, Freshness
from .common import EngineHandle, ScopeInput, register_tools, tool

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["TOOLS", "TOOL_NAMES", "register"]


class MemorizeOut(BaseModel):
    atom_id: str | None = Field(None, description="ULID of the atom; the existing one when deduplicated or merged.")
    effect: Literal["applied", "no_op", "rejected"]
    reason: str | None = Field(
        None, description="Why it was deduplicated, merged, rejected, or what it replaced (absent when simply applied)."
    )
    deduped_with: str | None = Field(None, description="The existing atom's id (no_op only: identical, or merged).")
    supersedes: str | None = Field(None, description="The memory it replaced, now superseded (applied only).")
    superseded_by: str | None = Field(None, description="A newer memory that already replaces it (applied only).")
    warning: str | None = Field(
        None, description="Set when the scope input named another repository: where the call went."
    )


class RecalledAtom(BaseModel):
    atom_id: str
    content: str = Field(description="The memory; a placeholder for quarantined or sealed atoms.")
    score: float = Field(description="Relevance, 0.0 to 1.0.")
    created_at: datetime
    source: str
    freshness: Freshness | None = Field(
        None, description="Memories tied to code only: current, or code_changed when that code moved on since."
    )
    code_changes: list[CodeChange] | None = Field(None, description="What changed (code_changed only).")
    written_at: datetime | None = Field(None, description="When it was written at its source (imported notes).")
    superseded_by: str | None = Field(
        None, description="include_superseded only: the newer memory that replaces this one (ranked above it)."
    )


class RecallOut(BaseModel):
    atoms: list[RecalledAtom] = Field(description="Best match first.")
    warning: str | None = Field(
        None, description="Set when the scope input named another repository: where the call went."
    )


class CorrectOut(BaseModel):
    effect: Literal["applied", "rejected"]
    target_atom: str
    new_atom_id: str | None = Field(None, description="The replacement atom (replace only).")
    reason: str | None = Field(None, description="Why it was rejected (rejected only).")
    warning: str | None = Field(
        None, description="Set when the scope input named another repository: where the call went."
    )


class GovernOut(BaseModel):
    effect: Literal["applied", "rejected"]
    target_atom: str
    lesson_atom_id: str | None = Field(None, description="The lesson atom (derive_lesson only).")
    reason: str | None = Field(None, description="Why it was rejected (rejected only).")
    warning: str | None = Field(
        None, description="Set when the scope input named another repository: where the call went."
    )


class HandoffOut(BaseModel):
    atom_id: str | None = None
    effect: Literal["applied", "rejected"]
    reason: str | None = None
    warning: str | None = Field(
        None, description="Set when the scope input named another repository: where the call went."
    )


class Indexes(BaseModel):
    semantic: int
    keyword: int
    temporal: int
    categorical: int


class StatsOut(BaseModel):
    atoms: int
    edges: int
    indexes: Indexes
    snapshot_version: int


_SCOPE = Field(description="Injected by the host; the scope is inferred (a different one is answered with a warning).")
_ANCHORS = Field(
    description="Optional: code it is about beyond what it names: 'path', 'path::Class.method' or 'Symbol'."
)
_PATH = Field(description="Optional: only memories anchored to this file or directory of the repository.")
_REPLACES = Field(
    description="Optional: the atom id (from memory_recall) of the memory this one replaces; it becomes superseded."
)
_SYMBOL = Field(description="Optional: only memories anchored to this symbol, e.g. Table.insert_all or insert_all.")


def _given(scope: ScopeInput | None) -> dict[str, object] | None:
    return scope.model_dump(exclude_none=True) if scope is not None else None


@tool(
    "Memorize",
    "Save one long-term memory: a self-contained sentence worth knowing in a later session "
    "(decision, constraint, preference, fact, warning), in the user's language. No need to recall "
    "first: identical content is deduplicated, a reworded restatement is merged into the memory it restates "
    "(no_op with its id), and a change (switched to, no longer, a new version or owner) supersedes the older "
    "memory. When you know which memory it replaces, pass its id as replaces.",
    idempotent=True,
)
def memory_memorize(
    engine: Engine,
    content: Annotated[str, Field(description="The memory, one self-contained sentence.")],
    source: Annotated[
        str | None, Field(description="user (the user said it) / agent (you concluded it) / custom.")
    ] = None,
    scope: Annotated[ScopeInput | None, _SCOPE] = None,
    anchors: Annotated[list[str] | None, _ANCHORS] = None,
    replaces: Annotated[str | None, _REPLACES] = None,
) -> MemorizeOut:
    warning = engine.scope_input_warning(_given(scope))
    try:
        r = engine.memorize(content, source=source or "agent", gate="admit", anchors=anchors, replaces=replaces)
    except Rejected as exc:
        return MemorizeOut(effect="rejected", reason=exc.message, warning=warning)
    if r.effect == "merged":  # the seed's vocabulary: a restatement is a duplicate of the memory it restates
        return MemorizeOut(atom_id=r.atom_id, effect="no_op", reason=f"merged: {r.reason}", deduped_with=r.atom_id,
                           warning=warning)  # fmt: skip
    return MemorizeOut(atom_id=r.atom_id, effect=r.effect, reason=r.reason, deduped_with=r.deduped_with,
                       supersedes=r.supersedes, superseded_by=r.superseded_by, warning=warning)  # fmt: skip


@tool(
    "Recall",
    "Search long-term memory for this repository and your global preferences. Use noun phrases that keep "
    "key entities (people, projects, technologies, file names), not chatty questions. One call is usually "
    "enough: keyword, semantic and entity signals are combined.",
    read_only=True,
    idempotent=True,
)
def memory_recall(
    engine: Engine,
    query: Annotated[str, Field(description="What to look for, e.g. 'PostgreSQL 連線池配置'.")],
    max_results: Annotated[int, Field(description="Maximum number of memories to return.", ge=1, le=100)] = 10,
    include_negated: Annotated[bool, Field(description="Also return memories marked false.")] = False,
    scope: Annotated[ScopeInput | None, _SCOPE] = None,
    path: Annotated[str | None, _PATH] = None,
    symbol: Annotated[str | None, _SYMBOL] = None,
    include_superseded: Annotated[
        bool, Field(description="Also return memories a newer one replaced (each with superseded_by).")
    ] = False,
) -> RecallOut:
    from ..engine import visible_content

    warning = engine.scope_input_warning(_given(scope))
    hits = engine.recall(query, max_results=max_results, include_negated=include_negated, path=path,
                         symbol=symbol, include_superseded=include_superseded).hits  # fmt: skip
    return RecallOut(
        atoms=[
            RecalledAtom(
                atom_id=h.atom.id,
                content=visible_content(h.atom),
                score=h.score,
                created_at=h.atom.created_at,
                source=h.atom.source,
                freshness=h.freshness,
                code_changes=h.code_changes,
                written_at=h.atom.written_at,
                superseded_by=h.atom.superseded_by if h.atom.status == "superseded" else None,
            )  # fmt: skip
            for h in hits
        ],
        warning=warning,
    )


@tool(
    "Correct",
    "Correct a memory (append-only; history is kept). action: negate (false, no undo), confirm_actual, "
    "confirm_necessary (a hard constraint), demote (only possible), replace (needs new_content; only the "
    "latest version can be replaced). Take target_atom from memory_recall.",
)
def memory_correct(
    engine: Engine,
    target_atom: Annotated[str, Field(description="Atom id from memory_recall.")],
    action: Annotated[str, Field(description="negate | confirm_actual | confirm_necessary | demote | replace")],
    reason: Annotated[str, Field(description="Why; written to the audit chain.")],
    new_content: Annotated[str | None, Field(description="The corrected memory (replace only).")] = None,
    scope: Annotated[ScopeInput | None, Field(description="Inherited from the target atom; ignored.")] = None,
) -> CorrectOut:
    try:
        r = engine.correct(target_atom, action, reason, new_content)
    except Rejected as exc:  # the seed's refusal is a result: effect "rejected" with the reason
        return CorrectOut(effect="rejected", target_atom=target_atom, reason=exc.message,
                          warning=engine.scope_input_warning(_given(scope)))  # fmt: skip
    return CorrectOut(**r.model_dump(), warning=engine.scope_input_warning(_given(scope)))


@tool(
    "Govern",
    "Govern a memory's lifecycle. action: quarantine (hide from recall, restorable), seal (audit only), "
    "tombstone (destroy the content), derive_lesson (needs lesson_content: a redacted lesson; the original "
    "is sealed). A secret saved by mistake: derive_lesson if there is a lesson, else seal or tombstone.",
    destructive=True,
)
def memory_govern(
    engine: Engine,
    target_atom: Annotated[str, Field(description="Atom id to govern.")],
    action: Annotated[str, Field(description="quarantine | seal | tombstone | derive_lesson")],
    reason: Annotated[str, Field(description="Why; written to the audit chain.")],
    lesson_content: Annotated[str | None, Field(description="The lesson (derive_lesson only).")] = None,
    scope: Annotated[ScopeInput | None, Field(description="Inherited from the target atom; ignored.")] = None,
) -> GovernOut:
    try:
        r = engine.govern(target_atom, action, reason, lesson_content)
    except Rejected as exc:
        return GovernOut(effect="rejected", target_atom=target_atom, reason=exc.message,
                         warning=engine.scope_input_warning(_given(scope)))  # fmt: skip
    return GovernOut(**r.model_dump(), warning=engine.scope_input_warning(_given(scope)))


@tool(
    "Handoff",
    "Write a session handoff when a task, milestone or session ends: what was done, why, how it was "
    "verified, risks, next steps. The next session's brief shows it first. Use memory_memorize for single "
    "facts.",
)
def memory_handoff(
    engine: Engine,
    summary: Annotated[str, Field(description="The handoff summary.")],
    source: Annotated[str | None, Field(description="user / agent / custom.")] = None,
    scope: Annotated[ScopeInput | None, _SCOPE] = None,
) -> HandoffOut:
    warning = engine.scope_input_warning(_given(scope))
    try:
        return HandoffOut(**engine.handoff(summary, source=source or "agent").model_dump(), warning=warning)
    except Rejected as exc:
        return HandoffOut(effect="rejected", reason=exc.message, warning=warning)


@tool("Stats", "Store overview: atom and edge counts, index coverage, snapshot version. Rarely needed.",
      read_only=True, idempotent=True)  # fmt: skip
def memory_stats(engine: Engine) -> StatsOut:
    s = engine.stats()
    return StatsOut(atoms=s.atoms, edges=s.edges, indexes=Indexes(**s.indexes.model_dump()),
                    snapshot_version=s.snapshot_version)  # fmt: skip


TOOLS = (memory_memorize, memory_recall, memory_correct, memory_govern, memory_handoff, memory_stats)
TOOL_NAMES = [t.name for t in TOOLS]


def register(mcp: MCPServer, handle: EngineHandle) -> None:
    """Add the six HMG tools to `mcp`, all served by the engine behind `handle`."""
    register_tools(mcp, handle, TOOLS)
