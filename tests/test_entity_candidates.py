"""Entity candidates read by scope (issue 27, migration 9): each edge carries its atom's scope, kept right by
the database whatever writes the rows, and `atoms_for_entities` answers exactly what the walk over every
scope's mentions answered, on both backends (a real SQLite file, a real PostgreSQL)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from memoryd.engine.migrate import migrate_store
from memoryd.shared.models import Atom, Scope
from memoryd.storage.postgres import PostgresStore
from memoryd.storage.sqlite import SqliteStore

from .pg import PgServer

SCOPES = [
    Scope(tenant_id="ann", workspace="acme", repository="big", branch="main", root="/big"),
    Scope(tenant_id="ann", workspace="acme", repository="small", branch="main", root="/small"),
    Scope(tenant_id="bob", workspace="other", repository="elsewhere", branch="main", root="/elsewhere"),
]
WEIGHTS = [20, 2, 10]  # the small scope holds ~6% of the rows: most mentions of an entity are elsewhere
ENTITIES = ["entity:lib:postgres", "entity:lib:redis", "entity:file:app.py", "entity:person:ann"]
STATUSES = ["active", "negated"]


def _atom(i: int, scope: Scope, status: str) -> Atom:
    now = datetime.now(UTC)
    return Atom(
        id=f"01K{i:023d}", content=f"memory {i}", type="fact", source="t", scope=scope, scope_hash=scope.scope_hash,
        epistemic="actual", polarity="affirmative", status=status, created_at=now, updated_at=now,  # type: ignore[arg-type]
    )  # fmt: skip


def _fill(store: Any, n: int, seed: int = 7) -> None:
    """`n` atoms in id order (so newest by id = newest by insertion on both backends), each mentioning a random
    subset of ENTITIES (the first one in most), in a random scope and status."""
    rng = random.Random(seed)
    with store.transaction() as tx:
        for i in range(n):
            scope = rng.choices(SCOPES, WEIGHTS)[0]
            status = rng.choices(["active", "negated", "superseded", "tombstoned"], [12, 2, 2, 1])[0]
            atom = _atom(i, scope, status)
            tx.insert_atom(atom, norm_hash=f"h{i}", terms=[], vector=None)
            mentions = [e for j, e in enumerate(ENTITIES) if rng.random() < (0.8 if j == 0 else 0.25)]
            for e in mentions:
                tx.link(atom.id, e, "mentions")


def _expected(store: Any, entity_ids: Sequence[str], scope_hashes: Sequence[str], limit: int) -> list[str]:
    """The answer computed in Python from every atom and edge: the newest 4×limit mentions of each entity within
    the scopes and statuses, counted per atom, most entities first, then newest."""
    atoms = store.get_atoms([f"01K{i:023d}" for i in range(2000)])
    facts = store.candidate_facts(list(atoms))
    counts: dict[str, int] = {}
    for e in entity_ids:
        mentioning = sorted(
            (a for a, f in facts.items() if e in f.entities and f.scope_hash in scope_hashes and f.status in STATUSES),
            reverse=True,
        )
        for a in mentioning[: limit * 4]:
            counts[a] = counts.get(a, 0) + 1
    return sorted(counts, key=lambda a: (counts[a], a), reverse=True)[:limit]


def _check(store: Any, limit: int = 5) -> None:
    for scopes in ([SCOPES[1]], [SCOPES[0]], [SCOPES[0], SCOPES[1]], [SCOPES[1], SCOPES[2], SCOPES[0]]):
        hashes = [s.scope_hash for s in scopes]
        for entities in (ENTITIES[:1], ENTITIES[1:3], ENTITIES):
            got = store.atoms_for_entities(entities, scope_hashes=hashes, statuses=STATUSES, limit=limit)
            assert got == _expected(store, entities, hashes, limit), (scopes, entities)


def _edge_scopes(store: Any) -> list[tuple[str, str, str | None, str]]:
    """(edge source, destination, the edge's scope, its atom's scope) for every edge whose scope is wrong."""
    sql = ("SELECT e.src, e.dst, e.scope_hash, a.scope_hash FROM edges e JOIN atoms a ON a.id = e.src"
           " WHERE e.scope_hash IS NULL OR e.scope_hash <> a.scope_hash")  # fmt: skip
    if isinstance(store, PostgresStore):
        with psycopg.connect(store.dsn) as conn:
            return [tuple(r) for r in conn.execute(sql)]  # type: ignore[misc]
    with sqlite3.connect(store.path) as conn:
        return [tuple(r) for r in conn.execute(sql)]


def test_entity_candidates_match_the_walk_over_every_mention(store: Any) -> None:
    _fill(store, 600)
    assert _edge_scopes(store) == []  # every edge written by `link` carries its atom's scope
    _check(store)
    assert store.atoms_for_entities(ENTITIES, scope_hashes=[], statuses=STATUSES, limit=5) == []
    assert store.atoms_for_entities([], scope_hashes=[SCOPES[0].scope_hash], statuses=STATUSES, limit=5) == []
    # other tenants' mentions never answer, however many and however new
    bob = store.atoms_for_entities(ENTITIES, scope_hashes=[SCOPES[2].scope_hash], statuses=STATUSES, limit=50)
    facts = store.candidate_facts(bob)
    assert bob and {f.scope_hash for f in facts.values()} == {SCOPES[2].scope_hash}


def test_an_atom_changing_scope_moves_its_edges(store: Any) -> None:
    _fill(store, 300)
    moved = [f"01K{i:023d}" for i in range(0, 300, 7)]
    target = SCOPES[1]
    with store.transaction() as tx:
        for atom_id in moved:
            tx.update_atom(atom_id, tenant_id=target.tenant_id, workspace=target.workspace,
                           repository=target.repository, branch=target.branch, scope_root=target.root,
                           scope_hash=target.scope_hash)  # fmt: skip
        tx.unlink_entities(moved[0])  # re-linked: the new edges take the atom's new scope
        tx.link(moved[0], ENTITIES[3], "mentions")
    assert _edge_scopes(store) == []
    _check(store)


def test_a_store_copy_fills_the_edges_scope(store: Any, tmp_path: Path, pg_server: PgServer) -> None:
    """`memoryd migrate` copies edges without their scope (it is derived): the target fills it on insert."""
    _fill(store, 300)
    if isinstance(store, PostgresStore):
        target: Any = SqliteStore(tmp_path / "copy.db")
        dsn = None
    else:
        dsn = pg_server.fresh_database()
        target = PostgresStore(dsn)
    try:
        migrate_store(store, target)
        assert _edge_scopes(target) == []
        for scopes in ([SCOPES[1]], [SCOPES[0], SCOPES[1]]):
            hashes = [s.scope_hash for s in scopes]
            assert target.atoms_for_entities(ENTITIES, scope_hashes=hashes, statuses=STATUSES, limit=5) == (
                store.atoms_for_entities(ENTITIES, scope_hashes=hashes, statuses=STATUSES, limit=5)
            )
    finally:
        target.close()
        if dsn is not None:
            pg_server.drop_database(dsn)


def test_entity_candidates_read_the_scope_index(store: Any) -> None:
    """The plan reads `edges_dst_scope` (one range per entity and scope), not the entity's every mention."""
    _fill(store, 300)
    traced: list[tuple[str, Any]] = []
    store.tracer = lambda q, p: traced.append((q, p)) if "FROM edges" in q else None
    store.atoms_for_entities(ENTITIES[:2], scope_hashes=[SCOPES[1].scope_hash, SCOPES[0].scope_hash],
                             statuses=STATUSES, limit=5)  # fmt: skip
    store.tracer = None
    ((sql, params),) = traced
    if isinstance(store, PostgresStore):
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute("ANALYZE edges")
            conn.execute("ANALYZE atoms")
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {sql}", params))  # type: ignore[arg-type]
    else:
        with sqlite3.connect(store.path) as conn:
            plan = "\n".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "edges_dst_scope" in plan, plan


def test_sqlite_plans_hold_with_statistics_of_the_old_index_only(tmp_path: Path) -> None:
    """A store analysed before migration 9 has statistics for `edges_dst` and none for `edges_dst_scope`: the
    planner then prefers the new index for any entity look-up and sorts every mention. Both statements name
    their index, so each keeps its ordered range."""
    store = SqliteStore(tmp_path / "memoryd.db")
    try:
        _fill(store, 50)
        with sqlite3.connect(store.path) as conn:
            conn.execute("ANALYZE sqlite_schema")  # creates sqlite_stat1
            conn.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'edges'")
            conn.execute(
                "INSERT INTO sqlite_stat1 VALUES ('edges', 'edges_dst', '151995 1748 1748')"
            )  # the 100k fill's
        traced: list[tuple[str, Any]] = []
        store.tracer = lambda q, p: traced.append((q, p)) if "FROM edges" in q else None
        store.entity_mentions(ENTITIES[:1], per_entity=5)
        store.atoms_for_entities(ENTITIES[:1], scope_hashes=[SCOPES[1].scope_hash], statuses=STATUSES, limit=5)
        store.tracer = None
        (mentions_sql, mentions_params), (candidates_sql, candidates_params) = traced
        with sqlite3.connect(store.path) as conn:
            plan = [str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {mentions_sql}", mentions_params)]
            assert any("USING INDEX edges_dst (" in p for p in plan) and not any("TEMP B-TREE" in p for p in plan), plan
            plan = [str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {candidates_sql}", candidates_params)]
            assert any("edges_dst_scope" in p for p in plan), plan
    finally:
        store.close()
