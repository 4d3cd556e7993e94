"""The write path (SPEC §2) and every change to a memory: save, hand off, correct, govern, restore,
patch in place, delete."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, NoReturn

from ulid import ULID

from ..anchors.model import Anchor
from ..formats import vault
from ..search.embed import Embedder
from ..search.tokenize import normalize, tokens
from ..shared.errors import Conflict, InvalidInput, NotFound, Rejected
from ..shared.limits import LIMITS, check_text, check_texts
from ..shared.models import (
    ATOM_TYPES,
    CORRECT_ACTIONS,
    GOVERN_ACTIONS,
    Atom,
    AtomType,
    CorrectResult,
    GovernResult,
    HandoffResult,
    MemorizeResult,
    PatchResult,
    Scope,
    Status,
)  # fmt: skip
from ..shared.stamps import norm_hash, utc_now, written_time
from ..storage.base import AtomUpdate, IndexReads, MemoryReads, Vector
from ..text.admission import Dura, infer_type, score_dura
from ..text.classify import classify
from ..text.entities import extract_entities
from .anchoring import Anchors
from .core import Core, clean, shown
from .linking import Link, Linker
from .tracked import TrackedTx, check_source

__all__ = ["GATES", "Draft", "Embedded", "Writer"]

log = logging.getLogger("memoryd")

# Write gates of `memorize`: "hold" keeps every admitted save pending (transcript observations).
GATES = ("admit", "review", "hold", "trusted")
Batch = dict[tuple[str, str], Atom]  # (scope hash, normalised-content hash) → a draft not committed yet


class Embedded(NamedTuple):
    """A text's vectors: the main model's (recall's candidates, every language) and the English model's."""

    main: Vector | None
    english: Vector | None = None


@dataclass
class Draft:
    """A memory that passed validation, dedup and admission: the atom to write and why."""

    atom: Atom
    dura: Dura | None
    gate: str
    origin: str
    actor: str
    anchors: list[Anchor] = field(default_factory=list)
    anchor_note: str | None = None
    link: Link | None = None  # what it does to a memory already stored (step 4b), found once it has a vector


def _vectors(model: Embedder, texts: Sequence[str], failure: str) -> list[Vector | None]:
    try:
        return list(model.passages(list(texts)))
    except Exception:  # a broken model must not lose the write; coverage shows the gap
        log.exception(failure)
        return [None] * len(texts)


def _reason_problem(reason: object) -> str | None:
    if not isinstance(reason, str) or not reason.strip():
        return "reason is required"
    if len(reason) > LIMITS["reason"][0]:
        return f"reason is {len(reason)} characters; the limit is {LIMITS['reason'][0]}"
    return None


class Writer:
    """Every write of a memory, through `Core.write()` (one transaction, vault in step)."""

    def __init__(
        self, core: Core, anchors: Anchors, linker: Linker, *, memories: MemoryReads, index: IndexReads
    ) -> None:
        self.memories = memories
        self.index = index
        self.core = core
        self.anchors = anchors
        self.linker = linker

    # -- building, storing and indexing an atom (every part that writes goes through these) ----------

    def new_atom(
        self, content: str, *, type: AtomType, source: str, scope: Scope, status: Status = "active",
        title: str | None = None, tags: Sequence[str] = (), triggers: Sequence[str] = (),
        supersedes: str | None = None, entities: Sequence[str] | None = None, written_at: datetime | None = None,
    ) -> Atom:  # fmt: skip
        """A new atom of `content`, classified, with its entities (extracted unless given)."""
        check_source(source)
        c = classify(content)
        now = utc_now()
        # its texts were redacted as they came in (`inputs`): from a caller of `Engine`, or read from disk
        return Atom(
            id=str(ULID()), content=content, type=type, source=source, scope=scope,
            scope_hash=scope.scope_hash, epistemic=c.epistemic, polarity=c.polarity, status=status, created_at=now,
            updated_at=now, title=title, tags=list(tags), triggers=list(triggers), supersedes=supersedes,
            entities=list(entities) if entities is not None else [e.id for e in extract_entities(content)],
            written_at=written_at,
        )  # fmt: skip

    def persist(self, tx: TrackedTx, atom: Atom, *, actor: str, action: str, reason: str | None,
                vector: Embedded) -> None:  # fmt: skip
        """Insert an atom with its index terms, vectors, entity edges and audit event."""
        tx.insert_atom(atom, norm_hash=norm_hash(atom.content), terms=self.index_terms(atom), vector=vector.main)
        self._set_english(tx, atom.id, vector)
        for entity_id in atom.entities:
            tx.index.link(atom.id, entity_id, "mentions")
        tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=atom.content)

    def reindex(self, tx: TrackedTx, atom: Atom, vector: Embedded) -> None:
        """Refresh keyword terms, vectors and entity links of an atom changed in place."""
        tx.index.replace_terms(atom.id, self.index_terms(atom), vector.main)
        self._set_english(tx, atom.id, vector)
        tx.index.unlink_entities(atom.id)
        for entity_id in atom.entities:
            tx.index.link(atom.id, entity_id, "mentions")

    @staticmethod
    def index_terms(atom: Atom) -> list[str]:
        extra = " ".join([atom.title or "", *atom.tags, *atom.triggers]).strip()
        return tokens(f"{atom.content} {extra}" if extra else atom.content)

    def _set_english(self, tx: TrackedTx, atom_id: str, vector: Embedded) -> None:
        english = self.core.english
        if english is not None and vector.english is not None:
            tx.index.set_model_vector(atom_id, english.name, vector.english)

    def backfill_vectors(self, *, batch: int = 64, limit: int | None = None,
                         stop: threading.Event | None = None) -> int:  # fmt: skip
        """Give each memory that has none its English vector (a store from before migration 15, or a write
        whose English model failed), `batch` at a time, oldest first; how many got one. Nothing else changes:
        no event (a vector is an index, like the keyword terms), no new `updated_at`."""
        english = self.core.english
        done = 0
        while english is not None and (limit is None or done < limit) and not (stop is not None and stop.is_set()):
            rows = self.index.missing_model_vectors(
                english.name, limit=batch if limit is None else min(batch, limit - done)
            )
            if not rows:
                break
            vectors = english.passages([content for _, content in rows])  # a model that fails stops the backfill
            with self.core.write() as tx:
                for (atom_id, _), vector in zip(rows, vectors, strict=True):
                    tx.index.set_model_vector(atom_id, english.name, vector)
            done += len(rows)
        return done

    def embed(self, text: str) -> Embedded:
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[Embedded]:
        """One call of each model for many texts; None for a model's vectors when it fails (a memory without
        its English vector gets one from `Engine.backfill_vectors`)."""
        if not texts:
            return []
        main = _vectors(self.core.embedder, texts, "embedding failed; stored without a vector")
        english = self.core.english
        if english is None:
            return [Embedded(v) for v in main]
        extra = _vectors(english, texts, "English embedding failed; stored without its English vector")
        return [Embedded(v, e) for v, e in zip(main, extra, strict=True)]

    @staticmethod
    def check_fields(*, title: object = None, tags: object = None, triggers: object = None,
                     source: object = None) -> None:  # fmt: skip
        """Limits of a memory's short fields (LIMITS). Raises InvalidInput."""
        check_text("title", title)
        check_texts("tags", "tag", tags)
        check_texts("triggers", "trigger", triggers)
        check_text("source", source)
        check_source(source)

    def memorize(
        self, content: str, *, source: str = "agent", type: str | None = None, title: str | None = None,
        tags: Sequence[str] = (), triggers: Sequence[str] = (), gate: str = "admit", scope: Scope | None = None,
        actor: str | None = None, origin: str = "save", anchors: Sequence[str] | None = None,
        replaces: str | None = None, written_at: object = None,
    ) -> MemorizeResult:  # fmt: skip
        """Write one memory through the full write path (SPEC §2).

        `gate` is "admit" (junk rejected, the rest stored), "review" (grey-zone saves wait as
        `pending`), "hold" (every save that is not junk waits as `pending`: transcript
        observations), or "trusted" (no DURA gate: importers, passive capture). `anchors` ties the
        memory to code beyond what its text names (`path`, `path::Symbol`, `Symbol`).

        One memory per fact (step 4b, `engine.linking`): a reworded restatement of a memory of the scope
        merges into it (`effect` "merged", `atom_id` the existing memory), a change of one supersedes it
        (`supersedes`), a likely change is listed for review (`review`). `replaces` names the memory this one
        replaces (an active memory of the same scope); `written_at` is when it was written at its source
        (ISO 8601; default: now), which orders supersession.

        Raises:
            InvalidInput: an explicit anchor that does not resolve, a bad `written_at`.
            NotFound: a scope out of reach; `replaces` names no memory of this scope.
            Conflict: `replaces` names a memory that is not active, or one written after this one.
        """
        draft = self.prepare(content, source=source, type=type, title=title, tags=tags, triggers=triggers,
                             gate=gate, scope=scope, actor=actor, origin=origin, anchors=anchors, replaces=replaces,
                             written_at=written_at)  # fmt: skip
        if isinstance(draft, MemorizeResult):
            return draft
        vector = self.embed(draft.atom.content)
        if draft.link is None:
            draft.link = self.linker.find(draft.atom, vector.main)
        with self.core.write() as tx:
            return self.store_draft(tx, draft, vector)

    def prepare(
        self, content: object, *, source: str, type: str | None, title: str | None, tags: Sequence[str],
        triggers: Sequence[str], gate: str, scope: Scope | None, actor: str | None, origin: str,
        batch: Batch | None = None, anchors: Sequence[str] | None = None, replaces: str | None = None,
        written_at: object = None,
    ) -> Draft | MemorizeResult:  # fmt: skip
        """Everything of the write path before the transaction: validate, dedup, admit, classify.

        Returns the atom ready to write, or the result (rejected / duplicate) that ends the save.
        `batch` holds the drafts not yet committed, so a batch writer deduplicates within the batch
        too; a new draft is added to it.
        """
        core = self.core
        try:
            self.check_fields(title=title, tags=tags, triggers=triggers, source=source)
        except InvalidInput as exc:
            raise Rejected(exc.message) from None
        problem = core.validate_content(content)
        if problem is None and type is not None and type not in ATOM_TYPES:
            problem = f"unknown type {type!r}; expected one of {', '.join(ATOM_TYPES)}"
        if problem is None and gate not in GATES:
            problem = f"unknown gate {gate!r}"
        if problem is None and (not isinstance(source, str) or not source.strip()):
            problem = "source must be a non-empty string"
        if problem is not None:
            raise Rejected(problem)
        scope = scope or core.scope
        core.reach_scope(scope)
        written = written_time(written_at)
        link = None if replaces is None else self.linker.explicit(replaces, scope, written or utc_now())
        explicit = self.anchors.explicit(anchors, scope.scope_hash)
        text = clean(str(content))
        key = (scope.scope_hash, norm_hash(text))
        if batch is not None and key in batch:
            first = batch[key]
            return MemorizeResult(atom_id=first.id, effect="no_op", deduped_with=first.id, status=first.status,
                                  reason="identical content earlier in this batch")  # fmt: skip
        duplicate = self.memories.find_duplicate(*key)
        if duplicate is not None:
            return MemorizeResult(
                atom_id=duplicate.id, effect="no_op", deduped_with=duplicate.id, status=duplicate.status,
                reason="identical content already stored in this scope", path=_str(core.path_of(duplicate)),
            )  # fmt: skip
        kind: AtomType = type or infer_type(text)  # type: ignore[assignment]
        entities = [e.id for e in extract_entities(text)]
        status: Status = "active"
        d = None
        if gate != "trusted":
            d = score_dura(text, source=source, entity_count=len(entities))
            if d.average < core.settings.dura_reject_below:
                raise Rejected(f"not worth keeping: {d.reasoning}", dura=d.as_dict())
            held = gate == "hold" or (gate == "review" and d.average < core.settings.dura_pending_below)
            if held and link is None:  # naming what it replaces is a correction: stored, like `correct replace`
                status = "pending"
        atom = self.new_atom(text, type=kind, source=source, scope=scope, status=status, title=title, tags=tags,
                             triggers=triggers, entities=entities, written_at=written)  # fmt: skip
        if batch is not None:
            batch[key] = atom
        code, note = self.anchors.auto(atom, explicit)
        return Draft(atom=atom, dura=d, gate=gate, origin=origin, actor=actor or source, anchors=code, anchor_note=note,
                     link=link)  # fmt: skip

    def store_draft(self, tx: TrackedTx, draft: Draft, vector: Embedded) -> MemorizeResult:
        """Write a prepared memory inside an open `Core.write()` transaction: with its link to a memory already
        stored (step 4b), or its promotion if held."""
        atom, d, link = draft.atom, draft.dura, draft.link
        if link is not None and not self.linker.current(link):
            link = None  # its target changed since it was judged (another write): stored on its own
        reason = None
        if link is not None:
            atom, reason = self.linker.prepare(atom, link), self.linker.reason(link)
        self.persist(tx, atom, actor=draft.actor, action="create", reason=reason, vector=vector)
        if link is not None:
            self.linker.apply(tx, atom, link, actor=draft.actor)
        if draft.anchors:
            tx.index.set_anchors(atom.id, draft.anchors)
        refs = [a.ref for a in draft.anchors] or None
        dura = d.as_dict() if d is not None else None
        if link is not None and link.kind == "merge":
            target = link.target
            return MemorizeResult(atom_id=target.id, effect="merged", status=target.status, restatement_id=atom.id,
                                  reason=reason, dura=dura, path=_str(self.core.path_of(target)))  # fmt: skip
        linked = {"reason": reason} if link is not None else {}
        if link is not None:
            key = {"supersede": "supersedes", "superseded": "superseded_by", "review": "review"}[link.kind]
            linked[key] = link.target.id
        if atom.status == "superseded":
            return MemorizeResult(atom_id=atom.id, effect="applied", status="superseded", dura=dura, anchors=refs,
                                  **linked)  # fmt: skip
        if atom.status == "pending" and d is not None:
            promotion_id = tx.records.insert_promotion(atom_id=atom.id, scope_hash=atom.scope_hash, origin=draft.origin,
                                               scores=d.as_dict(), reasoning=d.reasoning)  # fmt: skip
            why = (
                f"every {draft.origin} waits for review"
                if draft.gate == "hold"
                else "the DURA score is in the grey zone"
            )
            return MemorizeResult(atom_id=atom.id, effect="applied", status="pending", promotion_id=promotion_id,
                                  dura=dura, reason=f"held for review: {why} ({d.reasoning})", anchors=refs,
                                  anchor_note=draft.anchor_note)  # fmt: skip
        path = self.core.file_path(vault.relative_path(atom))  # published by `Core.write()` after the commit
        return MemorizeResult(atom_id=atom.id, effect="applied", status="active", dura=dura, path=_str(path),
                              anchors=refs, anchor_note=draft.anchor_note, **linked)  # fmt: skip

    def handoff(self, summary: str, *, source: str = "agent", scope: Scope | None = None) -> HandoffResult:
        """Write a session handoff; the next session's brief shows the latest one first."""
        problem = self.core.validate_content(summary, "summary")
        if problem is None and not (isinstance(source, str) and len(source) <= LIMITS["source"][0]):
            problem = f"source must be a string of at most {LIMITS['source'][0]} characters"
        if problem is not None:
            raise Rejected(problem)
        scope = scope or self.core.scope
        self.core.reach_scope(scope)
        atom = self.new_atom(clean(summary), type="handoff", source=source, scope=scope)
        vector = self.embed(atom.content)
        with self.core.write() as tx:
            self.persist(tx, atom, actor=source, action="handoff", reason=None, vector=vector)
        return HandoffResult(atom_id=atom.id, effect="applied")

    def correct(
        self, atom_id: str, action: str, reason: str, new_content: str | None = None, *, actor: str = "agent"
    ) -> CorrectResult:
        """Apply an append-only correction. Raises Rejected (with why) when it does not apply."""

        def reject(why: str) -> NoReturn:
            raise Rejected(why)

        core = self.core
        if action not in CORRECT_ACTIONS:
            reject(f"unknown action {action!r}; expected one of {', '.join(CORRECT_ACTIONS)}")
        if (problem := _reason_problem(reason)) is not None:
            reject(problem)
        atom = core.find_atom(atom_id)
        if atom is None:
            reject(f"no atom with id {shown(atom_id)}")
        if atom.status == "superseded":
            reject(f"atom is superseded by {atom.superseded_by}; correct the head of the chain instead")
        if atom.status not in ("active", "pending"):
            reject(f"atom is {atom.status}; only active atoms can be corrected")
        reason = reason.strip()
        if action == "replace":
            if new_content is None:
                reject("new_content is required for replace")
            problem = core.validate_content(new_content, "new_content")
            if problem is not None:
                reject(problem)
            text = clean(new_content)
            if normalize(text) == normalize(atom.content):
                reject("new_content is identical to the current content")
            new = self.new_atom(text, type=atom.type, source=atom.source, scope=atom.scope, title=atom.title,
                                tags=atom.tags, triggers=atom.triggers, supersedes=atom.id)  # fmt: skip
            code, _ = self.anchors.auto(new, self.anchors.carried(atom))
            vector = self.embed(new.content)
            with core.write() as tx:
                self.persist(tx, new, actor=actor, action="replace", reason=reason, vector=vector)
                if code:
                    tx.index.set_anchors(new.id, code)
                tx.update_atom(atom.id, status="superseded", superseded_by=new.id)
                tx.index.link(new.id, atom.id, "supersedes")
                tx.append_event(atom_id=atom.id, actor=actor, action="superseded", reason=reason, content=None)
            return CorrectResult(effect="applied", target_atom=atom.id, new_atom_id=new.id)
        if new_content is not None:
            reject(f"new_content is only accepted with replace, not {action}")
        fields: AtomUpdate
        if action == "negate":  # (a negated atom was refused above: only active atoms are corrected)
            fields = {"status": "negated"}
        else:
            fields = {"epistemic": {"confirm_actual": "actual", "confirm_necessary": "necessary",  # type: ignore[typeddict-item]
                                    "demote": "possible"}[action]}  # fmt: skip
        # Confirming says the memory holds for the code as it is now: its anchors move to HEAD.
        plan = self.anchors.reanchor_plan(atom) if action.startswith("confirm_") else None
        with core.write() as tx:
            tx.update_atom(atom.id, **fields)
            tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=None)
            if plan is not None:
                self.anchors.apply_reanchor(tx, atom.id, plan, actor=actor)
        return CorrectResult(effect="applied", target_atom=atom.id)

    def govern(
        self, atom_id: str, action: str, reason: str, lesson_content: str | None = None, *, actor: str = "agent"
    ) -> GovernResult:
        """Quarantine, seal, tombstone or derive a lesson. Raises Rejected (with why) when it does not apply."""

        def reject(why: str) -> NoReturn:
            raise Rejected(why)

        core = self.core
        if action not in GOVERN_ACTIONS:
            reject(f"unknown action {action!r}; expected one of {', '.join(GOVERN_ACTIONS)}")
        if (problem := _reason_problem(reason)) is not None:
            reject(problem)
        atom = core.find_atom(atom_id)
        if atom is None:
            reject(f"no atom with id {shown(atom_id)}")
        if atom.status == "tombstoned":
            reject("atom is tombstoned; nothing is left to govern")
        reason = reason.strip()
        if action in ("quarantine", "seal"):
            hidden: tuple[Status, ...] = ("quarantined", "sealed") if action == "quarantine" else ("sealed",)
            if atom.status in hidden:
                reject(f"atom is already {atom.status}")
            with core.write() as tx:
                tx.update_atom(atom.id, status="quarantined" if action == "quarantine" else "sealed",
                               prior_status=atom.status)  # fmt: skip
                tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=None)
            return GovernResult(effect="applied", target_atom=atom.id)
        if action == "tombstone":
            with core.write() as tx:
                tx.scrub_atom(atom.id)
                tx.update_atom(atom.id, status="tombstoned", prior_status=atom.status)
                tx.append_event(atom_id=atom.id, actor=actor, action="tombstone", reason=reason, content=None)
            return GovernResult(effect="applied", target_atom=atom.id)
        if lesson_content is None:  # derive_lesson
            reject("lesson_content is required for derive_lesson")
        problem = core.validate_content(lesson_content, "lesson_content")
        if problem is not None:
            reject(problem)
        lesson = self.new_atom(clean(lesson_content), type="lesson", source=actor, scope=atom.scope)
        vector = self.embed(lesson.content)
        with core.write() as tx:
            self.persist(tx, lesson, actor=actor, action="derive_lesson", reason=reason, vector=vector)
            tx.index.link(lesson.id, atom.id, "derived_from")
            if atom.status != "sealed":
                tx.update_atom(atom.id, status="sealed", prior_status=atom.status)
                tx.append_event(atom_id=atom.id, actor=actor, action="seal", reason=reason, content=None)
        return GovernResult(effect="applied", target_atom=atom.id, lesson_atom_id=lesson.id)

    def restore(self, atom_id: str, reason: str, *, actor: str = "user") -> GovernResult:
        """Bring a quarantined atom back to the state it had before, or undo the supersession or merge that
        made an atom superseded: it is active again beside its successor, the link is gone (SDK, CLI, console).
        """
        atom = self.core.find_atom(atom_id)
        if atom is None:
            raise Rejected(f"no atom with id {shown(atom_id)}")
        if atom.status not in ("quarantined", "superseded"):
            raise Rejected(f"atom is {atom.status}; only quarantined or superseded atoms restore")
        if (problem := _reason_problem(reason)) is not None:
            raise Rejected(problem)
        with self.core.write() as tx:
            if atom.status == "superseded":
                successor = self.linker.unlink(tx, atom, actor=actor, reason=reason.strip())
                why = f"{reason.strip()} (no longer superseded by {successor})"
            else:
                tx.update_atom(atom.id, status=atom.prior_status or "active", prior_status=None)
                why = reason.strip()
            tx.append_event(atom_id=atom.id, actor=actor, action="restore", reason=why, content=None)
        return GovernResult(effect="applied", target_atom=atom_id)

    def patch(
        self, atom_id: str, *, content: str | None = None, tags: Sequence[str] | None = None,
        triggers: Sequence[str] | None = None, title: str | None = None, actor: str = "agent", reason: str | None = None,
    ) -> PatchResult:  # fmt: skip
        """Patch a memory in place (body, tags, triggers, title), with an audit event.

        Raises:
            NotFound, Conflict (not active), InvalidInput (bad content or nothing to change).
        """
        core = self.core
        self.check_fields(title=title, tags=tags, triggers=triggers, source=actor)
        check_text("reason", reason)
        atom = core.get(atom_id)
        if atom.status not in ("active", "pending"):
            raise Conflict(f"memory {atom_id} is {atom.status}; only active or pending memories can change")
        fields: AtomUpdate = {}
        new_content = None
        if content is not None:
            problem = core.validate_content(content)
            if problem:
                raise InvalidInput(problem)
            new_content = content.strip()
            if new_content != atom.content:
                fields["content"], fields["polarity"] = new_content, classify(new_content).polarity
            else:
                new_content = None
        if tags is not None and (clean_tags := [str(v) for v in tags]) != atom.tags:
            fields["tags"] = clean_tags
        if triggers is not None and (clean_triggers := [str(v) for v in triggers]) != atom.triggers:
            fields["triggers"] = clean_triggers
        if title is not None and title != atom.title:
            fields["title"] = title
        if not fields:
            raise InvalidInput("nothing to update: pass content, tags, triggers or title that differ")
        updated = atom.model_copy(update=fields)
        code: list[Anchor] | None = None
        if new_content is not None:
            fields["norm_hash"] = norm_hash(new_content)
            updated = updated.model_copy(update={"entities": [e.id for e in extract_entities(new_content)]})
            # New text, new anchors: what it names now, plus its explicit anchors taken again at HEAD.
            code, _ = self.anchors.auto(updated, self.anchors.carried(atom))
        vector = self.embed(updated.content)
        changed = [k for k in fields if k != "norm_hash"]
        with core.write() as tx:
            tx.update_atom(atom.id, **fields)
            if code is not None:
                tx.index.set_anchors(atom.id, code)
            self.reindex(tx, updated, vector)
            tx.append_event(atom_id=atom.id, actor=actor, action="update",
                            reason=reason if reason else f"updated {','.join(changed)}",
                            content=new_content)  # fmt: skip
        after = self.memories.get_atoms([atom.id])[atom.id]
        return PatchResult(atom=after, path=_str(core.path_of(after)),
                           updated_fields=[k for k in changed if k in ("content", "tags", "triggers", "title")])  # fmt: skip

    def delete(self, atom_id: str, *, actor: str = "agent", reason: str = "deleted") -> str:
        """Remove a memory: unlink its file, destroy its content, delete the row. Returns the file path."""
        atom = self.core.find_atom(atom_id)
        if atom is None:
            raise NotFound(f"no memory with id {shown(atom_id)}")
        path = self.core.path_of(atom)
        with self.core.write() as tx:  # the file goes after the commit (see `Core.write`)
            tx.delete_atom(atom.id)
            tx.append_event(atom_id=atom.id, actor=actor, action="delete", reason=reason, content=None)
        return str(path) if path else ""


def _str(path: object | None) -> str | None:
    return None if path is None else str(path)
