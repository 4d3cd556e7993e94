"""The `Store` protocol: everything the engine needs from a database, and nothing more.

Arguments and results are memoryd models, typed records or plain values, never driver objects,
so both backends (SQLite, PostgreSQL) implement one surface, and the engine calls nothing else
(tests/test_store_protocol.py runs the engine on a store that exposes only these names).

Writes happen inside `transaction()`: one transaction, one `snapshot_version` increment. Reads made
by the thread that holds an open transaction see its uncommitted writes; every other read sees the
last committed state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from ..models import Atom, AtomType, Epistemic, Event, Polarity, Promotion, Session, Status

__all__ = [
    "AccessRequest", "AtomUpdate", "CandidateFacts", "EntityCount",
    "GroupCounts", "Row", "ScopeCount", "Store", "StoreCounts", "StoreTx", "TermStats", "Tracer",
    "VaultRecord", "Vector",
]  # fmt: skip

Vector = NDArray[np.float32]
TermStats = tuple[int, dict[str, int]]  # (indexed atoms, document frequency of each term)
Row = tuple[object, ...]  # one table row in the backend-neutral form of `export_rows`
Tracer = Callable[[str, Sequence[object]], None]

@dataclass(frozen=True, slots=True)
class CandidateFacts:
    """What recall needs to score one candidate; full atoms are loaded for the top hits only."""

    status: str
    scope_hash: str
    type: str
    epistemic: str
    updated_at: datetime
    last_accessed_at: datetime | None
    terms: tuple[str, ...]  # the keyword terms indexed for the atom
    entities: tuple[str, ...]


# The columns `StoreTx.update_atom` may change; `updated_at` defaults to now.
AtomUpdate = TypedDict("AtomUpdate", {
    "content": str, "norm_hash": str | None, "type": AtomType, "epistemic": Epistemic, "polarity": Polarity,
    "status": Status, "prior_status": Status | None, "title": str | None, "tags": list[str], "triggers": list[str],
    "supersedes": str | None, "superseded_by": str | None, "updated_at": datetime, "vault_path": str | None,
    "vault_digest": str | None, "tenant_id": str, "workspace": str, "repository": str, "branch": str,
    "scope_root": str, "scope_hash": str,
}, total=False)  # fmt: skip
# semantic: live atoms with a vector; keyword: atoms in the keyword index
StoreCounts = TypedDict("StoreCounts", {"atoms": int, "by_status": dict[str, int], "edges": int, "semantic": int,
                                        "keyword": int, "temporal": int, "categorical": int})  # fmt: skip
ScopeCount = TypedDict("ScopeCount", {"name": str, "count": int})
EntityCount = TypedDict("EntityCount", {"id": str, "count": int})
GroupCounts = TypedDict("GroupCounts", {"by_type": dict[str, int], "by_scope": dict[str, ScopeCount],
                                        "top_entities": list[EntityCount]})  # fmt: skip
AccessRequest = TypedDict("AccessRequest", {"id": int, "scope_hash": str, "reason": str, "requested_at": str})


class VaultRecord(NamedTuple):
    status: str
    path: str | None  # relative to the vault root
    digest: str | None


class StoreTx(Protocol):
    """The write half, valid inside one `Store.transaction()`."""

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: Vector | None) -> None: ...
    def update_atom(self, atom_id: str, **fields: Unpack[AtomUpdate]) -> None: ...
    # re-index an atom whose content, title, tags or triggers changed in place
    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None: ...
    def link(self, src: str, dst: str, kind: str) -> None: ...
    def unlink_entities(self, atom_id: str) -> None: ...
    def append_event(self, *, atom_id: str | None, actor: str, action: str, reason: str | None,
                     content: str | None) -> Event: ...  # fmt: skip
    # destroy an atom's content everywhere: row, keyword index, vector, entity edges, event payloads
    def scrub_atom(self, atom_id: str) -> None: ...
    # scrub, then remove the row, edges, session and promotion; the events stay (hashes only)
    def delete_atom(self, atom_id: str) -> None: ...
    def insert_session(self, session: Session) -> None: ...
    def end_session(self, session_id: str, summary: str) -> None: ...
    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int: ...  # fmt: skip
    def decide_promotion(self, promotion_id: int, status: str) -> None: ...
    def rescope_promotions(self, old: str, new: str) -> None: ...
    def mark_sensitive(self, scope_hash: str, name: str, sensitive: bool) -> None: ...
    def add_grant(self, scope_hash: str, granted_by: str, expires_at: datetime) -> None: ...
    def add_access_request(self, scope_hash: str, reason: str) -> int: ...


class Store(Protocol):
    where: str  # where the data lives (a path, host:port/database), for messages
    tracer: Tracer | None  # called with every statement and its parameters (debugging, benchmarks)

    def transaction(self) -> AbstractContextManager[StoreTx]: ...
    def close(self) -> None: ...

    # -- atoms ---------------------------------------------------------------------------------
    def get_atoms(self, atom_ids: Iterable[str]) -> dict[str, Atom]: ...
    # the oldest active or pending atom of the scope with this normalised-content hash
    def find_duplicate(self, scope_hash: str, norm_hash: str) -> Atom | None: ...
    # atoms matching every given filter, in creation order; limit=-1 for all
    def list_atoms(self, *, scope_hashes: Sequence[str] | None = None, statuses: Sequence[str] | None = None,
                   types: Sequence[str] | None = None, epistemic: str | None = None, limit: int = 100,
                   newest_first: bool = True) -> list[Atom]: ...  # fmt: skip
    # active atoms created just before and just after `atom_id` in its scope
    def neighbors(self, atom_id: str, *, scope_hash: str, n: int) -> tuple[list[Atom], list[Atom]]: ...
    # active atoms created at or after `since`, newest first
    def atoms_since(self, *, scope_hashes: Sequence[str], since: datetime, types: Sequence[str] | None,
                    limit: int) -> list[Atom]: ...  # fmt: skip
    def vault_digests(self) -> dict[str, VaultRecord]: ...  # every atom's status and markdown file
    # record that atoms were read (feeds decay): no event, no snapshot bump, never waits for a writer
    # (a busy store records the time later, or not at all: access times are a hint)
    def touch(self, atom_ids: Sequence[str]) -> None: ...

    # -- search --------------------------------------------------------------------------------
    def term_stats(self, terms: Sequence[str]) -> TermStats: ...
    # up to `limit` atoms holding query terms, best first; `stats` = term_stats(terms) if already read
    def keyword_candidates(self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str],
                           limit: int, stats: TermStats | None = None) -> list[str]: ...  # fmt: skip
    # atoms mentioning the most of these entities (their newest mentions), best first
    def atoms_for_entities(self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str],
                           statuses: Sequence[str], limit: int) -> list[str]: ...  # fmt: skip
    # the k atoms (of these scopes) whose vectors are closest to `query`, with their cosines
    def vector_candidates(self, query: Vector, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]: ...
    # the cosine of `query` with each listed atom's vector (atoms without one are left out)
    def cosines(self, query: Vector, atom_ids: Sequence[str]) -> dict[str, float]: ...
    def candidate_facts(self, atom_ids: Sequence[str]) -> dict[str, CandidateFacts]: ...
    def warm(self) -> None: ...  # load what searches need in memory (servers, at start)

    # -- audit, sessions, review, sensitive scopes ---------------------------------------------
    def events(self, atom_id: str | None = None) -> list[Event]: ...  # oldest first
    def get_session(self, session_id: str) -> Session | None: ...
    # promotions in a DURA-average window, lowest average first
    def list_promotions(self, *, scope_hashes: Sequence[str] | None, status: str = "pending", min_score: float = 0.0,
                        max_score: float = 1.0, types: Sequence[str] | None = None,
                        limit: int = 10) -> list[Promotion]: ...  # fmt: skip
    def get_promotions(self, ids: Sequence[int]) -> dict[int, Promotion]: ...
    def is_sensitive(self, scope_hash: str) -> bool: ...
    def grant_expiry(self, scope_hash: str) -> datetime | None: ...  # of the latest running grant
    def access_requests(self) -> list[AccessRequest]: ...

    # -- health and administration -------------------------------------------------------------
    def counts(self) -> StoreCounts: ...
    # live atoms by type and by scope, and the ten most mentioned entities
    def group_counts(self, scope_hashes: Sequence[str] | None) -> GroupCounts: ...
    def snapshot_version(self) -> int: ...
    def integrity(self) -> str: ...  # "ok", or what the database's own check found
    def dangling_edges(self) -> int: ...
    def applied_migrations(self) -> list[tuple[int, str]]: ...
    def latest_migration(self) -> int: ...  # the schema version this code expects
    def table_counts(self) -> dict[str, int]: ...  # rows of every table a copy carries
    # (table, its total rows, a batch of its rows) for every table, in an order `import_rows` loads
    def export_rows(self, batch: int = 500) -> Iterator[tuple[str, int, list[Row]]]: ...
    # load another store's rows (`export_rows`) into this empty store, in one transaction
    def import_rows(self, snapshot_version: int, batches: Iterable[tuple[str, list[Row]]]) -> None: ...
