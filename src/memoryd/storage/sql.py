"""The SQL both backends share: every statement of the `Store` protocol written once.

`SqlStore` holds the reads and `SqlTx` the writes, as SQL with `?` placeholders. A `Dialect` says
what differs between the databases in these statements: placeholders and arrays, time, JSON and
vector values, collation, "no limit", where an atom's keyword terms and entities are read from,
and the driver's exceptions with their mapping table. A backend (`sqlite.py`, `postgres.py`) is
its dialect plus what is genuinely its own: connections, transactions and locking, how a migration
script runs, keyword and vector search, how terms and vectors are written, access times, checkpoints.
The schema is written once too (`migrations.py`); `SqlStore._migrate` applies it.

Every statement passes `SqlStore.run`, which traces it and translates driver exceptions through
the dialect's table (`translate`): no driver exception reaches the engine.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar, Unpack

from ulid import ULID

from ..anchors.model import Anchor
from ..errors import StorageError
from ..models import Atom, Event, Promotion, Scope, Session
from ..search.keywords import selective_terms
from ..search.rank import idf
from ..stamps import GENESIS, chain_hash, content_hash, iso, parse_iso, utc_now
from .base import (
    AccessRequest,
    AtomFilter,
    AtomUpdate,
    CandidateFacts,
    GroupCounts,
    OutboxEntry,
    Row,
    StoreCounts,
    TermStats,
    TokenRecord,
    Tracer,
    VaultRecord,
    Vector,
)
from .migrations import MIGRATIONS, TYPES, Backend

__all__ = ["COPY_TABLES", "DBAPI_ERRORS", "Connection", "Cursor", "Dialect", "ExcMap", "SqlStore", "SqlTx", "dbapi_map", "translate"]

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
    " a.superseded_by, a.created_at, a.updated_at, a.last_accessed_at, a.vault_path"
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
               "vault_path", "vault_digest", "embedding")),
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
_TIME_COLUMNS = frozenset({"created_at", "updated_at", "last_accessed_at", "started_at", "ended_at", "decided_at",
                           "marked_at", "granted_at", "expires_at", "requested_at", "recalls.at", "revoked_at",
                           "added_at", "shared_at"})  # fmt: skip
_JSON_COLUMNS = frozenset({"tags", "triggers", "hits", "scopes"})


class SqlStore(ABC, Generic[C]):
    """Reads of the `Store` protocol, and the plumbing every statement goes through."""

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

    # -- plumbing ------------------------------------------------------------------------------

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
        present, cut = selective_terms(unique, df)
        return present, cut, {t: idf(total, df[t]) for t in present}

    @abstractmethod
    def term_stats(self, terms: Sequence[str], *, scope_hashes: Sequence[str]) -> TermStats: ...

    def _time(self, value: Any) -> datetime | None:
        return None if value is None else self.dialect.read_time(value)

    @contextmanager
    def transaction(self) -> Iterator[SqlTx[C]]:
        if getattr(self._local, "conn", None) is not None:
            raise StorageError("a write transaction is already open in this thread")
        with self._writing() as conn:
            tx = self._tx(self, conn)
            self._local.conn = conn
            try:
                yield tx
            finally:
                self._local.conn = None
        if tx.scrubbed:
            self.checkpoint()

    # -- atoms ---------------------------------------------------------------------------------

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
            vault_path=r[22], entities=d.read_list(r[23])) for r in rows]  # fmt: skip

    def get_atoms(self, atom_ids: Iterable[str]) -> dict[str, Atom]:
        ids = list(dict.fromkeys(atom_ids))
        return {a.id: a for a in self._atoms(*self.dialect.any_of("a.id", ids))} if ids else {}

    def find_duplicate(self, scope_hash: str, norm_hash: str) -> Atom | None:
        found = self._atoms("a.scope_hash = ? AND a.norm_hash = ? AND a.status IN ('active', 'pending')",
                            (scope_hash, norm_hash), "ORDER BY a.seq LIMIT 1")  # fmt: skip
        return found[0] if found else None

    def list_atoms(self, *, scope_hashes: Sequence[str] | None = None, statuses: Sequence[str] | None = None,
                   types: Sequence[str] | None = None, epistemic: str | None = None, limit: int = 100,
                   newest_first: bool = True) -> list[Atom]:  # fmt: skip
        where, params = self._filters(("a.scope_hash", scope_hashes), ("a.status", statuses), ("a.type", types),
                                      ("a.epistemic", None if epistemic is None else [epistemic]))  # fmt: skip
        params.append(limit if limit >= 0 else self.dialect.limit_all)
        return self._atoms(f"1 = 1{where}", params, f"ORDER BY a.seq {'DESC' if newest_first else 'ASC'} LIMIT ?")

    def neighbors(self, atom_id: str, *, scope_hash: str, n: int) -> tuple[list[Atom], list[Atom]]:
        row = self._one("SELECT seq FROM atoms WHERE id = ?", (atom_id,))
        if row is None:
            return [], []
        base = "a.scope_hash = ? AND a.status = 'active' AND "
        before = self._atoms(base + "a.seq < ?", (scope_hash, row[0], n), "ORDER BY a.seq DESC LIMIT ?")
        after = self._atoms(base + "a.seq > ?", (scope_hash, row[0], n), "ORDER BY a.seq ASC LIMIT ?")
        return list(reversed(before)), after

    def atoms_since(self, *, scope_hashes: Sequence[str], since: datetime, types: Sequence[str] | None,
                    limit: int) -> list[Atom]:  # fmt: skip
        where, params = self._filters(("a.scope_hash", scope_hashes), ("a.type", types or None))
        return self._atoms(f"a.status = 'active' AND a.created_at >= ?{where}",
                           (self.dialect.time(since), *params, limit), "ORDER BY a.seq DESC LIMIT ?")  # fmt: skip

    def vault_digests(self) -> dict[str, VaultRecord]:
        return {r[0]: VaultRecord(*r[1:]) for r in self._rows("SELECT id, status, vault_path, vault_digest FROM atoms")}

    def vault_state(self, atom_ids: Sequence[str]) -> dict[str, VaultRecord]:
        if not atom_ids:
            return {}
        cond, params = self.dialect.any_of("id", list(dict.fromkeys(atom_ids)))
        return {r[0]: VaultRecord(*r[1:])
                for r in self._rows(f"SELECT id, status, vault_path, vault_digest FROM atoms WHERE {cond}", params)}

    def outbox(self) -> list[OutboxEntry]:
        return [(r[0], r[1], r[2]) for r in self._rows("SELECT atom_id, token, remove_path FROM vault_outbox")]

    def clear_outbox(self, entries: Sequence[tuple[str, str]]) -> None:
        if entries:
            with self._bookkeeping() as conn:
                self.run_many(conn, "DELETE FROM vault_outbox WHERE atom_id = ? AND token = ?", [tuple(e) for e in entries])

    def candidate_facts(self, atom_ids: Sequence[str]) -> dict[str, CandidateFacts]:
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids:
            return {}
        cond, params = d.any_of("a.id", ids)
        rows = self._rows("SELECT a.id, a.status, a.scope_hash, a.type, a.epistemic, a.updated_at, a.last_accessed_at,"
                          f" {d.terms_sql}, {d.entities_sql}, a.polarity FROM atoms a {d.terms_join} WHERE {cond}",
                          params)  # fmt: skip
        return {r[0]: CandidateFacts(status=r[1], scope_hash=r[2], type=r[3], epistemic=r[4], updated_at=d.read_time(r[5]),
                                     last_accessed_at=self._time(r[6]), terms=d.read_terms(r[7]),
                                     entities=tuple(d.read_list(r[8])), polarity=r[9]) for r in rows}  # fmt: skip

    # -- audit, sessions, review, sensitive scopes ---------------------------------------------

    def events(self, atom_id: str | None = None) -> list[Event]:
        where, params = (" WHERE e.atom_id = ?", (atom_id,)) if atom_id is not None else ("", ())
        return [Event(seq=r[0], id=r[1], atom_id=r[2], actor=r[3], action=r[4], reason=r[5], at=parse_iso(r[6]),
                      content_hash=r[7], prev_hash=r[8], hash=r[9], content=r[10])
                for r in self._rows(_EVENTS + where + " ORDER BY e.seq", params)]  # fmt: skip

    def get_session(self, session_id: str) -> Session | None:
        r = self._one("SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
                      " FROM sessions s JOIN atoms a ON a.id = s.id WHERE s.id = ?", (session_id,))  # fmt: skip
        return None if r is None else Session(id=r[0], source=r[1], title=r[2], started_at=self.dialect.read_time(r[3]),
                                              ended_at=self._time(r[4]), summary=r[5], scope_hash=r[6])  # fmt: skip

    def _promotions(self, sql: str, params: Sequence[object]) -> list[Promotion]:
        return [Promotion(id=r[0], atom_id=r[1], scope_hash=r[2], origin=r[3], durability=r[4], utility=r[5],
                          relevance=r[6], accuracy=r[7], average=r[8], reasoning=r[9], status=r[10],
                          created_at=self.dialect.read_time(r[11]), decided_at=self._time(r[12]))
                for r in self._rows(_PROMOTIONS + sql, params)]  # fmt: skip

    def list_promotions(self, *, scope_hashes: Sequence[str] | None, status: str = "pending", min_score: float = 0.0,
                        max_score: float = 1.0, types: Sequence[str] | None = None,
                        limit: int = 10) -> list[Promotion]:  # fmt: skip
        where, params = self._filters(("p.scope_hash", scope_hashes), ("a.type", types or None))
        return self._promotions(
            f" JOIN atoms a ON a.id = p.atom_id WHERE p.status = ? AND p.average >= ? AND p.average <= ?{where}"
            " ORDER BY p.average ASC, p.id ASC LIMIT ?",
            (status, min_score, max_score, *params, limit if limit >= 0 else self.dialect.limit_all))

    def get_promotions(self, ids: Sequence[int]) -> dict[int, Promotion]:
        cond, params = self.dialect.any_of("p.id", [int(i) for i in ids], "bigint")
        return {p.id: p for p in self._promotions(f" WHERE {cond}", params)} if ids else {}

    def sensitive_scopes(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._rows(
            f"SELECT scope_hash, name FROM sensitive_scopes ORDER BY name{self.dialect.binary}")]  # fmt: skip

    def is_sensitive(self, scope_hash: str) -> bool:
        return self._one("SELECT 1 FROM sensitive_scopes WHERE scope_hash = ?", (scope_hash,)) is not None

    def grant_expiry(self, scope_hash: str) -> datetime | None:
        row = self._one("SELECT max(expires_at) FROM grants WHERE scope_hash = ? AND expires_at > ?",
                        (scope_hash, self.dialect.time(utc_now())))  # fmt: skip
        return self._time(row[0]) if row else None

    def access_requests(self) -> list[AccessRequest]:
        return [AccessRequest(id=int(r[0]), scope_hash=r[1], reason=r[2], requested_at=iso(self.dialect.read_time(r[3])))
                for r in self._rows("SELECT id, scope_hash, reason, requested_at FROM access_requests ORDER BY id")]  # fmt: skip

    # -- team server ---------------------------------------------------------------------------

    _TOKEN = ("SELECT id, tenant_id, label, salt, digest, read_only, scopes, created_at, expires_at, revoked_at"
              " FROM tokens")  # fmt: skip

    def _token(self, r: Any) -> TokenRecord:
        d = self.dialect
        return TokenRecord(id=r[0], tenant_id=r[1], label=r[2], salt=r[3], digest=r[4], read_only=bool(r[5]),
                           scopes=d.read_json(r[6]), created_at=d.read_time(r[7]), expires_at=self._time(r[8]),
                           revoked_at=self._time(r[9]))  # fmt: skip

    def get_token(self, token_id: str) -> TokenRecord | None:
        row = self._one(f"{self._TOKEN} WHERE id = ?", (token_id,))
        return None if row is None else self._token(row)

    def token_for_request(self, token_id: str, workspace: str, repository: str) -> tuple[TokenRecord | None, str | None]:
        # One round trip per team-server request: the token's row (its rights, revocation and expiry, read
        # every time) and the team the request's repository is shared with, when the token's person is in it.
        row = self._one("SELECT t.id, t.tenant_id, t.label, t.salt, t.digest, t.read_only, t.scopes, t.created_at,"
                        " t.expires_at, t.revoked_at, (SELECT s.team FROM shares s JOIN team_members m ON m.team = s.team"
                        " WHERE s.workspace = ? AND s.repository = ? AND m.tenant_id = t.tenant_id) FROM tokens t"
                        " WHERE t.id = ?", (workspace, repository, token_id))  # fmt: skip
        return (None, None) if row is None else (self._token(row), None if row[10] is None else str(row[10]))

    def tokens(self) -> list[TokenRecord]:
        return [self._token(r) for r in self._rows(f"{self._TOKEN} ORDER BY created_at, id")]

    def teams(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {r[0]: [] for r in self._rows(
            f"SELECT name FROM teams ORDER BY name{self.dialect.binary}")}  # fmt: skip
        for team, tenant in self._rows(f"SELECT team, tenant_id FROM team_members ORDER BY tenant_id{self.dialect.binary}"):
            out.setdefault(team, []).append(tenant)
        return out

    def shares(self) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in self._rows(
            f"SELECT workspace, repository, team FROM shares ORDER BY workspace{self.dialect.binary},"
            f" repository{self.dialect.binary}")]  # fmt: skip

    def shared_team(self, workspace: str, repository: str) -> str | None:
        row = self._one("SELECT team FROM shares WHERE workspace = ? AND repository = ?", (workspace, repository))
        return None if row is None else str(row[0])

    def is_member(self, team: str, tenant_id: str) -> bool:
        return self._one("SELECT 1 FROM team_members WHERE team = ? AND tenant_id = ?", (team, tenant_id)) is not None

    # -- health and administration -------------------------------------------------------------

    def _scoped_version(self, scope_hashes: Sequence[str]) -> int:
        """A snapshot version of these scopes alone: the audit events on their memories (append-only, so it
        only grows while memories stay in them), blind to every write elsewhere."""
        if not scope_hashes:
            return 0
        cond, params = self.dialect.any_of("scope_hash", list(dict.fromkeys(scope_hashes)))
        return int(self._one(f"SELECT count(*) FROM events WHERE atom_id IN (SELECT id FROM atoms WHERE {cond})",
                             params)[0])  # fmt: skip

    def counts(self, scope_hashes: Sequence[str] | None = None) -> StoreCounts:
        where, params = self._filters(("scope_hash", scope_hashes))
        by_status = {r[0]: int(r[1]) for r in self._rows(f"SELECT status, count(*) FROM atoms WHERE 1 = 1{where}"
                                                         " GROUP BY status", params)}  # fmt: skip
        live = f"status <> 'tombstoned'{where}"
        if scope_hashes is None:
            edges, indexed = "SELECT count(*) FROM edges", self.dialect.indexed_sql
        else:  # of these scopes' atoms
            edges = f"SELECT count(*) FROM edges WHERE src IN (SELECT id FROM atoms WHERE 1 = 1{where})"
            indexed = self.dialect.indexed_in_sql.format(where=where)
        row = self._one(
            f"SELECT ({edges}), (SELECT count(*) FROM atoms WHERE embedding IS NOT NULL AND {live}),"
            f" ({indexed}), (SELECT count(*) FROM atoms WHERE created_at IS NOT NULL AND {live}),"
            f" (SELECT count(*) FROM atoms WHERE type IS NOT NULL AND {live})",
            params * 5,  # each subquery's scope filter (none: no parameters)
        )
        return StoreCounts(atoms=sum(by_status.values()), by_status=by_status, edges=int(row[0]), semantic=int(row[1]),
                           keyword=int(row[2]), temporal=int(row[3]), categorical=int(row[4]))  # fmt: skip

    def group_counts(self, scope_hashes: Sequence[str] | None) -> GroupCounts:
        where, params = self._filters(("scope_hash", scope_hashes))
        live = f"WHERE status <> 'tombstoned'{where}"
        by_type = {r[0]: int(r[1]) for r in self._rows(f"SELECT type, count(*) FROM atoms {live} GROUP BY 1", params)}
        by_scope = {r[0]: {"name": r[1], "count": int(r[2])} for r in self._rows(
            f"SELECT scope_hash, {_SCOPE_NAME}, count(*) FROM atoms {live} GROUP BY 1, 2", params)}  # fmt: skip
        where, params = self._filters(("a.scope_hash", scope_hashes))
        top = self._rows("SELECT e.dst, count(*) FROM edges e JOIN atoms a ON a.id = e.src WHERE e.kind = 'mentions'"
                         f" AND a.status <> 'tombstoned'{where} GROUP BY 1 ORDER BY 2 DESC, e.dst{self.dialect.binary}"
                         " LIMIT 10", params)  # fmt: skip
        return GroupCounts(by_type=by_type, by_scope=by_scope,  # type: ignore[typeddict-item]
                           top_entities=[{"id": r[0], "count": int(r[1])} for r in top])  # fmt: skip

    def dangling_edges(self) -> int:
        return int(self._one("SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM atoms)"
                             " OR (dst LIKE 'entity:%' AND dst NOT IN (SELECT id FROM entities))"
                             " OR (dst NOT LIKE 'entity:%' AND dst NOT IN (SELECT id FROM atoms))")[0])  # fmt: skip

    def applied_migrations(self) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._rows("SELECT version, name FROM schema_migrations ORDER BY 1")]

    def latest_migration(self) -> int:
        return MIGRATIONS[-1].version

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

    # -- code anchors --------------------------------------------------------------------------

    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]:
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids:
            return {}
        cond, params = d.any_of("atom_id", ids)
        out: dict[str, list[Anchor]] = {}
        for r in self._rows("SELECT atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin"
                            f" FROM anchors WHERE {cond} ORDER BY atom_id, kind, path{d.binary}, symbol{d.binary}",
                            params):  # fmt: skip
            out.setdefault(r[0], []).append(Anchor(path=r[1], symbol=r[2], kind=r[3], lang=r[4], commit=r[5], blob=r[6],
                                                   fingerprint=r[7], line=r[8], origin=r[9]))  # fmt: skip
        return out

    def anchored_atoms(self, *, scope_hashes: Sequence[str], statuses: Sequence[str], path: str | None = None,
                       symbol: str | None = None, limit: int = 1000) -> list[str]:  # fmt: skip
        d = self.dialect
        where: list[str] = []
        params: list[object] = []
        if path:
            prefix = path.rstrip("/") + "/"
            where.append("(n.path = ? OR substr(n.path, 1, ?) = ?)")
            params += [path.rstrip("/"), len(prefix), prefix]
        if symbol:
            where.append(f"(n.symbol = ? OR {d.ends_with.format('n.symbol')} = ?)")
            params += [symbol, len(symbol) + 1, "." + symbol]
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        in_scope, p1 = d.any_of("a.scope_hash", scope_hashes)
        in_status, p2 = d.any_of("a.status", statuses)
        return [r[0] for r in self._rows(  # driven by the anchors (path index): cost follows them, not the store size
            f"SELECT a.id FROM atoms a WHERE a.id IN (SELECT n.atom_id FROM anchors n{clause})"
            f" AND {d.no_index}{in_scope} AND {d.no_index}{in_status} ORDER BY a.seq DESC LIMIT ?",
            (*params, *p1, *p2, limit))]  # fmt: skip

    # -- the console ---------------------------------------------------------------------------

    def _filter_sql(self, f: AtomFilter) -> tuple[str, list[object]]:
        d = self.dialect
        where: list[str] = []
        params: list[object] = []

        def add(cond: str, *values: object) -> None:
            where.append(cond)
            params.extend(values)

        for column, values in (("a.scope_hash", f.scope_hashes), ("a.status", f.statuses), ("a.type", f.types)):
            if values is not None:
                cond, more = d.any_of(column, values)
                add(cond, *more)
        if f.exclude_scopes:
            cond, more = d.any_of("a.scope_hash", f.exclude_scopes)
            add(f"NOT {cond}", *more)
        if f.source is not None:
            add("a.source = ?", f.source)
        if f.tag is not None:
            cond, more = d.has_tag(f.tag, f.tag_terms)
            add(cond, *more)
        if f.entity is not None:
            add("EXISTS (SELECT 1 FROM edges e WHERE e.src = a.id AND e.dst = ? AND e.kind = 'mentions')", f.entity)
        if f.created_from is not None:
            add("a.created_at >= ?", d.time(f.created_from))
        if f.created_to is not None:
            add("a.created_at < ?", d.time(f.created_to))
        if f.last_used is not None:
            last = f"{d.greatest}(a.updated_at, coalesce(a.last_accessed_at, a.updated_at))"
            arms = []
            for w in f.last_used:
                cond, more = d.any_of("a.type", w.types)
                arm = [cond]
                params.extend(more)
                if w.since is not None:
                    arm.append(f"{last} >= ?")
                    params.append(d.time(w.since))
                if w.before is not None:
                    arm.append(f"{last} < ?")
                    params.append(d.time(w.before))
                if w.necessary is not None:
                    arm.append("a.epistemic = 'necessary'" if w.necessary else "a.epistemic <> 'necessary'")
                arms.append("(" + " AND ".join(arm) + ")")
            where.append("(" + (" OR ".join(arms) or "1 = 0") + ")")
        return (" AND ".join(where) or "1 = 1"), params

    def browse_atoms(self, f: AtomFilter) -> list[Atom]:
        where, params = self._filter_sql(f)
        if f.before is not None:
            where += " AND a.seq < coalesce((SELECT b.seq FROM atoms b WHERE b.id = ?), 0)"
            params.append(f.before)
        return self._atoms(where, (*params, f.limit), "ORDER BY a.seq DESC LIMIT ?")

    def count_atoms(self, f: AtomFilter, *, cap: int | None = None) -> int:
        where, params = self._filter_sql(f)
        if cap is None:
            return int(self._one(f"SELECT count(*) FROM atoms a WHERE {where}", params)[0])
        return int(self._one(f"SELECT count(*) FROM (SELECT 1 FROM atoms a WHERE {where} LIMIT ?) c", [*params, cap])[0])

    def list_sessions(self, *, before: str | None, limit: int, exclude_scopes: Sequence[str] = ()) -> list[Session]:
        d = self.dialect
        sql = ("SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
               f" FROM sessions s {d.ordered_join} atoms a ON a.id = s.id WHERE 1 = 1")  # sessions drive, newest first
        params: list[object] = []
        if before is not None:
            sql += f" AND s.id{d.binary} < ?"
            params.append(before)
        if exclude_scopes:  # correlated: a plain NOT IN on the join makes SQLite Bloom-filter every atom
            cond, more = d.any_of("b.scope_hash", exclude_scopes)
            sql += f" AND NOT EXISTS (SELECT 1 FROM atoms b WHERE b.id = s.id AND {cond})"
            params += more
        return [Session(id=r[0], source=r[1], title=r[2], started_at=d.read_time(r[3]), ended_at=self._time(r[4]),
                        summary=r[5], scope_hash=r[6])
                for r in self._rows(f"{sql} ORDER BY s.id{d.binary} DESC LIMIT ?", (*params, limit))]  # fmt: skip

    def atom_links(self, atom_id: str) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in self._rows(
            "SELECT src, dst, kind FROM edges WHERE src = ? AND dst NOT LIKE 'entity:%'"
            " UNION SELECT src, dst, kind FROM edges WHERE dst = ?", (atom_id, atom_id))]  # fmt: skip

    def top_entities(self, *, limit: int) -> list[tuple[str, int]]:
        return [(r[0], int(r[1])) for r in self._rows(
            "SELECT dst, count(*) FROM edges WHERE kind = 'mentions' GROUP BY dst"
            f" ORDER BY 2 DESC, dst{self.dialect.binary} LIMIT ?", (limit,))]  # fmt: skip

    def console_counts(self, parts: Sequence[str] = ("by_status", "by_type", "by_scope", "edges")) -> dict[str, Any]:
        columns = {"by_status": "status", "by_type": "type", "by_scope": "scope_hash"}
        out: dict[str, Any] = {}
        for part in parts:
            if part == "edges":
                out[part] = int(self._one("SELECT count(*) FROM edges")[0])
            else:
                out[part] = {r[0]: int(r[1]) for r in self._rows(f"SELECT {columns[part]}, count(*) FROM atoms GROUP BY 1")}
        return out

    def scope_names(self, scope_hashes: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._reading() as conn, self.translating():
            for h in dict.fromkeys(scope_hashes):
                rows = self.run(conn, "SELECT tenant_id, workspace, repository FROM atoms WHERE scope_hash = ? LIMIT 1",
                                (h,)).fetchall()  # fmt: skip
                if rows:
                    r = rows[0]
                    out[h] = Scope.model_construct(tenant_id=r[0], workspace=r[1], repository=r[2]).name
        return out

    @abstractmethod
    def entity_mentions(self, entity_ids: Sequence[str], *, per_entity: int,
                        exclude_scopes: Sequence[str] = ()) -> list[tuple[str, str]]: ...  # fmt: skip

    def growth(self, since: datetime) -> list[tuple[str, int]]:
        day = self.dialect.day("created_at")
        return [(r[0], int(r[1])) for r in self._rows(
            f"SELECT {day}, count(*) FROM atoms WHERE created_at >= ? GROUP BY 1 ORDER BY 1",
            (self.dialect.time(since),))]  # fmt: skip

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        d = self.dialect
        cond, params = d.any_of("scope_hash", scope_hashes)
        sql = f"SELECT at, scope_hash, hits FROM recalls WHERE {cond} AND at >= ?"
        params.append(d.time(since))
        if until is not None:
            sql += " AND at <= ?"
            params.append(d.time(until))
        return [{"at": d.read_time(r[0]), "scope_hash": r[1], "hits": d.read_json(r[2])}
                for r in self._rows(sql + " ORDER BY at DESC, id DESC LIMIT ?", (*params, limit))]  # fmt: skip

    # -- copying a whole store -----------------------------------------------------------------

    def table_counts(self) -> dict[str, int]:
        return {table: int(self._one(f"SELECT count(*) FROM {table}")[0]) for table, _ in COPY_TABLES}

    def export_rows(self, batch: int = 500) -> Iterator[tuple[str, int, list[Row]]]:
        d = self.dialect
        for table, columns in COPY_TABLES:
            total = int(self._one(f"SELECT count(*) FROM {table}")[0])
            exprs = [d.vector_sql if c == "embedding" else f"a.{c}" for c in columns]
            terms = (f", {d.terms_sql}", d.terms_join) if table == "atoms" else ("", "")
            with self._reader() as conn, self.translating():
                cur = self.run(conn, f"SELECT {', '.join(exprs)}{terms[0]} FROM {table} a {terms[1]}"
                                     f" ORDER BY {self._copy_order(table)}")  # fmt: skip
                while rows := cur.fetchmany(batch):
                    yield table, total, [_adapt(table, columns, r, d.read_time, d.read_json, d.read_vector, d.read_terms)
                                         for r in rows]  # fmt: skip

    def import_rows(self, snapshot_version: int, batches: Iterable[tuple[str, list[Row]]]) -> None:
        d, tables = self.dialect, dict(COPY_TABLES)
        with self.transaction() as tx:
            tx._begin_import()
            for table, rows in batches:
                columns = tables[table]
                tx.load_rows(table, columns, [_adapt(table, columns, r, d.time, d.json, d.vector, list) for r in rows])
            tx._end_import(snapshot_version)


def _adapt(table: str, columns: Sequence[str], row: Sequence[Any], time: Callable[[Any], object],
           json: Callable[[Any], object], vector: Callable[[Any], object],
           terms: Callable[[Any], object]) -> tuple[object, ...]:  # fmt: skip
    """A copied row's values converted column by column (an atom row's last value is its terms); a time
    column is named alone or, where the name means text elsewhere (`events.at`), with its table."""
    out = [time(v) if v is not None and (c in _TIME_COLUMNS or f"{table}.{c}" in _TIME_COLUMNS)
           else json(v) if c in _JSON_COLUMNS else vector(v) if c == "embedding" else v
           for c, v in zip(columns, row, strict=False)]  # fmt: skip
    return (*out, terms(row[-1])) if len(row) > len(columns) else tuple(out)


class SqlTx(ABC, Generic[C]):
    """Write operations bound to one open transaction (it holds the store's write lock)."""

    def __init__(self, store: SqlStore[C], conn: C) -> None:
        self._store, self._conn, self._d = store, conn, store.dialect
        self._head: tuple[int, str] | None = None  # (seq, hash) of the last event, read once under the lock
        self.scrubbed = False

    def run(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        return self._store.run(self._conn, sql, params)

    def one(self, sql: str, params: Sequence[object] = ()) -> Any:
        with self._store.translating():
            rows = self.run(sql, params).fetchall()  # to the end: a RETURNING statement is then complete
        return rows[0] if rows else None

    # -- what a backend writes its own way -----------------------------------------------------

    @abstractmethod  # the backend's own columns of a new atom row: column -> (placeholder, value)
    def _index_columns(self, terms: Sequence[str], vector: Vector | None) -> dict[str, tuple[str, object]]: ...
    @abstractmethod
    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None: ...
    @abstractmethod  # drop a scrubbed atom's terms; more `SET` assignments (and parameters) for its row
    def _unindex_sql(self, atom_id: str) -> tuple[str, list[object]]: ...
    @abstractmethod
    def load_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None: ...
    @abstractmethod
    def _end_import(self, snapshot_version: int) -> None: ...
    def _after_insert(self, seq: int, terms: Sequence[str]) -> None: ...  # terms the atom row does not hold
    def _scope_moved(self, atom_id: str, scope_hash: str) -> dict[str, object]:  # more columns: it changes scope
        return {}
    def _begin_import(self) -> None: ...

    # -- the writes ----------------------------------------------------------------------------

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: Vector | None) -> None:
        s, d = atom.scope, self._d
        row: dict[str, object] = {
            "id": atom.id, "content": atom.content, "norm_hash": norm_hash, "type": atom.type, "source": atom.source,
            "tenant_id": s.tenant_id, "workspace": s.workspace, "repository": s.repository, "branch": s.branch,
            "scope_root": s.root, "scope_hash": atom.scope_hash, "epistemic": atom.epistemic,
            "polarity": atom.polarity, "status": atom.status, "prior_status": atom.prior_status, "title": atom.title,
            "tags": d.json(atom.tags), "triggers": d.json(atom.triggers), "supersedes": atom.supersedes,
            "superseded_by": atom.superseded_by, "created_at": d.time(atom.created_at),
            "updated_at": d.time(atom.updated_at), "embedding": d.vector(vector),
        }  # fmt: skip
        own = self._index_columns(terms, vector)
        marks = ["?"] * len(row) + [m for m, _ in own.values()]
        seq = self.one(f"INSERT INTO atoms ({', '.join([*row, *own])}) VALUES ({', '.join(marks)}) RETURNING seq",
                       [*row.values(), *(v for _, v in own.values())])  # fmt: skip
        self._after_insert(int(seq[0]), terms)

    def update_atom(self, atom_id: str, **fields: Unpack[AtomUpdate]) -> None:
        if unknown := set(fields) - _UPDATABLE:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        values: dict[str, object] = dict(fields)
        for key in ("tags", "triggers"):
            if key in values:
                values[key] = self._d.json(values[key])  # type: ignore[arg-type]
        values["updated_at"] = self._d.time(fields.get("updated_at") or utc_now())
        if "scope_hash" in fields:
            values.update(self._scope_moved(atom_id, str(fields["scope_hash"])))
        self.run(f"UPDATE atoms SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?", (*values.values(), atom_id))

    def link(self, src: str, dst: str, kind: str) -> None:
        if dst.startswith("entity:"):
            _, ekind, name = dst.split(":", 2)
            self.run("INSERT INTO entities (id, kind, name) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (dst, ekind, name))
        self.run("INSERT INTO edges (src, dst, kind, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                 (src, dst, kind, self._d.time(utc_now())))  # fmt: skip

    def unlink_entities(self, atom_id: str) -> None:
        self.run("DELETE FROM edges WHERE src = ? AND kind = 'mentions'", (atom_id,))

    def append_event(self, *, atom_id: str | None, actor: str, action: str, reason: str | None,
                     content: str | None) -> Event:  # fmt: skip
        if self._head is None:  # read under the write lock: nobody else can append meanwhile
            row = self.one("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
            self._head = (int(row[0]), row[1]) if row else (0, GENESIS)
        (last_seq, prev), event_id, at = self._head, str(ULID()), iso(utc_now())
        c_hash = None if content is None else content_hash(content)
        digest = chain_hash(prev, event_id, atom_id, actor, action, reason, at, c_hash)
        self.run("INSERT INTO events (seq, id, atom_id, actor, action, reason, at, content_hash, prev_hash, hash)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (last_seq + 1, event_id, atom_id, actor, action, reason, at, c_hash, prev, digest))  # fmt: skip
        if content is not None:
            self.run("INSERT INTO event_payloads (event_id, content) VALUES (?, ?)", (event_id, content))
        self._head = (last_seq + 1, digest)
        return Event(seq=last_seq + 1, id=event_id, atom_id=atom_id, actor=actor, action=action, reason=reason,
                     at=parse_iso(at), content_hash=c_hash, content=content, prev_hash=prev, hash=digest)  # fmt: skip

    def scrub_atom(self, atom_id: str) -> None:
        if self.one("SELECT 1 FROM atoms WHERE id = ?", (atom_id,)) is None:
            return
        sets, params = self._unindex_sql(atom_id)
        empty = self._d.json([])
        self.run("UPDATE atoms SET content = '', norm_hash = NULL, title = NULL, tags = ?, triggers = ?,"
                 f" embedding = NULL{sets} WHERE id = ?", (empty, empty, *params, atom_id))  # fmt: skip
        self.run("UPDATE event_payloads SET content = NULL WHERE event_id IN (SELECT id FROM events WHERE atom_id = ?)"
                 " AND content IS NOT NULL", (atom_id,))  # fmt: skip
        with self._store.translating():
            gone = [r[0] for r in self.run("DELETE FROM edges WHERE src = ? AND dst LIKE 'entity:%' RETURNING dst",
                                           (atom_id,)).fetchall()]  # fmt: skip
        if gone:  # an entity no atom mentions any more is content of the scrubbed atom only
            cond, more = self._d.any_of("n.id", gone)
            self.run(f"DELETE FROM entities AS n WHERE {cond} AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.dst = n.id)",
                     more)  # fmt: skip
        self.run("DELETE FROM anchors WHERE atom_id = ?", (atom_id,))  # paths and symbols come from the text
        self.scrubbed = True

    def delete_atom(self, atom_id: str) -> None:
        self.scrub_atom(atom_id)
        self.run("DELETE FROM edges WHERE src = ? OR dst = ?", (atom_id, atom_id))
        for table, column in (("sessions", "id"), ("promotions", "atom_id"), ("atoms", "id")):
            self.run(f"DELETE FROM {table} WHERE {column} = ?", (atom_id,))

    def insert_session(self, session: Session) -> None:
        self.run("INSERT INTO sessions (id, source, title, started_at) VALUES (?, ?, ?, ?)",
                 (session.id, session.source, session.title, self._d.time(session.started_at)))  # fmt: skip

    def end_session(self, session_id: str, summary: str) -> None:
        self.run("UPDATE sessions SET ended_at = ?, summary = ? WHERE id = ?", (self._d.time(utc_now()), summary,
                                                                                session_id))  # fmt: skip

    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int:  # fmt: skip
        return int(self.one(
            "INSERT INTO promotions (atom_id, scope_hash, origin, durability, utility, relevance, accuracy, average,"
            " reasoning, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?) RETURNING id",
            (atom_id, scope_hash, origin, scores["durability"], scores["utility"], scores["relevance"],
             scores["accuracy"], scores["average"], reasoning, self._d.time(utc_now())))[0])  # fmt: skip

    def decide_promotion(self, promotion_id: int, status: str) -> None:
        self.run("UPDATE promotions SET status = ?, decided_at = ? WHERE id = ?", (status, self._d.time(utc_now()),
                                                                                   promotion_id))  # fmt: skip

    def rescope_promotions(self, old: str, new: str) -> None:
        self.run("UPDATE promotions SET scope_hash = ? WHERE scope_hash = ?", (new, old))

    def mark_sensitive(self, scope_hash: str, name: str, sensitive: bool) -> None:
        if sensitive:
            self.run("INSERT INTO sensitive_scopes (scope_hash, name, marked_at) VALUES (?, ?, ?) ON CONFLICT"
                     " (scope_hash) DO UPDATE SET name = excluded.name, marked_at = excluded.marked_at",
                     (scope_hash, name, self._d.time(utc_now())))  # fmt: skip
            return
        for table in ("sensitive_scopes", "grants"):
            self.run(f"DELETE FROM {table} WHERE scope_hash = ?", (scope_hash,))

    def add_grant(self, scope_hash: str, granted_by: str, expires_at: datetime) -> None:
        self.run("INSERT INTO grants (scope_hash, granted_by, granted_at, expires_at) VALUES (?, ?, ?, ?)",
                 (scope_hash, granted_by, self._d.time(utc_now()), self._d.time(expires_at)))  # fmt: skip

    def add_token(self, token: TokenRecord) -> None:
        d = self._d
        self.run("INSERT INTO tokens (id, tenant_id, label, salt, digest, read_only, scopes, created_at, expires_at,"
                 " revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (token.id, token.tenant_id, token.label, token.salt, token.digest, int(token.read_only),
                  d.json(token.scopes), d.time(token.created_at), None if token.expires_at is None else
                  d.time(token.expires_at), None if token.revoked_at is None else d.time(token.revoked_at)))  # fmt: skip

    def revoke_token(self, token_id: str, at: datetime) -> bool:
        row = self.one("UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING id",
                       (self._d.time(at), token_id))  # fmt: skip
        return row is not None

    def add_team(self, name: str) -> bool:
        row = self.one("INSERT INTO teams (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING RETURNING name",
                       (name, self._d.time(utc_now())))  # fmt: skip
        return row is not None

    def add_member(self, team: str, tenant_id: str) -> bool:
        row = self.one("INSERT INTO team_members (team, tenant_id, added_at) VALUES (?, ?, ?) ON CONFLICT (team,"
                       " tenant_id) DO NOTHING RETURNING team", (team, tenant_id, self._d.time(utc_now())))  # fmt: skip
        return row is not None

    def share(self, workspace: str, repository: str, team: str) -> None:
        self.run("INSERT INTO shares (workspace, repository, team, shared_at) VALUES (?, ?, ?, ?) ON CONFLICT"
                 " (workspace, repository) DO UPDATE SET team = excluded.team, shared_at = excluded.shared_at",
                 (workspace, repository, team, self._d.time(utc_now())))  # fmt: skip

    def add_access_request(self, scope_hash: str, reason: str) -> int:
        return int(self.one("INSERT INTO access_requests (scope_hash, reason, requested_at) VALUES (?, ?, ?)"
                            " RETURNING id", (scope_hash, reason, self._d.time(utc_now())))[0])  # fmt: skip

    def outbox_add(self, atom_id: str, token: str, remove_path: str | None) -> None:
        self.run("INSERT INTO vault_outbox (atom_id, token, remove_path, at) VALUES (?, ?, ?, ?) ON CONFLICT (atom_id)"
                 " DO UPDATE SET token = excluded.token, at = excluded.at,"
                 " remove_path = coalesce(excluded.remove_path, vault_outbox.remove_path)",
                 (atom_id, token, remove_path, self._d.time(utc_now())))  # fmt: skip

    def set_anchors(self, atom_id: str, anchors: Sequence[Anchor]) -> None:
        self.run("DELETE FROM anchors WHERE atom_id = ?", (atom_id,))
        if anchors:  # two anchors on one (path, symbol): the last one wins
            at = self._d.time(utc_now())
            self._store.run_many(self._conn, (
                "INSERT INTO anchors (atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (atom_id, path, symbol) DO UPDATE SET"
                " kind = excluded.kind, lang = excluded.lang, commit_sha = excluded.commit_sha, blob = excluded.blob,"
                " fingerprint = excluded.fingerprint, line = excluded.line, origin = excluded.origin"
            ), [(atom_id, a.path, a.symbol, a.kind, a.lang, a.commit, a.blob, a.fingerprint, a.line, a.origin, at)
                for a in anchors])  # fmt: skip
