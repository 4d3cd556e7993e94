"""SqliteStore: the embedded default backend, and the only module that holds SQL."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from ulid import ULID

from ..anchors.model import Anchor
from ..errors import StorageBusy, StorageError
from ..models import Atom, Event, Promotion, Scope, Session
from ..search.vector import ANN_MIN, VectorIndex
from .base import AtomFilter, CandidateFacts, selective_terms
from .migrations import MIGRATIONS

__all__ = ["SqliteStore", "chain_hash", "content_hash"]

log = logging.getLogger(__name__)

GENESIS = "0" * 64
_ATOM_COLUMNS = (
    "seq, id, content, type, source, tenant_id, workspace, repository, branch, scope_root, scope_hash, "
    "epistemic, polarity, status, prior_status, title, tags, triggers, supersedes, superseded_by, "
    "created_at, updated_at, last_accessed_at, vault_path"
)
_UPDATABLE = {
    "content", "norm_hash", "type", "epistemic", "polarity", "status", "prior_status", "title",
    "tags", "triggers", "supersedes", "superseded_by", "updated_at", "vault_path", "vault_digest",
    "tenant_id", "workspace", "repository", "branch", "scope_root", "scope_hash",
}  # fmt: skip


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


def chain_hash(prev_hash: str, event_id: str, atom_id: str | None, actor: str, action: str,
               reason: str | None, at: str, c_hash: str | None) -> str:  # fmt: skip
    body = json.dumps([prev_hash, event_id, atom_id, actor, action, reason, at, c_hash], ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _row_to_promotion(r: sqlite3.Row) -> Promotion:
    return Promotion(
        id=r["id"], atom_id=r["atom_id"], scope_hash=r["scope_hash"], origin=r["origin"],
        durability=r["durability"], utility=r["utility"], relevance=r["relevance"], accuracy=r["accuracy"],
        average=r["average"], reasoning=r["reasoning"], status=r["status"], created_at=_parse_time(r["created_at"]),
        decided_at=_parse_time(r["decided_at"]) if r["decided_at"] else None,
    )  # fmt: skip


def _placeholders(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _row_to_atom(row: sqlite3.Row, entities: list[str] | None = None) -> Atom:
    # Rows were validated on the way in; constructing without re-validation keeps a recall's
    # ~100 candidate atoms cheap (validation was a third of the time spent on them).
    scope = Scope.model_construct(
        tenant_id=row["tenant_id"],
        workspace=row["workspace"],
        repository=row["repository"],
        branch=row["branch"],
        root=row["scope_root"],
    )
    return Atom.model_construct(
        id=row["id"],
        content=row["content"],
        type=row["type"],
        source=row["source"],
        scope=scope,
        scope_hash=row["scope_hash"],
        epistemic=row["epistemic"],
        polarity=row["polarity"],
        status=row["status"],
        prior_status=row["prior_status"],
        created_at=_parse_time(row["created_at"]),
        updated_at=_parse_time(row["updated_at"]),
        title=row["title"],
        tags=json.loads(row["tags"]),
        triggers=json.loads(row["triggers"]),
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
        entities=entities or [],
        last_accessed_at=_parse_time(row["last_accessed_at"]) if row["last_accessed_at"] else None,
        vault_path=row["vault_path"],
    )


def _row_to_anchor(r: Sequence[Any]) -> Anchor:
    return Anchor(path=r[1], symbol=r[2], kind=r[3], lang=r[4], commit=r[5], blob=r[6], fingerprint=r[7], line=r[8],
                  origin=r[9])  # fmt: skip


def _translate(exc: sqlite3.Error) -> StorageError:
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return StorageBusy(f"database is locked by another writer: {exc}")
    return StorageError(f"database error: {exc}")


class _Tx:
    """Write operations bound to one open transaction."""

    def __init__(self, conn: sqlite3.Connection, execute: Callable[..., sqlite3.Cursor]) -> None:
        self._conn = conn
        self._execute = execute
        self.scrubbed = False

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: np.ndarray | None) -> None:
        s = atom.scope
        cur = self._execute(
            "INSERT INTO atoms (id, content, norm_hash, type, source, tenant_id, workspace, repository, branch,"
            " scope_root, scope_hash, epistemic, polarity, status, prior_status, title, tags, triggers,"
            " supersedes, superseded_by, created_at, updated_at, embedding, vec_seq)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                atom.id, atom.content, norm_hash, atom.type, atom.source, s.tenant_id, s.workspace,
                s.repository, s.branch, s.root, atom.scope_hash, atom.epistemic, atom.polarity,
                atom.status, atom.prior_status, atom.title, json.dumps(atom.tags, ensure_ascii=False),
                json.dumps(atom.triggers, ensure_ascii=False), atom.supersedes, atom.superseded_by,
                atom.created_at.isoformat().replace("+00:00", "Z"),
                atom.updated_at.isoformat().replace("+00:00", "Z"),
                None if vector is None else np.asarray(vector, dtype=np.float32).tobytes(),
                None if vector is None else self._next_vec_seq(),
            ),
        )  # fmt: skip
        if terms:
            self._execute("INSERT INTO atom_fts (rowid, terms) VALUES (?, ?)", (cur.lastrowid, " ".join(terms)))

    def _next_vec_seq(self) -> int:
        return int(self._execute("SELECT coalesce(max(vec_seq), 0) + 1 FROM atoms").fetchone()[0])

    def update_atom(self, atom_id: str, **fields: Any) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        for key in ("tags", "triggers"):
            if key in fields:
                fields[key] = json.dumps(fields[key], ensure_ascii=False)
        fields.setdefault("updated_at", now_iso())
        if "scope_hash" in fields:  # the vector index keys candidates by scope
            fields["vec_seq"] = self._next_vec_seq()
        sets = ", ".join(f"{k} = ?" for k in fields)
        self._execute(f"UPDATE atoms SET {sets} WHERE id = ?", (*fields.values(), atom_id))

    def link(self, src: str, dst: str, kind: str) -> None:
        if dst.startswith("entity:"):
            _, ekind, name = dst.split(":", 2)
            self._execute("INSERT OR IGNORE INTO entities (id, kind, name) VALUES (?,?,?)", (dst, ekind, name))
        self._execute(
            "INSERT OR IGNORE INTO edges (src, dst, kind, created_at) VALUES (?,?,?,?)", (src, dst, kind, now_iso())
        )

    def append_event(
        self, *, atom_id: str | None, actor: str, action: str, reason: str | None, content: str | None
    ) -> Event:
        row = self._execute("SELECT hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        prev = row[0] if row else GENESIS
        event_id = str(ULID())
        at = now_iso()
        c_hash = None if content is None else content_hash(content)
        digest = chain_hash(prev, event_id, atom_id, actor, action, reason, at, c_hash)
        cur = self._execute(
            "INSERT INTO events (id, atom_id, actor, action, reason, at, content_hash, prev_hash, hash)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (event_id, atom_id, actor, action, reason, at, c_hash, prev, digest),
        )
        if content is not None:
            self._execute("INSERT INTO event_payloads (event_id, content) VALUES (?, ?)", (event_id, content))
        return Event(
            seq=int(cur.lastrowid or 0), id=event_id, atom_id=atom_id, actor=actor, action=action,
            reason=reason, at=_parse_time(at), content_hash=c_hash, content=content, prev_hash=prev, hash=digest,
        )  # fmt: skip

    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: np.ndarray | None) -> None:
        """Re-index an atom whose content, title, tags or triggers changed in place."""
        row = self._execute("SELECT seq FROM atoms WHERE id = ?", (atom_id,)).fetchone()
        self._execute("DELETE FROM atom_fts WHERE rowid = ?", (row[0],))
        if terms:
            self._execute("INSERT INTO atom_fts (rowid, terms) VALUES (?, ?)", (row[0], " ".join(terms)))
        if vector is not None:
            blob = np.asarray(vector, dtype=np.float32).tobytes()
            self._execute(
                "UPDATE atoms SET embedding = ?, vec_seq = ? WHERE id = ?", (blob, self._next_vec_seq(), atom_id)
            )

    def unlink_entities(self, atom_id: str) -> None:
        self._execute("DELETE FROM edges WHERE src = ? AND kind = 'mentions'", (atom_id,))

    def delete_atom(self, atom_id: str) -> None:
        """Remove an atom's row after scrubbing its content; its audit events stay (hashes only)."""
        self.scrub_atom(atom_id)
        self._execute("DELETE FROM edges WHERE src = ? OR dst = ?", (atom_id, atom_id))
        self._execute("DELETE FROM sessions WHERE id = ?", (atom_id,))
        self._execute("DELETE FROM promotions WHERE atom_id = ?", (atom_id,))
        self._execute("DELETE FROM anchors WHERE atom_id = ?", (atom_id,))
        self._execute("DELETE FROM atoms WHERE id = ?", (atom_id,))

    # -- vault outbox (trust, issue 10) ---------------------------------------------------------

    def outbox_add(self, atom_id: str, token: str, remove_path: str | None) -> None:
        """Record that this transaction's change of `atom_id` must reach the vault after commit."""
        self._execute(
            "INSERT INTO vault_outbox (atom_id, token, remove_path, at) VALUES (?,?,?,?) ON CONFLICT (atom_id)"
            " DO UPDATE SET token = excluded.token, at = excluded.at,"
            " remove_path = COALESCE(excluded.remove_path, vault_outbox.remove_path)",
            (atom_id, token, remove_path, now_iso()),
        )

    # -- end vault outbox ------------------------------------------------------------------------

    def insert_session(self, session: Session) -> None:
        self._execute(
            "INSERT INTO sessions (id, source, title, started_at) VALUES (?,?,?,?)",
            (session.id, session.source, session.title, _iso(session.started_at)),
        )

    def end_session(self, session_id: str, summary: str) -> None:
        self._execute(
            "UPDATE sessions SET ended_at = ?, summary = ? WHERE id = ?", (now_iso(), summary, session_id)
        )

    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int:  # fmt: skip
        cur = self._execute(
            "INSERT INTO promotions (atom_id, scope_hash, origin, durability, utility, relevance, accuracy,"
            " average, reasoning, status, created_at) VALUES (?,?,?,?,?,?,?,?,?,'pending',?)",
            (atom_id, scope_hash, origin, scores["durability"], scores["utility"], scores["relevance"],
             scores["accuracy"], scores["average"], reasoning, now_iso()),
        )  # fmt: skip
        return int(cur.lastrowid or 0)

    def decide_promotion(self, promotion_id: int, status: str) -> None:
        self._execute(
            "UPDATE promotions SET status = ?, decided_at = ? WHERE id = ?", (status, now_iso(), promotion_id)
        )

    def mark_sensitive(self, scope_hash: str, name: str, sensitive: bool) -> None:
        if sensitive:
            self._execute(
                "INSERT OR REPLACE INTO sensitive_scopes (scope_hash, name, marked_at) VALUES (?,?,?)",
                (scope_hash, name, now_iso()),
            )
        else:
            self._execute("DELETE FROM sensitive_scopes WHERE scope_hash = ?", (scope_hash,))
            self._execute("DELETE FROM grants WHERE scope_hash = ?", (scope_hash,))

    def add_grant(self, scope_hash: str, granted_by: str, expires_at: datetime) -> None:
        self._execute(
            "INSERT INTO grants (scope_hash, granted_by, granted_at, expires_at) VALUES (?,?,?,?)",
            (scope_hash, granted_by, now_iso(), _iso(expires_at)),
        )

    def rescope_promotions(self, old: str, new: str) -> None:
        self._execute("UPDATE promotions SET scope_hash = ? WHERE scope_hash = ?", (new, old))

    def add_access_request(self, scope_hash: str, reason: str) -> int:
        cur = self._execute(
            "INSERT INTO access_requests (scope_hash, reason, requested_at) VALUES (?,?,?)",
            (scope_hash, reason, now_iso()),
        )
        return int(cur.lastrowid or 0)

    def scrub_atom(self, atom_id: str) -> None:
        row = self._execute("SELECT seq FROM atoms WHERE id = ?", (atom_id,)).fetchone()
        if row is None:
            return
        self._execute("DELETE FROM atom_fts WHERE rowid = ?", (row[0],))
        self._execute(
            "UPDATE atoms SET content = '', norm_hash = NULL, title = NULL, tags = '[]', triggers = '[]',"
            " embedding = NULL, vec_seq = ? WHERE id = ?",
            (self._next_vec_seq(), atom_id),
        )
        self._execute(
            "UPDATE event_payloads SET content = NULL"
            " WHERE event_id IN (SELECT id FROM events WHERE atom_id = ?)",
            (atom_id,),
        )
        self._execute("DELETE FROM edges WHERE src = ? AND dst LIKE 'entity:%'", (atom_id,))
        self._execute("DELETE FROM anchors WHERE atom_id = ?", (atom_id,))  # paths and symbols are content
        self.scrubbed = True

    # -- code anchors (issue 13) -------------------------------------------------------------

    def set_anchors(self, atom_id: str, anchors: Sequence[Anchor]) -> None:
        """Replace the anchors of an atom."""
        self._execute("DELETE FROM anchors WHERE atom_id = ?", (atom_id,))
        at = now_iso()
        for a in anchors:
            self._execute(
                "INSERT OR REPLACE INTO anchors (atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint,"
                " line, origin, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (atom_id, a.path, a.symbol, a.kind, a.lang, a.commit, a.blob, a.fingerprint, a.line, a.origin, at),
            )

    # -- end code anchors --------------------------------------------------------------------


class SqliteStore:
    """One SQLite file in WAL mode; every statement passes through `_execute`."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000, ann_min: int = ANN_MIN,
                 tracer: Callable[[str, Sequence[Any]], None] | None = None) -> None:  # fmt: skip
        self.path = Path(path)
        self.tracer = tracer
        self._lock = threading.RLock()
        self._vectors = VectorIndex(ann_path=self.path.with_name(self.path.name + ".ann.usearch"), ann_min=ann_min)
        self._vec_seen = 0
        self._vec_loaded = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
            self._conn.row_factory = sqlite3.Row
            for pragma in (
                "journal_mode = WAL",
                f"busy_timeout = {int(busy_timeout_ms)}",
                "foreign_keys = ON",
                "synchronous = NORMAL",
                # Tombstoned content must not linger in freed pages.
                "secure_delete = ON",
            ):
                self._conn.execute(f"PRAGMA {pragma}")
            self._migrate()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc

    # -- plumbing -------------------------------------------------------------------------

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        if self.tracer is not None:
            self.tracer(sql, params)
        return self._conn.execute(sql, params)

    def _migrate(self) -> None:
        with self._lock:
            # One write-locked transaction: processes opening a new store at once must not
            # both apply the same migration.
            self._execute("BEGIN IMMEDIATE")
            try:
                self._execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                done = {r[0] for r in self._execute("SELECT version FROM schema_migrations")}
                for version, name, script in MIGRATIONS:
                    if version in done:
                        continue
                    # executescript would commit implicitly; run statement by statement instead.
                    for statement in _split_sql(script):
                        self._execute(statement)
                    self._execute(
                        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?,?,?)",
                        (version, name, now_iso()),
                    )
                self._execute("COMMIT")
            except BaseException:
                self._execute("ROLLBACK")
                raise

    def applied_migrations(self) -> list[tuple[int, str]]:
        with self._lock:
            return [(r[0], r[1]) for r in self._execute("SELECT version, name FROM schema_migrations ORDER BY 1")]

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        with self._lock:
            try:
                self._execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _translate(exc) from exc
            tx = _Tx(self._conn, self._execute)
            try:
                yield tx
                self._execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'snapshot_version'")
                self._execute("COMMIT")
            except sqlite3.Error as exc:
                self._execute("ROLLBACK")
                raise _translate(exc) from exc
            except BaseException:
                self._execute("ROLLBACK")
                raise
            if tx.scrubbed:
                self.checkpoint()

    # -- reads ----------------------------------------------------------------------------

    def _entities_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {i: [] for i in ids}
        if not ids:
            return out
        for r in self._execute(
            f"SELECT src, dst FROM edges WHERE kind = 'mentions' AND src IN ({_placeholders(ids)})", tuple(ids)
        ):
            out[r[0]].append(r[1])
        return out

    def _atoms(self, sql: str, params: Sequence[Any]) -> list[Atom]:
        rows = self._execute(sql, params).fetchall()
        ents = self._entities_of([r["id"] for r in rows])
        return [_row_to_atom(r, ents[r["id"]]) for r in rows]

    def get_atoms(self, atom_ids: Iterable[str]) -> dict[str, Atom]:
        ids = list(dict.fromkeys(atom_ids))
        if not ids:
            return {}
        with self._lock:
            atoms = self._atoms(f"SELECT {_ATOM_COLUMNS} FROM atoms WHERE id IN ({_placeholders(ids)})", ids)
        return {a.id: a for a in atoms}

    def find_duplicate(self, scope_hash: str, norm_hash: str) -> Atom | None:
        with self._lock:
            found = self._atoms(
                f"SELECT {_ATOM_COLUMNS} FROM atoms WHERE scope_hash = ? AND norm_hash = ?"
                " AND status IN ('active', 'pending') ORDER BY seq LIMIT 1",
                (scope_hash, norm_hash),
            )
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
        where: list[str] = []
        params: list[Any] = []
        for column, values in (("scope_hash", scope_hashes), ("status", statuses), ("type", types)):
            if values is not None:
                where.append(f"{column} IN ({_placeholders(values)})")
                params.extend(values)
        if epistemic is not None:
            where.append("epistemic = ?")
            params.append(epistemic)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        order = "DESC" if newest_first else "ASC"
        with self._lock:
            return self._atoms(
                f"SELECT {_ATOM_COLUMNS} FROM atoms {clause} ORDER BY seq {order} LIMIT ?", (*params, limit)
            )

    def keyword_candidates(
        self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int,
        stats: tuple[int, dict[str, int]] | None = None,
    ) -> list[str]:
        unique = list(dict.fromkeys(terms))
        if not unique:
            return []
        if stats is None or any(t not in stats[1] for t in unique):
            stats = self.term_stats(unique)
        total, df = stats
        present, cut = selective_terms(unique, df)
        if not present:
            return []
        if not cut:
            # Small enough to rank every match: FTS5 bm25 inside, then scope and status.
            match = " OR ".join(f'"{t}"' for t in present)
            with self._lock:
                rows = self._execute(
                    "SELECT a.id FROM (SELECT rowid, rank FROM atom_fts WHERE atom_fts MATCH ? ORDER BY rank LIMIT ?) f"
                    f" JOIN atoms a ON a.seq = f.rowid WHERE a.scope_hash IN ({_placeholders(scope_hashes)})"
                    f" AND a.status IN ({_placeholders(statuses)}) ORDER BY f.rank LIMIT ?",
                    (match, limit * 4, *scope_hashes, *statuses, limit),
                ).fetchall()
            return [r[0] for r in rows]
        # Big store: bounded work whatever the store size. The newest postings of the most
        # selective terms (FTS5 walks a term's rowids backwards cheaply), ranked by the IDF mass
        # of the terms each atom holds, newest first among equals. The engine then scores every
        # candidate on all query terms; old atoms that only share common terms are left to the
        # semantic and entity signals.
        weight = {t: math.log(1.0 + (total - df[t] + 0.5) / (df[t] + 0.5)) for t in present}
        mass: dict[int, float] = {}
        with self._lock:
            for term in present:
                for (rowid,) in self._execute(
                    "SELECT rowid FROM atom_fts WHERE atom_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                    (f'"{term}"', limit * 4),
                ):
                    mass[rowid] = mass.get(rowid, 0.0) + weight[term]
            best = sorted(mass, key=lambda r: (-mass[r], -r))[: limit * 4]
            rows = self._execute(  # unary + keeps the planner on rowid lookups, off the scope index
                f"SELECT seq, id FROM atoms WHERE seq IN ({_placeholders(best)})"
                f" AND +scope_hash IN ({_placeholders(scope_hashes)}) AND +status IN ({_placeholders(statuses)})",
                (*best, *scope_hashes, *statuses),
            ).fetchall()
        rows.sort(key=lambda r: (-mass[r[0]], -r[0]))
        return [r[1] for r in rows[:limit]]

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        unique = list(dict.fromkeys(terms))
        with self._lock:
            # One row per indexed atom; counting the shadow table is a b-tree count, unlike
            # count(*) on the FTS table itself, which reads every row.
            total = self._execute("SELECT count(*) FROM atom_fts_docsize").fetchone()[0]
            df = {t: 0 for t in unique}
            for t in unique:
                row = self._execute("SELECT doc FROM atom_fts_vocab WHERE term = ?", (t,)).fetchone()
                if row:
                    df[t] = int(row[0])
        return int(total), df

    def candidate_facts(self, atom_ids: Sequence[str]) -> dict[str, CandidateFacts]:
        ids = list(dict.fromkeys(atom_ids))
        if not ids:
            return {}
        with self._lock:
            rows = self._execute(
                "SELECT a.id, a.status, a.scope_hash, a.type, a.epistemic, a.updated_at, a.last_accessed_at, f.terms,"
                " a.polarity"
                f" FROM atoms a LEFT JOIN atom_fts f ON f.rowid = a.seq WHERE a.id IN ({_placeholders(ids)})",
                ids,
            ).fetchall()
            ents = self._entities_of([r[0] for r in rows])
        return {
            r[0]: CandidateFacts(
                status=r[1], scope_hash=r[2], type=r[3], epistemic=r[4], updated_at=_parse_time(r[5]),
                last_accessed_at=_parse_time(r[6]) if r[6] else None, terms=tuple((r[7] or "").split()),
                entities=tuple(ents[r[0]]), polarity=r[8],
            )  # fmt: skip
            for r in rows
        }

    # -- issue 12 (recall): the memory saved right after another one -------------------------------

    def successors(self, atom_ids: Sequence[str], *, statuses: Sequence[str], within_seconds: float) -> dict[str, str]:
        ids = list(dict.fromkeys(atom_ids))
        if not ids or not statuses:
            return {}
        out: dict[str, str] = {}
        with self._lock:
            rows = self._execute(
                f"SELECT id, scope_hash, created_at FROM atoms WHERE id IN ({_placeholders(ids)})", ids
            ).fetchall()
            for atom_id, scope_hash, created in rows:
                until = _iso(_parse_time(created) + timedelta(seconds=within_seconds))
                found = []
                for status in statuses:  # one seek each on atoms_scope_status (scope_hash, status, created_at)
                    r = self._execute(
                        "SELECT created_at, id FROM atoms WHERE scope_hash = ? AND status = ? AND created_at > ?"
                        " AND created_at <= ? ORDER BY created_at LIMIT 1",
                        (scope_hash, status, created, until),
                    ).fetchone()
                    if r:
                        found.append((r[0], r[1]))
                if found:
                    out[atom_id] = min(found)[1]
        return out

    def atoms_for_entities(
        self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int
    ) -> list[str]:
        if not entity_ids:
            return []
        # The newest mentions of each entity (edges_dst orders by rowid within an entity), so a
        # common entity costs the same on a big store as on a small one.
        arm = "SELECT src FROM (SELECT src FROM edges WHERE dst = ? AND kind = 'mentions' ORDER BY rowid DESC LIMIT ?)"
        params: list[Any] = []
        for entity_id in entity_ids:
            params += [entity_id, limit * 4]
        with self._lock:
            rows = self._execute(
                f"SELECT a.id, count(*) AS n FROM ({' UNION ALL '.join([arm] * len(entity_ids))}) e"
                f" JOIN atoms a ON a.id = e.src WHERE a.scope_hash IN ({_placeholders(scope_hashes)})"
                f" AND a.status IN ({_placeholders(statuses)})"
                " GROUP BY a.id ORDER BY n DESC, a.seq DESC LIMIT ?",
                (*params, *scope_hashes, *statuses, limit),
            ).fetchall()
        return [r[0] for r in rows]

    def _catch_up_vectors(self) -> None:
        """Apply every vector change made since the last look, by this process or another.

        The first look loads the saved vector graph (if any) and then checks it against what it
        read (`VectorIndex.verify`); big stores start building a graph in the background.
        """
        first = not self._vec_loaded
        if first:
            self._vec_loaded = True
            self._vectors.load()
        if first:
            row = self._execute(  # size of the newest vector = the model in use (older ones may differ)
                "SELECT (SELECT count(*) FROM atoms WHERE embedding IS NOT NULL),"
                " (SELECT length(embedding) FROM atoms WHERE embedding IS NOT NULL ORDER BY vec_seq DESC LIMIT 1)"
            ).fetchone()
            if row[0]:  # headroom: untouched rows of a zeroed array cost no RSS, a regrow copies all
                self._vectors.reserve(int(row[0]) * 3 // 2 + 4096, int(row[1]) // 4)
        cur = self._execute(
            "SELECT vec_seq, seq, id, scope_hash, embedding FROM atoms WHERE vec_seq > ? ORDER BY vec_seq",
            (self._vec_seen,),
        )
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
        with self._lock:
            self._catch_up_vectors()

    def vector_candidates(self, query: np.ndarray, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        with self._lock:
            self._catch_up_vectors()
            return self._vectors.search(query, scope_hashes=scope_hashes, k=k)

    def cosines(self, query: np.ndarray, atom_ids: Sequence[str]) -> dict[str, float]:
        with self._lock:
            self._catch_up_vectors()
            out: dict[str, float] = {}
            for atom_id in atom_ids:
                vec = self._vectors.vector(atom_id)
                if vec is not None and vec.shape == query.shape:
                    out[atom_id] = float(vec @ query)
            return out

    # -- code anchors (issue 13) -------------------------------------------------------------

    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]:
        """The anchors of each listed atom that has any."""
        ids = list(dict.fromkeys(atom_ids))
        if not ids:
            return {}
        with self._lock:
            rows = self._execute(
                "SELECT atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin FROM anchors"
                f" WHERE atom_id IN ({_placeholders(ids)}) ORDER BY atom_id, kind, path, symbol",
                ids,
            ).fetchall()
        out: dict[str, list[Anchor]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(_row_to_anchor(r))
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
            where.append("(n.path = ? OR substr(n.path, 1, ?) = ?)")
            params += [path.rstrip("/"), len(prefix), prefix]
        if symbol:
            where.append("(n.symbol = ? OR substr(n.symbol, -?) = ?)")
            params += [symbol, len(symbol) + 1, "." + symbol]
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        with self._lock:
            rows = self._execute(  # driven by the anchors (path index): cost follows them, not the store size
                f"SELECT a.id FROM atoms a WHERE a.id IN (SELECT n.atom_id FROM anchors n{clause})"
                f" AND +a.scope_hash IN ({_placeholders(scope_hashes)}) AND +a.status IN ({_placeholders(statuses)})"
                " ORDER BY a.seq DESC LIMIT ?",  # unary +: look atoms up by id, not by scope
                (*params, *scope_hashes, *statuses, limit),
            ).fetchall()
        return [r[0] for r in rows]

    # -- end code anchors --------------------------------------------------------------------

    def events(self, atom_id: str | None = None) -> list[Event]:
        sql = (
            "SELECT e.seq, e.id, e.atom_id, e.actor, e.action, e.reason, e.at, e.content_hash, e.prev_hash,"
            " e.hash, p.content FROM events e LEFT JOIN event_payloads p ON p.event_id = e.id"
        )
        params: tuple[Any, ...] = ()
        if atom_id is not None:
            sql += " WHERE e.atom_id = ?"
            params = (atom_id,)
        with self._lock:
            rows = self._execute(sql + " ORDER BY e.seq", params).fetchall()
        return [
            Event(
                seq=r[0], id=r[1], atom_id=r[2], actor=r[3], action=r[4], reason=r[5], at=_parse_time(r[6]),
                content_hash=r[7], prev_hash=r[8], hash=r[9], content=r[10],
            )  # fmt: skip
            for r in rows
        ]

    def neighbors(self, atom_id: str, *, scope_hash: str, n: int) -> tuple[list[Atom], list[Atom]]:
        """Active atoms created just before and just after `atom_id` in the same scope."""
        with self._lock:
            row = self._execute("SELECT seq FROM atoms WHERE id = ?", (atom_id,)).fetchone()
            if row is None:
                return [], []
            base = f"SELECT {_ATOM_COLUMNS} FROM atoms WHERE scope_hash = ? AND status = 'active' AND "
            before = self._atoms(base + "seq < ? ORDER BY seq DESC LIMIT ?", (scope_hash, row[0], n))
            after = self._atoms(base + "seq > ? ORDER BY seq ASC LIMIT ?", (scope_hash, row[0], n))
        return list(reversed(before)), after

    def atoms_since(self, *, scope_hashes: Sequence[str], since: datetime, types: Sequence[str] | None,
                    limit: int) -> list[Atom]:  # fmt: skip
        params: list[Any] = [*scope_hashes, _iso(since)]
        type_clause = ""
        if types:
            type_clause = f" AND type IN ({_placeholders(types)})"
            params.extend(types)
        with self._lock:
            return self._atoms(
                f"SELECT {_ATOM_COLUMNS} FROM atoms WHERE scope_hash IN ({_placeholders(scope_hashes)})"
                f" AND status = 'active' AND created_at >= ?{type_clause} ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            )

    def vault_digests(self) -> dict[str, tuple[str, str | None, str | None]]:
        """atom id → (status, vault_path, vault_digest) for every atom."""
        with self._lock:
            rows = self._execute("SELECT id, status, vault_path, vault_digest FROM atoms").fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def get_session(self, session_id: str) -> Session | None:
        with self._lock:
            r = self._execute(
                "SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
                " FROM sessions s JOIN atoms a ON a.id = s.id WHERE s.id = ?",
                (session_id,),
            ).fetchone()
        if r is None:
            return None
        return Session(
            id=r[0], source=r[1], title=r[2], started_at=_parse_time(r[3]),
            ended_at=_parse_time(r[4]) if r[4] else None, summary=r[5], scope_hash=r[6],
        )  # fmt: skip

    def list_promotions(
        self, *, scope_hashes: Sequence[str] | None, status: str = "pending", min_score: float = 0.0,
        max_score: float = 1.0, types: Sequence[str] | None = None, limit: int = 10,
    ) -> list[Promotion]:  # fmt: skip
        sql = "SELECT p.* FROM promotions p JOIN atoms a ON a.id = p.atom_id WHERE p.status = ?"
        params: list[Any] = [status]
        sql += " AND p.average >= ? AND p.average <= ?"
        params += [min_score, max_score]
        if scope_hashes is not None:
            sql += f" AND p.scope_hash IN ({_placeholders(scope_hashes)})"
            params += list(scope_hashes)
        if types:
            sql += f" AND a.type IN ({_placeholders(types)})"
            params += list(types)
        with self._lock:
            rows = self._execute(sql + " ORDER BY p.average ASC, p.id ASC LIMIT ?", (*params, limit)).fetchall()
        return [_row_to_promotion(r) for r in rows]

    def get_promotions(self, ids: Sequence[int]) -> dict[int, Promotion]:
        if not ids:
            return {}
        with self._lock:
            rows = self._execute(f"SELECT * FROM promotions WHERE id IN ({_placeholders(ids)})", tuple(ids)).fetchall()
        return {r["id"]: _row_to_promotion(r) for r in rows}

    def is_sensitive(self, scope_hash: str) -> bool:
        with self._lock:
            return self._execute("SELECT 1 FROM sensitive_scopes WHERE scope_hash = ?", (scope_hash,)).fetchone() is not None

    def grant_expiry(self, scope_hash: str) -> datetime | None:
        """The latest expiry of a grant on `scope_hash` that is still running, if any."""
        with self._lock:
            row = self._execute(
                "SELECT max(expires_at) FROM grants WHERE scope_hash = ? AND expires_at > ?", (scope_hash, now_iso())
            ).fetchone()
        return _parse_time(row[0]) if row and row[0] else None

    def sensitive_scopes(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(r[0], r[1]) for r in self._execute("SELECT scope_hash, name FROM sensitive_scopes ORDER BY 2")]

    def access_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._execute("SELECT id, scope_hash, reason, requested_at FROM access_requests ORDER BY id")
            return [dict(zip(("id", "scope_hash", "reason", "requested_at"), r, strict=True)) for r in rows]

    def touch(self, atom_ids: Sequence[str]) -> None:
        """Record that atoms were read (feeds decay). Not a memory write: no event, no snapshot bump."""
        if not atom_ids:
            return
        with self._lock:
            try:
                self._execute(
                    f"UPDATE atoms SET last_accessed_at = ? WHERE id IN ({_placeholders(atom_ids)})",
                    (now_iso(), *atom_ids),
                )
            except sqlite3.OperationalError:
                pass  # busy: access times are a hint, never worth failing a read

    def group_counts(self, scope_hashes: Sequence[str] | None) -> dict[str, Any]:
        def where(prefix: str) -> str:
            clause = f"{prefix}status != 'tombstoned'"
            if scope_hashes is not None:
                clause += f" AND {prefix}scope_hash IN ({_placeholders(scope_hashes)})"
            return clause

        params = list(scope_hashes or [])
        name = (
            "CASE WHEN repository = '*' THEN tenant_id || '/global' WHEN workspace = '' THEN repository"
            " ELSE workspace || '/' || repository END"
        )
        with self._lock:
            q = self._execute
            by_type = {r[0]: r[1] for r in q(f"SELECT type, count(*) FROM atoms WHERE {where('')} GROUP BY 1", params)}
            by_scope = {
                r[0]: {"name": r[1], "count": r[2]}
                for r in q(f"SELECT scope_hash, {name}, count(*) FROM atoms WHERE {where('')} GROUP BY 1, 2", params)
            }
            top = q(
                "SELECT e.dst, count(*) FROM edges e JOIN atoms a ON a.id = e.src"
                f" WHERE e.kind = 'mentions' AND {where('a.')} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10",
                params,
            ).fetchall()
        return {"by_type": by_type, "by_scope": by_scope, "top_entities": [{"id": r[0], "count": r[1]} for r in top]}

    # -- vault outbox (trust, issue 10) ---------------------------------------------------------

    def outbox(self) -> list[tuple[str, str, str | None]]:
        """(atom id, token, path to remove) of every change whose vault file is not published yet."""
        with self._lock:
            return [(r[0], r[1], r[2]) for r in self._execute("SELECT atom_id, token, remove_path FROM vault_outbox")]

    def vault_state(self, atom_ids: Sequence[str]) -> dict[str, tuple[str, str | None, str | None]]:
        """atom id → (status, vault_path, vault_digest) for the listed atoms that exist."""
        if not atom_ids:
            return {}
        with self._lock:
            rows = self._execute(
                f"SELECT id, status, vault_path, vault_digest FROM atoms WHERE id IN ({_placeholders(atom_ids)})",
                tuple(atom_ids),
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def clear_outbox(self, entries: Sequence[tuple[str, str]]) -> None:
        """Forget published changes, each only if no later transaction re-queued its atom (token)."""
        if not entries:
            return
        with self._lock:
            try:
                self._execute("BEGIN IMMEDIATE")
                for atom_id, token in entries:
                    self._execute("DELETE FROM vault_outbox WHERE atom_id = ? AND token = ?", (atom_id, token))
                self._execute("COMMIT")
            except sqlite3.Error as exc:
                self._execute("ROLLBACK")
                raise _translate(exc) from exc

    # -- end vault outbox ------------------------------------------------------------------------

    def integrity(self) -> str:
        with self._lock:
            return str(self._execute("PRAGMA quick_check").fetchone()[0])

    def dangling_edges(self) -> int:
        with self._lock:
            return int(self._execute(
                "SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM atoms)"
                " OR (dst LIKE 'entity:%' AND dst NOT IN (SELECT id FROM entities))"
                " OR (dst NOT LIKE 'entity:%' AND dst NOT IN (SELECT id FROM atoms))"
            ).fetchone()[0])  # fmt: skip

    def counts(self) -> dict[str, Any]:
        with self._lock:
            q = self._execute
            by_status = {r[0]: r[1] for r in q("SELECT status, count(*) FROM atoms GROUP BY status")}
            live = "status != 'tombstoned'"
            return {
                "atoms": sum(by_status.values()),
                "by_status": by_status,
                "edges": q("SELECT count(*) FROM edges").fetchone()[0],
                "semantic": q(f"SELECT count(*) FROM atoms WHERE embedding IS NOT NULL AND {live}").fetchone()[0],
                "keyword": q("SELECT count(*) FROM atom_fts").fetchone()[0],
                "temporal": q(f"SELECT count(*) FROM atoms WHERE created_at IS NOT NULL AND {live}").fetchone()[0],
                "categorical": q(f"SELECT count(*) FROM atoms WHERE type IS NOT NULL AND {live}").fetchone()[0],
            }

    def snapshot_version(self) -> int:
        with self._lock:
            return int(self._execute("SELECT value FROM meta WHERE key = 'snapshot_version'").fetchone()[0])

    def checkpoint(self) -> None:
        with self._lock:
            self._execute("INSERT INTO atom_fts (atom_fts) VALUES ('optimize')")
            self._execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- console (issue 14) --------------------------------------------------------------------

    def _filter_sql(self, f: AtomFilter) -> tuple[str, list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        for column, values in (("scope_hash", f.scope_hashes), ("status", f.statuses), ("type", f.types)):
            if values is not None:
                where.append(f"{column} IN ({_placeholders(values)})")
                params.extend(values)
        if f.exclude_scopes:
            where.append(f"scope_hash NOT IN ({_placeholders(f.exclude_scopes)})")
            params.extend(f.exclude_scopes)
        if f.source is not None:
            where.append("source = ?")
            params.append(f.source)
        if f.tag is not None:
            if f.tag_terms:  # the keyword index narrows to atoms holding the tag's terms; json_each decides
                where.append("seq IN (SELECT rowid FROM atom_fts WHERE atom_fts MATCH ?)")
                params.append(" AND ".join(f'"{t}"' for t in f.tag_terms))
            where.append("EXISTS (SELECT 1 FROM json_each(atoms.tags) WHERE value = ?)")
            params.append(f.tag)
        if f.entity is not None:
            where.append("EXISTS (SELECT 1 FROM edges WHERE src = atoms.id AND dst = ? AND kind = 'mentions')")
            params.append(f.entity)
        if f.created_from is not None:
            where.append("created_at >= ?")
            params.append(_iso(f.created_from))
        if f.created_to is not None:
            where.append("created_at < ?")
            params.append(_iso(f.created_to))
        if f.last_used is not None:
            last = "max(updated_at, coalesce(last_accessed_at, updated_at))"
            arms = []
            for w in f.last_used:
                arm = [f"type IN ({_placeholders(w.types)})"]
                params.extend(w.types)
                if w.since is not None:
                    arm.append(f"{last} >= ?")
                    params.append(_iso(w.since))
                if w.before is not None:
                    arm.append(f"{last} < ?")
                    params.append(_iso(w.before))
                if w.necessary is not None:
                    arm.append("epistemic = 'necessary'" if w.necessary else "epistemic != 'necessary'")
                arms.append("(" + " AND ".join(arm) + ")")
            where.append("(" + (" OR ".join(arms) or "0") + ")")
        return (" AND ".join(where) or "1"), params

    def browse_atoms(self, f: AtomFilter) -> list[Atom]:
        clause, params = self._filter_sql(f)
        if f.before is not None:
            clause += " AND seq < coalesce((SELECT seq FROM atoms WHERE id = ?), 0)"
            params.append(f.before)
        with self._lock:
            return self._atoms(
                f"SELECT {_ATOM_COLUMNS} FROM atoms WHERE {clause} ORDER BY seq DESC LIMIT ?", (*params, f.limit)
            )

    def count_atoms(self, f: AtomFilter, *, cap: int | None = None) -> int:
        clause, params = self._filter_sql(f)
        sql = f"SELECT count(*) FROM atoms WHERE {clause}"
        if cap is not None:
            sql = f"SELECT count(*) FROM (SELECT 1 FROM atoms WHERE {clause} LIMIT ?)"
            params.append(cap)
        with self._lock:
            return int(self._execute(sql, params).fetchone()[0])

    def list_sessions(self, *, before: str | None, limit: int, exclude_scopes: Sequence[str] = ()) -> list[Session]:
        sql = (
            "SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
            " FROM sessions s CROSS JOIN atoms a ON a.id = s.id WHERE 1"  # CROSS: sessions drive, newest first
        )
        params: list[Any] = []
        if before is not None:
            sql += " AND s.id < ?"
            params.append(before)
        if exclude_scopes:  # correlated: a plain NOT IN on the join makes SQLite Bloom-filter every atom
            marks = _placeholders(exclude_scopes)
            sql += f" AND NOT EXISTS (SELECT 1 FROM atoms b WHERE b.id = s.id AND b.scope_hash IN ({marks}))"
            params.extend(exclude_scopes)
        with self._lock:
            rows = self._execute(sql + " ORDER BY s.id DESC LIMIT ?", (*params, limit)).fetchall()
        return [
            Session(
                id=r[0], source=r[1], title=r[2], started_at=_parse_time(r[3]),
                ended_at=_parse_time(r[4]) if r[4] else None, summary=r[5], scope_hash=r[6],
            )  # fmt: skip
            for r in rows
        ]

    def atom_links(self, atom_id: str) -> list[tuple[str, str, str]]:
        with self._lock:
            rows = self._execute(
                "SELECT src, dst, kind FROM edges WHERE src = ? AND dst NOT LIKE 'entity:%'"
                " UNION SELECT src, dst, kind FROM edges WHERE dst = ?",
                (atom_id, atom_id),
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def top_entities(self, *, limit: int) -> list[tuple[str, int]]:
        with self._lock:
            rows = self._execute(
                "SELECT dst, count(*) FROM edges WHERE kind = 'mentions' GROUP BY dst ORDER BY 2 DESC, 1 LIMIT ?",
                (limit,),
            ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    def console_counts(self, parts: Sequence[str] = ("by_status", "by_type", "by_scope", "edges")) -> dict[str, Any]:
        columns = {"by_status": "status", "by_type": "type", "by_scope": "scope_hash"}
        out: dict[str, Any] = {}
        with self._lock:
            for part in parts:
                if part == "edges":
                    out[part] = self._execute("SELECT count(*) FROM edges").fetchone()[0]
                else:
                    sql = f"SELECT {columns[part]}, count(*) FROM atoms GROUP BY 1"
                    out[part] = {r[0]: r[1] for r in self._execute(sql)}
        return out

    def scope_names(self, scope_hashes: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._lock:
            for h in dict.fromkeys(scope_hashes):
                r = self._execute(
                    "SELECT tenant_id, workspace, repository FROM atoms WHERE scope_hash = ? LIMIT 1", (h,)
                ).fetchone()
                if r is not None:
                    out[h] = Scope.model_construct(tenant_id=r[0], workspace=r[1], repository=r[2]).name
        return out

    def entity_mentions(
        self, entity_ids: Sequence[str], *, per_entity: int, exclude_scopes: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        excluded = f" AND a.scope_hash NOT IN ({_placeholders(exclude_scopes)})" if exclude_scopes else ""
        out: list[tuple[str, str]] = []
        with self._lock:
            for entity_id in entity_ids:  # newest mentions first: edges_dst orders by rowid within an entity
                rows = self._execute(
                    "SELECT e.src FROM edges e JOIN atoms a ON a.id = e.src WHERE e.dst = ? AND e.kind = 'mentions'"
                    f" AND a.status = 'active'{excluded} ORDER BY e.rowid DESC LIMIT ?",
                    (entity_id, *exclude_scopes, per_entity),
                ).fetchall()
                out += [(entity_id, r[0]) for r in rows]
        return out

    def growth(self, since: datetime) -> list[tuple[str, int]]:
        with self._lock:
            rows = self._execute(
                "SELECT substr(created_at, 1, 10), count(*) FROM atoms WHERE created_at >= ? GROUP BY 1 ORDER BY 1",
                (_iso(since),),
            ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    def log_recall(self, scope_hash: str, hit_ids: Sequence[str]) -> None:
        with self._lock:
            try:
                self._execute(
                    "INSERT INTO recalls (at, scope_hash, hits) VALUES (?,?,?)",
                    (now_iso(), scope_hash, json.dumps(list(hit_ids))),
                )
            except sqlite3.OperationalError:
                pass  # busy: the log is a hint, never worth failing a read

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        sql = f"SELECT at, scope_hash, hits FROM recalls WHERE scope_hash IN ({_placeholders(scope_hashes)}) AND at >= ?"
        params: list[Any] = [*scope_hashes, _iso(since)]
        if until is not None:
            sql += " AND at <= ?"
            params.append(_iso(until))
        with self._lock:
            rows = self._execute(sql + " ORDER BY at DESC, id DESC LIMIT ?", (*params, limit)).fetchall()
        return [{"at": _parse_time(r[0]), "scope_hash": r[1], "hits": json.loads(r[2])} for r in rows]

    def close(self) -> None:
        with self._lock:
            self._vectors.save()  # the graph (big stores only) and the vec_seq it reflects
            try:
                self._conn.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass  # closing must not fail because of a best-effort hint
            self._conn.close()


def _split_sql(script: str) -> list[str]:
    """Split a migration script into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
