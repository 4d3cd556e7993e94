"""Domain and I/O models shared by the engine and every surface."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from .scope_key import scope_hash as _scope_hash

__all__ = [
    "ATOM_TYPES",
    "Atom",
    "AtomType",
    "Brief",
    "ChainReport",
    "CodeChange",
    "CorrectAction",
    "CorrectResult",
    "Effect",
    "Epistemic",
    "Event",
    "FileContext",
    "Freshness",
    "GovernAction",
    "GovernResult",
    "HandoffResult",
    "Hit",
    "IndexCoverage",
    "MemorizeResult",
    "PatchResult",
    "Polarity",
    "Promotion",
    "RecallResult",
    "Session",
    "Scope",
    "StaleMemory",
    "Stats",
    "Status",
    "Timeline",
]

AtomType = Literal["session", "decision", "preference", "fact", "playbook", "warning", "handoff", "lesson"]
ATOM_TYPES: tuple[str, ...] = AtomType.__args__  # type: ignore[attr-defined]
Epistemic = Literal["actual", "necessary", "possible"]
Polarity = Literal["affirmative", "negative", "conditional"]
Status = Literal["active", "negated", "superseded", "quarantined", "sealed", "tombstoned", "pending"]
# merged: a reworded restatement of a memory of the scope, kept as a record of that memory (`atom_id`)
Effect = Literal["applied", "no_op", "merged"]  # a refusal is raised (errors.Rejected), not returned
CorrectAction = Literal["negate", "confirm_actual", "confirm_necessary", "demote", "replace"]
GovernAction = Literal["quarantine", "seal", "tombstone", "derive_lesson"]
CORRECT_ACTIONS: tuple[str, ...] = CorrectAction.__args__  # type: ignore[attr-defined]
GOVERN_ACTIONS: tuple[str, ...] = GovernAction.__args__  # type: ignore[attr-defined]

Freshness = Literal["current", "code_changed"]
ChangeKind = Literal[
    "file_deleted", "file_renamed", "file_changed", "symbol_changed", "symbol_removed", "symbol_moved", "symbol_renamed"
]

GLOBAL_REPOSITORY = "*"


class Scope(BaseModel):
    """Where a memory belongs. Inferred from the working directory, never taken from an agent."""

    tenant_id: str
    workspace: str = ""
    repository: str = GLOBAL_REPOSITORY
    branch: str = ""
    root: str = Field("", description="Absolute directory the scope was inferred from (empty for global).")

    @property
    def is_global(self) -> bool:
        return self.repository == GLOBAL_REPOSITORY

    @property
    def scope_hash(self) -> str:
        return _scope_hash(self.tenant_id, self.workspace, self.repository, self.root)

    @property
    def name(self) -> str:
        if self.is_global:
            return f"{self.tenant_id}/global"
        return f"{self.workspace}/{self.repository}" if self.workspace else self.repository

    def global_scope(self) -> Scope:
        return Scope(tenant_id=self.tenant_id)


class Atom(BaseModel):
    """One stored memory, as the engine sees it."""

    id: str
    content: str
    type: AtomType
    source: str
    scope: Scope
    scope_hash: str
    epistemic: Epistemic
    polarity: Polarity
    status: Status
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    tags: list[str] = Field(default_factory=list)
    triggers: list[str] = Field(default_factory=list)
    supersedes: str | None = None
    superseded_by: str | None = None
    prior_status: Status | None = None
    entities: list[str] = Field(default_factory=list)
    last_accessed_at: datetime | None = None
    vault_path: str | None = Field(None, description="Markdown file, relative to the vault root.")
    written_at: datetime | None = Field(
        None, description="When it was written at its source (an imported note's date); None: when stored here."
    )

    @property
    def written(self) -> datetime:
        """When the memory was written: at its source if known, else when it was stored."""
        return self.written_at or self.created_at


class Event(BaseModel):
    """One entry of the append-only, hash-chained audit log."""

    seq: int
    id: str
    atom_id: str | None
    actor: str
    action: str
    reason: str | None
    at: datetime
    content_hash: str | None
    content: str | None = Field(None, description="The content at this event, unless scrubbed.")
    prev_hash: str
    hash: str


class ChainReport(BaseModel):
    ok: bool
    events: int
    first_bad_seq: int | None = None
    problem: str | None = None


class MemorizeResult(BaseModel):
    atom_id: str | None = Field(None, description="ULID of the atom (the existing one when deduplicated).")
    effect: Effect
    reason: str | None = Field(None, description="Why it was deduplicated, held or rejected.")
    deduped_with: str | None = Field(None, description="The existing atom's id (no_op only).")
    status: Status | None = Field(None, description="Stored status: active, or pending when held for review.")
    promotion_id: int | None = None
    dura: dict[str, float] | None = None
    anchors: list[str] | None = Field(None, description="Code it was anchored to: path or path::symbol.")
    anchor_note: str | None = Field(None, description="Why named code was not anchored (e.g. outside git).")
    path: str | None = Field(None, description="The memory's markdown file (active memories only).")
    supersedes: str | None = Field(None, description="The memory it replaced, now superseded (applied only).")
    superseded_by: str | None = Field(
        None, description="A newer memory it is already superseded by (an older note stored later)."
    )
    restatement_id: str | None = Field(None, description="merged only: the record that keeps the new wording.")
    review: str | None = Field(None, description="A memory it may supersede, listed for review, not applied.")


class CodeChange(BaseModel):
    """One way the code moved past a memory's anchor (see `memoryd.anchors.drift`)."""

    kind: ChangeKind
    path: str = Field(description="The anchored file, relative to the repository root.")
    symbol: str | None = Field(None, description="The anchored symbol (symbol kinds only).")
    since: str | None = Field(None, description="The commit the anchor was taken at (abbreviated).")
    to: str | None = Field(None, description="Where it went (file_renamed, symbol_moved, symbol_renamed).")
    new_symbol: str | None = Field(None, description="symbol_renamed: the name the same body has now.")
    aspect: str | None = Field(
        None,
        description="symbol_changed: signature, body, members (a class's members' signatures), "
        "annotation_only or docstring_only (the last two leave the memory current); symbol_moved: how the "
        "definition changed on the way (none: the same definition).",
    )
    detail: str = Field(description="The change in words.")


class Hit(BaseModel):
    atom: Atom
    score: float
    signals: dict[str, float] = Field(default_factory=dict)
    freshness: Freshness | None = Field(None, description="Anchored memories only: did the code move on?")
    code_changes: list[CodeChange] | None = None


class StaleMemory(BaseModel):
    """A memory whose anchored code changed, and how."""

    atom: Atom
    changes: list[CodeChange]


class FileContext(BaseModel):
    """The memories anchored to one file, as context for an agent opening it."""

    path: str = Field(description="The file, relative to the repository root.")
    text: str = Field(description="The context (empty when nothing new is anchored there).")
    memory_ids: list[str] = Field(default_factory=list, description="The memories in the text, newest first.")
    tokens: int = Field(0, description="Estimated tokens of the text.")
    left_out: int = Field(0, description="Anchored memories that did not fit the budget.")


class RecallResult(BaseModel):
    hits: list[Hit]


class CorrectResult(BaseModel):
    effect: Literal["applied"]
    target_atom: str
    new_atom_id: str | None = None


class GovernResult(BaseModel):
    effect: Literal["applied"]
    target_atom: str
    lesson_atom_id: str | None = None


class HandoffResult(BaseModel):
    atom_id: str
    effect: Literal["applied"]


class IndexCoverage(BaseModel):
    semantic: int
    keyword: int
    temporal: int
    categorical: int


class Stats(BaseModel):
    atoms: int
    edges: int
    indexes: IndexCoverage
    snapshot_version: int
    by_status: dict[str, int] = Field(default_factory=dict)


class PatchResult(BaseModel):
    """A memory changed in place: the memory as stored now and what changed."""

    atom: Atom
    updated_fields: list[str] = Field(description="Of content, tags, triggers and title.")
    path: str | None = None


class Timeline(BaseModel):
    since: datetime = Field(description="Where the window starts.")
    memories: list[Atom]


class Brief(BaseModel):
    text: str
    handoff: Atom | None = None
    constraints: list[Atom] = Field(default_factory=list)
    preferences: list[Atom] = Field(default_factory=list)
    decisions: list[Atom] = Field(default_factory=list)
    pending_review: int = 0
    empty_store: bool = False
    code_changed: list[StaleMemory] = Field(default_factory=list, description="Code moved since the last session.")


class Session(BaseModel):
    id: str = Field(description="Also the id of the session's memory (type session).")
    source: str
    title: str
    scope_hash: str
    started_at: datetime
    ended_at: datetime | None = None
    summary: str | None = None


class Promotion(BaseModel):
    """A candidate long-term memory awaiting review, with its DURA scores."""

    id: int
    atom_id: str
    scope_hash: str
    origin: str = Field(description="save (agent save in the grey zone) or observation (transcript).")
    durability: float
    utility: float
    relevance: float
    accuracy: float
    average: float
    reasoning: str
    status: Literal["pending", "promoted", "rejected"]
    created_at: datetime
    decided_at: datetime | None = None
