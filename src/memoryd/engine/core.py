"""What every part of the engine shares: the store and the scope, the write transaction that keeps
the markdown vault in step, the one sensitive-scope check, embedding, and building atoms."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Unpack

from ulid import ULID

from .. import vault
from ..config import Settings
from ..errors import AuthorizationRequired, InvalidInput, NotFound
from ..models import ATOM_TYPES, Atom, AtomType, Event, Scope, Session, Status
from ..search.embed import Embedder
from ..search.tokenize import tokens
from ..stamps import norm_hash, utc_now
from ..storage.base import AtomUpdate, Store, StoreTx, Vector
from ..write.classify import classify
from ..write.entities import extract_entities
from ..write.redact import redact

__all__ = ["PLACEHOLDERS", "Core", "TrackedTx", "clean", "visible_content"]

log = logging.getLogger("memoryd")

PLACEHOLDERS = {
    "quarantined": "[quarantined: content hidden pending review]",
    "sealed": "[sealed: content visible to audit only]",
    "tombstoned": "[tombstoned: content destroyed]",
}


def clean(text: str) -> str:
    """What is stored of a text: LF newlines, no surrounding blanks, secrets redacted."""
    return redact(text.replace("\r\n", "\n").replace("\r", "\n").strip()).text


def visible_content(atom: Atom) -> str:
    """What a reader may see of an atom: its content, or a placeholder for hidden states."""
    return PLACEHOLDERS.get(atom.status, atom.content)


class TrackedTx:
    """A store transaction that remembers which atoms it wrote, so their markdown files follow."""

    def __init__(self, tx: StoreTx) -> None:
        self._tx = tx
        self.touched: dict[str, None] = {}

    def resync(self, atom_id: str) -> None:
        """Write the atom's file again at commit (its rendering or digest is out of date)."""
        self.touched[atom_id] = None

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: Vector | None) -> None:
        self._tx.insert_atom(atom, norm_hash=norm_hash, terms=terms, vector=vector)
        self.touched[atom.id] = None

    def update_atom(self, atom_id: str, **fields: Unpack[AtomUpdate]) -> None:
        self._tx.update_atom(atom_id, **fields)
        self.touched[atom_id] = None

    def scrub_atom(self, atom_id: str) -> None:
        self._tx.scrub_atom(atom_id)
        self.touched[atom_id] = None

    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None:
        self._tx.replace_terms(atom_id, terms, vector)

    def link(self, src: str, dst: str, kind: str) -> None:
        self._tx.link(src, dst, kind)

    def unlink_entities(self, atom_id: str) -> None:
        self._tx.unlink_entities(atom_id)

    def append_event(self, *, atom_id: str | None, actor: str, action: str, reason: str | None,
                     content: str | None) -> Event:  # fmt: skip
        return self._tx.append_event(atom_id=atom_id, actor=actor, action=action, reason=reason, content=content)

    def insert_session(self, session: Session) -> None:
        self._tx.insert_session(session)

    def end_session(self, session_id: str, summary: str) -> None:
        self._tx.end_session(session_id, summary)

    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int:  # fmt: skip
        return self._tx.insert_promotion(atom_id=atom_id, scope_hash=scope_hash, origin=origin, scores=scores,
                                         reasoning=reasoning)  # fmt: skip

    def decide_promotion(self, promotion_id: int, status: str) -> None:
        self._tx.decide_promotion(promotion_id, status)

    def rescope_promotions(self, old: str, new: str) -> None:
        self._tx.rescope_promotions(old, new)


class Core:
    """The engine's shared state and services; every part (`memoryd.engine.Engine`) is given one."""

    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, enforce_sensitive: bool = False
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.scope = scope
        self.enforce_sensitive = enforce_sensitive  # agent surfaces: sensitive scopes need a running grant
        self.vault_root = settings.home / "vault"

    # -- writing -------------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[TrackedTx]:
        """One write transaction; every atom it touches gets its markdown file synced before commit."""
        with self.store.transaction() as tx:
            tracked = TrackedTx(tx)
            yield tracked
            batch = len(tracked.touched) > 1  # e.g. an import batch: one sync for all its files
            for atom_id in tracked.touched:
                self._sync_file(tx, atom_id, durable=not batch)
            if batch:
                vault.flush_all()  # before the commit: an acknowledged memory's file is on disk

    def _sync_file(self, tx: StoreTx, atom_id: str, *, durable: bool = True) -> None:
        """Make the vault match the database for one atom: active → file written, else removed."""
        atom = self.store.get_atoms([atom_id]).get(atom_id)  # this thread's transaction: its writes show
        old = atom.vault_path if atom is not None else None
        if atom is None or atom.status != "active":
            if old:
                vault.remove(self.vault_root / old)
            if atom is not None and old:
                tx.update_atom(atom.id, vault_path=None, vault_digest=None, updated_at=atom.updated_at)
            return
        rel = str(vault.relative_path(atom))
        digest = vault.write_atomic(self.vault_root / rel, vault.render(atom), durable=durable)
        if old and old != rel:
            vault.remove(self.vault_root / old)
        tx.update_atom(atom.id, vault_path=rel, vault_digest=digest, updated_at=atom.updated_at)

    def new_atom(
        self, content: str, *, type: AtomType, source: str, scope: Scope, status: Status = "active",
        title: str | None = None, tags: Sequence[str] = (), triggers: Sequence[str] = (),
        supersedes: str | None = None, entities: Sequence[str] | None = None,
    ) -> Atom:  # fmt: skip
        """A new atom of `content`, classified, with its entities (extracted unless given)."""
        c = classify(content)
        now = utc_now()
        return Atom(
            id=str(ULID()), content=content, type=type, source=source, scope=scope, scope_hash=scope.scope_hash,
            epistemic=c.epistemic, polarity=c.polarity, status=status, created_at=now, updated_at=now, title=title,
            tags=list(tags), triggers=list(triggers), supersedes=supersedes,
            entities=list(entities) if entities is not None else [e.id for e in extract_entities(content)],
        )  # fmt: skip

    def persist(self, tx: TrackedTx, atom: Atom, *, actor: str, action: str, reason: str | None,
                vector: Vector | None) -> None:  # fmt: skip
        """Insert an atom with its index terms, vector, entity edges and audit event."""
        tx.insert_atom(atom, norm_hash=norm_hash(atom.content), terms=self.index_terms(atom), vector=vector)
        for entity_id in atom.entities:
            tx.link(atom.id, entity_id, "mentions")
        tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=atom.content)

    def reindex(self, tx: TrackedTx, atom: Atom, vector: Vector | None) -> None:
        """Refresh keyword terms, vector and entity links of an atom changed in place."""
        tx.replace_terms(atom.id, self.index_terms(atom), vector)
        tx.unlink_entities(atom.id)
        for entity_id in atom.entities:
            tx.link(atom.id, entity_id, "mentions")

    @staticmethod
    def index_terms(atom: Atom) -> list[str]:
        extra = " ".join([atom.title or "", *atom.tags, *atom.triggers]).strip()
        return tokens(f"{atom.content} {extra}" if extra else atom.content)

    def embed(self, text: str) -> Vector | None:
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[Vector | None]:
        """One model call for many texts; None for each when the model fails."""
        if not texts:
            return []
        try:
            return list(self.embedder.passages(list(texts)))
        except Exception:  # a broken model must not lose the write; coverage shows the gap
            log.exception("embedding failed; stored without a vector")
            return [None] * len(texts)

    # -- checks --------------------------------------------------------------------------------

    def validate_content(self, content: object, what: str = "content") -> str | None:
        """A rejection reason, or None when the text is acceptable."""
        if not isinstance(content, str):
            return f"{what} must be a string"
        if not content.strip():
            return f"{what} is empty"
        if len(content) > self.settings.max_content_chars:
            return f"{what} is {len(content)} characters; the limit is {self.settings.max_content_chars}"
        return None

    @staticmethod
    def check_types(types: Sequence[str] | None) -> None:
        unknown = [t for t in types or () if t not in ATOM_TYPES]
        if unknown:
            raise InvalidInput(f"unknown type(s) {unknown}; expected any of {', '.join(ATOM_TYPES)}")

    def locked(self, scope_hash: str) -> bool:
        """Whether agents may not read the scope: it is sensitive and has no running grant.

        The one sensitive-scope check (reads by id, recall, review, the session-start brief).
        """
        return self.store.is_sensitive(scope_hash) and self.store.grant_expiry(scope_hash) is None

    def guard_read(self, scope_hash: str, name: str | None = None) -> None:
        """Refuse reads of a locked scope (agent surfaces only; a person at the CLI is the authority)."""
        if self.enforce_sensitive and self.locked(scope_hash):
            raise AuthorizationRequired(
                f"scope {name or scope_hash} is sensitive and has no running grant; a person can grant access with "
                f"`memoryd scope grant --minutes 30` in that repository, or call mem_request_sensitive_read"
            )

    # -- reading -------------------------------------------------------------------------------

    def get(self, atom_id: str) -> Atom:
        """The atom with this id (content as stored). Raises NotFound, AuthorizationRequired."""
        atom = self.store.get_atoms([atom_id]).get(atom_id)
        if atom is None:
            raise NotFound(f"no atom with id {atom_id!r}")
        self.guard_read(atom.scope_hash, atom.scope.name)
        return atom

    def path_of(self, atom: Atom) -> Path | None:
        """Absolute path of an atom's markdown file, if it has one."""
        return self.vault_root / atom.vault_path if atom.vault_path else None

    def resolve_scope(self, scope: str | None) -> Scope:
        """`auto` (or anything an agent passes) → the inferred scope; `global` → the tenant-wide scope."""
        return self.scope.global_scope() if scope == "global" else self.scope

    def recall_scopes(self, scope: Scope | None = None) -> list[str]:
        """The scope and its tenant's global scope: what recall and the brief search."""
        scope = scope or self.scope
        return list(dict.fromkeys([scope.scope_hash, scope.global_scope().scope_hash]))

    def marker_state(self, marker: str, action: str) -> dict[str, Any] | None:
        """The JSON object of the newest `action` event keyed `marker` (import and transcript progress)."""
        for e in reversed(self.store.events(marker)):
            if e.action == action and e.content:
                try:
                    state = json.loads(e.content)
                except json.JSONDecodeError:
                    continue
                if isinstance(state, dict):
                    return state
        return None
