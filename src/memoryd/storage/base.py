"""The `Store` protocol: everything the engine needs from a database, and nothing more, by role.

Each role is a small protocol (memories, index, records, audit, outbox, access, reports, maintenance);
`Store` is every read role plus `transaction()`, `StoreTx` every write role. A part of the engine is
typed with the roles it uses, so its constructor says what it may touch.

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
from typing import Any, NamedTuple, Protocol, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from ..anchors.model import Anchor
from ..shared.models import Atom, AtomType, Epistemic, Event, Polarity, Promotion, Session, Status

__all__ = [
    "AccessRequest", "AtomFilter", "AtomUpdate", "CandidateFacts", "EntityCount",
    "GroupCounts", "LastUsedWindow", "OutboxEntry", "Row", "ScopeCount", "Store", "StoreCounts", "StoreTx", "TermStats", "Tracer",
    "TokenRecord", "VaultRecord", "Vector",
    # the roles
    "AccessReads", "AccessWrites", "AuditReads", "AuditWrites", "IndexReads", "IndexWrites", "Maintenance", "MemoryReads",
    "MemoryWrites", "OutboxReads", "OutboxWrites", "RecordWrites", "Reports",
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
    polarity: str = "affirmative"  # negation queries prefer negative memories
    cos: float | None = None  # with `candidate_facts(query=...)`: the query's cosine (None: no vector of its size)


@dataclass(frozen=True, slots=True)
class LastUsedWindow:
    """Atoms of `types` last used (max of updated and read) in [since, before); `necessary` filters epistemic."""

    types: tuple[str, ...]
    since: datetime | None = None
    before: datetime | None = None
    necessary: bool | None = None  # True: only hard constraints; False: all but them; None: both


@dataclass(frozen=True, slots=True)
class AtomFilter:
    """What the console's Memories page asks of the store; every field narrows, None means any.

    `before` is a keyset cursor (an atom id: only atoms stored before it); rows come newest
    first. `last_used` windows are OR-ed (the engine turns a decay state into them).
    """

    scope_hashes: tuple[str, ...] | None = None
    exclude_scopes: tuple[str, ...] = ()
    statuses: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    source: str | None = None
    tag: str | None = None
    tag_terms: tuple[str, ...] = ()  # the keyword terms `tag` was indexed under: a prefilter a backend may use
    entity: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    last_used: tuple[LastUsedWindow, ...] | None = None
    before: str | None = None
    limit: int = 50


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
# a vault file not published yet: (atom id, the token of the transaction that queued it, a path to remove)
OutboxEntry = tuple[str, str, str | None]


class VaultRecord(NamedTuple):
    status: str
    path: str | None  # relative to the vault root
    digest: str | None


class TokenRecord(NamedTuple):
    """A team server token as stored: never the secret, only its salted digest."""

    id: str
    tenant_id: str
    label: str
    salt: str
    digest: str
    read_only: bool
    scopes: list[str]  # "workspace/repository" names or "global"; empty: every scope of the tenant
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


# -- the write half, by role: valid inside one `Store.transaction()` ---------------------------------


class MemoryWrites(Protocol):
    """Changes to a memory's row. Inside `Core.write()` each one is tracked: the atom's vault file follows."""

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: Vector | None) -> None: ...
    def update_atom(self, atom_id: str, **fields: Unpack[AtomUpdate]) -> None: ...
    # destroy an atom's content everywhere: row, keyword index, vector, entity edges, event payloads
    def scrub_atom(self, atom_id: str) -> None: ...
    # scrub, then remove the row, edges, session and promotion; the events stay (hashes only)
    def delete_atom(self, atom_id: str) -> None: ...


class IndexWrites(Protocol):
    """A memory's index entries: keyword terms and vector, entity edges, code anchors (no file follows)."""

    # re-index an atom whose content, title, tags or triggers changed in place
    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None: ...
    def set_model_vector(self, atom_id: str, model: str, vector: Vector) -> None: ...  # the atom's vector of `model`
    def link(self, src: str, dst: str, kind: str) -> None: ...
    def unlink(self, src: str, dst: str, kind: str) -> None: ...  # one edge between two atoms
    def unlink_entities(self, atom_id: str) -> None: ...
    def set_anchors(self, atom_id: str, anchors: Sequence[Anchor]) -> None: ...  # replace them (none: remove)


class RecordWrites(Protocol):
    """Session records and the review queue (promotions) of memories (no file follows)."""

    def insert_session(self, session: Session) -> None: ...
    def end_session(self, session_id: str, summary: str) -> None: ...
    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int: ...  # fmt: skip
    def decide_promotion(self, promotion_id: int, status: str) -> None: ...
    def rescope_promotions(self, old: str, new: str) -> None: ...


class AuditWrites(Protocol):
    """The audit chain's one write (inside `Core.write()` it names the actor's person and token)."""

    def append_event(self, *, atom_id: str | None, actor: str, action: str, reason: str | None,
                     content: str | None) -> Event: ...  # fmt: skip


class OutboxWrites(Protocol):
    """The vault outbox (written by `engine/tracked.py` only)."""

    # record that this transaction's change of `atom_id` must reach the vault after commit
    def outbox_add(self, atom_id: str, token: str, remove_path: str | None) -> None: ...


class AccessWrites(Protocol):
    """Sensitive scopes, grants, requests, tokens, teams, shares: no vault file follows, so not tracked."""

    def mark_sensitive(self, scope_hash: str, name: str, sensitive: bool) -> None: ...
    def add_grant(self, scope_hash: str, granted_by: str, expires_at: datetime) -> None: ...
    def add_access_request(self, scope_hash: str, reason: str) -> int: ...
    def add_token(self, token: TokenRecord) -> None: ...
    def revoke_token(self, token_id: str, at: datetime) -> bool: ...  # False: no such token, or already revoked
    def add_team(self, name: str) -> bool: ...  # False: it exists
    def add_member(self, team: str, tenant_id: str) -> bool: ...  # False: already a member
    def share(self, workspace: str, repository: str, team: str) -> None: ...  # the repository's team (replaced)


class StoreTx(MemoryWrites, IndexWrites, RecordWrites, AuditWrites, OutboxWrites, AccessWrites, Protocol):
    """The write half, valid inside one `Store.transaction()`: every write role."""


# -- the read half, by role ---------------------------------------------------------------------------


class MemoryReads(Protocol):
    """Memory rows: atoms, sessions, promotions, code anchors (every part that reads a memory)."""

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
    def get_session(self, session_id: str) -> Session | None: ...
    # promotions in a DURA-average window, lowest average first
    def list_promotions(self, *, scope_hashes: Sequence[str] | None, status: str = "pending", min_score: float = 0.0,
                        max_score: float = 1.0, types: Sequence[str] | None = None,
                        limit: int = 10) -> list[Promotion]: ...  # fmt: skip
    def get_promotions(self, ids: Sequence[int]) -> dict[int, Promotion]: ...
    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]: ...  # of the atoms that have any
    # anchored atoms of these scopes, newest first; `path` (file or directory) and `symbol` (qualified
    # name or its last parts) narrow them to anchors on that code
    def anchored_atoms(self, *, scope_hashes: Sequence[str], statuses: Sequence[str], path: str | None = None,
                       symbol: str | None = None, limit: int = 1000) -> list[str]: ...  # fmt: skip
    # (src, dst) of the atom-to-atom edges of `kind` whose source is in these scopes, newest first
    def atom_edges(self, kind: str, *, scope_hashes: Sequence[str] | None, limit: int) -> list[tuple[str, str]]: ...
    # record that atoms were read (feeds decay): no event, no snapshot bump, never waits for a writer
    # (a busy store records the time later, or not at all: access times are a hint)
    def touch(self, atom_ids: Sequence[str]) -> None: ...


class IndexReads(Protocol):
    """Recall's candidates and weights (the read path of a recall)."""

    # (indexed atoms, atoms holding each term) over these scopes only: a recall's weights never depend
    # on what it cannot read (another tenant's writes move no score)
    def term_stats(self, terms: Sequence[str], *, scope_hashes: Sequence[str]) -> TermStats: ...
    # up to `limit` atoms holding query terms, best first; `stats` = term_stats(terms, scope_hashes=…) if read
    def keyword_candidates(self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str],
                           limit: int, stats: TermStats | None = None) -> list[str]: ...  # fmt: skip
    # atoms mentioning the most of these entities (their newest mentions), best first
    def atoms_for_entities(self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str],
                           statuses: Sequence[str], limit: int) -> list[str]: ...  # fmt: skip
    # the k atoms (of these scopes) whose vectors are closest to `query`, with their cosines
    def vector_candidates(self, query: Vector, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]: ...
    # each listed atom's scoring facts; with `query`, each one's `cos` as `cosines` gives it, in the same read
    def candidate_facts(self, atom_ids: Sequence[str], *, query: Vector | None = None) -> dict[str, CandidateFacts]: ...
    # the cosine of `query` with each listed atom's vector of `model` (atoms without one, or of another size, left out)
    def model_cosines(self, model: str, query: Vector, atom_ids: Sequence[str]) -> dict[str, float]: ...
    # up to `limit` atoms with content and no vector of `model`, oldest first: (id, content)
    def missing_model_vectors(self, model: str, *, limit: int) -> list[tuple[str, str]]: ...
    # for each listed atom, the next atom created in its scope (one of `statuses`) within the window: a
    # conversation saved turn by turn answers a question in the turn after it
    def successors(self, atom_ids: Sequence[str], *, statuses: Sequence[str],
                   within_seconds: float) -> dict[str, str]: ...  # fmt: skip
    def warm(self) -> None: ...  # load what searches need in memory (servers, at start)
    # remember that a recall ran and what it returned (no query text): a hint like `touch`, never
    # waits for a writer and never fails a read
    def log_recall(self, scope_hash: str, hit_ids: Sequence[str]) -> None: ...


class AuditReads(Protocol):
    """The audit chain."""

    def events(self, atom_id: str | None = None) -> list[Event]: ...  # oldest first
    # one more per write transaction; of some scopes: the audit events on their memories (no other scope's
    # writes move it)
    def snapshot_version(self, scope_hashes: Sequence[str] | None = None) -> int: ...


class OutboxReads(Protocol):
    """The vault's bookkeeping: which file each atom has, and changes not published yet."""

    def vault_digests(self) -> dict[str, VaultRecord]: ...  # every atom's status and markdown file
    def vault_state(self, atom_ids: Sequence[str]) -> dict[str, VaultRecord]: ...  # of the listed atoms that exist
    def outbox(self) -> list[OutboxEntry]: ...  # every change whose vault file is not published yet
    # forget published changes (atom id, token), each only if no later transaction re-queued its atom;
    # bookkeeping, not memory data: a write of its own without a snapshot bump
    def clear_outbox(self, entries: Sequence[tuple[str, str]]) -> None: ...


class AccessReads(Protocol):
    """Who may read what: sensitive scopes, grants and requests; the team server's tokens, teams and shares."""

    def is_sensitive(self, scope_hash: str) -> bool: ...
    def sensitive_scopes(self) -> list[tuple[str, str]]: ...  # (scope hash, name), by name
    def grant_expiry(self, scope_hash: str) -> datetime | None: ...  # of the latest running grant
    def access_requests(self) -> list[AccessRequest]: ...
    def get_token(self, token_id: str) -> TokenRecord | None: ...
    def tokens(self) -> list[TokenRecord]: ...  # oldest first
    def teams(self) -> dict[str, list[str]]: ...  # team -> members, by name
    def shares(self) -> list[tuple[str, str, str]]: ...  # (workspace, repository, team), by name
    def shared_team(self, workspace: str, repository: str) -> str | None: ...  # the team a repository is shared with
    def is_member(self, team: str, tenant_id: str) -> bool: ...
    def token_for_request(
        self, token_id: str, workspace: str, repository: str
    ) -> tuple[TokenRecord | None, str | None]: ...

    # (the token, the team the repository is shared with when the token's person is a member): one read


class Reports(Protocol):
    """Read models of the console and the stats: counts, listings, growth, recall log."""

    def counts(self, scope_hashes: Sequence[str] | None = None) -> StoreCounts: ...  # of these scopes (None: all)
    # live atoms by type and by scope, and the ten most mentioned entities
    def group_counts(self, scope_hashes: Sequence[str] | None) -> GroupCounts: ...
    # atoms matching `f`, newest first, at most `f.limit`, after the cursor `f.before`
    def browse_atoms(self, f: AtomFilter) -> list[Atom]: ...
    # how many atoms match `f` (cursor and limit ignored), counting no further than `cap`
    def count_atoms(self, f: AtomFilter, *, cap: int | None = None) -> int: ...
    # sessions newest first (keyset on the session id, a ULID)
    def list_sessions(self, *, before: str | None, limit: int, exclude_scopes: Sequence[str] = ()) -> list[Session]: ...
    # (src, dst, kind) of every atom-to-atom edge touching `atom_id` (supersedes, derived_from, …)
    def atom_links(self, atom_id: str) -> list[tuple[str, str, str]]: ...
    # the most mentioned entities (by atoms in any state and scope: an index-only count)
    def top_entities(self, *, limit: int) -> list[tuple[str, int]]: ...
    # the asked parts of: by_status, by_type, by_scope (atom counts), edges; each from an index alone
    def console_counts(
        self, parts: Sequence[str] = ("by_status", "by_type", "by_scope", "edges")
    ) -> dict[str, Any]: ...
    # display name (`owner/repo`, `tenant/global`) of each scope that holds atoms
    def scope_names(self, scope_hashes: Sequence[str]) -> dict[str, str]: ...
    # (entity id, atom id): the newest `per_entity` active atoms mentioning each entity
    def entity_mentions(self, entity_ids: Sequence[str], *, per_entity: int,
                        exclude_scopes: Sequence[str] = ()) -> list[tuple[str, str]]: ...  # fmt: skip
    def growth(self, since: datetime) -> list[tuple[str, int]]: ...  # (UTC day, atoms created) from `since`, by day
    # recorded recalls of these scopes in [since, until], newest first: at, scope_hash, hits
    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]: ...  # fmt: skip


class Maintenance(Protocol):
    """Health, schema and whole-store copies."""

    def integrity(self) -> str: ...  # "ok", or what the database's own check found
    def dangling_edges(self) -> int: ...
    def applied_migrations(self) -> list[tuple[int, str]]: ...
    def latest_migration(self) -> int: ...  # the schema version this code expects
    def table_counts(self) -> dict[str, int]: ...  # rows of every table a copy carries
    # (table, its total rows, a batch of its rows) for every table, in an order `import_rows` loads
    def export_rows(self, batch: int = 500) -> Iterator[tuple[str, int, list[Row]]]: ...
    # load another store's rows (`export_rows`) into this empty store, in one transaction
    def import_rows(self, snapshot_version: int, batches: Iterable[tuple[str, list[Row]]]) -> None: ...


class Store(MemoryReads, IndexReads, AuditReads, OutboxReads, AccessReads, Reports, Maintenance, Protocol):
    """A whole store: every read role, and `transaction()` for the write roles."""

    where: str  # where the data lives (a path, host:port/database), for messages
    tracer: Tracer | None  # called with every statement and its parameters (debugging, benchmarks)

    def transaction(self) -> AbstractContextManager[StoreTx]: ...
    def acting_for(self, person: str) -> Store: ...  # for one person's requests (read-your-writes on standbys)
    def close(self) -> None: ...
