"""Memory operations of the memoryd profile: update and delete in place, search, context, timeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import Conflict, InvalidInput, NotFound
from ..lifecycle.decay import decay_state, parse_since
from ..limits import LIMITS, check_text, check_texts
from ..models import Atom, RecallResult, Scope
from ..search.tokenize import tokens
from ..write.classify import classify
from ..write.entities import extract_entities
from ..write.redact import redact
from .core import _norm_hash, _shown

if TYPE_CHECKING:
    from .core import EngineCore

    _Base = EngineCore
else:
    _Base = object

__all__ = ["MemoryOps"]


class MemoryOps(_Base):
    def resolve_scope(self, scope: str | None) -> Scope:
        """`auto` (or anything an agent passes) → the inferred scope; `global` → the tenant-wide scope."""
        return self.resolve_scope_arg(scope)[0]

    def resolve_scope_arg(self, scope: object) -> tuple[Scope, str | None]:
        """(the scope an agent's `scope` argument resolves to, a warning when it named another one).

        An agent cannot choose a repository: `global` is the tenant-wide scope, everything else the
        inferred one. A value naming another repository is answered with a warning saying where the
        memory went, never silently.
        """
        if scope == "global":
            return self.scope.global_scope(), None
        if scope is not None and not isinstance(scope, str):
            raise InvalidInput(f"scope must be a string, got {type(scope).__name__}")
        check_text("scope", scope)
        own = self.scope
        if scope in (None, "", "auto", own.scope_hash, own.name, own.repository):
            return own, None
        return own, (f"scope {_shown(scope)} names another scope; an agent acts only on this repository "
                     f"({own.name}, scope_hash {own.scope_hash}) or \"global\", so this call used {own.name}")

    def scope_input_warning(self, given: dict[str, object] | None) -> str | None:
        """A warning when an HMG `scope` input names another tenant, workspace or repository."""
        if not given:
            return None
        own = self.scope
        for key, mine in (("tenant_id", own.tenant_id), ("workspace", own.workspace), ("repository", own.repository)):
            value = given.get(key)
            if value not in (None, "", mine):
                return (f"scope.{key} {_shown(value)} differs from this repository's ({mine!r}); the scope is "
                        f"inferred from the working directory, so this call used {own.name} "
                        f"(scope_hash {own.scope_hash})")
        return None

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
        self._check_fields(title=title, tags=tags, triggers=triggers, source=actor)
        check_text("reason", reason)
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
            if value is not None:
                clean = [redact(str(v)).text for v in value]
                if clean != getattr(atom, key):
                    fields[key] = clean
        if title is not None and redact(title).text != atom.title:
            fields["title"] = redact(title).text
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
            tx.append_event(atom_id=atom.id, actor=actor, action="update",
                            reason=redact(reason).text if reason else f"updated {changed}",
                            content=new_content)  # fmt: skip
        return self.store.get_atoms([atom.id])[atom.id]

    def delete(self, memory_id: str, *, actor: str = "agent", reason: str = "deleted") -> str:
        """Remove a memory: unlink its file, destroy its content, delete the row. Returns the file path."""
        atom = self._find_atom(memory_id)
        if atom is None:
            raise NotFound(f"no memory with id {_shown(memory_id)}")
        path = self.path_of(atom)
        with self._write() as tx:  # the file goes after the commit (see EngineCore._write)
            tx.delete_atom(atom.id)
            tx.append_event(atom_id=atom.id, actor=actor, action="delete", reason=reason, content=None)
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
        if isinstance(neighbors, bool) or not isinstance(neighbors, int) or not 0 <= neighbors <= 50:
            raise InvalidInput(f"neighbors must be between 0 and 50, got {neighbors!r}")
        anchor = self.get(memory_id)
        before, after = self.store.neighbors(anchor.id, scope_hash=anchor.scope_hash, n=neighbors)
        return before, anchor, after

    def timeline(
        self, *, scope: str | None = "auto", since: str = "30d", types: Sequence[str] | None = None, limit: int = 100
    ) -> list[Atom]:
        """Active memories of a scope, newest first, soft-forgotten ones left out."""
        from .core import _now

        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIMITS["limit"][0]:
            raise InvalidInput(f"limit must be between 1 and {LIMITS['limit'][0]}, got {limit!r}")
        self._check_types(types)
        check_text("since", since, required=True)
        now = _now()
        start = parse_since(since, now)
        target = self.resolve_scope(scope)
        if not self._reach(target.scope_hash, target.name):
            raise NotFound(f"no scope {target.name!r} within reach")
        atoms = self.store.atoms_since(scope_hashes=[target.scope_hash], since=start, types=types, limit=limit * 2)
        return [a for a in atoms if decay_state(a, now) != "soft_forgotten"][:limit]

    def _check_types(self, types: Sequence[str] | None) -> None:
        from ..models import ATOM_TYPES

        if types is not None:
            check_texts("types", "id", types)
            unknown = [t for t in types if t not in ATOM_TYPES]
            if unknown:
                raise InvalidInput(f"unknown type(s) {unknown}; expected any of {', '.join(ATOM_TYPES)}")

