"""The engine's core: construction, the write path, recall, corrections, governance, audit."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Self

from ulid import ULID

from ..config import Settings
from .. import vault
from ..errors import AuthorizationRequired, InvalidInput, NotFound
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
from ..search import fusion
from ..search.embed import Embedder, make_embedder
from ..search.tokenize import normalize, to_simplified, tokens
from ..stamps import chain_hash, content_hash
from ..storage import open_store
from ..storage.base import Store
from ..write.admission import Dura, score_dura
from ..write.admission import infer_type as _infer_type
from ..write.classify import classify
from ..write.entities import extract_entities
from ..write.redact import redact

__all__ = ["EngineCore", "GATES", "PLACEHOLDERS", "verify_chain", "visible_content"]

# `_persist(vector=...)` default: call the model for this one atom.
_EMBED: Any = object()

# Write gates of `memorize`: "hold" keeps every admitted save pending (transcript observations).
GATES = ("admit", "review", "hold", "trusted")

log = logging.getLogger("memoryd")

PLACEHOLDERS = {
    "quarantined": "[quarantined: content hidden pending review]",
    "sealed": "[sealed: content visible to audit only]",
    "tombstoned": "[tombstoned: content destroyed]",
}
_CJK = re.compile(r"[\u3400-\u9fff]")
# Soft-forgotten memories rank lower but are never dropped from recall.
_DECAY_WEIGHT = {"fresh": 1.0, "stale": 0.95, "soft_forgotten": 0.85}


def _norm_hash(content: str) -> str:
    return hashlib.sha256(normalize(content).encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _clean(text: str) -> str:
    """What is stored of a text: LF newlines, no surrounding blanks, secrets redacted."""
    return redact(text.replace("\r\n", "\n").replace("\r", "\n").strip()).text


def verify_chain(store: Store) -> ChainReport:
    """Recompute a store's hash chain, payload hashes and each live atom's content hash."""
    events = store.events()
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
    atoms = store.get_atoms(last_content)
    for atom_id, expected_hash in last_content.items():
        atom = atoms.get(atom_id)
        if atom is None or atom.status == "tombstoned":
            continue
        if content_hash(atom.content) != expected_hash:
            return ChainReport(ok=False, events=len(events), problem=f"atom {atom_id} content differs from its audit chain")
    return ChainReport(ok=True, events=len(events))


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
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, enforce_sensitive: bool = False
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.scope = scope
        self.enforce_sensitive = enforce_sensitive
        self.vault_root = settings.home / "vault"

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        cwd: str | Path | None = None,
        embedder: Embedder | None = None,
        enforce_sensitive: bool = False,
    ) -> Self:
        """Open the store named by `settings` (default: environment) for the scope of `cwd`.

        `enforce_sensitive` makes every read of a sensitive scope without a grant raise
        AuthorizationRequired (agent surfaces set it; a person at the CLI is the authority).
        """
        settings = settings or Settings()
        return cls(
            settings, open_store(settings), embedder or make_embedder(settings.embedder), infer_scope(cwd),
            enforce_sensitive=enforce_sensitive,
        )  # fmt: skip

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Any]:
        """One write transaction; every atom it touches gets its markdown file synced before commit."""
        with self.store.transaction() as tx:
            tracked = _TrackedTx(tx)
            yield tracked
            batch = len(tracked.touched) > 1  # e.g. an import batch: one sync for all its files
            for atom_id in tracked.touched:
                self._sync_file(tx, atom_id, durable=not batch)
            if batch:
                vault.flush_all()  # before the commit: an acknowledged memory's file is on disk

    def _sync_file(self, tx: Any, atom_id: str, *, durable: bool = True) -> None:
        """Make the vault match the database for one atom: active → file written, else removed."""
        atom = self.store.get_atoms([atom_id]).get(atom_id)
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

    def _guard_read(self, scope_hash: str, name: str | None = None) -> None:
        """Refuse reads of a sensitive scope without a running grant (agent surfaces only)."""
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

    def _validate_content(self, content: object, what: str = "content") -> str | None:
        """Return a rejection reason, or None when the text is acceptable."""
        if not isinstance(content, str):
            return f"{what} must be a string"
        if not content.strip():
            return f"{what} is empty"
        if len(content) > self.settings.max_content_chars:
            return f"{what} is {len(content)} characters; the limit is {self.settings.max_content_chars}"
        return None

    def _new_atom(
        self, content: str, *, type: str, source: str, scope: Scope, status: str = "active",
        title: str | None = None, tags: Sequence[str] = (), triggers: Sequence[str] = (),
        supersedes: str | None = None, entities: Sequence[str] | None = None,
    ) -> tuple[Atom, list[str]]:  # fmt: skip
        c = classify(content)
        entity_ids = list(entities) if entities is not None else [e.id for e in extract_entities(content)]
        now = _now()
        atom = Atom(
            id=str(ULID()), content=content, type=type, source=source, scope=scope,
            scope_hash=scope.scope_hash, epistemic=c.epistemic, polarity=c.polarity, status=status,
            created_at=now, updated_at=now, title=title, tags=list(tags), triggers=list(triggers),
            supersedes=supersedes, entities=entity_ids,
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
        """The atom with this id (content as stored). Raises NotFound, AuthorizationRequired."""
        atom = self.store.get_atoms([atom_id]).get(atom_id)
        if atom is None:
            raise NotFound(f"no atom with id {atom_id!r}")
        self._guard_read(atom.scope_hash, atom.scope.name)
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
    ) -> MemorizeResult:
        """Write one memory through the full write path (SPEC §2).

        `gate` is "admit" (junk rejected, the rest stored), "review" (grey-zone saves wait as
        `pending`), "hold" (every save that is not junk waits as `pending`: transcript
        observations), or "trusted" (no DURA gate: importers, passive capture).
        """
        draft = self._prepare_memory(
            content, source=source, type=type, title=title, tags=tags, triggers=triggers, gate=gate, scope=scope,
            actor=actor, origin=origin,
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
    ) -> _Draft | MemorizeResult:
        """Everything of the write path before the transaction: validate, redact, dedup, admit, classify.

        Returns the atom ready to write, or the result (rejected / duplicate) that ends the save.
        `batch` maps (scope hash, normalised-content hash) → the atom of drafts not yet committed,
        so a batch writer deduplicates within the batch too; a new draft is added to it.
        """
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
        return _Draft(atom=atom, dura=d, gate=gate, origin=origin, actor=actor or source)

    def _store_draft(self, tx: Any, draft: _Draft, vector: Any) -> MemorizeResult:
        """Write a prepared memory inside an open `_write()` transaction (with its promotion if held)."""
        atom, d = draft.atom, draft.dura
        self._persist(tx, atom, actor=draft.actor, action="create", reason=None, vector=vector)
        dura = d.as_dict() if d is not None else None
        if atom.status == "pending" and d is not None:
            promotion_id = tx.insert_promotion(
                atom_id=atom.id, scope_hash=atom.scope_hash, origin=draft.origin, scores=d.as_dict(),
                reasoning=d.reasoning,
            )  # fmt: skip
            why = f"every {draft.origin} waits for review" if draft.gate == "hold" else "the DURA score is in the grey zone"
            return MemorizeResult(
                atom_id=atom.id, effect="applied", status="pending", promotion_id=promotion_id, dura=dura,
                reason=f"held for review: {why} ({d.reasoning})",
            )  # fmt: skip
        return MemorizeResult(atom_id=atom.id, effect="applied", status="active", dura=dura)

    def handoff(self, summary: str, *, source: str = "agent", scope: Scope | None = None) -> HandoffResult:
        """Write a session handoff; the next session's brief shows the latest one first."""
        problem = self._validate_content(summary, "summary")
        if problem is not None:
            return HandoffResult(effect="rejected", reason=problem)
        scope = scope or self.scope
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
        atom = self.store.get_atoms([target_atom]).get(target_atom)
        if atom is None:
            return reject(f"no atom with id {target_atom!r}")
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
            with self._write() as tx:
                self._persist(tx, new, actor=actor, action="replace", reason=reason)
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
        with self._write() as tx:
            tx.update_atom(atom.id, **fields)
            tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=None)
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
        atom = self.store.get_atoms([target_atom]).get(target_atom)
        if atom is None:
            return reject(f"no atom with id {target_atom!r}")
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
        atom = self.store.get_atoms([atom_id]).get(atom_id)
        if atom is None:
            return GovernResult(effect="rejected", target_atom=atom_id, reason=f"no atom with id {atom_id!r}")
        if atom.status != "quarantined":
            return GovernResult(
                effect="rejected", target_atom=atom_id, reason=f"atom is {atom.status}; only quarantined atoms restore"
            )
        if not reason.strip():
            return GovernResult(effect="rejected", target_atom=atom_id, reason="reason is required")
        with self._write() as tx:
            tx.update_atom(atom.id, status=atom.prior_status or "active", prior_status=None)
            tx.append_event(atom_id=atom.id, actor=actor, action="restore", reason=reason.strip(), content=None)
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
    ) -> RecallResult:
        """Hybrid search over the current repository and the tenant-global scope.

        Raises:
            InvalidInput: empty query, or max_results outside 1..100.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        if not isinstance(max_results, int) or not 1 <= max_results <= 100:
            raise InvalidInput(f"max_results must be between 1 and 100, got {max_results!r}")
        if types is not None:
            unknown = [t for t in types if t not in ATOM_TYPES]
            if unknown:
                raise InvalidInput(f"unknown type(s) {unknown}; expected any of {', '.join(ATOM_TYPES)}")
        statuses = list(statuses or (["active", "negated"] if include_negated else ["active"]))
        current = scope or self.scope
        self._guard_read(current.scope_hash, current.name)
        scopes = self._recall_scopes(scope)
        q_terms = list(dict.fromkeys(tokens(query, query=True)))
        q_entities = [e.id for e in extract_entities(query)]
        boost = list(entity_ids or [])
        pool = max(50, max_results * 5)

        candidates: dict[str, float | None] = {}
        total, df = self.store.term_stats(q_terms)
        for atom_id in self.store.keyword_candidates(
            q_terms, scope_hashes=scopes, statuses=statuses, limit=pool, stats=(total, df)
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
            list(dict.fromkeys(q_entities + boost)), scope_hashes=scopes, statuses=statuses, limit=pool
        ):
            candidates.setdefault(atom_id, None)
        if q_vec is not None:
            missing = [i for i, cos in candidates.items() if cos is None]
            candidates.update(self.store.cosines(q_vec, missing))
        facts = self.store.candidate_facts(list(candidates))
        keyword = fusion.keyword_scorer(q_terms, total, df)
        floor, ceil = self.embedder.cosine_floor, self.embedder.cosine_ceil
        now = _now()
        scored: list[tuple[float, str, dict[str, float]]] = []
        for atom_id, cos in candidates.items():
            fact = facts.get(atom_id)
            if fact is None or fact.status not in statuses or fact.scope_hash not in scopes:
                continue
            if types is not None and fact.type not in types:
                continue
            signals = {
                "keyword": keyword(fact.terms),
                "semantic": fusion.semantic_score(cos, floor, ceil),
                "entity": max(
                    fusion.entity_score(q_entities, fact.entities), fusion.entity_score(boost, fact.entities)
                ),
            }
            score = fusion.fuse(signals) * _DECAY_WEIGHT[decay_state(fact, now)]
            if fact.status == "negated":
                score *= 0.8  # shown on request, never above live knowledge
            score = round(score, 4)
            if score > 0:
                scored.append((score, atom_id, signals))
        scored.sort(key=lambda s: (-s[0], s[1]))
        scored = scored[:max_results]
        atoms = self.store.get_atoms(atom_id for _, atom_id, _ in scored)  # full atoms for the hits only
        hits = [
            Hit(atom=atoms[atom_id], score=score, signals={k: round(v, 4) for k, v in signals.items()})
            for score, atom_id, signals in scored
            if atom_id in atoms  # deleted between the two reads
        ]
        self.store.touch([h.atom.id for h in hits])
        return RecallResult(hits=hits)

    def history(self, atom_id: str) -> list[Event]:
        """Every audit event of an atom, oldest first. Raises NotFound."""
        events = self.store.events(atom_id)
        if not events:
            raise NotFound(f"no atom with id {atom_id!r}")
        return events

    def verify_chain(self) -> ChainReport:
        """Recompute the hash chain, payload hashes and each live atom's content hash."""
        return verify_chain(self.store)

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

    def agent_brief(self, scope: Scope | None = None) -> Brief:
        """The session-start brief: latest handoff, constraints, preferences, recent decisions."""
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
        everything = [*handoffs, *constraints, *prefs, *decisions]
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

        for title, atoms in zip(labels[:4], (handoffs, constraints, prefs, decisions), strict=True):
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
            preferences=prefs, decisions=decisions, pending_review=pending,
        )  # fmt: skip


_GUIDE = (
    "memoryd: no memories for this project yet.\n"
    "- Save what you learn that will still matter later (decisions, constraints, preferences, "
    "facts, warnings) with memory_memorize / mem_save, one self-contained sentence each.\n"
    "- Before answering from assumptions, search with memory_recall / mem_search using noun phrases.\n"
    "- Fix outdated memories with memory_correct (replace), and end a task with memory_handoff."
)


def _labels(sample: str) -> tuple[str, str, str, str, str]:
    if len(_CJK.findall(sample)) * 2 < len(sample.replace(" ", "")) * 0.3:
        return ("Latest handoff", "Constraints", "Preferences", "Recent decisions", "Pending review: {n}")
    if to_simplified(sample) != sample:
        return ("最近交接", "約束", "偏好", "近期決策", "待審核：{n} 條")
    return ("最近交接", "约束", "偏好", "近期决策", "待审核：{n} 条")


@dataclass
class _Draft:
    """A memory that passed validation, dedup and admission: the atom to write and why."""

    atom: Atom
    dura: Dura | None
    gate: str
    origin: str
    actor: str


class _TrackedTx:
    """A transaction that remembers which atoms it wrote, so their files follow."""

    def __init__(self, tx: Any) -> None:
        self._tx = tx
        self.touched: dict[str, None] = {}

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
