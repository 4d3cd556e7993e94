"""Memory operations of the memoryd profile: update and delete in place, search, context, timeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import vault
from ..errors import Conflict, InvalidInput, NotFound
from ..lifecycle.decay import decay_state, parse_since
from ..models import Atom, RecallResult, Scope
from ..search.tokenize import tokens
from ..write.classify import classify
from ..write.entities import extract_entities
from ..write.redact import redact
from .core import _norm_hash

if TYPE_CHECKING:
    from .core import EngineCore

    _Base = EngineCore
else:
    _Base = object

__all__ = ["MemoryOps"]


class MemoryOps(_Base):
    def resolve_scope(self, scope: str | None) -> Scope:
        """`auto` (or anything an agent passes) → the inferred scope; `global` → the tenant-wide scope."""
        return self.scope.global_scope() if scope == "global" else self.scope

    def _active(self, memory_id: str) -> Atom:
        atom = self.get(memory_id)
        if atom.status not in ("active", "pending"):
            raise Conflict(f"memory {memory_id} is {atom.status}; only active or pending memories can change")
        return atom

    def reindex(self, tx: Any, atom: Atom) -> None:
        """Refresh keyword terms, vector and entity links of an atom changed in place."""
        extra = " ".join([atom.title or "", *atom.tags, *atom.triggers]).strip()
        vector = self._embed(atom.content)
        tx.replace_terms(atom.id, tokens(f"{atom.content} {extra}" if extra else atom.content), vector)
        tx.unlink_entities(atom.id)
        for entity_id in atom.entities:
            tx.link(atom.id, entity_id, "mentions")

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        triggers: Sequence[str] | None = None,
        title: str | None = None,
        actor: str = "agent",
        reason: str | None = None,
    ) -> Atom:
        """Patch a memory in place (body, tags, triggers, title), with an audit event.

        Raises:
            NotFound, Conflict (not active), InvalidInput (bad content or nothing to change).
        """
        atom = self._active(memory_id)
        fields: dict[str, Any] = {}
        new_content = None
        if content is not None:
            problem = self._validate_content(content)
            if problem:
                raise InvalidInput(problem)
            new_content = redact(content.strip()).text
            if new_content != atom.content:
                fields.update(content=new_content, polarity=classify(new_content).polarity)
            else:
                new_content = None
        for key, value in (("tags", tags), ("triggers", triggers)):
            if value is not None and list(value) != getattr(atom, key):
                fields[key] = [str(v) for v in value]
        if title is not None and title != atom.title:
            fields["title"] = title
        if not fields:
            raise InvalidInput("nothing to update: pass content, tags, triggers or title that differ")
        code = None
        if new_content is not None:
            fields["norm_hash"] = _norm_hash(new_content)
            # New text, new anchors: what it names now, plus its explicit anchors taken again at HEAD.
            renamed = atom.model_copy(update={"content": new_content,
                                              "entities": [e.id for e in extract_entities(new_content)]})  # fmt: skip
            code, _ = self._auto_anchors(renamed, self._carried_anchors(atom))  # type: ignore[attr-defined]
        with self._write() as tx:
            tx.update_atom(atom.id, **fields)
            updated = atom.model_copy(update={k: v for k, v in fields.items() if k != "norm_hash"})
            if new_content is not None:
                updated = updated.model_copy(update={"entities": [e.id for e in extract_entities(new_content)]})
                tx.set_anchors(atom.id, code or [])
            self.reindex(tx, updated)
            changed = ",".join(k for k in fields if k != "norm_hash")
            tx.append_event(atom_id=atom.id, actor=actor, action="update", reason=reason or f"updated {changed}",
                            content=new_content)  # fmt: skip
        return self.store.get_atoms([atom.id])[atom.id]

    def delete(self, memory_id: str, *, actor: str = "agent", reason: str = "deleted") -> str:
        """Remove a memory: unlink its file, destroy its content, delete the row. Returns the file path."""
        atom = self.store.get_atoms([memory_id]).get(memory_id)
        if atom is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        path = self.path_of(atom)
        with self.store.transaction() as tx:
            tx.delete_atom(atom.id)
            tx.append_event(atom_id=atom.id, actor=actor, action="delete", reason=reason, content=None)
            if path is not None:
                vault.remove(path)
        return str(path) if path else ""

    def search(
        self,
        query: str,
        *,
        scope: str | None = "auto",
        top_k: int = 10,
        types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None,
        path: str | None = None,
        symbol: str | None = None,
    ) -> RecallResult:
        """mem_search: recall with types as a post-filter, entity ids as a boost, path/symbol as anchor filters."""
        return self.recall(query, max_results=top_k, types=types, entity_ids=entity_ids, scope=self.resolve_scope(scope),
                           path=path, symbol=symbol)  # fmt: skip

    def context(self, memory_id: str, *, neighbors: int = 3) -> tuple[list[Atom], Atom, list[Atom]]:
        """The memories created just before and after one memory, in its scope."""
        if not isinstance(neighbors, int) or not 0 <= neighbors <= 50:
            raise InvalidInput(f"neighbors must be between 0 and 50, got {neighbors!r}")
        anchor = self.get(memory_id)
        before, after = self.store.neighbors(anchor.id, scope_hash=anchor.scope_hash, n=neighbors)
        return before, anchor, after

    def timeline(
        self, *, scope: str | None = "auto", since: str = "30d", types: Sequence[str] | None = None, limit: int = 100
    ) -> list[Atom]:
        """Active memories of a scope, newest first, soft-forgotten ones left out."""
        from .core import _now

        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit must be between 1 and 1000, got {limit!r}")
        self._check_types(types)
        now = _now()
        start = parse_since(since, now)
        target = self.resolve_scope(scope)
        self._guard_read(target.scope_hash, target.name)
        atoms = self.store.atoms_since(scope_hashes=[target.scope_hash], since=start, types=types, limit=limit * 2)
        return [a for a in atoms if decay_state(a, now) != "soft_forgotten"][:limit]

    def _check_types(self, types: Sequence[str] | None) -> None:
        from ..models import ATOM_TYPES

        if types is not None:
            unknown = [t for t in types if t not in ATOM_TYPES]
            if unknown:
                raise InvalidInput(f"unknown type(s) {unknown}; expected any of {', '.join(ATOM_TYPES)}")

