"""Every write of the `Store` protocol, written once (`SqlTx`), bound to one open transaction."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Unpack

from ulid import ULID

from ...anchors.model import Anchor
from ...shared.models import Atom, Event, Session
from ...shared.stamps import GENESIS, chain_hash, content_hash, iso, parse_iso, utc_now
from ..base import (
    AtomUpdate,
    TokenRecord,
    Vector,
)
from .core import _UPDATABLE, C, Cursor

if TYPE_CHECKING:
    from . import SqlStore


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
            "written_at": None if atom.written_at is None else d.time(atom.written_at),
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

    def set_model_vector(self, atom_id: str, model: str, vector: Vector) -> None:
        value = self._d.vector(vector)
        if value is not None:  # a vector the database cannot hold (see `vector`) is left out, like `embedding`
            self.run("INSERT INTO model_vectors (atom_id, model, embedding) VALUES (?, ?, ?)"
                     " ON CONFLICT (atom_id, model) DO UPDATE SET embedding = excluded.embedding",
                     (atom_id, model, value))  # fmt: skip

    def link(self, src: str, dst: str, kind: str) -> None:
        if dst.startswith("entity:"):
            _, ekind, name = dst.split(":", 2)
            self.run(
                "INSERT INTO entities (id, kind, name) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (dst, ekind, name)
            )
        self.run("INSERT INTO edges (src, dst, kind, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                 (src, dst, kind, self._d.time(utc_now())))  # fmt: skip

    def unlink(self, src: str, dst: str, kind: str) -> None:
        self.run("DELETE FROM edges WHERE src = ? AND dst = ? AND kind = ?", (src, dst, kind))

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
        self.run("DELETE FROM model_vectors WHERE atom_id = ?", (atom_id,))
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
