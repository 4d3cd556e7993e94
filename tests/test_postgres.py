"""PostgresStore: what only PostgreSQL has (errors, locking, migrations, pgvector, pooling), and the
PostgreSQL counterparts of the engine tests that inspect SQLite itself.

The behavioural suite (tests/test_engine.py and every test using `engine`/`settings`) already
runs against both backends; see tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from memoryd.engine import Engine
from memoryd.engine.migrate import migrate_store
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings
from memoryd.shared.errors import StorageBusy, StorageError
from memoryd.shared.models import Atom, Scope
from memoryd.storage.migrations import INDEXED_DIMS, MIGRATIONS
from memoryd.storage.postgres import PostgresStore, pgvector_version
from memoryd.storage.sqlite import SqliteStore

from .pg import PgServer, _free_port

PG_ONLY = pytest.mark.parametrize("settings", ["postgresql"], indirect=True)


@pytest.fixture
def dsn(pg_server: PgServer) -> Any:
    url = pg_server.fresh_database()
    yield url
    pg_server.drop_database(url)


@pytest.fixture
def empty_dsn(pg_server: PgServer) -> Any:
    """A database made from template1: no pgvector, no schema."""
    url = pg_server.fresh_database(template=None)
    yield url
    pg_server.drop_database(url)


def _admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


def _dbname(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def hash_engine(tmp_path: Path, repo: Path, db: str | None) -> Engine:
    return Engine.open(Settings(home=tmp_path / "home", db=db), cwd=repo, embedder=HashEmbedder())


def find_text(url: str, needles: list[str]) -> list[tuple[str, str, str]]:
    """(table, column, needle) for every column of every table whose text form contains a needle."""
    hits: list[tuple[str, str, str]] = []
    with _admin(url) as conn:
        cols = conn.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c"
            " JOIN information_schema.tables t USING (table_schema, table_name)"
            " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY 1, 2"
        ).fetchall()
        assert {"atoms", "events", "event_payloads", "scope_terms", "entities", "edges"} <= {t for t, _ in cols}
        for table, column in cols:
            for needle in needles:
                q = sql.SQL("SELECT count(*) FROM {} WHERE {}::text ILIKE %s").format(
                    sql.Identifier(table), sql.Identifier(column)
                )
                if conn.execute(q, (f"%{needle}%",)).fetchone()[0]:  # type: ignore[index]
                    hits.append((table, column, needle))
    return hits


def find_in_row_versions(url: str, needles: list[str]) -> list[tuple[str, str]]:
    """Search every heap tuple, live or dead, of the content tables (pageinspect) for the needles."""
    hits = []
    with _admin(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        for table in ("atoms", "event_payloads", "scope_terms", "entities", "edges", "events"):
            blocks = conn.execute("SELECT pg_relation_size(%s) / current_setting('block_size')::int", (table,))
            for blk in range(int(blocks.fetchone()[0])):  # type: ignore[index]
                rows = conn.execute(
                    "SELECT t_data FROM heap_page_items(get_raw_page(%s, %s)) WHERE t_data IS NOT NULL", (table, blk)
                ).fetchall()
                for (data,) in rows:
                    for needle in needles:
                        if needle.encode() in bytes(data):
                            hits.append((table, needle))
    return hits


# -- the PostgreSQL counterparts of SQLite-only engine tests ---------------------------------------


@PG_ONLY
def test_secrets_are_redacted_in_every_column(engine: Engine, settings: Settings) -> None:
    r = engine.memorize("Staging DB is postgres://app:hunter2secret@db.internal:5432/app, use it for tests")
    assert "hunter2secret" not in engine.get(r.atom_id).content
    assert all("hunter2secret" not in h.atom.content for h in engine.recall("hunter2secret app").hits)
    assert settings.db and find_text(settings.db, ["hunter2secret"]) == []


def _stats_holding(conn: psycopg.Connection[Any], needle: str) -> list[tuple[str, str]]:
    """Columns and index expressions whose statistics (pg_statistic, read as pg_stats) hold `needle`."""
    like = f"%{needle}%"
    return conn.execute(
        "SELECT tablename, attname FROM pg_stats WHERE schemaname = 'public' AND (most_common_vals::text ILIKE %s"
        " OR histogram_bounds::text ILIKE %s OR most_common_elems::text ILIKE %s)", (like, like, like)
    ).fetchall()  # fmt: skip


@PG_ONLY
def test_tombstone_leaves_no_trace_in_any_table_statistic_or_row_version(engine: Engine, settings: Settings) -> None:
    assert settings.db
    secret = "傳說中的內部代號是 Zebra-Quasar-7781，只在 staging 使用"
    needles = ["Zebra-Quasar-7781", "quasar", "傳說中的內部代號", "内部"]  # 内部: a simplified bigram term
    a = engine.memorize(secret).atom_id
    engine.correct(a, "confirm_actual", "checked")
    with _admin(settings.db) as conn:
        conn.execute("ANALYZE")
        assert _stats_holding(conn, "quasar") == []  # no statistics of memory text, index expressions included
        indexes = "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"
        assert conn.execute(f"SELECT tablename, attname FROM pg_stats WHERE tablename IN ({indexes})").fetchall() == []
    assert find_text(settings.db, needles), "the check must see the content before the tombstone"
    assert engine.govern(a, "tombstone", "never store code names").effect == "applied"
    atom = engine.get(a)
    assert atom.status == "tombstoned" and atom.content == "" and atom.entities == []
    assert all(e.content is None for e in engine.history(a))
    assert engine.recall("Zebra-Quasar-7781").hits == []
    assert find_text(settings.db, needles) == []
    with _admin(settings.db) as conn:
        conn.execute("ANALYZE")
        assert _stats_holding(conn, "quasar") == []
    assert find_in_row_versions(settings.db, needles) == []  # checkpoint() VACUUMed the dead versions
    assert engine.verify_chain().ok
    assert engine.store.integrity() == "ok"  # type: ignore[attr-defined]


@PG_ONLY
def test_tampering_is_detected(engine: Engine, settings: Settings) -> None:
    assert settings.db
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    engine.correct(a, "demote", "maybe black")
    assert engine.verify_chain().ok
    with _admin(settings.db) as conn:
        for statement in (
            "UPDATE events SET reason = 'nothing happened' WHERE action = 'demote'",
            "DELETE FROM events WHERE action = 'demote'",
            "TRUNCATE events CASCADE",
        ):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
                conn.execute(statement)
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_no_update")
        conn.execute("UPDATE events SET reason = 'nothing happened' WHERE action = 'demote'")
    report = engine.verify_chain()
    assert not report.ok and report.problem == "event hash mismatch" and report.first_bad_seq == 2


@PG_ONLY
def test_tampering_with_payload_or_atom_is_detected(engine: Engine, settings: Settings) -> None:
    assert settings.db
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    with _admin(settings.db) as conn:
        conn.execute("UPDATE atoms SET content = 'Use black' WHERE id = %s", (a,))
        report = engine.verify_chain()
        assert not report.ok and "differs from its audit chain" in (report.problem or "")
        conn.execute("UPDATE event_payloads SET content = 'Use black'")
    assert engine.verify_chain().problem == "payload does not match its hash"


@PG_ONLY
def test_migrations_are_recorded(engine: Engine, settings: Settings) -> None:
    assert settings.db
    expected = [(m.version, m.name) for m in MIGRATIONS]
    assert engine.store.applied_migrations() == expected  # type: ignore[attr-defined]
    with _admin(settings.db) as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1").fetchall()
        assert rows == expected
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        indexes = {
            r[0]: r[1] for r in conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'atoms'")
        }
    for n in INDEXED_DIMS:  # the vector indexes are of the 16-bit copy (migration 12)
        assert f"USING hnsw (((embedding_half)::halfvec({n})) halfvec_cosine_ops)" in indexes[f"atoms_halfvec_{n}"]
        assert f"WHERE (vector_dims(embedding_half) = {n})" in indexes[f"atoms_halfvec_{n}"]
        assert f"INCLUDE (embedding_half) WHERE ((vector_dims(embedding_half) = {n}) AND (seq > 0))" \
            in indexes[f"atoms_scope_halfvec_{n}"]  # fmt: skip
        assert f"atoms_embedding_{n}" not in indexes and f"atoms_scope_vectors_{n}" not in indexes
    assert "USING gin (memoryd_scope_kw(scope_hash, kw))" in indexes["atoms_scope_kw"] and "atoms_kw" not in indexes
    PostgresStore(settings.db).close()  # reopening applies nothing twice
    assert engine.store.applied_migrations() == expected  # type: ignore[attr-defined]
    assert engine.doctor()["index_db"].startswith("ok:")


def test_both_backends_have_the_same_tables_and_columns(tmp_path: Path, dsn: str) -> None:
    """Migrations are written once (storage/migrations.py): the tables both databases have hold the same
    columns, apart from each one's keyword and vector bookkeeping."""
    SqliteStore(tmp_path / "m.db").close()
    with sqlite3.connect(tmp_path / "m.db") as lite:
        tables = [r[0] for r in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                             " AND name NOT LIKE 'atom_fts%' AND name NOT LIKE 'sqlite_%'")]  # fmt: skip
        on_sqlite = {t: {r[1] for r in lite.execute(f"PRAGMA table_info({t})")} for t in tables}
    on_pg: dict[str, set[str]] = {}
    with _admin(dsn) as conn:
        for table, column in conn.execute("SELECT table_name, column_name FROM information_schema.columns"
                                          " WHERE table_schema = 'public'"):  # fmt: skip
            on_pg.setdefault(table, set()).add(column)
    assert on_sqlite.keys() - on_pg.keys() == {"meta"}  # snapshot_version: chain_head on PostgreSQL
    assert on_pg.keys() - on_sqlite.keys() == {"chain_head"}
    assert {t: on_sqlite[t] ^ on_pg[t] for t in on_sqlite.keys() & on_pg.keys() if on_sqlite[t] != on_pg[t]} \
        == {"atoms": {"vec_seq", "kw", "embedding_half"}}  # fmt: skip


# -- errors that say what to do -------------------------------------------------------------------


def test_server_down_is_a_clear_storage_error(tmp_path: Path, repo: Path) -> None:
    port = _free_port()  # nothing listens there
    url = f"postgresql://memoryd:s3cret-pw@127.0.0.1:{port}/memories"
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        Engine.open(Settings(home=tmp_path / "home", db=url), cwd=repo, embedder=HashEmbedder())
    assert time.monotonic() - started < 10
    message = info.value.message
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{port}/memories as memoryd" in message
    assert "Is the server running" in message and "MEMORYD_DB" in message
    assert "s3cret-pw" not in message


def test_missing_extension_and_no_right_to_create_it(pg_server: PgServer, empty_dsn: str) -> None:
    with _admin(pg_server.dsn()) as conn:
        conn.execute("DROP ROLE IF EXISTS memoryd_app")
        conn.execute("CREATE ROLE memoryd_app LOGIN")
    with pytest.raises(StorageError) as info:
        PostgresStore(pg_server.dsn(_dbname(empty_dsn), user="memoryd_app"))
    message = info.value.message
    assert "does not have the pgvector extension enabled and role memoryd_app may not create it" in message
    assert f"`CREATE EXTENSION vector;` in database {_dbname(empty_dsn)}" in message


def test_extension_not_installed_on_the_server(empty_dsn: str) -> None:
    # PostgreSQL 18 looks for extension files along extension_control_path: point it at an empty
    # directory (readable by the server's user) and the server genuinely has no pgvector.
    with tempfile.TemporaryDirectory() as nowhere:
        os.chmod(nowhere, 0o755)
        url = f"{empty_dsn}?options=-c%20extension_control_path%3D{nowhere}"
        with pytest.raises(StorageError) as info:
            PostgresStore(url)
    message = info.value.message
    assert "does not have the pgvector extension installed" in message and "CREATE EXTENSION vector" in message


def test_extension_is_created_when_the_role_may(empty_dsn: str) -> None:
    PostgresStore(empty_dsn).close()
    with _admin(empty_dsn) as conn:
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()


def test_concurrent_first_opens_apply_each_migration_once(empty_dsn: str) -> None:
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            barrier.wait()
            PostgresStore(empty_dsn).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with _admin(empty_dsn) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]


def test_a_held_write_lock_times_out_as_storage_busy(dsn: str) -> None:
    store = PostgresStore(dsn, busy_timeout_ms=300)
    try:
        with _admin(dsn) as other, other.transaction():
            other.execute("SELECT * FROM chain_head FOR UPDATE")  # another writer mid-transaction
            started = time.monotonic()
            with pytest.raises(StorageBusy, match="locked by another writer"), store.transaction() as tx:
                tx.append_event(atom_id=None, actor="t", action="noop", reason=None, content=None)
            assert time.monotonic() - started < 3
        with store.transaction() as tx:  # released: writes go through again
            tx.append_event(atom_id=None, actor="t", action="noop", reason=None, content=None)
        assert [e.seq for e in store.events()] == [1]
        assert store.snapshot_version() == 1
    finally:
        store.close()


def test_pool_recovers_from_killed_connections(dsn: str) -> None:
    store = PostgresStore(dsn)
    try:
        assert store.snapshot_version() == 0
        with _admin(dsn) as conn:
            killed = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (_dbname(dsn),),
            ).fetchone()[0]  # type: ignore[index]
        assert killed >= 1
        assert store.snapshot_version() == 0  # the pool's check replaced the dead connection
    finally:
        store.close()


def test_unreachable_database_is_a_clear_error_then_recovers(pg_server: PgServer, dsn: str) -> None:
    store = PostgresStore(dsn, busy_timeout_ms=1000)
    name = _dbname(dsn)
    try:
        with _admin(pg_server.dsn()) as conn:
            conn.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        started = time.monotonic()
        with pytest.raises(StorageError, match="PostgreSQL") as info:
            store.snapshot_version()
        assert time.monotonic() - started < 10
        assert "server" in info.value.message
        with _admin(pg_server.dsn()) as conn:
            conn.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        deadline = time.monotonic() + 15
        while True:
            try:
                assert store.snapshot_version() == 0
                break
            except StorageError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        store.close()


def test_settings_accept_only_postgres_urls() -> None:
    from pydantic import ValidationError

    assert Settings(db="").db is None
    assert Settings(db="postgres://u@h/db").db == "postgres://u@h/db"
    with pytest.raises(ValidationError, match="postgresql://"):
        Settings(db="mysql://u@h/db")


# -- search in the database -----------------------------------------------------------------------


def _atom(scope: Scope, i: int) -> Atom:
    from datetime import UTC, datetime

    from ulid import ULID

    now = datetime.now(UTC)
    return Atom(
        id=str(ULID()), content=f"memory {i}", type="fact", source="t", scope=scope, scope_hash=scope.scope_hash,
        epistemic="actual", polarity="affirmative", status="active", created_at=now, updated_at=now,
    )  # fmt: skip


def test_vector_search_fills_k_under_a_selective_scope_filter(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan by scope size (issue 27): a small scope is searched exactly over its own rows; a big one
    through HNSW, whose iterative scan keeps going until k rows pass the filter (HNSW alone stops at
    ef_search candidates), in relaxed order, sorted after."""
    import memoryd.storage.pg_index as pg_module

    monkeypatch.setattr(pg_module, "EXACT_MAX_ROWS", 100)  # the big scope (400) takes HNSW, the small (30) not
    monkeypatch.setattr(pg_module, "SCOPE_SIZE_TTL", 3600.0)  # a slow machine must not make the count stale
    rng = np.random.default_rng(7)
    big = Scope(tenant_id="t", workspace="acme", repository="big", branch="main", root="/big")
    small = Scope(tenant_id="t", workspace="acme", repository="small", branch="main", root="/small")
    centre = rng.normal(size=384).astype(np.float32)
    store = PostgresStore(dsn)
    try:
        vectors: dict[str, np.ndarray] = {}
        with store.transaction() as tx:
            for i in range(400):  # the big scope crowds the neighbourhood of the query
                v = centre + rng.normal(scale=0.3, size=384).astype(np.float32)
                tx.insert_atom(_atom(big, i), norm_hash=f"b{i}", terms=[], vector=v / np.linalg.norm(v))
            for i in range(30):
                atom = _atom(small, i)
                v = rng.normal(size=384).astype(np.float32)
                vectors[atom.id] = v / np.linalg.norm(v)
                tx.insert_atom(atom, norm_hash=f"s{i}", terms=[], vector=vectors[atom.id])
        query = centre / np.linalg.norm(centre)
        got = store.vector_candidates(query, scope_hashes=[small.scope_hash], k=20)
        assert len(got) == 20 and {i for i, _ in got} <= set(vectors)
        # the small scope: exact, over the 16-bit copies the index holds (migration 12), each cosine within 1e-4
        # of the 32-bit one (two of these random vectors are closer to the query than that apart)
        half = {i: v.astype(np.float16).astype(np.float64) for i, v in vectors.items()}
        half_query = query.astype(np.float16).astype(np.float64)
        exact = sorted(half, key=lambda i: -float(half[i] @ half_query / np.linalg.norm(half[i])))[:20]
        assert [i for i, _ in got] == exact
        assert [c for _, c in got] == sorted((c for _, c in got), reverse=True)
        for atom_id, cos in got:
            assert cos == pytest.approx(float(vectors[atom_id] @ query), abs=1e-4)
        first = got[0][0]
        assert store.cosines(query, [first, "nope"]) == {first: pytest.approx(got[0][1], abs=1e-6)}
        traced: list[tuple[str, Any]] = []
        # statements on atoms only: a connection the pool opens meanwhile sends its settings (set_config)
        store.tracer = lambda q, p: traced.append((q, p)) if "FROM atoms" in q else None
        store.vector_candidates(query, scope_hashes=[small.scope_hash], k=5)
        ((small_sql, small_params),) = traced  # the scope's size is remembered: one statement
        traced.clear()
        store.vector_candidates(query, scope_hashes=[big.scope_hash], k=5)
        (count_sql, _), (query_sql, params) = traced  # its size counted once, then the search
        assert "count(*)" in count_sql
        with _admin(dsn) as conn:  # a scope that holds most rows: the HNSW index answers
            conn.execute("ANALYZE atoms")
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query_sql}", params))
            small_plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {small_sql}", small_params))
        assert "atoms_halfvec_384" in plan, plan
        assert "using atoms_halfvec" not in small_plan and "using atoms_scope_halfvec_384" in small_plan, small_plan
        # the big scope: k rows of its own, through the relaxed-order scan, put in order by distance (ties by id)
        assert store._one("SELECT current_setting('hnsw.iterative_scan')") == ("relaxed_order",)
        got = store.vector_candidates(query, scope_hashes=[big.scope_hash], k=300)
        assert len(got) == 300 and len({i for i, _ in got}) == 300
        assert got == sorted(got, key=lambda r: (-r[1], r[0]))
    finally:
        store.close()


def test_keywords_are_matched_within_the_recall_scopes_from_one_index(dsn: str) -> None:
    """The keyword stage (migration 11) reads only the recall's own scopes' postings: each term is indexed as
    `<scope>:<term>`, so a term common elsewhere costs nothing here, and the index follows every change of
    an atom's terms or scope."""
    mine, team, other = (Scope(tenant_id="t", workspace="acme", repository=r, branch="main", root=f"/{r}")
                         for r in ("mine", "team", "other"))  # fmt: skip
    store = PostgresStore(dsn)
    try:
        ids: dict[str, list[str]] = {"mine": [], "team": [], "other": []}
        with store.transaction() as tx:
            for name, scope, n in (("mine", mine, 5), ("team", team, 5), ("other", other, 300)):
                for i in range(n):
                    atom = _atom(scope, len(ids["mine"]) + len(ids["team"]) + len(ids["other"]))
                    tx.insert_atom(atom, norm_hash=atom.id, terms=["deploy", f"{name}{i}"], vector=None)
                    ids[name].append(atom.id)
        fit, too_long = "y" * (2046 - len(mine.scope_hash) - 1), "z" * (2046 - len(mine.scope_hash))
        extra = _atom(mine, 999)
        with store.transaction() as tx:  # both are lexemes of kw; only the first fits behind its scope
            tx.insert_atom(extra, norm_hash="long", terms=["rare", fit, too_long], vector=None)

        def find(terms: list[str], *scopes: Scope, limit: int = 50) -> list[str]:
            return store.keyword_candidates(terms, scope_hashes=[s.scope_hash for s in scopes], statuses=["active"],
                                            limit=limit)  # fmt: skip

        assert find(["deploy"], mine) == ids["mine"][::-1]  # newest first among equals; none of other's 300
        assert set(find(["deploy"], mine, team)) == set(ids["mine"] + ids["team"])
        assert find(["deploy", "mine3"], mine, team)[0] == ids["mine"][3]  # more IDF mass first
        assert find([fit], mine) == [extra.id]
        assert find([too_long], mine) == []  # too long to index behind a scope: not matched, and no error
        assert find([too_long, "rare"], mine) == [extra.id]
        assert find(["rare"], team) == []
        with store.transaction() as tx:
            tx.replace_terms(ids["mine"][0], ["moved"], None)
        assert find(["moved"], mine) == [ids["mine"][0]] and ids["mine"][0] not in find(["deploy"], mine)
        with _admin(dsn) as conn:  # an atom that changes scope is found under its new one only
            conn.execute("UPDATE atoms SET scope_hash = %s WHERE id = %s", (team.scope_hash, ids["mine"][1]))
        assert find(["mine1"], team) == [ids["mine"][1]] and find(["mine1"], mine) == []
        traced: list[tuple[str, Any]] = []
        store.tracer = lambda q, p: traced.append((q, p)) if "FROM atoms" in q else None
        find(["deploy"], mine, team)
        ((query_sql, params),) = traced
        with _admin(dsn) as conn:
            conn.execute("ANALYZE atoms")
            conn.execute("SET enable_seqscan = off")  # a few hundred rows: the planner would read them all
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query_sql}", params))
        assert "atoms_scope_kw" in plan and "BitmapAnd" not in plan and "atoms_scope_seq" not in plan, plan
    finally:
        store.close()


def test_vectors_of_two_model_sizes_live_side_by_side(dsn: str) -> None:
    """After a change of embedder (e5 384-d → USE 512-d) each query searches vectors of its own size."""
    rng = np.random.default_rng(3)
    scope = Scope(tenant_id="t", workspace="acme", repository="w", branch="main", root="/w")
    store = PostgresStore(dsn)
    try:
        ids: dict[int, list[str]] = {384: [], 512: []}
        with store.transaction() as tx:
            for i in range(6):
                n = 384 if i % 2 else 512
                atom = _atom(scope, i)
                v = rng.normal(size=n).astype(np.float32)
                tx.insert_atom(atom, norm_hash=str(i), terms=[], vector=v / np.linalg.norm(v))
                ids[n].append(atom.id)
        for n in (384, 512):
            q = rng.normal(size=n).astype(np.float32)
            q /= np.linalg.norm(q)
            assert {i for i, _ in store.vector_candidates(q, scope_hashes=[scope.scope_hash], k=10)} == set(ids[n])
            assert set(store.cosines(q, ids[384] + ids[512])) == set(ids[n])
        assert store.counts()["semantic"] == 6
    finally:
        store.close()


def test_keyword_terms_are_stored_verbatim_with_exact_document_frequencies(dsn: str) -> None:
    scope = Scope(tenant_id="t", workspace="acme", repository="w", branch="main", root="/w")
    store = PostgresStore(dsn)
    try:
        a, b, c = (_atom(scope, i) for i in range(3))
        long_term = "x" * 3000  # longer than a tsvector lexeme may be: left unindexed, not fatal
        with store.transaction() as tx:
            tx.insert_atom(a, norm_hash="a", terms=["get_session", "login.py", "連線", "c++", "it's"], vector=None)
            tx.insert_atom(b, norm_hash="b", terms=["get_session", "get", "session", long_term], vector=None)
            tx.insert_atom(c, norm_hash="c", terms=[], vector=None)
        total, df = store.term_stats(
            ["get_session", "get", "login", "連線", "c++", "it's", long_term], scope_hashes=[scope.scope_hash]
        )
        assert total == 2
        assert df == {"get_session": 2, "get": 1, "login": 0, "連線": 1, "c++": 1, "it's": 1, long_term: 0}

        def find(*t: str) -> list[str]:
            return store.keyword_candidates(list(t), scope_hashes=[scope.scope_hash], statuses=["active"], limit=10)

        assert find("login.py") == [a.id]
        assert find("c++") == [a.id] and find("it's") == [a.id]
        assert find("login") == []  # no prefix or parser splitting: terms match whole
        assert set(find("get_session")) == {a.id, b.id}
        assert find("session", "get_session") == [b.id, a.id]  # more IDF mass first
        with store.transaction() as tx:
            tx.replace_terms(a.id, ["login.py"], None)
            tx.scrub_atom(b.id)
        total, df = store.term_stats(["get_session", "login.py", "session"], scope_hashes=[scope.scope_hash])
        assert total == 1 and df == {"get_session": 0, "login.py": 1, "session": 0}
        with store.transaction() as tx:
            tx.delete_atom(a.id)
        assert store.term_stats(["login.py"], scope_hashes=[scope.scope_hash]) == (0, {"login.py": 0})
        with _admin(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM scope_terms").fetchone()[0] == 0  # type: ignore[index]
        assert store.integrity() == "ok"
    finally:
        store.close()


# -- one behaviour, two backends --------------------------------------------------------------------

CORPUS = [
    "PostgreSQL 連線池大小設為 20，超過會被 pgbouncer 拒絕",
    "修復了 login.py 的空指標問題：get_session() 在 session 過期時返回 None",
    "We decided to move the frontend from React to Solid for bundle size",
    "The cache layer uses Redis 7 with a 5 minute TTL for sessions",
    "Never push directly to main; open a pull request and wait for CI",
    "Deploy keys live in the ops vault under /infra/deploy",
]
QUERIES = ["連線", "get_session", "login.py", "frontend framework", "Redis TTL", "push to main", "session"]


def _scenario(e: Engine) -> dict[str, Any]:
    ids = [e.memorize(text).atom_id for text in CORPUS]
    e.correct(ids[0], "replace", "bigger pool", new_content="PostgreSQL 連線池大小設為 50，pgbouncer 前置")
    e.correct(ids[3], "negate", "moved to Memcached")
    e.govern(ids[5], "tombstone", "secret-ish")
    e.update(ids[4], content="Never push directly to main; open a pull request and wait for green CI")
    content = {a.id: a.content for a in e.store.list_atoms(limit=-1)}
    out: dict[str, Any] = {"stats": e.stats().model_dump(), "chain": e.verify_chain().ok}
    for q in QUERIES:
        hits = e.recall(q, max_results=5, include_negated=True).hits
        out[q] = [(content[h.atom.id], h.score, h.signals) for h in hits]
    from memoryd.search.tokenize import tokens

    out["term_stats"] = e.store.term_stats(
        tokens("postgresql pool pgbouncer session redis main", query=True), scope_hashes=e._core.recall_scopes(None)
    )
    out["history"] = [[ev.action for ev in e.history(i)] for i in ids]
    return out


def test_both_backends_give_the_same_answers(tmp_path: Path, repo: Path, dsn: str) -> None:
    with hash_engine(tmp_path / "a", repo, None) as lite, hash_engine(tmp_path / "b", repo, dsn) as pg:
        assert isinstance(lite.store, SqliteStore) and isinstance(pg.store, PostgresStore)
        want, got = _scenario(lite), _scenario(pg)
    assert got["chain"] and want["chain"]
    for key in want:
        if key in QUERIES:  # float cosines: numpy float32 vs pgvector; equal to 3 decimals
            assert [(c, round(s, 3)) for c, s, _ in got[key]] == [(c, round(s, 3)) for c, s, _ in want[key]], key
        else:
            assert got[key] == want[key], key


# -- many processes, one chain ----------------------------------------------------------------------

WRITER = """
import json, os, sys
os.fsync = lambda fd: None  # the vault files' durability is not under test, the database's chain is
from memoryd.shared.config import Settings
from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
home, db, cwd, worker, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
with Engine.open(Settings(home=home, db=db), cwd=cwd, embedder=HashEmbedder()) as e:
    for i in range(n):
        r = e.memorize(f"Worker {worker} records that service_{worker}_{i}.py listens on port {8000 + i}")
        print(json.dumps([r.effect, r.atom_id]), flush=True)
"""


@pytest.mark.slow
def test_four_processes_writing_500_each_lose_nothing_and_never_fork_the_chain(
    tmp_path: Path, repo: Path, dsn: str
) -> None:
    home = tmp_path / "home"
    argv = [sys.executable, "-c", WRITER, str(home), dsn, str(repo)]
    procs = [subprocess.Popen([*argv, str(w), "500"], stdout=subprocess.PIPE, text=True) for w in range(4)]
    acked: list[str] = []
    for p in procs:
        out, _ = p.communicate(timeout=280)
        assert p.returncode == 0
        for line in out.splitlines():
            effect, atom_id = json.loads(line)
            assert effect == "applied"
            acked.append(atom_id)
    assert len(acked) == len(set(acked)) == 2000
    with hash_engine(tmp_path, repo, dsn) as e:
        assert set(e.store.get_atoms(acked)) == set(acked)
        report = e.verify_chain()
        assert report.ok and report.events == 2000
        events = e.store.events()
        assert [ev.seq for ev in events] == list(range(1, 2001))
        assert len({ev.prev_hash for ev in events}) == 2000  # no two events share a parent: no fork
        assert e.stats().snapshot_version == 2000


# -- sqlite:// → postgresql:// ----------------------------------------------------------------------


def test_migrate_store_copies_a_sqlite_store(tmp_path: Path, repo: Path, dsn: str) -> None:
    from datetime import UTC, datetime, timedelta

    with hash_engine(tmp_path / "src", repo, None) as lite:
        _scenario(lite)
        pending = lite.memorize("I am now looking at the file", gate="review")
        assert pending.promotion_id
        with lite.store.transaction() as tx:
            tx.mark_sensitive(lite.scope.scope_hash, "acme/widgets", True)
            tx.add_grant(lite.scope.scope_hash, "me", datetime.now(UTC) + timedelta(minutes=5))
            tx.add_access_request(lite.scope.scope_hash, "need it")
        (repo / "session.py").write_text("def get_session(token):\n    return token\n")
        anchored = lite.memorize("`get_session()` in session.py returns the token", source="user", gate="trusted")
        want_anchors = lite.store.anchors_of([str(anchored.atom_id)])
        assert len(want_anchors[str(anchored.atom_id)]) == 2
        want = {q: [(h.atom.id, round(h.score, 3)) for h in lite.recall(q, include_negated=True).hits] for q in QUERIES}
        want_events = [ev.model_dump() for ev in lite.store.events()]
        want_stats = lite.stats().model_dump()
        db_path = lite.settings.db_path
    stored = SqliteStore(db_path)  # as stored: with the access times the recalls left (written at close)
    want_atoms = {a.id: a for a in stored.list_atoms(limit=-1)}
    stored.close()
    seen: list[tuple[str, int, int]] = []
    source, target = SqliteStore(db_path), PostgresStore(dsn)
    try:
        copied = migrate_store(source, target, lambda t, d, n: seen.append((t, d, n)))
    finally:
        target.close()
    assert copied["atoms"] == len(want_atoms) and copied["events"] == len(want_events)
    assert ("atoms", len(want_atoms), len(want_atoms)) in seen
    with hash_engine(tmp_path / "src", repo, dsn) as pg:
        assert pg.verify_chain().ok
        assert pg.stats().model_dump() == want_stats
        assert [ev.model_dump() for ev in pg.store.events()] == want_events
        got_atoms = {a.id: a for a in pg.store.list_atoms(limit=-1)}
        assert got_atoms == want_atoms
        for q in QUERIES:
            assert [(h.atom.id, round(h.score, 3)) for h in pg.recall(q, include_negated=True).hits] == want[q], q
        assert pg.store.get_promotions([pending.promotion_id])[pending.promotion_id].atom_id == pending.atom_id
        assert pg.store.is_sensitive(pg.scope.scope_hash) and pg.store.grant_expiry(pg.scope.scope_hash)
        assert [r["reason"] for r in pg.store.access_requests()] == ["need it"]  # type: ignore[attr-defined]
        assert pg.store.anchors_of([str(anchored.atom_id)]) == want_anchors  # code anchors come along
        assert pg.store.integrity() == "ok"  # type: ignore[attr-defined]
        pg.memorize("After the move, new memories get fresh sequence numbers")  # identities were advanced
        assert pg.verify_chain().ok
    target = PostgresStore(dsn)
    try:
        with pytest.raises(StorageError, match="not empty"):
            migrate_store(source, target)
    finally:
        source.close()
        target.close()


def test_cli_migrate_moves_a_store_and_checks_it(
    tmp_path: Path, repo: Path, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from memoryd.cli import app

    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_EMBEDDER", "hash")
    with hash_engine(tmp_path, repo, None) as lite:
        for text in ("The build uses Bazel 7 with remote caching", "前端框架改用 Solid 1.9，不再使用 React",
                     "Never deploy the billing service on Fridays"):  # fmt: skip
            lite.memorize(text)
        db_path = lite.settings.db_path
    runner = CliRunner()
    r = runner.invoke(app, ["migrate", "--from", f"sqlite://{db_path}", "--to", dsn, "--json", "--cwd", str(repo)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["copied"]["atoms"] == 3 and out["recalls_checked"] == 3 and out["chain_events"] == 3
    again = runner.invoke(app, ["migrate", "--from", str(db_path.parent), "--to", dsn, "--cwd", str(repo)])
    assert again.exit_code == 6 and "is not empty" in again.output
    bad = runner.invoke(app, ["migrate", "--from", "sqlite:///tmp/x.sqlite", "--to", dsn])
    assert bad.exit_code == 2 and "--from must name a memoryd data root" in bad.output
    bad_to = runner.invoke(app, ["migrate", "--from", str(db_path), "--to", "mysql://x"])
    assert bad_to.exit_code == 2 and "--to must be a postgresql:// URL" in bad_to.output


def test_access_times_are_rewritten_at_most_hourly(tmp_path: Path, repo: Path, dsn: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Each rewrite of a row is a new version in every index (HNSW and GIN included): a time less than
    an hour old is left as it is, an older one moves on. Access times and recall logs wait in the process
    and are written in one batch at most every TOUCH_EVERY seconds (issue 27: no write on a recall's path)."""
    import memoryd.storage.postgres as pg_module

    monkeypatch.setattr(pg_module, "TOUCH_EVERY", 3600.0)  # only `now=True` writes in this test
    with hash_engine(tmp_path, repo, dsn) as e:
        atom_id = e.memorize("Access times on PostgreSQL are rewritten at most hourly").atom_id
        assert atom_id
        e.store.touch([atom_id], now=True)
        first = e.store.get_atoms([atom_id])[atom_id].last_accessed_at
        assert first is not None
        e.store.touch([atom_id], now=True)
        assert e.store.get_atoms([atom_id])[atom_id].last_accessed_at == first
        with _admin(dsn) as conn:
            conn.execute("UPDATE atoms SET last_accessed_at = now() - interval '2 hours' WHERE id = %s", (atom_id,))
        e.recall("rewritten hourly")  # queued with its recall log, not written on the recall's path
        with _admin(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM recalls").fetchone() == (0,)
        e.store.touch([atom_id], now=True)
        with _admin(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM recalls").fetchone() == (1,)
        later = e.store.get_atoms([atom_id])[atom_id].last_accessed_at
        assert later is not None and later >= first


def test_access_times_write_no_index(dsn: str) -> None:
    """A recall's touch (migration 10) changes no indexed column and leaves room on each page, so PostgreSQL
    updates the row in place (HOT): no new entry in HNSW, GIN or any btree of atoms."""
    scope = Scope(tenant_id="t", workspace="acme", repository="hot", branch="main", root="/hot")
    rng = np.random.default_rng(3)
    store = PostgresStore(dsn)
    try:
        atoms = [_atom(scope, i) for i in range(40)]
        ids = [a.id for a in atoms]
        with store.transaction() as tx:
            for i, atom in enumerate(atoms):
                v = rng.normal(size=512).astype(np.float32)  # the bundled model's size: kept out of line
                tx.insert_atom(atom, norm_hash=f"h{i}", terms=["hot", f"t{i}"], vector=v / np.linalg.norm(v))
        with _admin(dsn) as conn:
            indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'atoms'")]
            assert len(indexes) > 5 and not [d for d in indexes if "last_accessed_at" in d], indexes
            (options,) = conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'atoms'").fetchone() or (None,)
            assert "fillfactor=70" in (options or []), options
            # vacuumed after 1% of the rows changed, not 20% (migration 13): the exact plan stays index-only
            assert {"autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_insert_scale_factor=0.01"} <= set(options)
            # touch's update, on one row of each page (a recall's hits are spread over the table), counted in
            # this transaction: each new row version stays on its page, and no index gets an entry
            spread = [r[0] for r in conn.execute("SELECT DISTINCT ON ((ctid::text::point)[0]) id FROM atoms"
                                                 " WHERE id = ANY(%s)", (ids,))]  # fmt: skip
            with conn.transaction():
                conn.execute("UPDATE atoms SET last_accessed_at = now() - interval '1 day' WHERE id = ANY(%s)",
                             (spread,))  # fmt: skip
                row = conn.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables"
                                   " WHERE relname = 'atoms'").fetchone()  # fmt: skip
            assert len(spread) >= 2 and row == (len(spread), len(spread)), (spread, row)
        store.touch(ids, now=True)  # and the store's own touch writes them all
        with _admin(dsn) as conn:
            touched = conn.execute("SELECT count(*) FROM atoms WHERE id = ANY(%s) AND last_accessed_at > now()"
                                   " - interval '1 hour'", (ids,)).fetchone()  # fmt: skip
        assert touched == (40,)
    finally:
        store.close()


def test_vectors_are_stored_bit_for_bit(dsn: str) -> None:
    """The binary form sent to pgvector gives back every float32 exactly, extremes included."""
    scope = Scope(tenant_id="t", workspace="acme", repository="bits", branch="main", root="/bits")
    rng = np.random.default_rng(11)
    v = rng.normal(size=512).astype(np.float32)
    v[:4] = [np.finfo(np.float32).max, np.finfo(np.float32).tiny, -np.finfo(np.float32).eps, 1e-45]
    store = PostgresStore(dsn)
    try:
        atom = _atom(scope, 0)
        with store.transaction() as tx:
            tx.insert_atom(atom, norm_hash="bits", terms=["bits"], vector=v)
        with _admin(dsn) as conn:
            row = conn.execute("SELECT embedding::real[] FROM atoms WHERE id = %s", (atom.id,)).fetchone()
        assert row is not None and np.array_equal(np.asarray(row[0], dtype=np.float32), v)
    finally:
        store.close()


def test_pgvector_without_halfvec_is_refused_with_what_to_do() -> None:
    """Migration 12's copy is a halfvec (pgvector 0.7): an older pgvector is named, with the fix."""
    for old in ("0.5.1", "0.6.2"):
        with pytest.raises(StorageError) as info:
            pgvector_version(old, "memories")
        assert info.value.message == (
            f"pgvector {old} in database memories has no halfvec type; run `ALTER EXTENSION vector UPDATE;` "
            "(pgvector >= 0.7 is required, >= 0.8 recommended)"
        )
    assert [pgvector_version(v, "memories") for v in ("0.7.4", "0.8.6", "1.0.0")] == [(0, 7), (0, 8), (1, 0)]


def test_vector_search_reads_a_16_bit_copy_of_each_embedding(dsn: str) -> None:
    """Migration 12: PostgreSQL keeps each embedding's 16-bit copy itself, and vector search reads only that; a
    vector past a 16-bit float's range keeps its 32-bit values, has no copy and is never found by vector, and a
    query past that range finds nothing rather than failing."""
    scope = Scope(tenant_id="t", workspace="acme", repository="half", branch="main", root="/half")
    rng = np.random.default_rng(5)
    unit = rng.normal(size=384).astype(np.float32)
    unit /= np.linalg.norm(unit)
    huge = unit.copy()
    huge[0] = 70000.0  # past 65504
    store = PostgresStore(dsn)
    try:
        ok, big = _atom(scope, 0), _atom(scope, 1)
        with store.transaction() as tx:
            tx.insert_atom(ok, norm_hash="ok", terms=["half"], vector=unit)
            tx.insert_atom(big, norm_hash="big", terms=["half"], vector=huge)
        with _admin(dsn) as conn:
            rows = dict(conn.execute("SELECT id, embedding_half::real[] FROM atoms WHERE id = ANY(%s)",
                                     ([ok.id, big.id],)).fetchall())  # fmt: skip
            full = conn.execute("SELECT embedding::real[] FROM atoms WHERE id = %s", (big.id,)).fetchone()
        assert np.array_equal(np.asarray(rows[ok.id], dtype=np.float32), unit.astype(np.float16).astype(np.float32))
        assert rows[big.id] is None and full is not None and np.array_equal(np.asarray(full[0], np.float32), huge)
        got = store.vector_candidates(unit, scope_hashes=[scope.scope_hash], k=5)
        assert [i for i, _ in got] == [ok.id] and got[0][1] == pytest.approx(1.0, abs=1e-4)
        assert store.cosines(unit, [ok.id, big.id]) == {ok.id: pytest.approx(1.0, abs=1e-4)}
        assert store.vector_candidates(huge, scope_hashes=[scope.scope_hash], k=5) == []
        assert store.cosines(huge, [ok.id, big.id]) == {}
        facts = store.candidate_facts([ok.id, big.id], query=unit)  # recall's form: with the facts, alike
        assert facts[ok.id].cos == pytest.approx(1.0, abs=1e-4) and facts[big.id].cos is None
        assert [f.cos for f in store.candidate_facts([ok.id, big.id], query=huge).values()] == [None, None]
        with store.transaction() as tx:  # the copy follows every change of the embedding
            tx.replace_terms(big.id, ["half"], unit)
        assert {i for i, _ in store.vector_candidates(unit, scope_hashes=[scope.scope_hash], k=5)} == {ok.id, big.id}
    finally:
        store.close()
