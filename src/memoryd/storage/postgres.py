"""PostgresStore: the `Store` protocol on PostgreSQL + pgvector (selected by `MEMORYD_DB=postgresql://…`).

Behaviour matches `SqliteStore`; what differs is how:

- Writes: `transaction()` takes one pooled connection, BEGINs, and first updates the single
  `chain_head` row (bumping `snapshot_version`). That row lock serialises every writer of
  the database, in any process, like SQLite's BEGIN IMMEDIATE: the chain append reads the
  last event under it, so the hash chain never forks, and `seq` stays gap-free. Waiting is
  bounded by `lock_timeout` (= busy_timeout_ms) → StorageBusy. Reads made by the writing
  thread inside the transaction use its connection, so they see its uncommitted writes.
- Vectors: `vector` + one HNSW (cosine) index per model size; `vector_candidates`/`cosines` are SQL, with
  pgvector's iterative index scan so a scope filter still yields k rows. Nothing is cached
  in-process, so every process sees every other's vector changes at once (what `vec_seq`
  does for SQLite).
- Keywords: the engine's terms verbatim in a GIN-indexed tsvector (`array_to_tsvector`);
  document frequencies are exact counters in `term_df`, kept by a trigger.
- Migrations (`pg_migrations.py`) run under a transaction-level advisory lock.
- Errors: connection failures, a missing `vector` extension and lock timeouts become
  `StorageError`/`StorageBusy` with a message saying what to do.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
from ulid import ULID

from ..anchors.model import Anchor
from ..errors import StorageBusy, StorageError
from ..models import Atom, Event, Promotion, Scope, Session
from .base import AtomFilter, CandidateFacts, selective_terms
from .pg_migrations import MIGRATIONS
from .sqlite import GENESIS, chain_hash, content_hash, now_iso

__all__ = ["PostgresStore", "is_postgres_url", "migrate_store"]

log = logging.getLogger("memoryd")

# pg_advisory_xact_lock key for schema migrations: "memoryd" as a 64-bit integer.
MIGRATION_LOCK = int.from_bytes(b"memoryd\x00", "big")
# tsvector lexemes are at most 2046 bytes and may not be empty.
_MAX_LEXEME = 2046
_MAX_DIM = 16000  # pgvector's limit for the `vector` type
_ATOM_COLUMNS = (
    "a.seq, a.id, a.content, a.type, a.source, a.tenant_id, a.workspace, a.repository, a.branch, a.scope_root,"
    " a.scope_hash, a.epistemic, a.polarity, a.status, a.prior_status, a.title, a.tags, a.triggers, a.supersedes,"
    " a.superseded_by, a.created_at, a.updated_at, a.last_accessed_at, a.vault_path,"
    " ARRAY(SELECT e.dst FROM edges e WHERE e.src = a.id AND e.kind = 'mentions' ORDER BY e.dst COLLATE \"C\")"
    " AS entities"
)
_UPDATABLE = {
    "content", "norm_hash", "type", "epistemic", "polarity", "status", "prior_status", "title",
    "tags", "triggers", "supersedes", "superseded_by", "updated_at", "vault_path", "vault_digest",
    "tenant_id", "workspace", "repository", "branch", "scope_root", "scope_hash",
}  # fmt: skip
_PROMOTION_COLUMNS = (
    "p.id, p.atom_id, p.scope_hash, p.origin, p.durability, p.utility, p.relevance, p.accuracy, p.average,"
    " p.reasoning, p.status, p.created_at, p.decided_at"
)


def is_postgres_url(value: str | None) -> bool:
    return bool(value) and str(value).startswith(("postgresql://", "postgres://"))


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)  # Python 3.11 reads the trailing Z


def _vector_text(vector: np.ndarray | None) -> str | None:
    """pgvector's text form; None for vectors PostgreSQL cannot hold (empty, too long, not finite)."""
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float32).ravel()
    if not 0 < v.shape[0] <= _MAX_DIM or not np.isfinite(v).all():
        log.warning("a vector of %d dimensions (or not finite) is stored as NULL", v.shape[0])
        return None
    return "[" + ",".join(map(repr, v.tolist())) + "]"


def _lexemes(terms: Iterable[str]) -> list[str]:
    """Terms a tsvector can hold: non-empty, at most 2046 bytes (longer ones are left unindexed)."""
    return [t for t in dict.fromkeys(terms) if t and len(t.encode()) <= _MAX_LEXEME]


def _tsquery(terms: Sequence[str]) -> str:
    """An OR of exact lexemes, quoted so no term is parsed (quotes and backslashes doubled)."""
    quoted = ("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
    return " | ".join(quoted)


def _cos(value: float | None) -> float:
    # pgvector answers NaN for a zero vector; numpy's dot product says 0.
    return 0.0 if value is None or math.isnan(value) else float(value)


def _describe(dsn: str) -> str:
    """host:port/dbname as user, without the password, for error messages."""
    try:
        d = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the MEMORYD_DB server"
    host = d.get("host") or d.get("hostaddr") or "localhost"
    user = f" as {d['user']}" if d.get("user") else ""
    return f"{host}:{d.get('port') or 5432}/{d.get('dbname') or '(default database)'}{user}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _row_to_atom(r: dict[str, Any]) -> Atom:
    scope = Scope(tenant_id=r["tenant_id"], workspace=r["workspace"], repository=r["repository"],
                  branch=r["branch"], root=r["scope_root"])  # fmt: skip
    return Atom(
        id=r["id"], content=r["content"], type=r["type"], source=r["source"], scope=scope,
        scope_hash=r["scope_hash"], epistemic=r["epistemic"], polarity=r["polarity"], status=r["status"],
        prior_status=r["prior_status"], created_at=_utc(r["created_at"]), updated_at=_utc(r["updated_at"]),
        title=r["title"], tags=list(r["tags"]), triggers=list(r["triggers"]), supersedes=r["supersedes"],
        superseded_by=r["superseded_by"], entities=list(r["entities"] or []),
        last_accessed_at=_utc(r["last_accessed_at"]), vault_path=r["vault_path"],
    )  # fmt: skip


def _row_to_promotion(r: dict[str, Any]) -> Promotion:
    return Promotion(
        id=r["id"], atom_id=r["atom_id"], scope_hash=r["scope_hash"], origin=r["origin"],
        durability=r["durability"], utility=r["utility"], relevance=r["relevance"], accuracy=r["accuracy"],
        average=r["average"], reasoning=r["reasoning"], status=r["status"], created_at=_utc(r["created_at"]),
        decided_at=_utc(r["decided_at"]),
    )  # fmt: skip


class _Tx:
    """Write operations bound to one open transaction (its connection holds the chain_head lock)."""

    def __init__(self, execute: Callable[..., psycopg.Cursor[Any]]) -> None:
        self._execute = execute
        self._head: tuple[int, str] | None = None
        self.scrubbed = False

    # -- vault outbox (trust, issue 10) ---------------------------------------------------------

    def outbox_add(self, atom_id: str, token: str, remove_path: str | None) -> None:
        """Record that this transaction's change of `atom_id` must reach the vault after commit."""
        self._execute(
            "INSERT INTO vault_outbox (atom_id, token, remove_path) VALUES (%s,%s,%s) ON CONFLICT (atom_id)"
            " DO UPDATE SET token = excluded.token, at = now(),"
            " remove_path = COALESCE(excluded.remove_path, vault_outbox.remove_path)",
            (atom_id, token, remove_path),
        )

    # -- end vault outbox ------------------------------------------------------------------------

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: np.ndarray | None) -> None:
        s = atom.scope
        lex = _lexemes(terms)
        self._execute(
            "INSERT INTO atoms (id, content, norm_hash, type, source, tenant_id, workspace, repository, branch,"
            " scope_root, scope_hash, epistemic, polarity, status, prior_status, title, tags, triggers,"
            " supersedes, superseded_by, created_at, updated_at, embedding, kw)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::vector,"
            " CASE WHEN cardinality(%s::text[]) > 0 THEN array_to_tsvector(%s::text[]) END)",
            (
                atom.id, atom.content, norm_hash, atom.type, atom.source, s.tenant_id, s.workspace,
                s.repository, s.branch, s.root, atom.scope_hash, atom.epistemic, atom.polarity,
                atom.status, atom.prior_status, atom.title, Jsonb(list(atom.tags)), Jsonb(list(atom.triggers)),
                atom.supersedes, atom.superseded_by, atom.created_at, atom.updated_at, _vector_text(vector),
                lex, lex,
            ),
        )  # fmt: skip

    def update_atom(self, atom_id: str, **fields: Any) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        for key in ("tags", "triggers"):
            if key in fields:
                fields[key] = Jsonb(list(fields[key]))
        fields.setdefault("updated_at", now_iso())
        sets = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in fields)
        self._execute(sql.SQL("UPDATE atoms SET {} WHERE id = %s").format(sets), (*fields.values(), atom_id))

    def link(self, src: str, dst: str, kind: str) -> None:
        if dst.startswith("entity:"):
            _, ekind, name = dst.split(":", 2)
            self._execute(
                "INSERT INTO entities (id, kind, name) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING", (dst, ekind, name)
            )
        self._execute(
            "INSERT INTO edges (src, dst, kind, created_at) VALUES (%s,%s,%s,%s) ON CONFLICT DO NOTHING",
            (src, dst, kind, now_iso()),
        )

    def append_event(
        self, *, atom_id: str | None, actor: str, action: str, reason: str | None, content: str | None
    ) -> Event:
        if self._head is None:  # read under the chain_head lock: nobody else can append meanwhile
            row = self._execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
            self._head = (int(row[0]), row[1]) if row else (0, GENESIS)
        last_seq, prev = self._head
        seq = last_seq + 1
        event_id = str(ULID())
        at = now_iso()
        c_hash = None if content is None else content_hash(content)
        digest = chain_hash(prev, event_id, atom_id, actor, action, reason, at, c_hash)
        self._execute(
            "INSERT INTO events (seq, id, atom_id, actor, action, reason, at, content_hash, prev_hash, hash)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            (seq, event_id, atom_id, actor, action, reason, at, c_hash, prev, digest),
        )
        if content is not None:
            self._execute("INSERT INTO event_payloads (event_id, content) VALUES (%s, %s)", (event_id, content))
        self._head = (seq, digest)
        return Event(
            seq=seq, id=event_id, atom_id=atom_id, actor=actor, action=action, reason=reason,
            at=_parse_time(at), content_hash=c_hash, content=content, prev_hash=prev, hash=digest,
        )  # fmt: skip

    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: np.ndarray | None) -> None:
        """Re-index an atom whose content, title, tags or triggers changed in place."""
        lex = _lexemes(terms)
        self._execute(
            "UPDATE atoms SET kw = CASE WHEN cardinality(%s::text[]) > 0 THEN array_to_tsvector(%s::text[]) END"
            " WHERE id = %s",
            (lex, lex, atom_id),
        )
        if vector is not None:
            self._execute("UPDATE atoms SET embedding = %s::vector WHERE id = %s", (_vector_text(vector), atom_id))

    def unlink_entities(self, atom_id: str) -> None:
        self._execute("DELETE FROM edges WHERE src = %s AND kind = 'mentions'", (atom_id,))

    def delete_atom(self, atom_id: str) -> None:
        """Remove an atom's row after scrubbing its content; its audit events stay (hashes only)."""
        self.scrub_atom(atom_id)
        self._execute("DELETE FROM edges WHERE src = %s OR dst = %s", (atom_id, atom_id))
        self._execute("DELETE FROM sessions WHERE id = %s", (atom_id,))
        self._execute("DELETE FROM promotions WHERE atom_id = %s", (atom_id,))
        self._execute("DELETE FROM anchors WHERE atom_id = %s", (atom_id,))
        self._execute("DELETE FROM atoms WHERE id = %s", (atom_id,))

    def insert_session(self, session: Session) -> None:
        self._execute(
            "INSERT INTO sessions (id, source, title, started_at) VALUES (%s,%s,%s,%s)",
            (session.id, session.source, session.title, session.started_at),
        )

    def end_session(self, session_id: str, summary: str) -> None:
        self._execute(
            "UPDATE sessions SET ended_at = %s, summary = %s WHERE id = %s", (now_iso(), summary, session_id)
        )

    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int:  # fmt: skip
        row = self._execute(
            "INSERT INTO promotions (atom_id, scope_hash, origin, durability, utility, relevance, accuracy,"
            " average, reasoning, status, created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,'pending',%s) RETURNING id",
            (atom_id, scope_hash, origin, scores["durability"], scores["utility"], scores["relevance"],
             scores["accuracy"], scores["average"], reasoning, now_iso()),
        ).fetchone()  # fmt: skip
        return int(row[0])

    def decide_promotion(self, promotion_id: int, status: str) -> None:
        self._execute(
            "UPDATE promotions SET status = %s, decided_at = %s WHERE id = %s", (status, now_iso(), promotion_id)
        )

    def mark_sensitive(self, scope_hash: str, name: str, sensitive: bool) -> None:
        if sensitive:
            self._execute(
                "INSERT INTO sensitive_scopes (scope_hash, name, marked_at) VALUES (%s,%s,%s)"
                " ON CONFLICT (scope_hash) DO UPDATE SET name = excluded.name, marked_at = excluded.marked_at",
                (scope_hash, name, now_iso()),
            )
        else:
            self._execute("DELETE FROM sensitive_scopes WHERE scope_hash = %s", (scope_hash,))
            self._execute("DELETE FROM grants WHERE scope_hash = %s", (scope_hash,))

    def add_grant(self, scope_hash: str, granted_by: str, expires_at: datetime) -> None:
        self._execute(
            "INSERT INTO grants (scope_hash, granted_by, granted_at, expires_at) VALUES (%s,%s,%s,%s)",
            (scope_hash, granted_by, now_iso(), expires_at.astimezone(UTC)),
        )

    def rescope_promotions(self, old: str, new: str) -> None:
        self._execute("UPDATE promotions SET scope_hash = %s WHERE scope_hash = %s", (new, old))

    def add_access_request(self, scope_hash: str, reason: str) -> int:
        row = self._execute(
            "INSERT INTO access_requests (scope_hash, reason, requested_at) VALUES (%s,%s,%s) RETURNING id",
            (scope_hash, reason, now_iso()),
        ).fetchone()
        return int(row[0])

    def scrub_atom(self, atom_id: str) -> None:
        row = self._execute("SELECT 1 FROM atoms WHERE id = %s", (atom_id,)).fetchone()
        if row is None:
            return
        # kw → NULL also drops its terms from term_df (the trigger deletes terms no atom has left).
        self._execute(
            "UPDATE atoms SET content = '', norm_hash = NULL, title = NULL, tags = '[]', triggers = '[]',"
            " embedding = NULL, kw = NULL WHERE id = %s",
            (atom_id,),
        )
        self._execute(
            "UPDATE event_payloads SET content = NULL"
            " WHERE event_id IN (SELECT id FROM events WHERE atom_id = %s) AND content IS NOT NULL",
            (atom_id,),
        )
        gone = self._execute(
            "DELETE FROM edges WHERE src = %s AND dst LIKE 'entity:%%' RETURNING dst", (atom_id,)
        ).fetchall()
        if gone:  # an entity no atom mentions any more is content of the scrubbed atom only
            self._execute(
                "DELETE FROM entities n WHERE n.id = ANY(%s::text[])"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.dst = n.id)",
                ([r[0] for r in gone],),
            )
        self._execute("DELETE FROM anchors WHERE atom_id = %s", (atom_id,))  # paths and symbols are content
        self.scrubbed = True

    # -- code anchors (issue 13) -------------------------------------------------------------

    def set_anchors(self, atom_id: str, anchors: Sequence[Anchor]) -> None:
        """Replace the anchors of an atom."""
        self._execute("DELETE FROM anchors WHERE atom_id = %s", (atom_id,))
        at = now_iso()
        for a in anchors:
            self._execute(
                "INSERT INTO anchors (atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin,"
                " created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (atom_id, path, symbol) DO NOTHING",
                (atom_id, a.path, a.symbol, a.kind, a.lang, a.commit, a.blob, a.fingerprint, a.line, a.origin, at),
            )

    # -- end code anchors --------------------------------------------------------------------


class PostgresStore:
    """A pooled PostgreSQL database; every statement passes through `_rows` or the transaction's `execute` (and the tracer)."""

    def __init__(self, dsn: str, *, busy_timeout_ms: int = 5000, pool_size: int = 8, connect_timeout_s: int = 10,
                 tracer: Callable[[str, Sequence[Any]], None] | None = None) -> None:  # fmt: skip
        self.dsn = dsn
        self.where = _describe(dsn)
        self.tracer = tracer
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._local = threading.local()
        self._iterative_scan = True
        try:
            first = psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout_s, application_name="memoryd")
        except psycopg.OperationalError as exc:
            raise StorageError(
                f"cannot connect to PostgreSQL at {self.where}: {_first_line(exc)}. Is the server running and "
                "reachable, and does MEMORYD_DB name the right host, port, database and user?"
            ) from exc
        except psycopg.ProgrammingError as exc:
            raise StorageError(f"MEMORYD_DB is not a valid PostgreSQL URL: {_first_line(exc)}") from exc
        try:
            self._migrate(first)
        except psycopg.Error as exc:
            raise _translate(exc, self.where) from exc
        finally:
            first.close()
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=max(1, pool_size), open=False, name="memoryd",
            kwargs={"autocommit": True, "connect_timeout": connect_timeout_s, "application_name": "memoryd"},
            configure=self._configure, check=ConnectionPool.check_connection,
            timeout=max(1.0, self.busy_timeout_ms / 1000), reconnect_timeout=60.0,
        )  # fmt: skip
        try:
            self._pool.open(wait=True, timeout=max(2.0, float(connect_timeout_s)))
        except PoolTimeout as exc:
            self._pool.close()
            raise StorageError(
                f"cannot open a connection pool to PostgreSQL at {self.where}; is the server running?"
            ) from exc

    # -- plumbing -------------------------------------------------------------------------

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        settings = [("TimeZone", "UTC"), ("lock_timeout", f"{self.busy_timeout_ms}ms"), ("hnsw.ef_search", "100")]
        if self._iterative_scan:  # pgvector >= 0.8: keep scanning the graph until k rows pass the scope filter
            settings.append(("hnsw.iterative_scan", "strict_order"))
        # One round trip; hnsw.* may be set before pgvector loads in this backend (it adopts them).
        calls = ", ".join("set_config(%s, %s, false)" for _ in settings)
        conn.execute(f"SELECT {calls}", [x for pair in settings for x in pair])

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            self._ensure_vector(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations"
                " (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for version, name, script in MIGRATIONS:
                if version in done:
                    continue
                conn.execute(script.encode())  # no parameters: sent as one multi-statement query
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, now())", (version, name)
                )

    def _ensure_vector(self, conn: psycopg.Connection[Any]) -> None:
        db, role = conn.execute("SELECT current_database(), current_user").fetchone()  # type: ignore[misc]
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None:
            available = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            if available is None:
                raise StorageError(
                    f"the PostgreSQL server at {self.where} does not have the pgvector extension installed; "
                    "install pgvector on the server (e.g. the postgresql-<major>-pgvector package, or build it from "
                    f"source), then run `CREATE EXTENSION vector;` in database {db}"
                )
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StorageError(
                    f"database {db} on {self.where} does not have the pgvector extension enabled and role {role} "
                    f"may not create it; ask an administrator to run `CREATE EXTENSION vector;` in database {db} "
                    "(as a superuser or the database owner), then retry"
                ) from exc
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        version = tuple(int(p) for p in str(row[0]).split(".")[:2] if p.isdigit())  # type: ignore[index]
        if version < (0, 5):
            raise StorageError(
                f"pgvector {row[0]} in database {db} has no HNSW index; run `ALTER EXTENSION vector UPDATE;` "  # type: ignore[index]
                "(pgvector >= 0.5 is required, >= 0.8 recommended)"
            )
        self._iterative_scan = version >= (0, 8)

    def _trace(self, query: Any, params: Sequence[Any] | None) -> None:
        if self.tracer is not None:
            text = query if isinstance(query, str) else repr(query)
            self.tracer(text, params if params is not None else ())

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """The writing thread's transaction connection, or a pooled one (errors → StorageError)."""
        tx_conn = getattr(self._local, "conn", None)
        if tx_conn is not None:
            yield tx_conn
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StorageError(
                f"no PostgreSQL connection to {self.where} within {self._pool.timeout:.0f}s: the server is down "
                "or unreachable, or every pooled connection is busy"
            ) from exc
        except PoolClosed as exc:
            raise StorageError("the store is closed") from exc
        except psycopg.Error as exc:
            raise _translate(exc, self.where) from exc

    def _rows(self, query: Any, params: Sequence[Any] | None = None, *, dicts: bool = False) -> list[Any]:
        self._trace(query, params)
        with self._conn() as conn:
            cur = conn.cursor(row_factory=dict_row if dicts else tuple_row)
            cur.execute(query, params)
            return cur.fetchall() if cur.description else []

    def _one(self, query: Any, params: Sequence[Any] | None = None) -> Any:
        rows = self._rows(query, params)
        return rows[0] if rows else None

    def applied_migrations(self) -> list[tuple[int, str]]:
        return [(r[0], r[1]) for r in self._rows("SELECT version, name FROM schema_migrations ORDER BY 1")]

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        if getattr(self._local, "conn", None) is not None:
            raise StorageError("a write transaction is already open in this thread")
        scrubbed = False
        try:
            with self._pool.connection() as conn:

                def execute(query: Any, params: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
                    self._trace(query, params)
                    return conn.execute(query, params)

                with conn.transaction():
                    # The one lock every writer takes first: serialises chain appends across processes.
                    execute("UPDATE chain_head SET snapshot_version = snapshot_version + 1 WHERE id = 1")
                    tx = _Tx(execute)
                    self._local.conn = conn
                    try:
                        yield tx
                    finally:
                        self._local.conn = None
                scrubbed = tx.scrubbed
        except PoolTimeout as exc:
            raise StorageError(
                f"no PostgreSQL connection to {self.where} within {self._pool.timeout:.0f}s: the server is down "
                "or unreachable, or every pooled connection is busy"
            ) from exc
        except PoolClosed as exc:
            raise StorageError("the store is closed") from exc
        except psycopg.Error as exc:
            raise _translate(exc, self.where) from exc
        if scrubbed:
            self.checkpoint()

    # -- reads ----------------------------------------------------------------------------

    def _atoms(self, where: str, params: Sequence[Any], tail: str = "") -> list[Atom]:
        rows = self._rows(f"SELECT {_ATOM_COLUMNS} FROM atoms a WHERE {where} {tail}", params, dicts=True)
        return [_row_to_atom(r) for r in rows]

    def get_atoms(self, atom_ids: Iterable[str]) -> dict[str, Atom]:
        ids = list(dict.fromkeys(atom_ids))
        if not ids:
            return {}
        return {a.id: a for a in self._atoms("a.id = ANY(%s::text[])", (ids,))}

    def find_duplicate(self, scope_hash: str, norm_hash: str) -> Atom | None:
        found = self._atoms(
            "a.scope_hash = %s AND a.norm_hash = %s AND a.status IN ('active', 'pending')",
            (scope_hash, norm_hash), "ORDER BY a.seq LIMIT 1",
        )  # fmt: skip
        return found[0] if found else None

    def list_atoms(
        self,
        *,
        scope_hashes: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        epistemic: str | None = None,
        limit: int = 100,
        newest_first: bool = True,
    ) -> list[Atom]:
        where: list[str] = ["true"]
        params: list[Any] = []
        for column, values in (("scope_hash", scope_hashes), ("status", statuses), ("type", types)):
            if values is not None:
                where.append(f"a.{column} = ANY(%s::text[])")
                params.append(list(values))
        if epistemic is not None:
            where.append("a.epistemic = %s")
            params.append(epistemic)
        order = "DESC" if newest_first else "ASC"
        params.append(None if limit < 0 else limit)  # SQLite's LIMIT -1 is PostgreSQL's LIMIT NULL (ALL)
        return self._atoms(" AND ".join(where), params, f"ORDER BY a.seq {order} LIMIT %s")

    def keyword_candidates(
        self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int,
        stats: tuple[int, dict[str, int]] | None = None,
    ) -> list[str]:
        lex = _lexemes(terms)
        if not lex or not scope_hashes or not statuses:
            return []
        # Match through the GIN index on the query's most selective terms (all of them on small
        # stores, `selective_terms`); rank by the IDF mass of those terms each atom holds (the
        # engine's own keyword score, before calibration), newest first among equals.
        if stats is None or any(t not in stats[1] for t in lex):
            stats = self.term_stats(lex)
        total, df = stats
        lex, _ = selective_terms(lex, df)
        if not lex:
            return []
        weight = {t: math.log(1.0 + (total - df[t] + 0.5) / (df[t] + 0.5)) for t in lex}
        score = " + ".join("CASE WHEN a.kw @@ %s::tsquery THEN %s::float8 ELSE 0 END" for _ in lex)
        params: list[Any] = [_tsquery(lex), list(scope_hashes), list(statuses)]
        for t in lex:
            params += [_tsquery([t]), weight[t]]
        rows = self._rows(
            "SELECT a.id FROM atoms a WHERE a.kw @@ %s::tsquery AND a.scope_hash = ANY(%s::text[])"
            f" AND a.status = ANY(%s::text[]) ORDER BY {score} DESC, a.seq DESC LIMIT %s",
            [*params, limit],
        )
        return [r[0] for r in rows]

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        unique = list(dict.fromkeys(terms))
        row = self._one(
            "SELECT (SELECT docs FROM kw_stats WHERE id = 1),"
            " (SELECT coalesce(jsonb_object_agg(term, df), '{}') FROM term_df WHERE term = ANY(%s::text[]))",
            (unique,),
        )
        df = {t: 0 for t in unique}
        df.update({k: int(v) for k, v in row[1].items()})
        return int(row[0]), df

    def candidate_facts(self, atom_ids: Sequence[str]) -> dict[str, CandidateFacts]:
        ids = list(dict.fromkeys(atom_ids))
        if not ids:
            return {}
        rows = self._rows(
            "SELECT a.id, a.status, a.scope_hash, a.type, a.epistemic, a.updated_at, a.last_accessed_at,"
            " coalesce(tsvector_to_array(a.kw), '{}'),"
            " ARRAY(SELECT e.dst FROM edges e WHERE e.src = a.id AND e.kind = 'mentions'), a.polarity"
            " FROM atoms a WHERE a.id = ANY(%s::text[])",
            (ids,),
        )
        return {
            r[0]: CandidateFacts(
                status=r[1], scope_hash=r[2], type=r[3], epistemic=r[4], updated_at=r[5], last_accessed_at=r[6],
                terms=tuple(r[7]), entities=tuple(r[8]), polarity=r[9],
            )  # fmt: skip
            for r in rows
        }

    # -- issue 12 (recall): the memory saved right after another one -------------------------------

    def successors(self, atom_ids: Sequence[str], *, statuses: Sequence[str], within_seconds: float) -> dict[str, str]:
        ids = list(dict.fromkeys(atom_ids))
        if not ids or not statuses:
            return {}
        rows = self._rows(
            "SELECT q.id, n.id FROM atoms q CROSS JOIN LATERAL (SELECT a.id FROM atoms a"
            " WHERE a.scope_hash = q.scope_hash AND a.status = ANY(%s::text[]) AND a.created_at > q.created_at"
            " AND a.created_at <= q.created_at + make_interval(secs => %s) ORDER BY a.created_at LIMIT 1) n"
            " WHERE q.id = ANY(%s::text[])",
            (list(statuses), float(within_seconds), ids),
        )
        return {r[0]: r[1] for r in rows}

    def atoms_for_entities(
        self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int
    ) -> list[str]:
        if not entity_ids:
            return []
        # The newest 4×limit mentions of each entity (ULIDs sort by time), so a common entity
        # costs the same on a big store as on a small one.
        rows = self._rows(
            "SELECT a.id, count(*) AS n, a.seq FROM unnest(%s::text[]) AS q(dst)"
            " CROSS JOIN LATERAL (SELECT e.src FROM edges e WHERE e.dst = q.dst AND e.kind = 'mentions'"
            " ORDER BY e.src DESC LIMIT %s) m JOIN atoms a ON a.id = m.src"
            " WHERE a.scope_hash = ANY(%s::text[]) AND a.status = ANY(%s::text[])"
            " GROUP BY a.id, a.seq ORDER BY n DESC, a.seq DESC LIMIT %s",
            (list(entity_ids), limit * 4, list(scope_hashes), list(statuses), limit),
        )
        return [r[0] for r in rows]

    def warm(self) -> None:
        """Nothing to load: pgvector searches inside the database."""

    def vector_candidates(self, query: np.ndarray, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        q = _vector_text(query)
        if q is None or not scope_hashes or k <= 0:
            return []
        # Written exactly as the partial HNSW index of this size is defined, so the planner uses it;
        # vectors of another model's size are not comparable and never match.
        n = int(np.asarray(query).size)
        rows = self._rows(
            f"SELECT id, 1 - (embedding::vector({n}) <=> %(q)s::vector({n})) FROM atoms"
            f" WHERE vector_dims(embedding) = {n} AND scope_hash = ANY(%(scopes)s::text[])"
            f" ORDER BY embedding::vector({n}) <=> %(q)s::vector({n}) LIMIT %(k)s",
            {"q": q, "scopes": list(scope_hashes), "k": k},
        )
        return [(r[0], _cos(r[1])) for r in rows]

    def cosines(self, query: np.ndarray, atom_ids: Sequence[str]) -> dict[str, float]:
        q = _vector_text(query)
        if q is None or not atom_ids:
            return {}
        n = int(np.asarray(query).size)
        rows = self._rows(
            f"SELECT id, 1 - (embedding::vector({n}) <=> %s::vector({n})) FROM atoms"
            f" WHERE id = ANY(%s::text[]) AND vector_dims(embedding) = {n}",
            (q, list(atom_ids)),
        )
        return {r[0]: _cos(r[1]) for r in rows}

    # -- code anchors (issue 13) -------------------------------------------------------------

    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]:
        """The anchors of each listed atom that has any."""
        ids = list(dict.fromkeys(atom_ids))
        if not ids:
            return {}
        rows = self._rows(
            "SELECT atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin FROM anchors"
            ' WHERE atom_id = ANY(%s::text[]) ORDER BY atom_id, kind, path COLLATE "C", symbol COLLATE "C"',
            (ids,),
        )
        out: dict[str, list[Anchor]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(
                Anchor(path=r[1], symbol=r[2], kind=r[3], lang=r[4], commit=r[5], blob=r[6], fingerprint=r[7],
                       line=r[8], origin=r[9])  # fmt: skip
            )
        return out

    def anchored_atoms(
        self, *, scope_hashes: Sequence[str], statuses: Sequence[str], path: str | None = None,
        symbol: str | None = None, limit: int = 1000,
    ) -> list[str]:  # fmt: skip
        """Atoms of these scopes with an anchor on `path` (a file, or a directory prefix) and/or on
        `symbol` (the qualified name or its last parts), newest first; no filter: every anchored atom."""
        where, params = [], []
        if path:
            prefix = path.rstrip("/") + "/"
            where.append("(n.path = %s OR left(n.path, %s) = %s)")
            params += [path.rstrip("/"), len(prefix), prefix]
        if symbol:
            where.append("(n.symbol = %s OR right(n.symbol, %s) = %s)")
            params += [symbol, len(symbol) + 1, "." + symbol]
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        rows = self._rows(  # driven by the anchors (path index): cost follows them, not the store size
            f"SELECT a.id FROM atoms a WHERE a.id IN (SELECT n.atom_id FROM anchors n{clause})"
            " AND a.scope_hash = ANY(%s::text[]) AND a.status = ANY(%s::text[]) ORDER BY a.seq DESC LIMIT %s",
            (*params, list(scope_hashes), list(statuses), limit),
        )
        return [r[0] for r in rows]

    # -- end code anchors --------------------------------------------------------------------

    def events(self, atom_id: str | None = None) -> list[Event]:
        query = (
            "SELECT e.seq, e.id, e.atom_id, e.actor, e.action, e.reason, e.at, e.content_hash, e.prev_hash,"
            " e.hash, p.content FROM events e LEFT JOIN event_payloads p ON p.event_id = e.id"
        )
        params: tuple[Any, ...] = ()
        if atom_id is not None:
            query += " WHERE e.atom_id = %s"
            params = (atom_id,)
        rows = self._rows(query + " ORDER BY e.seq", params)
        return [
            Event(
                seq=r[0], id=r[1], atom_id=r[2], actor=r[3], action=r[4], reason=r[5], at=_parse_time(r[6]),
                content_hash=r[7], prev_hash=r[8], hash=r[9], content=r[10],
            )  # fmt: skip
            for r in rows
        ]

    def neighbors(self, atom_id: str, *, scope_hash: str, n: int) -> tuple[list[Atom], list[Atom]]:
        """Active atoms created just before and just after `atom_id` in the same scope."""
        row = self._one("SELECT seq FROM atoms WHERE id = %s", (atom_id,))
        if row is None:
            return [], []
        base = "a.scope_hash = %s AND a.status = 'active' AND "
        before = self._atoms(base + "a.seq < %s", (scope_hash, row[0], n), "ORDER BY a.seq DESC LIMIT %s")
        after = self._atoms(base + "a.seq > %s", (scope_hash, row[0], n), "ORDER BY a.seq ASC LIMIT %s")
        return list(reversed(before)), after

    def atoms_since(self, *, scope_hashes: Sequence[str], since: datetime, types: Sequence[str] | None,
                    limit: int) -> list[Atom]:  # fmt: skip
        where = "a.scope_hash = ANY(%s::text[]) AND a.status = 'active' AND a.created_at >= %s"
        params: list[Any] = [list(scope_hashes), since.astimezone(UTC)]
        if types:
            where += " AND a.type = ANY(%s::text[])"
            params.append(list(types))
        return self._atoms(where, (*params, limit), "ORDER BY a.seq DESC LIMIT %s")

    def vault_digests(self) -> dict[str, tuple[str, str | None, str | None]]:
        """atom id → (status, vault_path, vault_digest) for every atom."""
        rows = self._rows("SELECT id, status, vault_path, vault_digest FROM atoms")
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def get_session(self, session_id: str) -> Session | None:
        r = self._one(
            "SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
            " FROM sessions s JOIN atoms a ON a.id = s.id WHERE s.id = %s",
            (session_id,),
        )
        if r is None:
            return None
        return Session(
            id=r[0], source=r[1], title=r[2], started_at=_utc(r[3]), ended_at=_utc(r[4]), summary=r[5],
            scope_hash=r[6],
        )  # fmt: skip

    def list_promotions(
        self, *, scope_hashes: Sequence[str] | None, status: str = "pending", min_score: float = 0.0,
        max_score: float = 1.0, types: Sequence[str] | None = None, limit: int = 10,
    ) -> list[Promotion]:  # fmt: skip
        query = (
            f"SELECT {_PROMOTION_COLUMNS} FROM promotions p JOIN atoms a ON a.id = p.atom_id"
            " WHERE p.status = %s AND p.average >= %s AND p.average <= %s"
        )
        params: list[Any] = [status, min_score, max_score]
        if scope_hashes is not None:
            query += " AND p.scope_hash = ANY(%s::text[])"
            params.append(list(scope_hashes))
        if types:
            query += " AND a.type = ANY(%s::text[])"
            params.append(list(types))
        params.append(None if limit < 0 else limit)
        rows = self._rows(query + " ORDER BY p.average ASC, p.id ASC LIMIT %s", params, dicts=True)
        return [_row_to_promotion(r) for r in rows]

    def get_promotions(self, ids: Sequence[int]) -> dict[int, Promotion]:
        if not ids:
            return {}
        rows = self._rows(
            f"SELECT {_PROMOTION_COLUMNS} FROM promotions p WHERE p.id = ANY(%s::bigint[])", ([int(i) for i in ids],),
            dicts=True,
        )  # fmt: skip
        return {r["id"]: _row_to_promotion(r) for r in rows}

    def is_sensitive(self, scope_hash: str) -> bool:
        return self._one("SELECT 1 FROM sensitive_scopes WHERE scope_hash = %s", (scope_hash,)) is not None

    def grant_expiry(self, scope_hash: str) -> datetime | None:
        """The latest expiry of a grant on `scope_hash` that is still running, if any."""
        row = self._one(
            "SELECT max(expires_at) FROM grants WHERE scope_hash = %s AND expires_at > %s",
            (scope_hash, datetime.now(UTC)),
        )
        return _utc(row[0]) if row and row[0] else None

    def sensitive_scopes(self) -> list[tuple[str, str]]:
        rows = self._rows('SELECT scope_hash, name FROM sensitive_scopes ORDER BY name COLLATE "C"')
        return [(r[0], r[1]) for r in rows]

    def access_requests(self) -> list[dict[str, Any]]:
        rows = self._rows("SELECT id, scope_hash, reason, requested_at FROM access_requests ORDER BY id")
        return [{"id": r[0], "scope_hash": r[1], "reason": r[2], "requested_at": _iso(r[3])} for r in rows]

    def touch(self, atom_ids: Sequence[str]) -> None:
        """Record that atoms were read (feeds decay). Not a memory write: no event, no snapshot bump."""
        if not atom_ids:
            return
        try:
            # SKIP LOCKED: never wait for (or deadlock with) a writer; access times are a hint.
            self._rows(
                "UPDATE atoms SET last_accessed_at = %s WHERE id IN"
                " (SELECT id FROM atoms WHERE id = ANY(%s::text[]) ORDER BY id FOR UPDATE SKIP LOCKED)",
                (datetime.now(UTC), list(atom_ids)),
            )
        except StorageError as exc:
            log.debug("access times not recorded: %s", exc)

    def group_counts(self, scope_hashes: Sequence[str] | None) -> dict[str, Any]:
        def where(prefix: str) -> str:
            clause = f"{prefix}status <> 'tombstoned'"
            if scope_hashes is not None:
                clause += f" AND {prefix}scope_hash = ANY(%s::text[])"
            return clause

        params = [list(scope_hashes)] if scope_hashes is not None else []
        name = (
            "CASE WHEN repository = '*' THEN tenant_id || '/global' WHEN workspace = '' THEN repository"
            " ELSE workspace || '/' || repository END"
        )
        by_type = {r[0]: r[1] for r in self._rows(f"SELECT type, count(*) FROM atoms WHERE {where('')} GROUP BY 1",
                                                   params)}  # fmt: skip
        by_scope = {
            r[0]: {"name": r[1], "count": r[2]}
            for r in self._rows(f"SELECT scope_hash, {name}, count(*) FROM atoms WHERE {where('')} GROUP BY 1, 2", params)
        }
        top = self._rows(
            "SELECT e.dst, count(*) FROM edges e JOIN atoms a ON a.id = e.src"
            f" WHERE e.kind = 'mentions' AND {where('a.')} GROUP BY 1 ORDER BY 2 DESC, e.dst COLLATE \"C\" LIMIT 10",
            params,
        )
        return {"by_type": by_type, "by_scope": by_scope, "top_entities": [{"id": r[0], "count": r[1]} for r in top]}

    # -- vault outbox (trust, issue 10) ---------------------------------------------------------

    def outbox(self) -> list[tuple[str, str, str | None]]:
        """(atom id, token, path to remove) of every change whose vault file is not published yet."""
        return [(r[0], r[1], r[2]) for r in self._rows("SELECT atom_id, token, remove_path FROM vault_outbox")]

    def vault_state(self, atom_ids: Sequence[str]) -> dict[str, tuple[str, str | None, str | None]]:
        """atom id → (status, vault_path, vault_digest) for the listed atoms that exist."""
        if not atom_ids:
            return {}
        rows = self._rows("SELECT id, status, vault_path, vault_digest FROM atoms WHERE id = ANY(%s::text[])",
                          (list(atom_ids),))  # fmt: skip
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def clear_outbox(self, entries: Sequence[tuple[str, str]]) -> None:
        """Forget published changes, each only if no later transaction re-queued its atom (token)."""
        if not entries:
            return
        self._rows(
            "DELETE FROM vault_outbox o USING unnest(%s::text[], %s::text[]) AS e(atom_id, token)"
            " WHERE o.atom_id = e.atom_id AND o.token = e.token",
            ([a for a, _ in entries], [t for _, t in entries]),
        )

    # -- end vault outbox ------------------------------------------------------------------------

    def integrity(self) -> str:
        """"ok", or what is inconsistent (the keyword statistics, the chain head row)."""
        row = self._one(
            "SELECT (SELECT count(*) FROM chain_head), (SELECT docs FROM kw_stats WHERE id = 1),"
            " (SELECT count(*) FROM atoms WHERE kw IS NOT NULL)"
        )
        if row[0] != 1:
            return "chain_head must have exactly one row"
        if row[1] != row[2]:
            return f"keyword statistics count {row[1]} indexed atoms but {row[2]} are indexed"
        return "ok"

    def dangling_edges(self) -> int:
        row = self._one(
            "SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM atoms)"
            " OR (dst LIKE 'entity:%%' AND dst NOT IN (SELECT id FROM entities))"
            " OR (dst NOT LIKE 'entity:%%' AND dst NOT IN (SELECT id FROM atoms))"
        )
        return int(row[0])

    def counts(self) -> dict[str, Any]:
        by_status = {r[0]: r[1] for r in self._rows("SELECT status, count(*) FROM atoms GROUP BY status")}
        live = "status <> 'tombstoned'"
        row = self._one(
            "SELECT (SELECT count(*) FROM edges),"
            f" (SELECT count(*) FROM atoms WHERE embedding IS NOT NULL AND {live}),"
            " (SELECT count(*) FROM atoms WHERE kw IS NOT NULL),"
            f" (SELECT count(*) FROM atoms WHERE created_at IS NOT NULL AND {live}),"
            f" (SELECT count(*) FROM atoms WHERE type IS NOT NULL AND {live})"
        )
        return {
            "atoms": sum(by_status.values()), "by_status": by_status, "edges": row[0], "semantic": row[1],
            "keyword": row[2], "temporal": row[3], "categorical": row[4],
        }  # fmt: skip

    def snapshot_version(self) -> int:
        return int(self._one("SELECT snapshot_version FROM chain_head WHERE id = 1")[0])

    def checkpoint(self) -> None:
        """VACUUM the tables that held scrubbed content, so no dead row version still carries it.

        PostgreSQL does not zero freed space in data files or recycle WAL on demand, so unlike
        SQLite's secure_delete this is a logical guarantee (no row, index entry reachable by SQL,
        statistic or dead version keeps the text), not a byte-level one.
        """
        if getattr(self._local, "conn", None) is not None:
            return  # VACUUM cannot run inside a transaction; the transaction runs it after commit
        try:
            self._rows("VACUUM atoms, event_payloads, term_df, entities, edges, sessions")
        except StorageError as exc:
            log.warning("VACUUM after scrubbing failed (dead row versions stay until autovacuum): %s", exc)

    # -- console (issue 14) --------------------------------------------------------------------

    @staticmethod
    def _filter_sql(f: AtomFilter) -> tuple[str, list[Any]]:
        where: list[str] = ["true"]
        params: list[Any] = []
        for column, values in (("scope_hash", f.scope_hashes), ("status", f.statuses), ("type", f.types)):
            if values is not None:
                where.append(f"a.{column} = ANY(%s::text[])")
                params.append(list(values))
        if f.exclude_scopes:
            where.append("a.scope_hash <> ALL(%s::text[])")
            params.append(list(f.exclude_scopes))
        if f.source is not None:
            where.append("a.source = %s")
            params.append(f.source)
        if f.tag is not None:
            where.append("a.tags @> %s::jsonb")
            params.append(json.dumps([f.tag]))
        if f.entity is not None:
            where.append("EXISTS (SELECT 1 FROM edges e WHERE e.src = a.id AND e.dst = %s AND e.kind = 'mentions')")
            params.append(f.entity)
        if f.created_from is not None:
            where.append("a.created_at >= %s")
            params.append(f.created_from.astimezone(UTC))
        if f.created_to is not None:
            where.append("a.created_at < %s")
            params.append(f.created_to.astimezone(UTC))
        if f.last_used is not None:
            last = "greatest(a.updated_at, coalesce(a.last_accessed_at, a.updated_at))"
            arms = []
            for w in f.last_used:
                arm = ["a.type = ANY(%s::text[])"]
                params.append(list(w.types))
                if w.since is not None:
                    arm.append(f"{last} >= %s")
                    params.append(w.since.astimezone(UTC))
                if w.before is not None:
                    arm.append(f"{last} < %s")
                    params.append(w.before.astimezone(UTC))
                if w.necessary is not None:
                    arm.append("a.epistemic = 'necessary'" if w.necessary else "a.epistemic <> 'necessary'")
                arms.append("(" + " AND ".join(arm) + ")")
            where.append("(" + (" OR ".join(arms) or "false") + ")")
        return " AND ".join(where), params

    def browse_atoms(self, f: AtomFilter) -> list[Atom]:
        where, params = self._filter_sql(f)
        if f.before is not None:
            where += " AND a.seq < coalesce((SELECT b.seq FROM atoms b WHERE b.id = %s), 0)"
            params.append(f.before)
        return self._atoms(where, (*params, f.limit), "ORDER BY a.seq DESC LIMIT %s")

    def count_atoms(self, f: AtomFilter, *, cap: int | None = None) -> int:
        where, params = self._filter_sql(f)
        if cap is None:
            return int(self._one(f"SELECT count(*) FROM atoms a WHERE {where}", params)[0])
        return int(self._one(f"SELECT count(*) FROM (SELECT 1 FROM atoms a WHERE {where} LIMIT %s) c", [*params, cap])[0])

    def list_sessions(self, *, before: str | None, limit: int, exclude_scopes: Sequence[str] = ()) -> list[Session]:
        query = (
            "SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
            " FROM sessions s JOIN atoms a ON a.id = s.id WHERE true"
        )
        params: list[Any] = []
        if before is not None:
            query += ' AND s.id COLLATE "C" < %s'
            params.append(before)
        if exclude_scopes:
            query += " AND a.scope_hash <> ALL(%s::text[])"
            params.append(list(exclude_scopes))
        rows = self._rows(query + ' ORDER BY s.id COLLATE "C" DESC LIMIT %s', (*params, limit))
        return [
            Session(
                id=r[0], source=r[1], title=r[2], started_at=_utc(r[3]), ended_at=_utc(r[4]), summary=r[5],
                scope_hash=r[6],
            )  # fmt: skip
            for r in rows
        ]

    def atom_links(self, atom_id: str) -> list[tuple[str, str, str]]:
        rows = self._rows(
            "SELECT src, dst, kind FROM edges WHERE src = %s AND dst NOT LIKE 'entity:%%'"
            " UNION SELECT src, dst, kind FROM edges WHERE dst = %s",
            (atom_id, atom_id),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def top_entities(self, *, limit: int) -> list[tuple[str, int]]:
        rows = self._rows(
            "SELECT dst, count(*) FROM edges WHERE kind = 'mentions' GROUP BY dst"
            ' ORDER BY 2 DESC, dst COLLATE "C" LIMIT %s',
            (limit,),
        )
        return [(r[0], int(r[1])) for r in rows]

    def console_counts(self, parts: Sequence[str] = ("by_status", "by_type", "by_scope", "edges")) -> dict[str, Any]:
        columns = {"by_status": "status", "by_type": "type", "by_scope": "scope_hash"}
        out: dict[str, Any] = {}
        for part in parts:
            if part == "edges":
                out[part] = int(self._one("SELECT count(*) FROM edges")[0])
            else:
                rows = self._rows(f"SELECT {columns[part]}, count(*) FROM atoms GROUP BY 1")
                out[part] = {r[0]: int(r[1]) for r in rows}
        return out

    def scope_names(self, scope_hashes: Sequence[str]) -> dict[str, str]:
        rows = self._rows(
            "SELECT q.h, a.tenant_id, a.workspace, a.repository FROM unnest(%s::text[]) AS q(h)"
            " CROSS JOIN LATERAL (SELECT tenant_id, workspace, repository FROM atoms WHERE scope_hash = q.h LIMIT 1) a",
            (list(dict.fromkeys(scope_hashes)),),
        )
        return {r[0]: Scope(tenant_id=r[1], workspace=r[2], repository=r[3]).name for r in rows}

    def entity_mentions(
        self, entity_ids: Sequence[str], *, per_entity: int, exclude_scopes: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        if not entity_ids:
            return []
        rows = self._rows(
            "SELECT q.dst, m.src FROM unnest(%s::text[]) WITH ORDINALITY AS q(dst, n) CROSS JOIN LATERAL"
            " (SELECT e.src, a.seq FROM edges e JOIN atoms a ON a.id = e.src WHERE e.dst = q.dst AND e.kind = 'mentions'"
            " AND a.status = 'active' AND a.scope_hash <> ALL(%s::text[]) ORDER BY a.seq DESC LIMIT %s) m"
            " ORDER BY q.n, m.seq DESC",
            (list(entity_ids), list(exclude_scopes), per_entity),
        )
        return [(r[0], r[1]) for r in rows]

    def growth(self, since: datetime) -> list[tuple[str, int]]:
        rows = self._rows(
            "SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*) FROM atoms"
            " WHERE created_at >= %s GROUP BY 1 ORDER BY 1",
            (since.astimezone(UTC),),
        )
        return [(r[0], int(r[1])) for r in rows]

    def log_recall(self, scope_hash: str, hit_ids: Sequence[str]) -> None:
        try:
            self._rows(
                "INSERT INTO recalls (at, scope_hash, hits) VALUES (%s, %s, %s)",
                (datetime.now(UTC), scope_hash, Jsonb(list(hit_ids))),
            )
        except StorageError as exc:
            log.debug("recall not recorded: %s", exc)

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        query = "SELECT at, scope_hash, hits FROM recalls WHERE scope_hash = ANY(%s::text[]) AND at >= %s"
        params: list[Any] = [list(scope_hashes), since.astimezone(UTC)]
        if until is not None:
            query += " AND at <= %s"
            params.append(until.astimezone(UTC))
        rows = self._rows(query + " ORDER BY at DESC, id DESC LIMIT %s", (*params, limit))
        return [{"at": _utc(r[0]), "scope_hash": r[1], "hits": list(r[2])} for r in rows]

    def close(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()


def _translate(exc: psycopg.Error, where: str) -> StorageError:
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return StorageBusy(f"database is locked by another writer (waited past busy_timeout_ms): {_first_line(exc)}")
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled):
        return StorageError(
            f"lost the PostgreSQL connection to {where}: {_first_line(exc)}; check that the server is running"
        )
    return StorageError(f"database error: {_first_line(exc)}")


# -- copying a SQLite store into PostgreSQL ------------------------------------------------------

_COPY_TABLES: list[tuple[str, list[str]]] = [
    ("atoms", ["seq", "id", "content", "norm_hash", "type", "source", "tenant_id", "workspace", "repository",
               "branch", "scope_root", "scope_hash", "epistemic", "polarity", "status", "prior_status", "title",
               "tags", "triggers", "supersedes", "superseded_by", "created_at", "updated_at", "last_accessed_at",
               "vault_path", "vault_digest", "embedding"]),
    ("entities", ["id", "kind", "name"]),
    ("edges", ["src", "dst", "kind", "created_at"]),
    ("events", ["seq", "id", "atom_id", "actor", "action", "reason", "at", "content_hash", "prev_hash", "hash"]),
    ("event_payloads", ["event_id", "content"]),
    ("sessions", ["id", "source", "title", "started_at", "ended_at", "summary"]),
    ("promotions", ["id", "atom_id", "scope_hash", "origin", "durability", "utility", "relevance", "accuracy",
                    "average", "reasoning", "status", "created_at", "decided_at"]),
    ("sensitive_scopes", ["scope_hash", "name", "marked_at"]),
    ("grants", ["id", "scope_hash", "granted_by", "granted_at", "expires_at"]),
    ("access_requests", ["id", "scope_hash", "reason", "requested_at"]),
    ("anchors", ["atom_id", "path", "symbol", "kind", "lang", "commit_sha", "blob", "fingerprint", "line", "origin",
                 "created_at"]),
    ("recalls", ["id", "at", "scope_hash", "hits"]),
]  # fmt: skip
_JSON_COLUMNS = {"tags", "triggers", "hits"}


def migrate_store(src: str | Path, dst: str, progress: Callable[[str, int, int], None] | None = None,
                  *, batch: int = 500) -> dict[str, int]:  # fmt: skip
    """Copy a SQLite store (`sqlite:///path` or a path) into an empty PostgreSQL store (`postgresql://…`).

    Copies every table row for row (atoms with their vectors, the event chain with its payloads,
    entities, edges, sessions, promotions, sensitive scopes, grants, access requests), rebuilds the
    keyword index from the SQLite one, and commits once. Then checks row counts on both sides and
    re-verifies the copied hash chain. `progress(table, done, total)` is called per batch.
    Returns the number of rows copied per table. Raises StorageError (and copies nothing) when
    the target already holds memories or a check fails.
    """
    path = Path(str(src).removeprefix("sqlite://")) if str(src).startswith("sqlite://") else Path(src)
    if not path.exists():
        raise StorageError(f"no SQLite store at {path}")
    from .sqlite import SqliteStore

    SqliteStore(path).close()  # bring the source schema up to date (and check it opens)
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    target = PostgresStore(dst)
    copied: dict[str, int] = {}
    try:
        if target._one("SELECT (SELECT count(*) FROM atoms) + (SELECT count(*) FROM events)")[0]:
            raise StorageError(f"the target database {target.where} is not empty; migrate into a new database")
        terms = {
            int(rowid): text.split() for rowid, text in source.execute("SELECT rowid, terms FROM atom_fts")
        }
        with target.transaction() as tx:
            execute = tx._execute
            conn = target._local.conn
            # One transaction: per-row trigger upkeep of term_df would pile up row versions of the
            # common terms (quadratic); count the terms once at the end instead.
            execute("ALTER TABLE atoms DISABLE TRIGGER atoms_kw_insert_delete")
            for table, columns in _COPY_TABLES:
                total = int(source.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
                done = 0
                cur = source.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid")
                values_sql = ", ".join("%s::vector" if c == "embedding" else "%s" for c in columns)
                kw_sql = ", CASE WHEN cardinality(%s::text[]) > 0 THEN array_to_tsvector(%s::text[]) END"
                insert = (
                    f"INSERT INTO {table} ({', '.join(columns)}{', kw' if table == 'atoms' else ''})"
                    f" VALUES ({values_sql}{kw_sql if table == 'atoms' else ''})"
                )
                while rows := cur.fetchmany(batch):
                    params = [_copy_values(table, columns, row, terms) for row in rows]
                    target._trace(insert, params[0])
                    conn.cursor().executemany(insert, params)
                    done += len(rows)
                    if progress is not None:
                        progress(table, done, total)
                copied[table] = done
            for table, column in (("atoms", "seq"), ("promotions", "id"), ("grants", "id"), ("access_requests", "id"),
                                  ("recalls", "id")):
                execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                    f" coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)"
                )
            execute(
                "INSERT INTO term_df (term, df) SELECT t, count(*) FROM atoms, unnest(tsvector_to_array(kw)) AS t"
                " GROUP BY t"
            )
            execute("UPDATE kw_stats SET docs = (SELECT count(*) FROM atoms WHERE kw IS NOT NULL) WHERE id = 1")
            execute("ALTER TABLE atoms ENABLE TRIGGER atoms_kw_insert_delete")
            version = int(source.execute("SELECT value FROM meta WHERE key = 'snapshot_version'").fetchone()[0])
            execute("UPDATE chain_head SET snapshot_version = %s WHERE id = 1", (version,))
        _check_copy(source, target, copied)
    finally:
        source.close()
        target.close()
    return copied


def _copy_values(table: str, columns: list[str], row: Sequence[Any], terms: dict[int, list[str]]) -> list[Any]:
    values = list(row)
    for i, column in enumerate(columns):
        if column in _JSON_COLUMNS:
            values[i] = Jsonb(json.loads(values[i] or "[]"))
        elif column == "embedding" and values[i] is not None:
            values[i] = _vector_text(np.frombuffer(values[i], dtype=np.float32))
    if table == "atoms":
        lex = _lexemes(terms.get(int(row[0]), []))
        values += [lex, lex]
    return values


def _check_copy(source: sqlite3.Connection, target: PostgresStore, copied: dict[str, int]) -> None:
    for table, _ in _COPY_TABLES:
        want = int(source.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        have = int(target._one(f"SELECT count(*) FROM {table}")[0])
        if not want == have == copied[table]:
            raise StorageError(f"copy check failed for {table}: {want} rows in SQLite, {have} in PostgreSQL")
    prev = GENESIS
    for e in target.events():
        at = e.at.isoformat(timespec="microseconds").replace("+00:00", "Z")
        if e.prev_hash != prev or e.hash != chain_hash(prev, e.id, e.atom_id, e.actor, e.action, e.reason, at,
                                                       e.content_hash):  # fmt: skip
            raise StorageError(f"copied event chain does not verify at seq {e.seq}")
        if e.content is not None and content_hash(e.content) != e.content_hash:
            raise StorageError(f"copied payload of event seq {e.seq} does not match its hash")
        prev = e.hash
