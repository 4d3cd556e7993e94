"""PostgresStore: the `Store` protocol on PostgreSQL + pgvector (selected by `MEMORYD_DB=postgresql://…`).

Behaviour matches `SqliteStore`; what differs is how:

- Writes: a transaction takes one pooled connection, BEGINs, and first updates the single
  `chain_head` row (bumping `snapshot_version`). That row lock serialises every writer of the
  database, in any process, like SQLite's BEGIN IMMEDIATE: the chain append reads the last event
  under it, so the hash chain never forks, and `seq` stays gap-free. Waiting is bounded by
  `lock_timeout` (= busy_timeout_ms) → StorageBusy.
- Vectors: `vector` + per model size one HNSW (cosine) index and one index of each scope's vectors;
  `vector_candidates`/`cosines` are SQL (`pg_index.py`, with the keyword and entity candidates): a small
  scope exactly from its scope's vectors, a big one through HNSW with pgvector's iterative index scan so
  a scope filter still yields k rows. Nothing is cached in-process, so every process sees every
  other's vector changes at once (what `vec_seq` does for SQLite).
- Keywords: the engine's terms verbatim in a GIN-indexed tsvector (`array_to_tsvector`); document
  frequencies are exact counters per scope in `scope_terms`, kept by a trigger.
- Migrations (`migrations.py`) run under a transaction-level advisory lock.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout, TooManyRequests

from ..shared.errors import StorageBusy, StorageError
from .base import Tracer, Vector
from .migrations import POSTGRES_SCOPE_STATS
from .pg_index import MAX_DIM, PgIndex, VectorParam, lexemes
from .pg_route import PRIMARY_ONLY, ReadRouter, read_targets, reading_as
from .sql import Dialect, ExcMap, SqlStore, SqlTx, dbapi_map, translate

__all__ = ["PSYCOPG_EXC_MAP", "PostgresStore", "pgvector_version"]

log = logging.getLogger("memoryd")
# An access time is rewritten only when older than this (see `PostgresStore.touch`).
TOUCH_GRANULARITY = timedelta(hours=1)
# Access times and recall logs wait in the process and are written together at most this often (seconds).
TOUCH_EVERY = 2.0
# A pooled connection used this recently is handed out without the pool's check (a round trip per
# statement otherwise); a read that then finds it dead is run again on another (`_rows`).
CHECK_IDLE_S = 2.0

# pg_advisory_xact_lock key for schema migrations: "memoryd" as a 64-bit integer.
MIGRATION_LOCK = int.from_bytes(b"memoryd\x00", "big")
_PGVECTOR = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
_KW = "NULLIF(array_to_tsvector(?::text[]), '')"  # no terms: NULL, not in the keyword index
_COPY_ORDER = {"atoms": "a.seq", "events": "a.seq", "edges": "a.src, a.dst, a.kind", "event_payloads": "a.event_id",
               "sensitive_scopes": "a.scope_hash", "anchors": "a.atom_id, a.path, a.symbol", "teams": "a.name",
               "team_members": "a.team, a.tenant_id", "shares": "a.workspace, a.repository",
               "model_vectors": "a.atom_id, a.model"}  # fmt: skip
_ERROR = "database error: {detail}"
_CONFLICT = "the database gave up a transaction that conflicted with another writer: {detail}"
# Every exception class of psycopg and psycopg_pool and the memoryd error it becomes (a test checks
# that none is missing; psycopg.Rollback is control flow, not an error). A SQLSTATE class of
# psycopg.errors maps through its nearest listed base.
PSYCOPG_EXC_MAP: ExcMap = {
    **dbapi_map(psycopg, _ERROR),
    psycopg.OperationalError: (StorageError, "lost the PostgreSQL connection to {where}: {detail}; check that the "
                                             "server is running"),
    psycopg.errors.QueryCanceled: (StorageError, _ERROR),  # a timeout, not a lost connection
    psycopg.errors.LockNotAvailable: (StorageBusy, "database is locked by another writer (waited past "
                                                   "busy_timeout_ms): {detail}"),
    psycopg.errors.TransactionRollback: (StorageBusy, _CONFLICT),
    psycopg.errors.SerializationFailure: (StorageBusy, _CONFLICT),
    psycopg.errors.DeadlockDetected: (StorageBusy, _CONFLICT),
    PoolTimeout: (StorageError, "no PostgreSQL connection to {where} within {timeout:.0f}s: the server is down "
                                "or unreachable, or every pooled connection is busy"),
    TooManyRequests: (StorageBusy, "too many requests wait for a PostgreSQL connection to {where}: {detail}"),
    PoolClosed: (StorageError, "the store is closed"),
}  # fmt: skip
_CONNECT_MAP: ExcMap = {  # the first connection: a wrong URL or an unreachable server
    **PSYCOPG_EXC_MAP,
    psycopg.OperationalError: (StorageError, "cannot connect to PostgreSQL at {where}: {detail}. Is the server "
                               "running and reachable, and does MEMORYD_DB name the right host, port, database and user?"),
    psycopg.ProgrammingError: (StorageError, "MEMORYD_DB is not a valid PostgreSQL URL: {detail}"),
}  # fmt: skip


def _describe(dsn: str) -> str:
    """host:port/dbname as user, without the password, for error messages."""
    try:
        d = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the MEMORYD_DB server"
    user = f" as {d['user']}" if d.get("user") else ""
    host = d.get("host") or d.get("hostaddr") or "localhost"
    return f"{host}:{d.get('port') or 5432}/{d.get('dbname') or '(default database)'}{user}"


def pgvector_version(version: str, db: str) -> tuple[int, ...]:
    """pgvector's (major, minor), or a StorageError when it is older than memoryd needs: 0.7, whose `halfvec` the
    vector search reads (migration 12); 0.8's iterative scan is recommended."""
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if parts < (0, 7):
        raise StorageError(f"pgvector {version} in database {db} has no halfvec type; run `ALTER EXTENSION vector "
                           "UPDATE;` (pgvector >= 0.7 is required, >= 0.8 recommended)")  # fmt: skip
    return parts


class PostgresDialect(Dialect):
    backend = "postgres"
    exc_map = PSYCOPG_EXC_MAP
    limit_all = None
    binary = ' COLLATE "C"'
    entities_sql = (
        "ARRAY(SELECT e.dst FROM edges e WHERE e.src = a.id AND e.kind = 'mentions' ORDER BY e.dst COLLATE \"C\")"
    )
    terms_join = ""
    terms_sql = "coalesce(tsvector_to_array(a.kw), '{}')"
    indexed_sql = "SELECT count(*) FROM atoms WHERE kw IS NOT NULL"
    indexed_in_sql = "SELECT count(*) FROM atoms WHERE kw IS NOT NULL{where}"
    vector_sql = "a.embedding::real[]"
    no_index = ""
    ordered_join = "JOIN"
    greatest = "greatest"
    ends_with = "right({}, ?)"

    def day(self, column: str) -> str:
        return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')"

    def has_tag(self, tag: str, terms: Sequence[str]) -> tuple[str, list[object]]:
        return "a.tags @> ?::jsonb", [Jsonb([tag])]  # the GIN index on tags

    def __init__(self, pool_timeout: float) -> None:
        self.pool_timeout = pool_timeout

    def translate_error(self, exc: Exception, where: str) -> StorageError:
        return translate(exc, self.exc_map, where=where, timeout=self.pool_timeout)

    @staticmethod
    @lru_cache(maxsize=1024)
    def sql(text: str) -> str:
        return text.replace("%", "%%").replace("?", "%s")

    def any_of(self, column: str, values: Sequence[object], cast: str = "text") -> tuple[str, list[object]]:
        return f"{column} = ANY(?::{cast}[])", [list(values)]

    def time(self, value: datetime) -> object:
        return value.astimezone(UTC)

    def read_time(self, value: Any) -> datetime:
        return value.astimezone(UTC)  # type: ignore[no-any-return]

    def json(self, value: Sequence[str]) -> object:
        return Jsonb(list(value))

    def read_json(self, value: Any) -> list[str]:
        return list(value)

    read_list = read_json

    def read_terms(self, value: Any) -> tuple[str, ...]:
        return tuple(value)

    def vector(self, value: Vector | None) -> object:
        """pgvector's binary form, 32-bit (`VectorParam`); None for vectors PostgreSQL cannot hold (empty, too
        long, not finite)."""
        if value is None:
            return None
        v = np.asarray(value, dtype=np.float32).ravel()
        if not 0 < v.shape[0] <= MAX_DIM or not np.isfinite(v).all():
            log.warning("a vector of %d dimensions (or not finite) is stored as NULL", v.shape[0])
            return None
        return VectorParam(v, half=False)

    def read_vector(self, value: Any) -> Vector | None:
        return None if value is None else np.asarray(value, dtype=np.float32)


class _PostgresTx(SqlTx[psycopg.Connection[Any]]):
    def _index_columns(self, terms: Sequence[str], vector: Vector | None) -> dict[str, tuple[str, object]]:
        return {"kw": (_KW, lexemes(terms))}

    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None:
        self.run(f"UPDATE atoms SET kw = {_KW} WHERE id = ?", (lexemes(terms), atom_id))
        if vector is not None:
            self.run("UPDATE atoms SET embedding = ? WHERE id = ?", (self._d.vector(vector), atom_id))

    def _unindex_sql(self, atom_id: str) -> tuple[str, list[object]]:
        return ", kw = NULL", []  # the trigger drops its terms from scope_terms

    def _begin_import(self) -> None:
        # Per-row trigger upkeep of scope_terms would pile up row versions of the common terms
        # (quadratic): the terms are counted once at the end instead.
        self.run("ALTER TABLE atoms DISABLE TRIGGER atoms_kw_insert_delete")
        self.run("ALTER TABLE edges DISABLE TRIGGER edges_scope")  # one UPDATE at the end (migration 9)

    def _end_import(self, snapshot_version: int) -> None:
        for table, column in (
            ("atoms", "seq"),
            ("promotions", "id"),
            ("grants", "id"),
            ("access_requests", "id"),
            ("recalls", "id"),
        ):
            self.run(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                     f" coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)")  # fmt: skip
        self.run("DELETE FROM scope_terms")
        self.run("DELETE FROM scope_docs")
        self._store._run_script(self._conn, POSTGRES_SCOPE_STATS)
        self.run("ALTER TABLE atoms ENABLE TRIGGER atoms_kw_insert_delete")
        self.run("UPDATE edges e SET scope_hash = a.scope_hash FROM atoms a WHERE a.id = e.src")
        self.run("ALTER TABLE edges ENABLE TRIGGER edges_scope")
        self.run("UPDATE chain_head SET snapshot_version = ? WHERE id = 1", (snapshot_version,))

    def load_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        marks = ["?"] * len(columns)
        if table == "atoms":  # the last value is the atom's terms
            columns, marks = [*columns, "kw"], [*marks, _KW]
            rows = [(*r[:-1], lexemes(r[-1])) for r in rows]  # type: ignore[arg-type]
        self._store.run_many(
            self._conn, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})", rows
        )


class PostgresStore(PgIndex, SqlStore[psycopg.Connection[Any]]):
    """A pooled PostgreSQL database; every statement passes through `run`."""

    dialect: PostgresDialect

    def __init__(self, dsn: str, *, busy_timeout_ms: int = 5000, pool_size: int = 8, connect_timeout_s: int = 10,
                 tracer: Tracer | None = None, read_dsns: Sequence[str] = (), read_wait_ms: int = 500,
                 read_max_lag_ms: int = 5000) -> None:  # fmt: skip
        """`read_dsns`: hot standbys of `dsn` that serve reads (`storage/pg_route.py`): a person's reads wait
        up to `read_wait_ms` for a standby to replay their last write, else read the primary; a standby
        more than `read_max_lag_ms` behind leaves the rotation."""
        dsn = primary_dsn(dsn)
        self._router: ReadRouter | None = None
        self.busy_timeout_ms = int(busy_timeout_ms)
        super().__init__(PostgresDialect(max(1.0, self.busy_timeout_ms / 1000)), _PostgresTx, where=_describe(dsn),
                         tracer=tracer)  # fmt: skip
        self.dsn = dsn
        self._iterative_scan = True
        self._sizes: dict[tuple[str, int], tuple[float, int]] = {}  # (scope, dims) → (when counted, vectors)
        self._back: dict[int, float] = {}  # id(pooled connection) → when it was last returned to the pool
        self._pending_lock = threading.Lock()
        self._touches: set[str] = set()  # atoms read since the last batch
        self._recall_log: list[tuple[datetime, str, list[str]]] = []
        self._flushed_at = time.monotonic()
        kwargs = {"autocommit": True, "connect_timeout": connect_timeout_s, "application_name": "memoryd"}
        try:
            first = psycopg.connect(dsn, **kwargs)  # type: ignore[arg-type]
        except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:
            raise translate(exc, _CONNECT_MAP, where=self.where) from exc
        with self.translating(), first, first.transaction():  # closed after, whatever happens
            self.run(first, "SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            self._ensure_vector(first)
            self._migrate(first)
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=max(1, pool_size), open=False, name="memoryd", kwargs=kwargs,
            configure=self._configure, check=self._check, reset=self._returned, timeout=self.dialect.pool_timeout,
            reconnect_timeout=60.0,
        )  # fmt: skip
        try:
            self._pool.open(wait=True, timeout=max(2.0, float(connect_timeout_s)))
        except PoolTimeout as exc:
            self._pool.close()
            raise StorageError(
                f"cannot open a connection pool to PostgreSQL at {self.where}; is the server running?"
            ) from exc
        if read_dsns:
            try:
                self._router = ReadRouter(self, read_targets(read_dsns), wait_s=read_wait_ms / 1000,
                                          max_lag_s=read_max_lag_ms / 1000, configure=self._configure)  # fmt: skip
            except BaseException:
                self._pool.close()
                raise

    # -- connections and transactions ----------------------------------------------------------

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        settings = [("TimeZone", "UTC"), ("lock_timeout", f"{self.busy_timeout_ms}ms"), ("hnsw.ef_search", "100")]
        if self._iterative_scan:  # pgvector >= 0.8: keep scanning the graph until k rows pass the scope filter
            # Relaxed order: the rows may come slightly out of order (`vector_candidates` sorts them). Strict
            # order found fewer of a team scope's true neighbours at more cost: at 100k, recall@10 0.777
            # against 0.858, mean 2.94 ms against 2.07 (bench/vector_plans.py).
            settings.append(("hnsw.iterative_scan", "relaxed_order"))
        # One round trip; hnsw.* may be set before pgvector loads in this backend (it adopts them).
        calls = ", ".join("set_config(?, ?, false)" for _ in settings)
        self.run(conn, f"SELECT {calls}", [x for pair in settings for x in pair])

    def _returned(self, conn: psycopg.Connection[Any]) -> None:
        self._back[id(conn)] = time.monotonic()

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's check (a round trip) only for a connection idle longer than CHECK_IDLE_S."""
        if time.monotonic() - self._back.get(id(conn), -math.inf) > CHECK_IDLE_S:
            ConnectionPool.check_connection(conn)

    def _primary_rows(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        """A read on the primary. Outside a write transaction it runs again, once, when its connection turned
        out dead (a connection used within CHECK_IDLE_S is not checked before it is handed out)."""
        if getattr(self._local, "conn", None) is not None:
            return super()._rows(sql, params)
        with self.translating(), self._pool.connection() as conn:
            try:
                return self.run(conn, sql, params).fetchall()
            except StorageError:
                if not conn.broken:
                    raise
        with self.translating(), self._pool.connection() as conn:  # the dead one is discarded on return
            return self.run(conn, sql, params).fetchall()

    def _run_script(self, conn: psycopg.Connection[Any], script: str) -> None:
        self.run(conn, script)  # no parameters: sent as one multi-statement query

    def _ensure_vector(self, conn: psycopg.Connection[Any]) -> None:
        """pgvector >= 0.7 in the database (created if the role may), else a StorageError that says what to do."""

        def one(sql: str) -> Any:
            rows = self.run(conn, sql).fetchall()
            return rows[0] if rows else None

        db, role = one("SELECT current_database(), current_user")
        if (version := one(_PGVECTOR)) is None:
            if one("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'") is None:
                raise StorageError(
                    f"the PostgreSQL server at {self.where} does not have the pgvector extension installed; "
                    "install pgvector on the server (e.g. the postgresql-<major>-pgvector package, or build it from "
                    f"source), then run `CREATE EXTENSION vector;` in database {db}"
                )
            try:
                with conn.transaction():
                    self.run(conn, "CREATE EXTENSION IF NOT EXISTS vector")
            except StorageError as exc:
                if not isinstance(exc.__cause__, psycopg.errors.InsufficientPrivilege):
                    raise
                raise StorageError(
                    f"database {db} on {self.where} does not have the pgvector extension enabled and role {role} "
                    f"may not create it; ask an administrator to run `CREATE EXTENSION vector;` in database {db} "
                    "(as a superuser or the database owner), then retry"
                ) from exc.__cause__
            version = one(_PGVECTOR)
        self._iterative_scan = pgvector_version(str(version[0]), db) >= (0, 8)

    @contextmanager
    def _reader(self) -> Iterator[psycopg.Connection[Any]]:
        with self.translating(), self._pool.connection() as conn:
            yield conn

    @contextmanager
    def _bookkeeping(self) -> Iterator[psycopg.Connection[Any]]:
        with self.translating(), self._pool.connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection[Any]]:
        with self.translating(), self._pool.connection() as conn:
            with conn.transaction():
                # The one lock every writer takes first: serialises chain appends across processes.
                self.run(conn, "UPDATE chain_head SET snapshot_version = snapshot_version + 1 WHERE id = 1")
                yield conn
            if self._router is not None:
                self._committed(conn)

    # -- hot standbys (storage/pg_route.py) ------------------------------------------------------

    def _committed(self, conn: psycopg.Connection[Any]) -> None:
        """After a commit: the WAL position this reader's next reads wait for on a standby."""
        assert self._router is not None
        try:
            self._router.wrote(self.run(conn, "SELECT pg_current_wal_insert_lsn()::text").fetchall()[0][0])
        except StorageError as exc:  # committed all the same: this person's reads use the primary for a while
            log.warning("no WAL position after a commit (%s): the writer's next reads use the primary", exc)
            self._router.wrote(None)

    @contextmanager
    def primary_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection to the primary, outside any transaction."""
        with self.translating(), self._pool.connection() as conn:
            yield conn

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        router = self._router
        if router is not None and getattr(self._local, "conn", None) is None and not PRIMARY_ONLY.get():
            rows = router.rows(sql, params)
            if rows is not None:
                return rows
        return self._primary_rows(sql, params)

    @contextmanager
    def on_primary(self) -> Iterator[None]:
        """Reads inside see every committed write (they are not sent to a standby)."""
        token = PRIMARY_ONLY.set(True)
        try:
            yield
        finally:
            PRIMARY_ONLY.reset(token)

    def acting_for(self, person: str) -> Any:
        """This store with `person`'s reads waiting for `person`'s writes (with standbys; else itself)."""
        return self if self._router is None else _PersonView(self, person)

    def read_status(self) -> dict[str, Any]:
        """Where reads went: each standby's state and reads served, and reads the primary took instead."""
        if self._router is None:
            return {"standbys": [], "primary_reads": None, "waits": 0}
        r = self._router
        return {"standbys": r.status(), "primary_reads": r.primary_reads, "waits": r.waits}

    # -- recall (the candidates: pg_index.py) --------------------------------------------------

    def successors(self, atom_ids: Sequence[str], *, statuses: Sequence[str], within_seconds: float) -> dict[str, str]:
        # One statement (a seek per atom on atoms_scope_status inside LATERAL): the per-atom seeks of
        # SQLite cost a round trip each here, 92 vs 2.6 ms for 50 atoms (docs/DECISIONS.md).
        ids = list(dict.fromkeys(atom_ids))
        if not ids or not statuses:
            return {}
        return {r[0]: r[1] for r in self._rows(
            "SELECT q.id, n.id FROM atoms q CROSS JOIN LATERAL (SELECT a.id FROM atoms a"
            " WHERE a.scope_hash = q.scope_hash AND a.status = ANY(?::text[]) AND a.created_at > q.created_at"
            " AND a.created_at <= q.created_at + make_interval(secs => ?) ORDER BY a.created_at LIMIT 1) n"
            " WHERE q.id = ANY(?::text[])", (list(statuses), float(within_seconds), ids))}  # fmt: skip

    def warm(self) -> None:
        """Nothing to load: pgvector searches inside the database."""

    # -- the rest ------------------------------------------------------------------------------

    def touch(self, atom_ids: Sequence[str], *, now: bool = False) -> None:
        """Access times (and recall logs) wait in the process and are written in one transaction at most
        every TOUCH_EVERY seconds (and at close): no write on a recall's own path."""
        with self._pending_lock:
            self._touches.update(atom_ids)
            due = (self._touches or self._recall_log) and (now or time.monotonic() - self._flushed_at >= TOUCH_EVERY)
            if not due:
                return
            touches, self._touches = sorted(self._touches), set()
            recalls, self._recall_log = self._recall_log, []
            self._flushed_at = time.monotonic()
        # SKIP LOCKED: never wait for (or deadlock with) a writer; access times are a hint. Only times older
        # than TOUCH_GRANULARITY are rewritten: each is a new row version (a HOT update since migration 10:
        # no index holds the time and pages keep room for it; before, every index took a new entry, HNSW and
        # GIN included), and the standbys replay it. Decay counts in days.
        at = datetime.now(UTC)
        try:
            with self._bookkeeping() as conn:
                if touches:
                    self.run(conn, "UPDATE atoms SET last_accessed_at = ? WHERE id IN"
                                   " (SELECT id FROM atoms WHERE id = ANY(?::text[]) AND (last_accessed_at IS NULL"
                                   " OR last_accessed_at < ?) ORDER BY id FOR UPDATE SKIP LOCKED)",
                             (at, touches, at - TOUCH_GRANULARITY))  # fmt: skip
                if recalls:
                    self.run(conn, "INSERT INTO recalls (at, scope_hash, hits) SELECT * FROM unnest(?::timestamptz[],"
                                   " ?::text[], ?::jsonb[])",
                             ([r[0] for r in recalls], [r[1] for r in recalls], [Jsonb(r[2]) for r in recalls]))  # fmt: skip
        except StorageError as exc:
            log.debug("access times and recalls not recorded: %s", exc)

    def log_recall(self, scope_hash: str, hit_ids: Sequence[str]) -> None:
        with self._pending_lock:  # written with the access times (`touch`): a hint that never fails a read
            self._recall_log.append((datetime.now(UTC), scope_hash, list(hit_ids)))
        self.touch(())

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        self.touch((), now=True)  # this process's queued recalls first
        return super().recalls(scope_hashes=scope_hashes, since=since, until=until, limit=limit)

    def entity_mentions(self, entity_ids: Sequence[str], *, per_entity: int,
                        exclude_scopes: Sequence[str] = ()) -> list[tuple[str, str]]:  # fmt: skip
        if not entity_ids:
            return []
        return [(r[0], r[1]) for r in self._rows(
            "SELECT q.dst, m.src FROM unnest(?::text[]) WITH ORDINALITY AS q(dst, n) CROSS JOIN LATERAL"
            " (SELECT e.src, a.seq FROM edges e JOIN atoms a ON a.id = e.src WHERE e.dst = q.dst AND e.kind = 'mentions'"
            " AND a.status = 'active' AND a.scope_hash <> ALL(?::text[]) ORDER BY a.seq DESC LIMIT ?) m"
            " ORDER BY q.n, m.seq DESC", (list(entity_ids), list(exclude_scopes), per_entity))]  # fmt: skip

    def _copy_order(self, table: str) -> str:
        return _COPY_ORDER.get(table, "a.id")

    def integrity(self) -> str:
        """ "ok", or what is inconsistent (the keyword statistics, the chain head row)."""
        row = self._one("SELECT (SELECT count(*) FROM chain_head), (SELECT coalesce(sum(docs), 0) FROM scope_docs),"
                        " (SELECT count(*) FROM atoms WHERE kw IS NOT NULL)")  # fmt: skip
        if row[0] != 1:
            return "chain_head must have exactly one row"
        if row[1] != row[2]:
            return f"keyword statistics count {row[1]} indexed atoms but {row[2]} are indexed"
        return "ok"

    def snapshot_version(self, scope_hashes: Sequence[str] | None = None) -> int:
        if scope_hashes is not None:
            return self._scoped_version(scope_hashes)
        return int(self._one("SELECT snapshot_version FROM chain_head WHERE id = 1")[0])

    def checkpoint(self) -> None:
        """VACUUM the tables that held scrubbed content, so no dead row version still carries it.

        PostgreSQL does not zero freed space in data files or recycle WAL on demand, so unlike
        SQLite's secure_delete this is a logical guarantee (no row, index entry reachable by SQL,
        statistic or dead version keeps the text), not a byte-level one.
        """
        try:
            with self._reader() as conn:
                self.run(conn, "VACUUM atoms, event_payloads, scope_terms, scope_docs, entities, edges, sessions")
        except StorageError as exc:
            log.warning("VACUUM after scrubbing failed (dead row versions stay until autovacuum): %s", exc)

    def close(self) -> None:
        try:
            self.touch((), now=True)  # what waits is written before the pool closes
        finally:
            if self._router is not None:
                self._router.close()
            self._pool.close()


# Reads that must see every committed write, so never go to a standby: who a token is and what it may do
# (a revocation or a team change acts on the next request, as without standbys), the write path's
# duplicate check (a retried save on another replica must find the first attempt), this process's recalls.
PRIMARY_READS = ("get_token", "tokens", "teams", "shares", "shared_team", "is_member", "find_duplicate", "recalls")


def _on_primary(name: str) -> Any:
    method = getattr(PostgresStore, name)

    def read(self: PostgresStore, *args: Any, **kwargs: Any) -> Any:
        if self._router is None:
            return method(self, *args, **kwargs)
        with self.on_primary():
            return method(self, *args, **kwargs)

    read.__name__ = read.__qualname__ = name
    read.__doc__ = method.__doc__
    return read


for _name in PRIMARY_READS:
    setattr(PostgresStore, _name, _on_primary(_name))


def primary_dsn(dsn: str) -> str:
    """A libpq multi-host `--db` (`postgresql://h1,h2/db`) reaches the one that accepts writes
    (`target_session_attrs=read-write`) unless the URL says otherwise."""
    try:
        d = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return dsn  # the first connection says what is wrong with it
    if "," in str(d.get("host") or "") and "target_session_attrs" not in d:
        sep = "&" if "?" in dsn else "?"
        return f"{dsn}{sep}target_session_attrs=read-write"
    return dsn


class _PersonView:
    """A PostgresStore whose reads and writes are one person's (`pg_route.READER`): what they wrote, their
    next reads wait for on a standby. Everything else is the store's."""

    def __init__(self, store: PostgresStore, person: str) -> None:
        self._store = store
        self._person = person

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not callable(value):
            return value
        person = self._person

        def call(*args: Any, **kwargs: Any) -> Any:
            with reading_as(person):
                return value(*args, **kwargs)

        return call

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with reading_as(self._person), self._store.transaction() as tx:  # the commit is inside: it is theirs
            yield tx

    def acting_for(self, person: str) -> Any:
        return self._store.acting_for(person)
