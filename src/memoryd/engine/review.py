"""Promotion review (pending → promoted or rejected) and supersede judgments."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from ..shared.errors import InvalidInput, NotFound
from ..shared.limits import check_count, check_text
from ..shared.models import Atom, Promotion
from ..storage.base import MemoryReads, Vector
from ..text.judge import Judgment, band, judge, suggest_topic_key
from ..text.llm import LLM, LLMError, llm_from_env
from .core import Core
from .linking import Link, Linker

__all__ = ["Review"]


def _check_unit(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(f"{name} must be a number between 0.0 and 1.0, got {value!r}")
    return float(value)


class Review:
    def __init__(self, core: Core, linker: Linker, *, memories: MemoryReads,
                 embed: Callable[[str], Vector | None]) -> None:  # fmt: skip
        self.memories = memories
        self.core = core
        self.linker = linker  # a promoted memory links to the memories of its scope then (step 4b)
        self.embed = embed
        self.llm_error: str | None = None  # why the configured LLM is unusable (for doctor)

    def _scopes(self, scope: str | None) -> list[str] | None:
        """`global` (the default) reviews every scope within reach; `auto` the current one; else a scope hash.

        An agent's "every scope" is its repository and the tenant's global scope; a scope hash out of
        reach is `not_found`, as is one that holds nothing.
        """
        if scope is not None and not isinstance(scope, str):
            raise InvalidInput(f"scope must be a string, got {type(scope).__name__}")
        check_text("scope", scope)
        reach = self.core.reachable_scopes()
        if scope in (None, "global"):
            return reach
        if scope == "auto":
            return [self.core.scope.scope_hash]
        if reach is not None and scope not in reach:
            raise NotFound(f'no scope {scope!r} within reach (pass "auto" or "global")')
        return [scope]

    def review_pending(
        self, *, scope: str | None = "global", limit: int = 10, min_score: float = 0.0, max_score: float = 1.0,
        types: Sequence[str] | None = None,
    ) -> list[tuple[Promotion, Atom]]:  # fmt: skip
        """Pending promotions, least certain (lowest DURA average) first."""
        core = self.core
        lo, hi = _check_unit("min_score", min_score), _check_unit("max_score", max_score)
        if lo > hi:
            raise InvalidInput(f"min_score {lo} is above max_score {hi}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidInput(f"limit must be between 1 and 100, got {limit!r}")
        core.check_types(types)
        scopes = self._scopes(scope)
        if scope not in (None, "global"):
            for h in scopes or []:
                core.reach(h)  # AuthorizationRequired when an agent names a sensitive scope
        rows = self.memories.list_promotions(scope_hashes=scopes, min_score=lo, max_score=hi, types=types, limit=limit)
        atoms = self.memories.get_atoms(p.atom_id for p in rows)
        # Listing everything never leaks a sensitive scope.
        return [(p, atoms[p.atom_id]) for p in rows if not core.enforce_sensitive or not core.locked(p.scope_hash)]

    def _decide(self, ids: Sequence[int], to: str, actor: str) -> tuple[list[int], list[dict[str, Any]]]:
        check_count("ids", ids, field="promotion_ids")
        bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, int)]
        if bad:
            raise InvalidInput(f"promotion_ids must be integers, got {bad[0]!r}")
        found = self.memories.get_promotions(list(ids))
        # The scope boundary: a promotion of a scope out of reach is reported exactly as a missing one.
        found = {pid: p for pid, p in found.items() if self.core.reach(p.scope_hash)}
        links: dict[str, Link | None] = {}
        atoms: dict[str, Atom] = {}
        if to == "promoted":  # judged before the transaction (the model and the index searches take a while)
            atoms = self.memories.get_atoms(p.atom_id for p in found.values() if p.status == "pending")
            for atom in atoms.values():
                active = atom.model_copy(update={"status": "active"})
                links[atom.id] = self.linker.find(active, self.embed(atom.content))
        done: list[int] = []
        skipped: list[dict[str, Any]] = []
        with self.core.write() as tx:
            for pid in dict.fromkeys(ids):
                p = found.get(pid)
                if p is None or p.status != "pending":
                    why = f"no promotion with id {pid}" if p is None else f"promotion {pid} is already {p.status}"
                    skipped.append({"promotion_id": pid, "reason": why})
                    continue
                tx.records.decide_promotion(pid, to)
                link = links.get(p.atom_id)
                if link is not None and not self.linker.current(link):
                    link = None
                reason = f"promotion {pid}" + (f"; {self.linker.reason(link)}" if link is not None else "")
                if to == "promoted" and link is not None:
                    atom = self.linker.prepare(atoms[p.atom_id].model_copy(update={"status": "active"}), link)
                    tx.update_atom(p.atom_id, status=atom.status, superseded_by=atom.superseded_by,
                                   supersedes=atom.supersedes, prior_status="pending")  # fmt: skip
                else:
                    tx.update_atom(p.atom_id, status="active" if to == "promoted" else "sealed", prior_status="pending")
                tx.append_event(atom_id=p.atom_id, actor=actor, action="promote" if to == "promoted" else "reject",
                                reason=reason, content=None)  # fmt: skip
                if to == "promoted" and link is not None:
                    self.linker.apply(tx, atom, link, actor=actor)
                done.append(pid)
        return done, skipped

    def promote(
        self, promotion_ids: Sequence[int] | None = None, *, auto_high: bool = False, threshold: float = 0.85,
        scope: str | None = "global", actor: str = "agent",
    ) -> tuple[list[int], list[dict[str, Any]]]:  # fmt: skip
        """Promote by ids, or every pending candidate with DURA average ≥ threshold (in scope)."""
        threshold = _check_unit("threshold", threshold)
        if not promotion_ids and not auto_high:
            raise InvalidInput("pass promotion_ids, or auto_high=true to promote every candidate above threshold")
        ids = list(promotion_ids or [])
        if auto_high:
            high = self.memories.list_promotions(scope_hashes=self._scopes(scope), min_score=threshold, limit=10_000)
            ids += [p.id for p in high]
        return self._decide(ids, "promoted", actor)

    def reject(self, promotion_ids: Sequence[int], *, actor: str = "agent") -> tuple[list[int], list[dict[str, Any]]]:
        """Reject candidates: no markdown file, the atom is sealed, the audit record stays."""
        if not promotion_ids:
            raise InvalidInput("promotion_ids is empty")
        return self._decide(list(promotion_ids), "rejected", actor)

    # -- judgments --------------------------------------------------------------------------

    @cached_property
    def llm(self) -> LLM | None:
        """The configured LLM, or None; a broken configuration is kept in `llm_error` for doctor."""
        try:
            return llm_from_env()
        except LLMError as exc:
            self.llm_error = exc.message
            return None

    def judge(self, new_text: str, old_atom_id: str) -> tuple[Judgment, str]:
        """Does `new_text` supersede the memory? Returns (judgment, band); applies nothing."""
        problem = self.core.validate_content(new_text, "new_text")
        if problem:
            raise InvalidInput(problem)
        old = self.core.get(old_atom_id)
        j = judge(new_text, old.content, llm=self.llm)  # redacted as it came in: it may go to an LLM or a log
        return j, band(j.confidence, j.type)

    def compare(self, atom_id_a: str, atom_id_b: str) -> tuple[Atom, Atom, list[str], Judgment, str]:
        """Diff two memories and judge the newer against the older; applies nothing."""
        a, b = self.core.get(atom_id_a), self.core.get(atom_id_b)
        old, new = (a, b) if a.id <= b.id else (b, a)  # ULIDs sort by creation time
        diff = [line.rstrip("\n") for line in difflib.unified_diff(a.content.splitlines(), b.content.splitlines(),
                                                                   "a", "b", lineterm="", n=1)]  # fmt: skip
        j = judge(new.content, old.content, llm=self.llm)
        return a, b, diff, j, band(j.confidence, j.type)

    def suggest_topic_key(self, content: str) -> tuple[str, str]:
        problem = self.core.validate_content(content)
        if problem:
            raise InvalidInput(problem)
        return suggest_topic_key(content, llm=self.llm)
