"""The `Store` protocol: everything the engine needs from a database, and nothing more.

Arguments and results are memoryd models or plain values, never driver objects, so a
second backend (PostgreSQL) implements the same surface. Writes happen inside
`transaction()`: one transaction, one `snapshot_version` increment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..anchors.model import Anchor
from ..models import Atom, Event, Session

__all__ = [
    "KEYWORD_BIG_TERMS", "KEYWORD_POSTINGS_BUDGET", "AtomFilter", "CandidateFacts", "LastUsedWindow", "Store", "StoreTx",
    "selective_terms",
]  # fmt: skip

# Keyword candidates: while the query terms' postings (documents holding each term, summed) stay
# within the budget, every term takes part; above it, only the most selective ones do (at most
# KEYWORD_BIG_TERMS, always at least the rarest), so a query costs the same on any store size.
KEYWORD_POSTINGS_BUDGET = 6000
KEYWORD_BIG_TERMS = 6


def selective_terms(terms: Sequence[str], df: dict[str, int]) -> tuple[list[str], bool]:
    """(terms to match on, whether the budget cut them); terms no atom holds are dropped."""
    present = [t for t in dict.fromkeys(terms) if df.get(t, 0) > 0]
    if sum(df[t] for t in present) <= KEYWORD_POSTINGS_BUDGET:
        return present, False
    chosen: list[str] = []
    covered = 0
    for term in sorted(present, key=lambda t: df[t])[:KEYWORD_BIG_TERMS]:
        if chosen and covered + df[term] > KEYWORD_POSTINGS_BUDGET:
            break
        chosen.append(term)
        covered += df[term]
    return chosen, True


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
    polarity: str = "affirmative"  # issue 12 (recall): negation queries prefer negative memories


# -- console (issue 14): filtered, keyset-paged listing ----------------------------------------


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


class StoreTx(Protocol):
    """The write half, valid inside one `Store.transaction()`."""

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: np.ndarray | None) -> None: ...

    def update_atom(self, atom_id: str, **fields: Any) -> None: ...

    def link(self, src: str, dst: str, kind: str) -> None: ...

    def append_event(
        self, *, atom_id: str | None, actor: str, action: str, reason: str | None, content: str | None
    ) -> Event: ...

    def scrub_atom(self, atom_id: str) -> None:
        """Destroy an atom's content everywhere: row, keyword index, vector, edges, payloads, anchors."""
        ...

    # -- code anchors (issue 13) -------------------------------------------------------------

    def set_anchors(self, atom_id: str, anchors: Sequence[Anchor]) -> None:
        """Replace the anchors of an atom (none: remove them)."""
        ...

    # -- end code anchors --------------------------------------------------------------------


class Store(Protocol):
    def transaction(self) -> AbstractContextManager[StoreTx]: ...

    def get_atoms(self, atom_ids: Iterable[str]) -> dict[str, Atom]: ...

    def find_duplicate(self, scope_hash: str, norm_hash: str) -> Atom | None: ...

    def list_atoms(
        self,
        *,
        scope_hashes: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        epistemic: str | None = None,
        limit: int = 100,
        newest_first: bool = True,
    ) -> list[Atom]: ...

    def keyword_candidates(
        self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int,
        stats: tuple[int, dict[str, int]] | None = None,
    ) -> list[str]:
        """Up to `limit` atoms holding query terms, best first; `stats` = `term_stats(terms)` if already read."""
        ...

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(number of indexed atoms, document frequency of each term)."""
        ...

    def candidate_facts(self, atom_ids: Sequence[str]) -> dict[str, CandidateFacts]:
        """Scoring facts of each listed atom that still exists (one or two queries)."""
        ...

    def atoms_for_entities(
        self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int
    ) -> list[str]: ...

    # -- issue 12 (recall): the memory saved right after another one -------------------------------

    def successors(self, atom_ids: Sequence[str], *, statuses: Sequence[str], within_seconds: float) -> dict[str, str]:
        """For each listed atom, the next atom created in its scope (one of `statuses`) within the window.

        A conversation saved turn by turn answers a question in the turn after it; recall uses this
        to pass part of a matching question's score to its reply.
        """
        ...

    def vector_candidates(self, query: np.ndarray, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The k atoms (of these scopes) whose vectors are closest to `query`, with cosines."""
        ...

    def warm(self) -> None:
        """Load whatever searches need in memory (servers call it at start)."""
        ...

    def cosines(self, query: np.ndarray, atom_ids: Sequence[str]) -> dict[str, float]:
        """Cosine of `query` with each listed atom's vector (atoms without one are left out)."""
        ...

    # -- code anchors (issue 13) -------------------------------------------------------------

    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]:
        """The anchors of each listed atom that has any."""
        ...

    def anchored_atoms(
        self, *, scope_hashes: Sequence[str], statuses: Sequence[str], path: str | None = None,
        symbol: str | None = None, limit: int = 1000,
    ) -> list[str]:
        """Anchored atoms of these scopes, newest first; `path` (file or directory) and `symbol`
        (qualified name or its last parts) narrow them to anchors on that code."""
        ...

    # -- end code anchors --------------------------------------------------------------------

    def events(self, atom_id: str | None = None) -> list[Event]: ...

    def counts(self) -> dict[str, Any]: ...

    def snapshot_version(self) -> int: ...

    def checkpoint(self) -> None:
        """Flush and compact so deleted content leaves the files on disk."""
        ...

    def close(self) -> None: ...

    # -- console (issue 14) --------------------------------------------------------------------

    def browse_atoms(self, f: AtomFilter) -> list[Atom]:
        """Atoms matching `f`, newest first, at most `f.limit`, after the cursor `f.before`."""
        ...

    def count_atoms(self, f: AtomFilter, *, cap: int | None = None) -> int:
        """How many atoms match `f` (cursor and limit ignored), counting no further than `cap`."""
        ...

    def list_sessions(self, *, before: str | None, limit: int, exclude_scopes: Sequence[str] = ()) -> list[Session]:
        """Sessions newest first (keyset on the session id, a ULID)."""
        ...

    def atom_links(self, atom_id: str) -> list[tuple[str, str, str]]:
        """(src, dst, kind) of every atom-to-atom edge touching `atom_id` (supersedes, derived_from, …)."""
        ...

    def top_entities(self, *, limit: int) -> list[tuple[str, int]]:
        """The most mentioned entities (mentions by atoms in any state and scope: an index-only count)."""
        ...

    def console_counts(self, parts: Sequence[str] = ("by_status", "by_type", "by_scope", "edges")) -> dict[str, Any]:
        """The asked parts of: by_status, by_type, by_scope (atom counts), edges; each from an index alone."""
        ...

    def scope_names(self, scope_hashes: Sequence[str]) -> dict[str, str]:
        """Display name (`owner/repo`, `tenant/global`) of each scope that holds atoms."""
        ...

    def entity_mentions(
        self, entity_ids: Sequence[str], *, per_entity: int, exclude_scopes: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """(entity id, atom id): the newest `per_entity` active atoms mentioning each entity."""
        ...

    def growth(self, since: datetime) -> list[tuple[str, int]]:
        """(UTC day YYYY-MM-DD, atoms created that day) from `since` on, oldest first."""
        ...

    def log_recall(self, scope_hash: str, hit_ids: Sequence[str]) -> None:
        """Remember that a recall ran and what it returned (no query text; never fails a read)."""
        ...

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        """Recorded recalls of these scopes in [since, until], newest first: at, scope_hash, hits."""
        ...
