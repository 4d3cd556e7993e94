"""The engine's core: construction, the write path, recall, corrections, governance, audit."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Self

from ulid import ULID

from ..config import Settings
from .. import vault
from ..errors import AuthorizationRequired, InvalidInput, NotFound
from ..limits import LIMITS, UNSTORABLE, check_text, check_texts, unstorable
from ..lifecycle.decay import decay_state
from ..models import (
    ATOM_TYPES,
    CORRECT_ACTIONS,
    GOVERN_ACTIONS,
    Atom,
    Brief,
    ChainReport,
    CorrectResult,
    Event,
    GovernResult,
    HandoffResult,
    Hit,
    IndexCoverage,
    MemorizeResult,
    RecallResult,
    Scope,
    Stats,
)
from ..scope import infer_scope
from ..search import rank
from ..search.embed import Embedder, TermEmbedder, make_embedder
from ..search.embed import term_embedder as make_term_embedder
from ..search.tokenize import normalize, to_simplified, tokens
from ..storage.base import Store
from ..storage.sqlite import SqliteStore, _iso, chain_hash, content_hash
from ..write.admission import Dura, score_dura
from ..write.admission import infer_type as _infer_type
from ..write.classify import classify
from ..write.entities import extract_entities
from ..write.redact import redact
from .anchoring import check_filters

__all__ = ["AUTHORITIES", "EngineCore", "GATES", "PLACEHOLDERS", "visible_content"]

# Who the engine acts for. "agent": only the inferred scope and the tenant's global scope are
# within reach, and sensitive scopes need a grant (MCP, hooks, the SDK by default). "operator": a
# person at the CLI, who may name any scope.
AUTHORITIES = ("agent", "operator")

# `_persist(vector=...)` default: call the model for this one atom.
_EMBED: Any = object()
# `Engine.open(term_embedder=...)` default: the one the settings name.
_FROM_SETTINGS: Any = object()

# Write gates of `memorize`: "hold" keeps every admitted save pending (transcript observations).
GATES = ("admit", "review", "hold", "trusted")

log = logging.getLogger("memoryd")

PLACEHOLDERS = {
    "quarantined": "[quarantined: content hidden pending review]",
    "sealed": "[sealed: content visible to audit only]",
    "tombstoned": "[tombstoned: content destroyed]",
}
_CJK = re.compile(r"[\u3400-\u9fff]")
# A reply counts as one when it was saved within this long after the question (Store.successors).
_REPLY_WINDOW_S = 3600.0
# Soft-forgotten memories rank lower but are never dropped from recall.
_DECAY_WEIGHT = {"fresh": 1.0, "stale": 0.95, "soft_forgotten": 0.85}


def _norm_hash(content: str) -> str:
    return hashlib.sha256(normalize(content).encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _private_home(home: Path, *, sqlite: bool) -> None:
    """The data root (database, vault, prompts) is readable by its owner only: 0700, the database 0600.

    Other local users must not read memories; SQLite gives its -wal/-shm files the database's mode.
    """
    import os
    import stat

    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        st = home.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(home, stat.S_IMODE(st.st_mode) & 0o700)
        db = home / "memoryd.db"
        if not sqlite:
            return
        if not db.exists():
            os.close(os.open(db, os.O_CREAT | os.O_WRONLY, 0o600))
        elif db.stat().st_uid == os.getuid() and db.stat().st_mode & 0o077:
            os.chmod(db, 0o600)
    except (OSError, AttributeError):  # AttributeError: no getuid (Windows), where ACLs apply instead
        log.warning("could not make %s private to its owner", home)


def _shown(value: object) -> str:
    """An id as an error message shows it: quoted, cut short (a hostile id may be a megabyte), redacted
    (messages are logged by the MCP SDK, and an agent may paste a token where an id goes)."""
    text = value if isinstance(value, str) else repr(value)
    return repr(redact(text if len(text) <= 80 else text[:77] + "...").text)


def _red(text: str | None) -> str | None:
    """Redacted short text (title, source, tag…), None kept."""
    return None if text is None else redact(text).text


def _clean(text: str) -> str:
    """What is stored of a text: LF newlines, no surrounding blanks, secrets redacted."""
    return redact(text.replace("\r\n", "\n").replace("\r", "\n").strip()).text


def visible_content(atom: Atom) -> str:
    """What a reader may see of an atom: its content, or a placeholder for hidden states."""
    return PLACEHOLDERS.get(atom.status, atom.content)


class EngineCore:
    """memoryd's service layer over one store (see `memoryd.engine.Engine`).

    Open it with `Engine.open()`; it infers the current scope from the working directory.
    Writes are redacted, deduplicated, admitted, classified and persisted in one
    transaction with their audit event and markdown file; reads fuse keyword, semantic and
    entity signals.
    """

    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, authority: str = "agent",
        enforce_sensitive: bool | None = None, term_embedder: TermEmbedder | None = None,
    ) -> None:
        if authority not in AUTHORITIES:
            raise ValueError(f"unknown authority {authority!r}; expected one of {', '.join(AUTHORITIES)}")
        if authority == "agent" and enforce_sensitive is False:
            raise ValueError("an agent always needs a grant for a sensitive scope")
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.term_embedder = term_embedder  # recall's English signal (None: left out)
        self.scope = scope
        self.authority = authority
        # A person at the web console reaches every scope but still needs a grant for a sensitive one.
        self._sensitive_locked = authority == "agent" if enforce_sensitive is None else enforce_sensitive
        self.vault_root = settings.home / "vault"
        self._vault_lock = vault.VaultLock(self.vault_root)
        self._system = threading.local()  # set while memoryd itself acts (vault sync), see _as_system

    @property
    def enforce_sensitive(self) -> bool:
        """Whether sensitive scopes need a grant (agents, and the console's person; not the CLI)."""
        return self._sensitive_locked and not getattr(self._system, "on", False)

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        cwd: str | Path | None = None,
        embedder: Embedder | None = None,
        authority: str = "agent",
        enforce_sensitive: bool | None = None,
        term_embedder: TermEmbedder | None = _FROM_SETTINGS,
    ) -> Self:
        """Open the store named by `settings` (default: environment) for the scope of `cwd`.

        `authority` is "agent" (the default: by-id operations reach only the scope of `cwd` and
        the tenant's global scope, and a sensitive scope needs a grant) or "operator" (a person,
        who may address any scope). `enforce_sensitive=True` keeps sensitive scopes locked for an
        operator too (the web console: a grant can be requested there, not bypassed).
        `term_embedder`: recall's English signal; by default the one `settings.term_embedder` names,
        left out when the main embedder is the hashing fake (tests that need no model).
        """
        settings = settings or Settings()
        _private_home(settings.home, sqlite=not settings.db)
        store: Store
        if settings.db and settings.db.startswith(("postgresql://", "postgres://")):
            from ..extras import require

            require("postgres", "MEMORYD_DB=postgresql://…")
            from ..storage.postgres import PostgresStore  # psycopg loads only when PostgreSQL is used

            store = PostgresStore(settings.db, busy_timeout_ms=settings.busy_timeout_ms)
        else:
            store = SqliteStore(settings.db_path, busy_timeout_ms=settings.busy_timeout_ms, ann_min=settings.ann_min)
        embedder = embedder or make_embedder(settings.embedder)
        if term_embedder is _FROM_SETTINGS:
            term_embedder = None if embedder.name == "hash" else make_term_embedder(settings.term_embedder)
        return cls(
            settings, store, embedder, infer_scope(cwd), authority=authority, enforce_sensitive=enforce_sensitive,
            term_embedder=term_embedder,
        )  # fmt: skip

    def acting_as(self, authority: str, *, enforce_sensitive: bool | None = None) -> Self:
        """This engine's store, models and scope, acting for someone else (the web console served beside
        the MCP tools: a person, where the tools act for an agent). Close the original, not this view."""
        view = type(self)(
            self.settings, self.store, self.embedder, self.scope, authority=authority,
            enforce_sensitive=enforce_sensitive, term_embedder=self.term_embedder,
        )  # fmt: skip
        view._vault_lock = self._vault_lock  # one lock per vault within the process
        return view

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Any]:
        """One write transaction; the markdown files of the atoms it touched are published after commit.

        Inside the transaction each touched atom's file is planned (path and digest recorded on the
        atom) and queued in the vault outbox under this transaction's token; after the commit the
        files are written or removed under the vault lock and the queue entries cleared. A crash
        before the commit leaves no file, so nothing is invented; a crash after it leaves the queue
        entry, which `recover_vault` finishes from the database at the next start (never lost).
        """
        token = str(ULID())
        plans: list[_FilePlan] = []
        with self.store.transaction() as tx:
            tracked = _TrackedTx(tx, self.store)
            yield tracked
            for atom_id in tracked.touched:
                plan = self._plan_file(tx, atom_id, tracked.removed.get(atom_id), token)
                if plan is not None:
                    plans.append(plan)
        tracked.committed = True  # what a caller interrupted from here on (Ctrl-C) must count as written
        self._publish(plans, token)

    def _plan_file(self, tx: Any, atom_id: str, removed_path: str | None, token: str) -> _FilePlan | None:
        """Record (inside the transaction) what the vault must hold for one atom: its file, or none."""
        atom = self.store.get_atoms([atom_id]).get(atom_id)
        old = atom.vault_path if atom is not None else removed_path
        if atom is None or atom.status != "active":
            if atom is not None and old:
                tx.update_atom(atom.id, vault_path=None, vault_digest=None, updated_at=_iso(atom.updated_at))
            if not old:
                return None
            tx.outbox_add(atom_id, token, old)
            return _FilePlan(atom_id, None, None, None, old)
        rel = str(vault.relative_path(atom))
        text = vault.render(atom)  # raises (and rolls back) for an atom that cannot be written faithfully
        # The folder now, inside the transaction: a vault that cannot take the file fails the write
        # (rolled back) instead of leaving a committed memory without its file.
        (self.vault_root / rel).parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        stale = old if old and old != rel else None
        tx.update_atom(atom.id, vault_path=rel, vault_digest=digest, updated_at=_iso(atom.updated_at))
        tx.outbox_add(atom_id, token, stale)
        return _FilePlan(atom_id, rel, text, digest, stale)

    def _publish(self, plans: Sequence[_FilePlan], token: str) -> None:
        """Write or remove the planned files of a committed transaction, then clear its outbox entries.

        Under the vault lock, and only while the database still records this transaction's digest:
        a later transaction of the same atom publishes its own file, so files never go back in time.
        A failure is logged and left to `recover_vault`: the write itself is committed.
        """
        if not plans:
            return
        try:
            with self._vault_lock:
                current = self.store.vault_state([p.atom_id for p in plans])  # (status, path, digest)
                batch = len(plans) > 1  # e.g. an import batch: one sync for all its files
                for p in plans:
                    state = current.get(p.atom_id)
                    if p.text is not None and p.rel is not None:
                        if state is None or state[2] != p.digest:
                            continue
                        vault.write_atomic(self.vault_root / p.rel, p.text, durable=not batch)
                    if p.remove is not None and (state is None or state[1] != p.remove):
                        vault.remove(self.vault_root / p.remove)
                if batch:
                    vault.flush_all()
            self.store.clear_outbox([(p.atom_id, token) for p in plans])
        except Exception:
            log.exception("publishing vault files failed; the next start (or `memoryd vault sync`) finishes it")

    # -- the scope boundary ------------------------------------------------------------------
    # Every operation that takes an id (memory, atom, session, promotion, scope) resolves it through
    # `_reach` / `_find_atom`; nothing else in the engine decides who may act on what.

    @contextmanager
    def _as_system(self) -> Iterator[None]:
        """memoryd itself acts (vault sync of the person's own files): every scope is in reach."""
        before = getattr(self._system, "on", False)
        self._system.on = True
        try:
            yield
        finally:
            self._system.on = before

    def reachable_scopes(self) -> list[str] | None:
        """Scope hashes this engine may act on: None = every scope (operator, or memoryd itself)."""
        if self.authority == "operator" or getattr(self._system, "on", False):
            return None
        return self._recall_scopes(None)

    def _reach(self, scope_hash: str, name: str | None = None) -> bool:
        """THE authorisation decision: may the caller act on atoms of `scope_hash`?

        False for a scope out of reach (the caller answers `not_found`, exactly as for a missing id,
        so nothing confirms it exists). For a scope in reach that is sensitive without a running
        grant, raises AuthorizationRequired (agents only; reads, writes and governance alike).
        """
        reach = self.reachable_scopes()
        if reach is not None and scope_hash not in reach:
            return False
        self._guard_read(scope_hash, name)
        return True

    def _find_atom(self, atom_id: object) -> Atom | None:
        """The atom with this id if it exists and is within the caller's reach, else None."""
        if not isinstance(atom_id, str) or not atom_id or len(atom_id) > LIMITS["id"][0] or UNSTORABLE.search(atom_id):
            return None
        atom = self.store.get_atoms([atom_id]).get(atom_id)
        if atom is None or not self._reach(atom.scope_hash, atom.scope.name):
            return None
        return atom

    def _guard_read(self, scope_hash: str, name: str | None = None) -> None:
        """Refuse a sensitive scope without a running grant (agents; reads, writes, governance)."""
        if not self.enforce_sensitive or not self.store.is_sensitive(scope_hash):
            return
        if self.store.grant_expiry(scope_hash) is None:
            raise AuthorizationRequired(
                f"scope {name or scope_hash} is sensitive and has no running grant; a person can grant access with "
                f"`memoryd scope grant --minutes 30` in that repository, or call mem_request_sensitive_read"
            )

    def path_of(self, atom: Atom) -> Path | None:
        """Absolute path of an atom's markdown file, if it has one."""
        return self.vault_root / atom.vault_path if atom.vault_path else None

    # -- helpers ---------------------------------------------------------------------------

    def _recall_scopes(self, scope: Scope | None) -> list[str]:
        scope = scope or self.scope
        hashes = [scope.scope_hash, scope.global_scope().scope_hash]
        return list(dict.fromkeys(hashes))

    def _embed(self, text: str) -> Any:
        return self._embed_many([text])[0]

    def _embed_many(self, texts: Sequence[str]) -> list[Any]:
        """One model call for many texts; None for each when the model fails."""
        if not texts:
            return []
        try:
            return list(self.embedder.passages(list(texts)))
        except Exception:  # a broken model must not lose the write; coverage shows the gap
            log.exception("embedding failed; stored without a vector")
            return [None] * len(texts)

    def _check_fields(self, *, title: object = None, tags: object = None, triggers: object = None,
                      source: object = None) -> None:  # fmt: skip
        """Limits of a memory's short fields (LIMITS). Raises InvalidInput."""
        check_text("title", title)
        check_texts("tags", "tag", tags)
        check_texts("triggers", "trigger", triggers)
        check_text("source", source)

    def _validate_content(self, content: object, what: str = "content") -> str | None:
        """Return a rejection reason, or None when the text is acceptable."""
        if not isinstance(content, str):
            return f"{what} must be a string"
        if not content.strip():
            return f"{what} is empty"
        if len(content) > self.settings.max_content_chars:
            return f"{what} is {len(content)} characters; the limit is {self.settings.max_content_chars}"
        return unstorable(content, what)

    def _new_atom(
        self, content: str, *, type: str, source: str, scope: Scope, status: str = "active",
        title: str | None = None, tags: Sequence[str] = (), triggers: Sequence[str] = (),
        supersedes: str | None = None, entities: Sequence[str] | None = None,
    ) -> tuple[Atom, list[str]]:  # fmt: skip
        c = classify(content)
        entity_ids = list(entities) if entities is not None else [e.id for e in extract_entities(content)]
        now = _now()
        # Every new atom is built here: its short texts are redacted here, whoever the caller is.
        atom = Atom(
            id=str(ULID()), content=content, type=type, source=redact(source).text, scope=scope,
            scope_hash=scope.scope_hash, epistemic=c.epistemic, polarity=c.polarity, status=status,
            created_at=now, updated_at=now, title=_red(title), tags=[redact(t).text for t in tags],
            triggers=[redact(t).text for t in triggers], supersedes=supersedes, entities=entity_ids,
        )  # fmt: skip
        return atom, entity_ids

    def _persist(
        self, tx: Any, atom: Atom, *, actor: str, action: str, reason: str | None, vector: Any = _EMBED
    ) -> None:
        """Insert an atom with its index terms, vector, entity edges and audit event.

        `vector` is the atom's embedding when the caller computed it in a batch (None = no
        vector); by default the model is called here.
        """
        extra = " ".join([atom.title or "", *atom.tags, *atom.triggers]).strip()
        if vector is _EMBED:
            vector = self._embed(atom.content)
        terms = tokens(f"{atom.content} {extra}" if extra else atom.content)
        tx.insert_atom(atom, norm_hash=_norm_hash(atom.content), terms=terms, vector=vector)
        for entity_id in atom.entities:
            tx.link(atom.id, entity_id, "mentions")
        tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=atom.content)

    def get(self, atom_id: str) -> Atom:
        """The atom with this id (content as stored), if within reach. Raises NotFound, AuthorizationRequired."""
        atom = self._find_atom(atom_id)
        if atom is None:
            raise NotFound(f"no atom with id {_shown(atom_id)}")
        return atom

    # -- write path --------------------------------------------------------------------------

    def memorize(
        self,
        content: str,
        *,
        source: str = "agent",
        type: str | None = None,
        title: str | None = None,
        tags: Sequence[str] = (),
        triggers: Sequence[str] = (),
        gate: str = "admit",
        scope: Scope | None = None,
        actor: str | None = None,
        origin: str = "save",
        anchors: Sequence[str] | None = None,
    ) -> MemorizeResult:
        """Write one memory through the full write path (SPEC §2).

        `gate` is "admit" (junk rejected, the rest stored), "review" (grey-zone saves wait as
        `pending`), "hold" (every save that is not junk waits as `pending`: transcript
        observations), or "trusted" (no DURA gate: importers, passive capture). `anchors` ties the
        memory to code beyond what its text names (`path`, `path::Symbol`, `Symbol`).

        Raises:
            InvalidInput: an explicit anchor that does not resolve.
        """
        draft = self._prepare_memory(
            content, source=source, type=type, title=title, tags=tags, triggers=triggers, gate=gate, scope=scope,
            actor=actor, origin=origin, anchors=anchors,
        )  # fmt: skip
        if isinstance(draft, MemorizeResult):
            return draft
        vector = self._embed(draft.atom.content)
        with self._write() as tx:
            return self._store_draft(tx, draft, vector)

    def _prepare_memory(
        self,
        content: object,
        *,
        source: str,
        type: str | None,
        title: str | None,
        tags: Sequence[str],
        triggers: Sequence[str],
        gate: str,
        scope: Scope | None,
        actor: str | None,
        origin: str,
        batch: dict[tuple[str, str], Atom] | None = None,
        anchors: Sequence[str] | None = None,
    ) -> _Draft | MemorizeResult:
        """Everything of the write path before the transaction: validate, redact, dedup, admit, classify.

        Returns the atom ready to write, or the result (rejected / duplicate) that ends the save.
        `batch` maps (scope hash, normalised-content hash) → the atom of drafts not yet committed,
        so a batch writer deduplicates within the batch too; a new draft is added to it.
        """
        try:
            self._check_fields(title=title, tags=tags, triggers=triggers, source=source)
        except InvalidInput as exc:
            return MemorizeResult(effect="rejected", reason=exc.message)
        problem = self._validate_content(content)
        if problem is None and type is not None and type not in ATOM_TYPES:
            problem = f"unknown type {type!r}; expected one of {', '.join(ATOM_TYPES)}"
        if problem is None and gate not in GATES:
            problem = f"unknown gate {gate!r}"
        if problem is None and (not isinstance(source, str) or not source.strip()):
            problem = "source must be a non-empty string"
        if problem is not None:
            return MemorizeResult(effect="rejected", reason=problem)
        scope = scope or self.scope
        if not self._reach(scope.scope_hash, scope.name):
            raise NotFound(f"no scope {scope.name!r} within reach")
        explicit = self._explicit_anchors(anchors, scope.scope_hash)  # type: ignore[attr-defined]
        clean = _clean(str(content))
        key = (scope.scope_hash, _norm_hash(clean))
        if batch is not None and key in batch:
            first = batch[key]
            return MemorizeResult(
                atom_id=first.id, effect="no_op", deduped_with=first.id, status=first.status,
                reason="identical content earlier in this batch",
            )  # fmt: skip
        duplicate = self.store.find_duplicate(*key)
        if duplicate is not None:
            return MemorizeResult(
                atom_id=duplicate.id, effect="no_op", deduped_with=duplicate.id, status=duplicate.status,
                reason="identical content already stored in this scope",
            )  # fmt: skip
        kind = type or _infer_type(clean)
        entities = [e.id for e in extract_entities(clean)]
        status = "active"
        d = None
        if gate != "trusted":
            d = score_dura(clean, source=source, entity_count=len(entities))
            if d.average < self.settings.dura_reject_below:
                return MemorizeResult(effect="rejected", reason=f"not worth keeping: {d.reasoning}", dura=d.as_dict())
            if gate == "hold" or (gate == "review" and d.average < self.settings.dura_pending_below):
                status = "pending"
        atom, _ = self._new_atom(
            clean, type=kind, source=source, scope=scope, status=status, title=title, tags=tags, triggers=triggers,
            entities=entities,
        )  # fmt: skip
        if batch is not None:
            batch[key] = atom
        code, note = self._auto_anchors(atom, explicit)  # type: ignore[attr-defined]
        return _Draft(atom=atom, dura=d, gate=gate, origin=origin, actor=actor or source, anchors=code, anchor_note=note)

    def _store_draft(self, tx: Any, draft: _Draft, vector: Any) -> MemorizeResult:
        """Write a prepared memory inside an open `_write()` transaction (with its promotion if held)."""
        atom, d = draft.atom, draft.dura
        self._persist(tx, atom, actor=draft.actor, action="create", reason=None, vector=vector)
        if draft.anchors:
            tx.set_anchors(atom.id, draft.anchors)
        code = {"anchors": [a.ref for a in draft.anchors] or None, "anchor_note": draft.anchor_note}
        dura = d.as_dict() if d is not None else None
        if atom.status == "pending" and d is not None:
            promotion_id = tx.insert_promotion(
                atom_id=atom.id, scope_hash=atom.scope_hash, origin=draft.origin, scores=d.as_dict(),
                reasoning=d.reasoning,
            )  # fmt: skip
            why = f"every {draft.origin} waits for review" if draft.gate == "hold" else "the DURA score is in the grey zone"
            return MemorizeResult(
                atom_id=atom.id, effect="applied", status="pending", promotion_id=promotion_id, dura=dura,
                reason=f"held for review: {why} ({d.reasoning})", **code,
            )  # fmt: skip
        return MemorizeResult(atom_id=atom.id, effect="applied", status="active", dura=dura, **code)

    def handoff(self, summary: str, *, source: str = "agent", scope: Scope | None = None) -> HandoffResult:
        """Write a session handoff; the next session's brief shows the latest one first."""
        problem = self._validate_content(summary, "summary")
        if problem is None and not (isinstance(source, str) and len(source) <= LIMITS["source"][0]):
            problem = f"source must be a string of at most {LIMITS['source'][0]} characters"
        if problem is not None:
            return HandoffResult(effect="rejected", reason=problem)
        scope = scope or self.scope
        if not self._reach(scope.scope_hash, scope.name):
            raise NotFound(f"no scope {scope.name!r} within reach")
        atom, _ = self._new_atom(_clean(summary), type="handoff", source=source, scope=scope)
        with self._write() as tx:
            self._persist(tx, atom, actor=source, action="handoff", reason=None)
        return HandoffResult(atom_id=atom.id, effect="applied")

    def correct(
        self, target_atom: str, action: str, reason: str, new_content: str | None = None, *, actor: str = "agent"
    ) -> CorrectResult:
        """Apply an append-only correction; refusals come back as effect "rejected"."""

        def reject(why: str) -> CorrectResult:
            return CorrectResult(effect="rejected", target_atom=target_atom, reason=why)

        if action not in CORRECT_ACTIONS:
            return reject(f"unknown action {action!r}; expected one of {', '.join(CORRECT_ACTIONS)}")
        if not isinstance(reason, str) or not reason.strip():
            return reject("reason is required")
        if len(reason) > LIMITS["reason"][0]:
            return reject(f"reason is {len(reason)} characters; the limit is {LIMITS['reason'][0]}")
        atom = self._find_atom(target_atom)
        if atom is None:
            return reject(f"no atom with id {_shown(target_atom)}")
        if atom.status == "superseded":
            return reject(f"atom is superseded by {atom.superseded_by}; correct the head of the chain instead")
        if atom.status not in ("active", "pending"):
            return reject(f"atom is {atom.status}; only active atoms can be corrected")
        reason = redact(reason.strip()).text
        if action == "replace":
            if new_content is None:
                return reject("new_content is required for replace")
            problem = self._validate_content(new_content, "new_content")
            if problem is not None:
                return reject(problem)
            clean = _clean(new_content)
            if normalize(clean) == normalize(atom.content):
                return reject("new_content is identical to the current content")
            new, _ = self._new_atom(
                clean, type=atom.type, source=atom.source, scope=atom.scope, title=atom.title,
                tags=atom.tags, triggers=atom.triggers, supersedes=atom.id,
            )  # fmt: skip
            code, _ = self._auto_anchors(new, self._carried_anchors(atom))  # type: ignore[attr-defined]
            with self._write() as tx:
                self._persist(tx, new, actor=actor, action="replace", reason=reason)
                if code:
                    tx.set_anchors(new.id, code)
                tx.update_atom(atom.id, status="superseded", superseded_by=new.id)
                tx.link(new.id, atom.id, "supersedes")
                tx.append_event(atom_id=atom.id, actor=actor, action="superseded", reason=reason, content=None)
            return CorrectResult(effect="applied", target_atom=atom.id, new_atom_id=new.id)
        if new_content is not None:
            return reject(f"new_content is only accepted with replace, not {action}")
        fields: dict[str, Any]
        if action == "negate":
            if atom.status == "negated":
                return reject("atom is already negated")
            fields = {"status": "negated"}
        else:
            target = {"confirm_actual": "actual", "confirm_necessary": "necessary", "demote": "possible"}[action]
            fields = {"epistemic": target}
        # Confirming says the memory holds for the code as it is now: its anchors move to HEAD.
        plan = self._reanchor_plan(atom) if action.startswith("confirm_") else None  # type: ignore[attr-defined]
        with self._write() as tx:
            tx.update_atom(atom.id, **fields)
            tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=None)
            if plan is not None:
                self._apply_reanchor(tx, atom.id, plan, actor=actor)  # type: ignore[attr-defined]
        return CorrectResult(effect="applied", target_atom=atom.id)

    def govern(
        self, target_atom: str, action: str, reason: str, lesson_content: str | None = None, *, actor: str = "agent"
    ) -> GovernResult:
        """Quarantine, seal, tombstone or derive a lesson; refusals come back as "rejected"."""

        def reject(why: str) -> GovernResult:
            return GovernResult(effect="rejected", target_atom=target_atom, reason=why)

        if action not in GOVERN_ACTIONS:
            return reject(f"unknown action {action!r}; expected one of {', '.join(GOVERN_ACTIONS)}")
        if not isinstance(reason, str) or not reason.strip():
            return reject("reason is required")
        if len(reason) > LIMITS["reason"][0]:
            return reject(f"reason is {len(reason)} characters; the limit is {LIMITS['reason'][0]}")
        atom = self._find_atom(target_atom)
        if atom is None:
            return reject(f"no atom with id {_shown(target_atom)}")
        if atom.status == "tombstoned":
            return reject("atom is tombstoned; nothing is left to govern")
        reason = redact(reason.strip()).text
        if action == "quarantine":
            if atom.status in ("quarantined", "sealed"):
                return reject(f"atom is already {atom.status}")
            with self._write() as tx:
                tx.update_atom(atom.id, status="quarantined", prior_status=atom.status)
                tx.append_event(atom_id=atom.id, actor=actor, action="quarantine", reason=reason, content=None)
            return GovernResult(effect="applied", target_atom=atom.id)
        if action == "seal":
            if atom.status == "sealed":
                return reject("atom is already sealed")
            with self._write() as tx:
                tx.update_atom(atom.id, status="sealed", prior_status=atom.status)
                tx.append_event(atom_id=atom.id, actor=actor, action="seal", reason=reason, content=None)
            return GovernResult(effect="applied", target_atom=atom.id)
        if action == "tombstone":
            with self._write() as tx:
                tx.scrub_atom(atom.id)
                tx.update_atom(atom.id, status="tombstoned", prior_status=atom.status)
                tx.append_event(atom_id=atom.id, actor=actor, action="tombstone", reason=reason, content=None)
            return GovernResult(effect="applied", target_atom=atom.id)
        # derive_lesson
        if lesson_content is None:
            return reject("lesson_content is required for derive_lesson")
        problem = self._validate_content(lesson_content, "lesson_content")
        if problem is not None:
            return reject(problem)
        lesson, _ = self._new_atom(_clean(lesson_content), type="lesson", source=actor, scope=atom.scope)
        with self._write() as tx:
            self._persist(tx, lesson, actor=actor, action="derive_lesson", reason=reason)
            tx.link(lesson.id, atom.id, "derived_from")
            if atom.status != "sealed":
                tx.update_atom(atom.id, status="sealed", prior_status=atom.status)
                tx.append_event(atom_id=atom.id, actor=actor, action="seal", reason=reason, content=None)
        return GovernResult(effect="applied", target_atom=atom.id, lesson_atom_id=lesson.id)

    def restore(self, atom_id: str, reason: str, *, actor: str = "user") -> GovernResult:
        """Bring a quarantined atom back to the state it had before (SDK and CLI only)."""
        atom = self._find_atom(atom_id)
        if atom is None:
            return GovernResult(effect="rejected", target_atom=atom_id, reason=f"no atom with id {_shown(atom_id)}")
        if atom.status != "quarantined":
            return GovernResult(
                effect="rejected", target_atom=atom_id, reason=f"atom is {atom.status}; only quarantined atoms restore"
            )
        if not isinstance(reason, str) or not reason.strip():
            return GovernResult(effect="rejected", target_atom=atom_id, reason="reason is required")
        if len(reason) > LIMITS["reason"][0]:
            return GovernResult(effect="rejected", target_atom=atom_id,
                                reason=f"reason is {len(reason)} characters; the limit is {LIMITS['reason'][0]}")
        with self._write() as tx:
            tx.update_atom(atom.id, status=atom.prior_status or "active", prior_status=None)
            tx.append_event(atom_id=atom.id, actor=actor, action="restore", reason=redact(reason.strip()).text,
                            content=None)  # fmt: skip
        return GovernResult(effect="applied", target_atom=atom_id)

    # -- read path -------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        max_results: int = 10,
        include_negated: bool = False,
        types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None,
        scope: Scope | None = None,
        statuses: Sequence[str] | None = None,
        path: str | None = None,
        symbol: str | None = None,
        record: bool = True,
    ) -> RecallResult:
        """Hybrid search over the current repository and the tenant-global scope.

        `path` (a file or directory of the repository) and `symbol` (`Table.insert_all`, or its last
        parts) keep only memories anchored to that code. Memories whose anchored code changed rank
        ×0.9 and say so (`freshness`, `code_changes`). `record` logs when the recall ran and its hit
        ids (not the query) for the console's Sessions page.

        Raises:
            InvalidInput: empty query, max_results outside 1..100, a field over its limit (`memoryd.limits`).
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        check_text("query", query)  # before any work that grows with the query
        if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= 100:
            raise InvalidInput(f"max_results must be between 1 and 100, got {max_results!r}")
        if types is not None:
            check_texts("types", "id", types)
            unknown = [t for t in types if t not in ATOM_TYPES]
            if unknown:
                raise InvalidInput(f"unknown type(s) {unknown}; expected any of {', '.join(ATOM_TYPES)}")
        check_texts("entity_ids", "entity", entity_ids)
        path, symbol = check_filters(path, symbol)
        q, cands, stats = self._recall_gather(
            query, max_results=max_results, include_negated=include_negated, types=types, entity_ids=entity_ids,
            scope=scope, statuses=statuses, path=path, symbol=symbol,
        )  # fmt: skip
        # A path/symbol filter lists every memory anchored there, whatever the query's signals say.
        ranked = rank.rank(q, cands, stats, english=self._english if self.term_embedder is not None else None,
                           keep_zero=bool(path or symbol))  # fmt: skip
        scored = [(score, c.atom_id, signals) for score, c, signals in ranked]
        # Code anchors: a memory whose code moved on ranks ×DRIFT_WEIGHT, a multiplier after the ranking.
        # Anchors are checked against this working tree, so only this repository's memories, and only as
        # deep as the top max_results needs.
        here = self.scope.scope_hash
        own = {c.atom_id for _, c, _ in ranked if c.scope_hash == here}
        scored, drift = self._rank_with_drift(scored, own, max_results)  # type: ignore[attr-defined]
        scored = scored[:max_results]
        atoms = self.store.get_atoms(atom_id for _, atom_id, _ in scored)  # full atoms for the hits only
        hits = [
            Hit(atom=atoms[atom_id], score=score, signals={k: round(v, 4) for k, v in signals.items()},
                freshness=drift[atom_id][0] if atom_id in drift else None,
                code_changes=(drift[atom_id][1] or None) if atom_id in drift else None)  # fmt: skip
            for score, atom_id, signals in scored
            if atom_id in atoms  # deleted between the two reads
        ]
        self.store.touch([h.atom.id for h in hits])
        if record:
            self.store.log_recall((scope or self.scope).scope_hash, [h.atom.id for h in hits])
        return RecallResult(hits=hits)

    def _english(self, q: rank.Query, cands: Sequence[rank.Candidate]) -> list[float | None]:
        """Cosines of the English term embedder (`search.embed.WordLlamaTerms`) for these candidates."""
        assert self.term_embedder is not None
        try:
            q_vec = self.term_embedder.query(q.text)
            return [float(x) for x in self.term_embedder.bags([c.terms for c in cands]) @ q_vec]
        except Exception:  # a broken second model must not break recall
            log.exception("English term embedding failed; ranked without it")
            return [None] * len(cands)

    def _recall_gather(
        self,
        query: str,
        *,
        max_results: int = 10,
        include_negated: bool = False,
        types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None,
        scope: Scope | None = None,
        statuses: Sequence[str] | None = None,
        path: str | None = None,
        symbol: str | None = None,
    ) -> tuple[rank.Query, list[rank.Candidate], tuple[int, dict[str, int]]]:
        """recall's first half: the query's terms and entities, every candidate with its scoring facts.

        The ranking (`search.rank.rank`) is a pure function of what this returns, so
        bench/replay.py caches it once and re-ranks offline. `path`/`symbol` (checked by recall)
        keep only the memories anchored to that code.
        """
        statuses = list(statuses or (["active", "negated"] if include_negated else ["active"]))
        current = scope or self.scope
        if not self._reach(current.scope_hash, current.name):
            raise NotFound(f"no scope {current.name!r} within reach")
        scopes = self._recall_scopes(scope)
        allowed: set[str] | None = None
        if path or symbol:  # only memories anchored to that code, whatever the query surfaces
            checker = self._checker()  # type: ignore[attr-defined]
            rel = (checker.repo.relpath(path) or path) if path and checker is not None else path
            allowed = set(self.store.anchored_atoms(scope_hashes=scopes, statuses=statuses, path=rel, symbol=symbol))
        q = rank.Query(
            text=query, terms=tuple(dict.fromkeys(tokens(query, query=True))),
            entities=tuple(dict.fromkeys(e.id for e in extract_entities(query))),
            boost=tuple(dict.fromkeys(entity_ids or [])),
            cosine_floor=self.embedder.cosine_floor, cosine_ceil=self.embedder.cosine_ceil,
        )  # fmt: skip
        pool = max(50, max_results * 5)
        candidates: dict[str, float | None] = {}
        stats = self.store.term_stats(rank.stat_terms(q))
        for atom_id in self.store.keyword_candidates(
            list(q.terms), scope_hashes=scopes, statuses=statuses, limit=pool, stats=stats
        ):
            candidates[atom_id] = None
        q_vec = None
        try:
            q_vec = self.embedder.query(query)
        except Exception:
            log.exception("query embedding failed; keyword and entity signals only")
        if q_vec is not None:
            for atom_id, cos in self.store.vector_candidates(q_vec, scope_hashes=scopes, k=pool):
                candidates[atom_id] = cos
        for atom_id in self.store.atoms_for_entities(
            list(dict.fromkeys(q.entities + q.boost)), scope_hashes=scopes, statuses=statuses, limit=pool
        ):
            candidates.setdefault(atom_id, None)
        if allowed is not None:
            candidates = {i: cos for i, cos in candidates.items() if i in allowed}
            for atom_id in allowed:
                candidates.setdefault(atom_id, None)
        if q_vec is not None:
            missing = [i for i, cos in candidates.items() if cos is None]
            candidates.update(self.store.cosines(q_vec, missing))
        facts = self.store.candidate_facts(list(candidates))
        # A question's reply, the memory saved right after it, joins the candidates: the ranking
        # passes it part of the question's score (a conversation answers in the next turn).
        asks = [i for i, f in facts.items() if f.epistemic == "possible" and f.status in statuses]
        nexts = self.store.successors(asks, statuses=statuses, within_seconds=_REPLY_WINDOW_S) if asks else {}
        if allowed is not None:
            nexts = {i: n for i, n in nexts.items() if n in allowed}
        new = [n for n in dict.fromkeys(nexts.values()) if n not in candidates]
        if new:
            new_cos = self.store.cosines(q_vec, new) if q_vec is not None else {}
            candidates.update({n: new_cos.get(n) for n in new})
            facts.update(self.store.candidate_facts(new))
        now = _now()
        cands: list[rank.Candidate] = []
        for atom_id, cos in candidates.items():
            fact = facts.get(atom_id)
            if fact is None or fact.status not in statuses or fact.scope_hash not in scopes:
                continue
            if types is not None and fact.type not in types:
                continue
            cands.append(
                rank.Candidate(
                    atom_id=atom_id, cos=cos, terms=frozenset(fact.terms), entities=fact.entities, status=fact.status,
                    type=fact.type, decay=_DECAY_WEIGHT[decay_state(fact, now)], epistemic=fact.epistemic,
                    polarity=fact.polarity, next_id=nexts.get(atom_id), scope_hash=fact.scope_hash,
                )  # fmt: skip
            )
        return q, cands, stats

    def history(self, atom_id: str) -> list[Event]:
        """Every audit event of an atom within reach, oldest first. Raises NotFound.

        An agent sees the history of an atom of its own or the global scope only; the events of a
        deleted atom (whose scope is gone with its row) only a person sees.
        """
        missing = NotFound(f"no atom with id {_shown(atom_id)}")
        if not isinstance(atom_id, str) or not atom_id or len(atom_id) > LIMITS["id"][0] or UNSTORABLE.search(atom_id):
            raise missing
        if self.reachable_scopes() is not None and self._find_atom(atom_id) is None:
            raise missing
        events = self.store.events(atom_id)
        if not events:
            raise missing
        return events

    def verify_chain(self) -> ChainReport:
        """Recompute the hash chain, payload hashes and each live atom's content hash."""
        events = self.store.events()
        prev = "0" * 64
        last_content: dict[str, str] = {}
        for e in events:
            at = e.at.isoformat(timespec="microseconds").replace("+00:00", "Z")
            expected = chain_hash(prev, e.id, e.atom_id, e.actor, e.action, e.reason, at, e.content_hash)
            if e.prev_hash != prev:
                return ChainReport(ok=False, events=len(events), first_bad_seq=e.seq, problem="broken link to previous event")
            if e.hash != expected:
                return ChainReport(ok=False, events=len(events), first_bad_seq=e.seq, problem="event hash mismatch")
            if e.content is not None and content_hash(e.content) != e.content_hash:
                return ChainReport(ok=False, events=len(events), first_bad_seq=e.seq, problem="payload does not match its hash")
            if e.atom_id and e.content_hash:
                last_content[e.atom_id] = e.content_hash
            prev = e.hash
        atoms = self.store.get_atoms(last_content)
        for atom_id, expected_hash in last_content.items():
            atom = atoms.get(atom_id)
            if atom is None or atom.status == "tombstoned":
                continue
            if content_hash(atom.content) != expected_hash:
                return ChainReport(ok=False, events=len(events), problem=f"atom {atom_id} content differs from its audit chain")
        return ChainReport(ok=True, events=len(events))

    def stats(self) -> Stats:
        c = self.store.counts()
        return Stats(
            atoms=c["atoms"], edges=c["edges"], snapshot_version=self.store.snapshot_version(), by_status=c["by_status"],
            indexes=IndexCoverage(semantic=c["semantic"], keyword=c["keyword"], temporal=c["temporal"],
                                  categorical=c["categorical"]),
        )  # fmt: skip

    def export(self, out: IO[str]) -> int:
        """Write every atom, then every event, as JSON lines. Returns the number of lines."""
        n = 0
        for atom in self.store.list_atoms(limit=-1, newest_first=False):
            out.write(json.dumps({"kind": "atom", **atom.model_dump(mode="json")}, ensure_ascii=False) + "\n")
            n += 1
        for event in self.store.events():
            out.write(json.dumps({"kind": "event", **event.model_dump(mode="json")}, ensure_ascii=False) + "\n")
            n += 1
        return n

    def _marker_state(self, marker: str, action: str) -> dict[str, Any] | None:
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

    def agent_brief(self, scope: Scope | None = None, *, mark_session: bool = False) -> Brief:
        """The session-start brief: latest handoff, memories whose code moved since the last session,
        constraints, preferences, recent decisions.

        `mark_session` (the SessionStart hook) records which code changes this brief reported, so the
        next session lists only new ones; `memoryd stale` lists them all.
        """
        if scope is not None and not self._reach(scope.scope_hash, scope.name):
            raise NotFound(f"no scope {scope.name!r} within reach")
        scopes = self._recall_scopes(scope)
        active = ["active"]
        handoffs = self.store.list_atoms(scope_hashes=scopes, statuses=active, types=["handoff"], limit=1)
        constraints = self.store.list_atoms(scope_hashes=scopes, statuses=active, epistemic="necessary", limit=10)
        prefs = self.store.list_atoms(scope_hashes=scopes, statuses=active, types=["preference"], limit=10)
        decisions = self.store.list_atoms(scope_hashes=scopes, statuses=active, types=["decision"], limit=5)
        pending = len(self.store.list_atoms(scope_hashes=scopes, statuses=["pending"], limit=1000))
        constraints = [a for a in constraints if a.type != "handoff"]
        prefs = [a for a in prefs if a not in constraints]
        decisions = [a for a in decisions if a not in constraints]
        moved = self.code_moved_since_last_session(mark=mark_session) if scope is None else []  # type: ignore[attr-defined]
        everything = [*handoffs, *constraints, *prefs, *decisions, *(m.atom for m in moved)]
        if not everything and not pending:
            return Brief(text=_GUIDE, empty_store=True)
        sample = " ".join(a.content for a in everything)
        labels = _labels(sample)
        limit = self.settings.brief_max_chars
        parts: list[str] = []
        used = 0

        def add(line: str) -> bool:
            nonlocal used
            if used + len(line) + 1 > limit:
                return False
            parts.append(line)
            used += len(line) + 1
            return True

        sections: list[tuple[str, list[Atom]]] = [(labels[0], handoffs)]
        if moved:
            sections.append((labels[5], []))
        sections += [(labels[1], constraints), (labels[2], prefs), (labels[3], decisions)]
        for title, atoms in sections:
            if title == labels[5]:
                if add(f"## {title}"):
                    for m in moved[:_BRIEF_MOVED]:
                        text = m.atom.content if len(m.atom.content) <= 200 else m.atom.content[:197] + "…"
                        if not add(f"- {text} ({m.atom.id}): {'; '.join(c.detail for c in m.changes[:2])}"):
                            break
                    if len(moved) > _BRIEF_MOVED:
                        add(f"- … {len(moved) - _BRIEF_MOVED} more: `memoryd stale`")
                continue
            if not atoms:
                continue
            if not add(f"## {title}"):
                break
            for a in atoms:
                text = a.content if len(a.content) <= 600 else a.content[:597] + "…"
                if not add(f"- {text} ({a.id})"):
                    break
        if pending:
            add(labels[4].format(n=pending))
        return Brief(
            text="\n".join(parts), handoff=handoffs[0] if handoffs else None, constraints=constraints,
            preferences=prefs, decisions=decisions, pending_review=pending, code_changed=moved,
        )  # fmt: skip


_GUIDE = (
    "memoryd: no memories for this project yet.\n"
    "- Save what you learn that will still matter later (decisions, constraints, preferences, "
    "facts, warnings) with memory_memorize / mem_save, one self-contained sentence each.\n"
    "- Before answering from assumptions, search with memory_recall / mem_search using noun phrases.\n"
    "- Fix outdated memories with memory_correct (replace), and end a task with memory_handoff."
)


_BRIEF_MOVED = 5  # memories listed under "code changed" (the rest: `memoryd stale`)


def _labels(sample: str) -> tuple[str, str, str, str, str, str]:
    if len(_CJK.findall(sample)) * 2 < len(sample.replace(" ", "")) * 0.3:
        return ("Latest handoff", "Constraints", "Preferences", "Recent decisions", "Pending review: {n}",
                "Code changed since the last session")  # fmt: skip
    if to_simplified(sample) != sample:
        return ("最近交接", "約束", "偏好", "近期決策", "待審核：{n} 條", "上次會話以來程式碼已變")
    return ("最近交接", "约束", "偏好", "近期决策", "待审核：{n} 条", "上次会话以来代码已变")


@dataclass
class _Draft:
    """A memory that passed validation, dedup and admission: the atom to write and why."""

    atom: Atom
    dura: Dura | None
    gate: str
    origin: str
    actor: str
    anchors: list[Any] = field(default_factory=list)  # memoryd.anchors.Anchor
    anchor_note: str | None = None


@dataclass(frozen=True)
class _FilePlan:
    """What one committed transaction must publish for one atom: a file to write, a file to remove."""

    atom_id: str
    rel: str | None
    text: str | None
    digest: str | None
    remove: str | None


class _TrackedTx:
    """A transaction that remembers which atoms it wrote, so their files follow."""

    def __init__(self, tx: Any, store: Store) -> None:
        self._tx = tx
        self._store = store
        self.touched: dict[str, None] = {}
        self.removed: dict[str, str] = {}  # deleted atom → the file it had
        self.committed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def insert_atom(self, atom: Atom, **kwargs: Any) -> None:
        self._tx.insert_atom(atom, **kwargs)
        self.touched[atom.id] = None

    def update_atom(self, atom_id: str, **fields: Any) -> None:
        self._tx.update_atom(atom_id, **fields)
        self.touched[atom_id] = None

    def scrub_atom(self, atom_id: str) -> None:
        self._tx.scrub_atom(atom_id)
        self.touched[atom_id] = None

    def delete_atom(self, atom_id: str) -> None:
        atom = self._store.get_atoms([atom_id]).get(atom_id)
        if atom is not None and atom.vault_path:
            self.removed[atom_id] = atom.vault_path
        self._tx.delete_atom(atom_id)
        self.touched[atom_id] = None
