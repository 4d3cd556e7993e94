"""The SQL core both backends share: the plumbing every statement goes through (`run`, translated
driver errors, transactions, the dialect), and the tables a store copy carries."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from ...search.keywords import selective_terms
from ...search.rank import idf
from ...shared.errors import StorageError
from ...shared.models import Atom, Scope
from ...shared.stamps import utc_now
from ..base import (
    AtomUpdate,
    TermStats,
    Tracer,
    Vector,
)
from ..migrations import MIGRATIONS, TYPES, Backend

if TYPE_CHECKING:
    from . import SqlStore
    from .tx import SqlTx

__all__ = [
    "COPY_TABLES",
    "DBAPI_ERRORS",
    "C",
    "Connection",
    "Cursor",
    "Dialect",
    "ExcMap",
    "SqlCore",
    "dbapi_map",
    "first_line",
    "translate",
]

ExcMap = Mapping[type[Exception], tuple[type[StorageError], str]]
# The exception classes of every DB-API 2.0 driver module (PEP 249).
DBAPI_ERRORS = ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
                "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError")  # fmt: skip


class Cursor(Protocol):
    def fetchall(self) -> list[Any]: ...
    def fetchmany(self, size: int = ...) -> list[Any]: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[object]], /) -> object: ...


class Connection(Protocol):
    """What the core uses of a driver's connection (sqlite3's and psycopg's alike)."""

    def execute(self, sql: str, params: Sequence[object], /) -> Cursor: ...
    def cursor(self) -> Cursor: ...


C = TypeVar("C", bound=Connection)  # a backend's connection type


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def translate(exc: Exception, table: ExcMap, **context: object) -> StorageError:
    """The memoryd error for a driver exception: the entry of its most specific class in `table`.

    Messages are templates: `{detail}` is the driver's first line, other names come from `context`.
    """
    for cls in type(exc).__mro__:
        if (entry := table.get(cls)) is not None:
            return entry[0](entry[1].format(detail=first_line(exc), **context))
    return StorageError(f"database error: {first_line(exc)}")


def dbapi_map(module: object, message: str) -> dict[type[Exception], tuple[type[StorageError], str]]:
    """A mapping table entry for each DB-API exception class of a driver module."""
    return {getattr(module, name): (StorageError, message) for name in DBAPI_ERRORS}


class Dialect(Protocol):
    """What differs between the SQL databases in the statements of this module."""

    backend: Backend  # whose schema (storage/migrations.py) the database has
    exc_map: ExcMap  # every exception class of the driver: the memoryd error it becomes (`translate`)
    limit_all: int | None  # the LIMIT that means "no limit"
    binary: str  # collation clause that orders text by its bytes
    entities_sql: str  # expression: the entity ids atom `a` mentions, sorted (read by `read_list`)
    terms_join: str  # join that makes `terms_sql` available for atom `a`
    terms_sql: str  # expression: atom `a`'s indexed keyword terms (read by `read_terms`)
    indexed_sql: str  # query: the number of atoms in the keyword index
    indexed_in_sql: str  # query: the same for the atoms matching `{where}` (scope filters on `atoms`)
    vector_sql: str  # expression: atom `a`'s embedding (read by `read_vector`)
    no_index: str  # prefix that keeps a column's index out of the plan (SQLite's unary +)
    ordered_join: str  # a join whose left table drives the plan
    greatest: str  # the function: the largest of its arguments
    ends_with: str  # expression template: the last ? characters of `{}`

    def day(self, column: str) -> str: ...  # expression: the UTC day (YYYY-MM-DD) of a time column
    def has_tag(self, tag: str, terms: Sequence[str]) -> tuple[str, list[object]]: ...  # atom `a` has this tag

    def translate_error(self, exc: Exception, where: str) -> StorageError: ...
    def sql(self, text: str) -> str: ...  # the statement as the driver takes it (written with `?`)
    def any_of(self, column: str, values: Sequence[object], cast: str = "text") -> tuple[str, list[object]]: ...
    def time(self, value: datetime) -> object: ...
    def read_time(self, value: Any) -> datetime: ...
    def json(self, value: Sequence[str]) -> object: ...
    def read_json(self, value: Any) -> list[str]: ...
    def read_list(self, value: Any) -> list[str]: ...
    def read_terms(self, value: Any) -> tuple[str, ...]: ...
    def vector(self, value: Vector | None) -> object: ...
    def read_vector(self, value: Any) -> Vector | None: ...


_ATOM_COLUMNS = (
    "a.id, a.content, a.type, a.source, a.tenant_id, a.workspace, a.repository, a.branch, a.scope_root,"
    " a.scope_hash, a.epistemic, a.polarity, a.status, a.prior_status, a.title, a.tags, a.triggers, a.supersedes,"
    " a.superseded_by, a.created_at, a.updated_at, a.last_accessed_at, a.vault_path, a.written_at"
)
_PROMOTIONS = (
    "SELECT p.id, p.atom_id, p.scope_hash, p.origin, p.durability, p.utility, p.relevance, p.accuracy, p.average,"
    " p.reasoning, p.status, p.created_at, p.decided_at FROM promotions p"
)
_EVENTS = (
    "SELECT e.seq, e.id, e.atom_id, e.actor, e.action, e.reason, e.at, e.content_hash, e.prev_hash, e.hash,"
    " p.content FROM events e LEFT JOIN event_payloads p ON p.event_id = e.id"
)
_SCOPE_NAME = ("CASE WHEN repository = '*' THEN tenant_id || '/global' WHEN workspace = '' THEN repository"
               " ELSE workspace || '/' || repository END")  # fmt: skip
_UPDATABLE = frozenset(AtomUpdate.__annotations__)
# Every table a store copy carries, in an order that satisfies the foreign keys, with its columns.
# Atom rows carry one more value: the atom's keyword terms.
COPY_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("atoms", ("seq", "id", "content", "norm_hash", "type", "source", "tenant_id", "workspace", "repository",
               "branch", "scope_root", "scope_hash", "epistemic", "polarity", "status", "prior_status", "title",
               "tags", "triggers", "supersedes", "superseded_by", "created_at", "updated_at", "last_accessed_at",
               "vault_path", "vault_digest", "embedding", "written_at")),
    ("model_vectors", ("atom_id", "model", "embedding")),
    ("entities", ("id", "kind", "name")),
    ("edges", ("src", "dst", "kind", "created_at")),
    ("events", ("seq", "id", "atom_id", "actor", "action", "reason", "at", "content_hash", "prev_hash", "hash")),
    ("event_payloads", ("event_id", "content")),
    ("sessions", ("id", "source", "title", "started_at", "ended_at", "summary")),
    ("promotions", ("id", "atom_id", "scope_hash", "origin", "durability", "utility", "relevance", "accuracy",
                    "average", "reasoning", "status", "created_at", "decided_at")),
    ("sensitive_scopes", ("scope_hash", "name", "marked_at")),
    ("grants", ("id", "scope_hash", "granted_by", "granted_at", "expires_at")),
    ("access_requests", ("id", "scope_hash", "reason", "requested_at")),
    ("anchors", ("atom_id", "path", "symbol", "kind", "lang", "commit_sha", "blob", "fingerprint", "line", "origin",
                 "created_at")),
    ("recalls", ("id", "at", "scope_hash", "hits")),
    ("tokens", ("id", "tenant_id", "label", "salt", "digest", "read_only", "scopes", "created_at", "expires_at",
                "revoked_at")),
    ("teams", ("name", "created_at")),
    ("team_members", ("team", "tenant_id", "added_at")),
    ("shares", ("workspace", "repository", "team", "shared_at")),
)  # fmt: skip
# `vault_outbox` is not copied on purpose: it names files of the source's vault (docs/DECISIONS.md).
_TIME_COLUMNS = frozenset({"written_at", "created_at", "updated_at", "last_accessed_at", "started_at", "ended_at", "decided_at",
                           "marked_at", "granted_at", "expires_at", "requested_at", "recalls.at", "revoked_at",
                           "added_at", "shared_at"})  # fmt: skip
_JSON_COLUMNS = frozenset({"tags", "triggers", "hits", "scopes"})


class SqlCore(ABC, Generic[C]):
    """The plumbing every statement goes through; the roles (`memories.py`, `index.py`, …) add the reads."""

    def __init__(self, dialect: Dialect, tx: Callable[[SqlStore[C], C], SqlTx[C]], *, where: str,
                 tracer: Tracer | None) -> None:  # fmt: skip
        self.dialect = dialect
        self._tx = tx  # the backend's SqlTx: write operations bound to a transaction's connection
        self.where = where
        self.tracer = tracer
        self._local = threading.local()  # .conn: this thread's open write transaction

    @abstractmethod
    def _reader(self) -> AbstractContextManager[C]: ...  # a read connection (never a transaction's)
    @abstractmethod
    def _writing(self) -> AbstractContextManager[C]: ...  # a write transaction, under the write lock
    @abstractmethod
    def _copy_order(self, table: str) -> str: ...  # the order a copy reads a table in
    @abstractmethod
    def checkpoint(self) -> None: ...  # after scrubbing: no trace of the content left in the files
    @abstractmethod
    def _run_script(self, conn: C, script: str) -> None: ...  # a migration's statements, in the open transaction
    @abstractmethod  # a write transaction that is bookkeeping, not memory data: no snapshot bump
    def _bookkeeping(self) -> AbstractContextManager[C]: ...
    @contextmanager
    def translating(self) -> Iterator[None]:
        """Driver exceptions raised inside become memoryd errors (the one place they are mapped)."""
        try:
            yield
        except tuple(self.dialect.exc_map) as exc:
            raise self.dialect.translate_error(exc, self.where) from exc

    def run(self, conn: C, sql: str, params: Sequence[object] = ()) -> Cursor:
        """Execute one statement: traced, with driver errors translated."""
        text = self.dialect.sql(sql)
        if self.tracer is not None:
            self.tracer(text, params)
        with self.translating():
            return conn.execute(text, params)

    def run_many(self, conn: C, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """Execute one statement for many rows (bulk copies), traced with the first row."""
        text = self.dialect.sql(sql)
        if self.tracer is not None and rows:
            self.tracer(text, rows[0])
        with self.translating():
            conn.cursor().executemany(text, rows)

    @contextmanager
    def _reading(self) -> Iterator[C]:
        """This thread's write transaction (its own writes visible), else a read connection."""
        conn: C | None = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self._reader() as conn:
            yield conn

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        with self._reading() as conn, self.translating():
            return self.run(conn, sql, params).fetchall()  # to the end: a reader keeps no snapshot

    def _one(self, sql: str, params: Sequence[object] = ()) -> Any:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _filters(self, *filters: tuple[str, Sequence[object] | None]) -> tuple[str, list[object]]:
        """` AND column IN (values)` for each filter given (None: no filter), and the parameters."""
        sql, params = "", list[object]()
        for column, values in filters:
            if values is not None:
                cond, more = self.dialect.any_of(column, values)
                sql, params = f"{sql} AND {cond}", params + more
        return sql, params

    def _selective(self, terms: Sequence[str], stats: TermStats | None,
                   scope_hashes: Sequence[str]) -> tuple[list[str], bool, dict[str, float]]:  # fmt: skip
        """The query terms a keyword search matches on (`selective_terms`), whether the budget cut them, and
        each one's IDF weight; `stats` = `term_stats(terms, scope_hashes=scope_hashes)` if already read."""
        unique = list(dict.fromkeys(terms))
        if unique and (stats is None or any(t not in stats[1] for t in unique)):
            stats = self.term_stats(unique, scope_hashes=scope_hashes)
        total, df = stats or (0, {})
        present, cut = selective_terms(unique, df, total)
        return present, cut, {t: idf(total, df[t]) for t in present}

    @abstractmethod
    def term_stats(self, terms: Sequence[str], *, scope_hashes: Sequence[str]) -> TermStats: ...
    def _time(self, value: Any) -> datetime | None:
        return None if value is None else self.dialect.read_time(value)

    def acting_for(self, person: str) -> Any:
        """This store for one person's requests (PostgreSQL with standbys: their reads wait for their writes)."""
        return self

    @contextmanager
    def transaction(self) -> Iterator[SqlTx[C]]:
        if getattr(self._local, "conn", None) is not None:
            raise StorageError("a write transaction is already open in this thread")
        with self._writing() as conn:
            tx = self._tx(cast("SqlStore[C]", self), conn)  # every store is a SqlStore: the core is its base
            self._local.conn = conn
            try:
                yield tx
            finally:
                self._local.conn = None
        if tx.scrubbed:
            self.checkpoint()

    def _atoms(self, where: str, params: Sequence[object], tail: str = "") -> list[Atom]:
        d = self.dialect
        rows = self._rows(f"SELECT {_ATOM_COLUMNS}, {d.entities_sql} FROM atoms a WHERE {where} {tail}", params)
        # Rows were validated on the way in; constructing without re-validation keeps a recall's
        # candidate atoms cheap (validation was a third of the time spent on them).
        return [Atom.model_construct(
            id=r[0], content=r[1], type=r[2], source=r[3],
            scope=Scope.model_construct(tenant_id=r[4], workspace=r[5], repository=r[6], branch=r[7], root=r[8]),
            scope_hash=r[9], epistemic=r[10], polarity=r[11], status=r[12], prior_status=r[13], title=r[14],
            tags=d.read_json(r[15]), triggers=d.read_json(r[16]), supersedes=r[17], superseded_by=r[18],
            created_at=d.read_time(r[19]), updated_at=d.read_time(r[20]), last_accessed_at=self._time(r[21]),
            vault_path=r[22], written_at=self._time(r[23]), entities=d.read_list(r[24])) for r in rows]  # fmt: skip

    _TOKEN = ("SELECT id, tenant_id, label, salt, digest, read_only, scopes, created_at, expires_at, revoked_at"
              " FROM tokens")  # fmt: skip

    def _migrate(self, conn: C) -> None:
        """Apply the pending migrations on `conn`, inside its transaction, which holds the database's lock
        (stores opening a new database at once must not both apply one)."""
        d = self.dialect
        with self.translating():
            self.run(conn, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                           f" name TEXT NOT NULL, applied_at {TYPES[d.backend]['time']} NOT NULL)")  # fmt: skip
            done = {int(r[0]) for r in self.run(conn, "SELECT version FROM schema_migrations").fetchall()}
        for m in MIGRATIONS:
            if m.version not in done:
                self._run_script(conn, m.script(d.backend))
                self.run(conn, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                         (m.version, m.name, d.time(utc_now())))  # fmt: skip

    @abstractmethod
    def entity_mentions(self, entity_ids: Sequence[str], *, per_entity: int,
                        exclude_scopes: Sequence[str] = ()) -> list[tuple[str, str]]: ...  # fmt: skip


def _adapt(table: str, columns: Sequence[str], row: Sequence[Any], time: Callable[[Any], object],
           json: Callable[[Any], object], vector: Callable[[Any], object],
           terms: Callable[[Any], object]) -> tuple[object, ...]:  # fmt: skip
    """A copied row's values converted column by column (an atom row's last value is its terms); a time
    column is named alone or, where the name means text elsewhere (`events.at`), with its table."""
    out = [time(v) if v is not None and (c in _TIME_COLUMNS or f"{table}.{c}" in _TIME_COLUMNS)
           else json(v) if c in _JSON_COLUMNS else vector(v) if c == "embedding" else v
           for c, v in zip(columns, row, strict=False)]  # fmt: skip
    return (*out, terms(row[-1])) if len(row) > len(columns) else tuple(out)
