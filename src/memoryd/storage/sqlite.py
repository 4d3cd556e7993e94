"""SqliteStore: the embedded default, one SQLite file in WAL mode.

One writer connection behind a lock takes every write transaction (BEGIN IMMEDIATE also
serialises other processes); reads run on a pool of read-only connections, so a read never waits
for a write, nor for the vault fsync inside it (as datasette does). Access times are written on a
connection of their own that never waits for the lock. Keywords are an FTS5 table of the engine's
terms; vectors are BLOBs searched by an exact in-memory index (`search.vector`) that catches up
with every process's changes through `vec_seq`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..search.vector import ANN_MIN, VectorIndex
from ..shared.errors import StorageBusy, StorageError
from ..shared.stamps import iso, parse_iso, utc_now
from .base import TermStats, Tracer, Vector
from .migrations import SQLITE_SCOPE_STATS
from .sql import Dialect, ExcMap, SqlStore, SqlTx, dbapi_map, first_line, translate

__all__ = ["SQLITE_CODE_MAP", "SQLITE_EXC_MAP", "SqliteStore"]

log = logging.getLogger(__name__)

TOUCH_EVERY = 2.0  # seconds between writes of access times

_BUSY = "database is locked by another writer: {detail}"
# Every exception class of the sqlite3 module and the memoryd error it becomes (a test checks that
# none is missing); the result code decides first, whatever the class: SQLITE_CODE_MAP has the
# primary codes (extended codes such as SQLITE_BUSY_SNAPSHOT reduce to them) that mean another
# connection held a lock past busy_timeout.
SQLITE_EXC_MAP: ExcMap = dbapi_map(sqlite3, "database error: {detail}")
SQLITE_CODE_MAP = {sqlite3.SQLITE_BUSY: (StorageBusy, _BUSY), sqlite3.SQLITE_LOCKED: (StorageBusy, _BUSY)}


class SqliteDialect(Dialect):
    backend = "sqlite"
    exc_map = SQLITE_EXC_MAP
    limit_all = -1
    binary = ""  # SQLite's default collation is byte order
    # Unit-separated, not JSON: parsing ~100 candidates' lists as JSON cost a recall 3 ms; entity ids
    # are extracted identifiers and never hold a control character.
    entities_sql = ("(SELECT group_concat(dst, char(31)) FROM"
                    " (SELECT dst FROM edges WHERE src = a.id AND kind = 'mentions' ORDER BY dst))")  # fmt: skip
    terms_join = "LEFT JOIN atom_fts f ON f.rowid = a.seq"
    terms_sql = "f.terms"
    # One row per indexed atom: a b-tree count, unlike count(*) on the FTS table, which reads every row.
    indexed_sql = "SELECT count(*) FROM atom_fts_docsize"
    indexed_in_sql = "SELECT count(*) FROM atom_fts_docsize d JOIN atoms ON atoms.seq = d.id WHERE 1 = 1{where}"
    vector_sql = "a.embedding"
    no_index = "+"  # unary +: the planner looks the row up by its key instead of scanning this column's index
    ordered_join = "CROSS JOIN"  # SQLite keeps the left table outermost
    greatest = "max"
    ends_with = "substr({}, -?)"

    def day(self, column: str) -> str:
        return f"substr({column}, 1, 10)"  # times are ISO 8601 text in UTC

    def has_tag(self, tag: str, terms: Sequence[str]) -> tuple[str, list[object]]:
        exact = "EXISTS (SELECT 1 FROM json_each(a.tags) WHERE value = ?)"
        if not terms:
            return exact, [tag]
        # the keyword index narrows to atoms holding the tag's terms; json_each decides
        return (
            f"a.seq IN (SELECT rowid FROM atom_fts WHERE atom_fts MATCH ?) AND {exact}",
            [" AND ".join(f'"{t}"' for t in terms), tag],
        )

    def translate_error(self, exc: Exception, where: str) -> StorageError:
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and (entry := SQLITE_CODE_MAP.get(code & 0xFF)):
            return entry[0](entry[1].format(detail=first_line(exc)))
        return translate(exc, self.exc_map)

    time = staticmethod(iso)
    read_time = staticmethod(parse_iso)

    def sql(self, text: str) -> str:
        return text  # written with `?`, as sqlite3 takes it

    def any_of(self, column: str, values: Sequence[object], cast: str = "text") -> tuple[str, list[object]]:
        if len(values) > 500:  # one JSON parameter: no limit on the number of values
            return f"{column} IN (SELECT value FROM json_each(?))", [json.dumps(list(values))]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def json(self, value: Sequence[str]) -> object:
        return json.dumps(list(value), ensure_ascii=False)

    def read_json(self, value: Any) -> list[str]:
        return list(json.loads(value))

    def read_list(self, value: Any) -> list[str]:
        return value.split("\x1f") if value else []

    def read_terms(self, value: Any) -> tuple[str, ...]:
        return tuple((value or "").split())

    def vector(self, value: Vector | None) -> object:
        return None if value is None else np.asarray(value, dtype=np.float32).tobytes()

    def read_vector(self, value: Any) -> Vector | None:
        return None if value is None else np.frombuffer(value, dtype=np.float32)


class _SqliteTx(SqlTx[sqlite3.Connection]):
    def _next_vec_seq(self) -> int:  # vec_seq orders every vector change: the in-memory index catches up by it
        return int(self.one("SELECT coalesce(max(vec_seq), 0) + 1 FROM atoms")[0])

    def _index_columns(self, terms: Sequence[str], vector: Vector | None) -> dict[str, tuple[str, object]]:
        return {"vec_seq": ("?", None if vector is None else self._next_vec_seq())}  # terms: `_after_insert`

    def _after_insert(self, seq: int, terms: Sequence[str]) -> None:
        if terms:
            self.run("INSERT INTO atom_fts (rowid, terms) VALUES (?, ?)", (seq, " ".join(terms)))
            self._count(self.one("SELECT scope_hash FROM atoms WHERE seq = ?", (seq,))[0], terms, +1)

    def _count(self, scope_hash: str, terms: Sequence[str], sign: int) -> None:
        """Add (+1) or remove (-1) one indexed atom holding `terms` to its scope's keyword statistics."""
        unique = [(scope_hash, t) for t in dict.fromkeys(terms)]
        if sign > 0:
            self._store.run_many(self._conn, "INSERT INTO scope_terms (scope_hash, term, df) VALUES (?, ?, 1)"
                                 " ON CONFLICT (scope_hash, term) DO UPDATE SET df = df + 1", unique)  # fmt: skip
            self.run("INSERT INTO scope_docs (scope_hash, docs) VALUES (?, 1)"
                     " ON CONFLICT (scope_hash) DO UPDATE SET docs = docs + 1", (scope_hash,))  # fmt: skip
        else:
            self._store.run_many(self._conn, "UPDATE scope_terms SET df = df - 1 WHERE scope_hash = ? AND term = ?",
                                 unique)  # fmt: skip
            self.run("DELETE FROM scope_terms WHERE scope_hash = ? AND df <= 0", (scope_hash,))
            self.run("UPDATE scope_docs SET docs = docs - 1 WHERE scope_hash = ?", (scope_hash,))

    def _unindex(self, seq: int) -> tuple[str, list[str]] | None:
        """Drop an atom's keyword row; (its scope, the terms it held) if it had one."""
        row = self.one("SELECT a.scope_hash, f.terms FROM atom_fts f JOIN atoms a ON a.seq = f.rowid WHERE f.rowid = ?",
                       (seq,))  # fmt: skip
        if row is None:
            return None
        self.run("DELETE FROM atom_fts WHERE rowid = ?", (seq,))
        held = str(row[1]).split()
        self._count(row[0], held, -1)
        return row[0], held

    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None:
        seq = int(self.one("SELECT seq FROM atoms WHERE id = ?", (atom_id,))[0])
        self._unindex(seq)
        self._after_insert(seq, terms)
        if vector is not None:
            self.run("UPDATE atoms SET embedding = ?, vec_seq = ? WHERE id = ?",
                     (self._d.vector(vector), self._next_vec_seq(), atom_id))  # fmt: skip

    def _unindex_sql(self, atom_id: str) -> tuple[str, list[object]]:
        row = self.one("SELECT seq FROM atoms WHERE id = ?", (atom_id,))
        if row is not None:
            self._unindex(int(row[0]))
        return ", vec_seq = ?", [self._next_vec_seq()]  # the vector index drops it

    def _scope_moved(self, atom_id: str, scope_hash: str) -> dict[str, object]:
        row = self.one("SELECT seq FROM atoms WHERE id = ?", (atom_id,))
        held = self._unindex(int(row[0])) if row is not None else None
        if held is not None:  # its keyword statistics move with it
            self.run("INSERT INTO atom_fts (rowid, terms) VALUES (?, ?)", (int(row[0]), " ".join(held[1])))
            self._count(scope_hash, held[1], +1)
        return {"vec_seq": self._next_vec_seq()}  # the vector index keys candidates by scope

    def _end_import(self, snapshot_version: int) -> None:
        self.run("DELETE FROM scope_terms")
        self.run("DELETE FROM scope_docs")
        self._store._run_script(self._conn, SQLITE_SCOPE_STATS)
        self.run("UPDATE atoms SET vec_seq = seq WHERE embedding IS NOT NULL")
        self.run("UPDATE meta SET value = ? WHERE key = 'snapshot_version'", (str(snapshot_version),))

    def load_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        terms = [(r[0], " ".join(r[-1])) for r in rows if r[-1]] if table == "atoms" else []  # type: ignore[arg-type]
        self._store.run_many(self._conn, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                             [r[: len(columns)] for r in rows])  # fmt: skip
        if terms:
            self._store.run_many(self._conn, "INSERT INTO atom_fts (rowid, terms) VALUES (?, ?)", terms)


class SqliteStore(SqlStore[sqlite3.Connection]):
    """One SQLite file in WAL mode; every statement passes through `run`."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000, ann_min: int = ANN_MIN,
                 tracer: Tracer | None = None) -> None:  # fmt: skip
        super().__init__(SqliteDialect(), _SqliteTx, where=str(path), tracer=tracer)
        self.path = Path(path)
        self._timeout = busy_timeout_ms / 1000
        self._write_lock = threading.Lock()
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()  # read connections
        self._opened: list[sqlite3.Connection] = []
        self._vec_lock = threading.Lock()  # the in-memory vector index and how far it has caught up
        self._vectors = VectorIndex(ann_path=self.path.with_name(self.path.name + ".ann.usearch"), ann_min=ann_min)
        self._vec_seen = 0
        self._vec_loaded = False
        self._touch_lock = threading.Lock()  # held while access times are written (never waited for)
        self._touch_guard = threading.Lock()  # guards the pending access times (held for a moment)
        self._touches: dict[str, str] = {}  # access times not written yet: atom id → time
        self._recall_log: list[tuple[str, str, str]] = []  # recalls not recorded yet: (at, scope hash, hit ids)
        self._touched_at = 0.0  # when they were last written (monotonic)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.translating():
            # Tombstoned content must not linger in freed pages: secure_delete on every writing connection.
            self._conn = self._connect("foreign_keys = ON", "synchronous = NORMAL", "secure_delete = ON")
            self._wal(self._conn)
            # Set up with the usual wait (`synchronous` reads the schema: another process switching a new file
            # to WAL holds it), then never waiting: access times are hints, kept for the next batch when busy.
            self._toucher = self._connect("synchronous = NORMAL", "secure_delete = ON", "busy_timeout = 0")
        with self._write_lock, self._begin(self._conn, bump=False) as conn:
            self._migrate(conn)

    # -- connections and transactions ----------------------------------------------------------

    def _connect(self, *pragmas: str) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=self._timeout, isolation_level=None, check_same_thread=False)
        for pragma in pragmas:
            self.run(conn, f"PRAGMA {pragma}")
        self._opened.append(conn)
        return conn

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL. While another process switches a new file, SQLite answers SQLITE_BUSY at
        once instead of calling the busy handler (two commands creating the store together failed about
        once in 30), so the switch is retried here, for up to busy_timeout like any other wait."""
        deadline, pause = time.monotonic() + self._timeout, 0.002
        while True:
            try:
                self.run(conn, "PRAGMA journal_mode = WAL")
                return
            except StorageBusy:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            with self.translating():
                conn = self._connect("query_only = ON")
        try:
            yield conn
        finally:
            self._idle.put(conn)

    @contextmanager
    def _begin(self, conn: sqlite3.Connection, *, bump: bool = True) -> Iterator[sqlite3.Connection]:
        self.run(conn, "BEGIN IMMEDIATE")  # takes the database's write lock (other processes wait)
        try:
            if bump:
                self.run(conn, "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'snapshot_version'")
            yield conn
            self.run(conn, "COMMIT")
        except BaseException:
            if conn.in_transaction:
                self.run(conn, "ROLLBACK")
            raise

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock, self._begin(self._conn) as conn:
            yield conn

    @contextmanager
    def _bookkeeping(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock, self._begin(self._conn, bump=False) as conn:
            yield conn

    def _run_script(self, conn: sqlite3.Connection, script: str) -> None:
        for statement in _split_sql(script):  # executescript would commit on its own
            self.run(conn, statement)

    # -- keyword search ------------------------------------------------------------------------

    def term_stats(self, terms: Sequence[str], *, scope_hashes: Sequence[str]) -> TermStats:
        unique, scopes = list(dict.fromkeys(terms)), list(dict.fromkeys(scope_hashes))
        if not scopes:
            return 0, dict.fromkeys(unique, 0)
        in_scope, params = self.dialect.any_of("scope_hash", scopes)
        in_terms, more = self.dialect.any_of("term", unique or [""])
        with self._reading() as conn, self.translating():  # index lookups only: (scope, term) is the key
            docs = self.run(conn, f"SELECT coalesce(sum(docs), 0) FROM scope_docs WHERE {in_scope}", params).fetchall()
            df = dict(self.run(conn, f"SELECT term, sum(df) FROM scope_terms WHERE {in_scope} AND {in_terms}"
                                     " GROUP BY term", params + more).fetchall())  # fmt: skip
        return int(docs[0][0]), {t: int(df.get(t, 0)) for t in unique}

    def keyword_candidates(self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str],
                           limit: int, stats: TermStats | None = None) -> list[str]:  # fmt: skip
        present, cut, weight = self._selective(terms, stats, scope_hashes)
        if not present:
            return []
        in_scope, p1 = self.dialect.any_of("a.scope_hash", scope_hashes)
        in_status, p2 = self.dialect.any_of("a.status", statuses)
        if not cut:  # small enough to rank every match: FTS5 bm25 inside, then scope and status
            return [r[0] for r in self._rows(
                "SELECT a.id FROM (SELECT rowid, rank FROM atom_fts WHERE atom_fts MATCH ? ORDER BY rank LIMIT ?) f"
                f" JOIN atoms a ON a.seq = f.rowid WHERE {in_scope} AND {in_status} ORDER BY f.rank LIMIT ?",
                (" OR ".join(f'"{t}"' for t in present), limit * 4, *p1, *p2, limit))]  # fmt: skip
        # Big store: bounded work whatever the store size. The newest postings of the most
        # selective terms (FTS5 walks a term's rowids backwards cheaply), ranked by the IDF mass
        # of the terms each atom holds, newest first among equals. The engine then scores every
        # candidate on all query terms; old atoms that only share common terms are left to the
        # semantic and entity signals.
        mass: dict[int, float] = {}
        for term in present:
            for (rowid,) in self._rows(
                "SELECT rowid FROM atom_fts WHERE atom_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                (f'"{term}"', limit * 4),
            ):
                mass[rowid] = mass.get(rowid, 0.0) + weight[term]
        best = sorted(mass, key=lambda r: (-mass[r], -r))[: limit * 4]
        in_seq, p0 = self.dialect.any_of("seq", best)
        rows = self._rows(  # unary + keeps the planner on rowid lookups, off the scope index
            f"SELECT a.seq, a.id FROM atoms a WHERE {in_seq} AND +{in_scope} AND +{in_status}", (*p0, *p1, *p2)
        )
        rows.sort(key=lambda r: (-mass[r[0]], -r[0]))
        return [r[1] for r in rows[:limit]]

    def successors(self, atom_ids: Sequence[str], *, statuses: Sequence[str], within_seconds: float) -> dict[str, str]:
        # One seek per atom and status on atoms_scope_status (in-process: a query costs microseconds).
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids or not statuses:
            return {}
        cond, params = d.any_of("id", ids)
        out: dict[str, str] = {}
        with self._reading() as conn, self.translating():
            for atom_id, scope_hash, created in self.run(conn, f"SELECT id, scope_hash, created_at FROM atoms WHERE {cond}",
                                                         params).fetchall():  # fmt: skip
                bounds = (created, iso(parse_iso(created) + timedelta(seconds=within_seconds)))
                found = []
                for status in statuses:
                    found += self.run(conn, "SELECT created_at, id FROM atoms WHERE scope_hash = ? AND status = ?"
                                            " AND created_at > ? AND created_at <= ? ORDER BY created_at LIMIT 1",
                                      (scope_hash, status, *bounds)).fetchall()  # fmt: skip
                if found:
                    out[atom_id] = min((d.read_time(r[0]), r[1]) for r in found)[1]
        return out

    def atoms_for_entities(self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str],
                           limit: int) -> list[str]:  # fmt: skip
        scopes = list(dict.fromkeys(scope_hashes))
        if not entity_ids or not scopes:
            return []
        # The newest 4×limit mentions of each entity within these scopes, so a common entity costs about the
        # same on a big store as on a small one and mentions elsewhere (another tenant's) never crowd these
        # scopes' out. Each (entity, scope) pair is one backward range of `edges_dst_scope` (the edge carries
        # its atom's scope, migration 9; rowid order within it), merged newest first per entity. The atom's
        # own scope is checked again (it is read anyway, for its status).
        in_status, p2 = self.dialect.any_of("b.status", statuses)
        pair = ("SELECT * FROM (SELECT e.src, e.rowid AS r FROM edges e INDEXED BY edges_dst_scope JOIN atoms b"
                " ON b.id = e.src WHERE e.dst = ?"
                f" AND e.kind = 'mentions' AND e.scope_hash = ? AND b.scope_hash = ? AND {in_status}"
                " ORDER BY e.rowid DESC LIMIT ?)")  # fmt: skip
        arm = f"SELECT src FROM ({' UNION ALL '.join([pair] * len(scopes))} ORDER BY r DESC LIMIT ?)"
        return [r[0] for r in self._rows(
            f"SELECT a.id, count(*) AS n FROM ({' UNION ALL '.join([arm] * len(entity_ids))}) e JOIN atoms a"
            " ON a.id = e.src GROUP BY a.id ORDER BY n DESC, a.seq DESC LIMIT ?",
            (*[x for e in entity_ids for x in (*[y for h in scopes for y in (e, h, h, *p2, limit * 4)], limit * 4)],
             limit))]  # fmt: skip

    # -- vectors -------------------------------------------------------------------------------

    def _catch_up_vectors(self) -> None:
        """Apply every committed vector change since the last look, by this process or another.

        The first look loads the saved vector graph (if any) and then checks it against what it
        read (`VectorIndex.verify`); big stores start building a graph in the background. Always
        on a read connection: a transaction's own uncommitted vectors must never enter the index.
        """
        first = not self._vec_loaded
        with self._reader() as conn, self.translating():
            if first:
                self._vec_loaded = True
                self._vectors.load()
                n, size = self.run(conn, (  # size of the newest vector = the model in use (older ones may differ)
                    "SELECT (SELECT count(*) FROM atoms WHERE embedding IS NOT NULL),"
                    " (SELECT length(embedding) FROM atoms WHERE embedding IS NOT NULL ORDER BY vec_seq DESC LIMIT 1)"
                )).fetchall()[0]  # fmt: skip
                if n:  # headroom: untouched rows of a zeroed array cost no RSS, a regrow copies all
                    self._vectors.reserve(int(n) * 3 // 2 + 4096, int(size) // 4)
            cur = self.run(conn, "SELECT vec_seq, seq, id, scope_hash, embedding FROM atoms WHERE vec_seq > ?"
                                 " ORDER BY vec_seq", (self._vec_seen,))  # fmt: skip
            while rows := cur.fetchmany(4096):  # in chunks: 100k blobs at once would double the peak RSS
                adds = []
                for vec_seq, key, atom_id, scope_hash, blob in rows:
                    if blob is None:
                        self._vectors.remove(atom_id, key=key, seq=vec_seq)
                    else:
                        adds.append((vec_seq, key, atom_id, scope_hash, np.frombuffer(blob, dtype=np.float32)))
                self._vectors.add(adds)
                self._vec_seen = max(self._vec_seen, int(rows[-1][0]))
        if first:
            report = self._vectors.verify()
            if report and (report.get("removed") or report.get("added")):
                log.info("vector graph reconciled with the database: %s", report)
        self._vectors.maybe_build()

    def warm(self) -> None:
        """Load the vector index now (servers call this at start, so the first search is fast)."""
        with self._vec_lock:
            self._catch_up_vectors()

    def vector_candidates(self, query: Vector, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        with self._vec_lock:
            self._catch_up_vectors()
            return self._vectors.search(query, scope_hashes=scope_hashes, k=k)

    def cosines(self, query: Vector, atom_ids: Sequence[str]) -> dict[str, float]:
        with self._vec_lock:
            self._catch_up_vectors()
            vectors = {i: self._vectors.vector(i) for i in atom_ids}
        return {i: float(v @ query) for i, v in vectors.items() if v is not None and v.shape == query.shape}

    # -- the rest ------------------------------------------------------------------------------

    def touch(self, atom_ids: Sequence[str], *, now: bool = False) -> None:
        """Access times are collected and written at most every TOUCH_EVERY seconds (and at close): every
        commit by another connection empties the read connections' caches (pages, FTS5 structure).
        Recorded recalls (`log_recall`) go along."""
        with self._touch_guard:
            self._touches.update(dict.fromkeys(atom_ids, iso(utc_now())))
            pending = bool(self._touches or self._recall_log)
        if not pending or (not now and time.monotonic() - self._touched_at < TOUCH_EVERY):
            return
        if not self._touch_lock.acquire(blocking=False):
            return  # another thread is writing access times; a later read takes these along
        self._touched_at = time.monotonic()
        try:
            with self._touch_guard:
                batch, self._touches = self._touches, {}
                recalls, self._recall_log = self._recall_log, []
            try:  # busy_timeout 0: when a writer holds the lock, keep them for the next read
                with self._begin(self._toucher, bump=False) as conn:
                    if batch:
                        self.run_many(conn, "UPDATE atoms SET last_accessed_at = ? WHERE id = ?",
                                      [(stamp, atom_id) for atom_id, stamp in batch.items()])  # fmt: skip
                    if recalls:
                        self.run_many(conn, "INSERT INTO recalls (at, scope_hash, hits) VALUES (?, ?, ?)", recalls)
            except StorageBusy:
                with self._touch_guard:  # newer times win
                    self._touches = {**batch, **self._touches}
                    self._recall_log = recalls + self._recall_log
            except StorageError as exc:
                log.debug("access times not recorded: %s", exc)
        finally:
            self._touch_lock.release()

    def log_recall(self, scope_hash: str, hit_ids: Sequence[str]) -> None:
        """Queued and written with the access times (their connection, their pace: never waiting for a writer)."""
        with self._touch_guard:
            self._recall_log.append((iso(utc_now()), scope_hash, json.dumps(list(hit_ids))))
        self.touch(())

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        self.touch((), now=True)  # this process's queued recalls first
        return super().recalls(scope_hashes=scope_hashes, since=since, until=until, limit=limit)

    def entity_mentions(self, entity_ids: Sequence[str], *, per_entity: int,
                        exclude_scopes: Sequence[str] = ()) -> list[tuple[str, str]]:  # fmt: skip
        excluded, p1 = self.dialect.any_of("a.scope_hash", exclude_scopes) if exclude_scopes else ("", [])
        out: list[tuple[str, str]] = []
        with self._reading() as conn, self.translating():
            # Newest mentions first: edges_dst orders by rowid within an entity (named: with statistics of
            # edges_dst only, the planner takes edges_dst_scope and sorts every mention; a statement of this
            # shape went from 5 to 70 ms at 100k that way, bench/entity_candidates.py).
            # `+a.status` keeps the planner off atoms_status (it walked every active atom: 27 ms per entity
            # at 10k, vs 0.1).
            for entity_id in entity_ids:
                rows = self.run(conn, "SELECT e.src FROM edges e INDEXED BY edges_dst JOIN atoms a ON a.id = e.src"
                                      " WHERE e.dst = ?"
                                      " AND e.kind = 'mentions' AND +a.status = 'active'"
                                      f"{f' AND NOT {excluded}' if excluded else ''} ORDER BY e.rowid DESC LIMIT ?",
                                (entity_id, *p1, per_entity)).fetchall()  # fmt: skip
                out += [(entity_id, r[0]) for r in rows]
        return out

    def _copy_order(self, table: str) -> str:
        return "a.rowid"  # the order rows were written in

    def integrity(self) -> str:
        return str(self._one("PRAGMA quick_check")[0])

    def snapshot_version(self, scope_hashes: Sequence[str] | None = None) -> int:
        if scope_hashes is not None:
            return self._scoped_version(scope_hashes)
        return int(self._one("SELECT value FROM meta WHERE key = 'snapshot_version'")[0])

    def checkpoint(self) -> None:
        with self._write_lock:
            self.run(self._conn, "INSERT INTO atom_fts (atom_fts) VALUES ('optimize')")
            self.run(self._conn, "PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def close(self) -> None:
        self.touch((), now=True)  # access times still pending
        with self._vec_lock:
            self._vectors.save()  # the graph (big stores only) and the vec_seq it reflects
        with self._write_lock, self._touch_lock:
            with contextlib.suppress(StorageError):
                self.run(self._conn, "PRAGMA optimize")  # a best-effort hint must not fail the close
            for conn in self._opened:
                conn.close()


def _split_sql(script: str) -> Iterator[str]:
    """A migration script's statements, trigger bodies kept whole."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement.strip()
            statement = ""
    if statement.strip():
        yield statement  # without its final semicolon: it still runs (or fails) rather than vanish
