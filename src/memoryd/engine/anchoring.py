"""Code anchors in the engine: anchoring at write, freshness on reads, re-anchoring on confirm.

The work itself is in `memoryd.anchors` (standard library only, shared with the file hook); this
part ties it to the store, the scope and the audit chain. Anchors exist only for memories of the
engine's own repository scope (a global memory is recalled in other repositories, where its paths
mean nothing) and only inside a git working tree; elsewhere anchoring is off and a save that names
code says so.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..anchors.drift import DriftChecker, freshness
from ..anchors.filectx import FileMemory, compose, compose_once
from ..anchors.git import GitRepo
from ..anchors.model import Anchor, Change
from ..anchors.resolve import AnchorError, parse_ref
from ..shared.errors import Conflict, InvalidInput
from ..shared.injected import InjectedRecord
from ..shared.limits import check_text, check_texts
from ..shared.models import Atom, ChangeKind, CodeChange, FileContext, StaleMemory
from ..storage.base import MemoryReads

if TYPE_CHECKING:
    from .core import Core
    from .tracked import TrackedTx

__all__ = ["DRIFT_WEIGHT", "Anchors", "check_filters"]

log = logging.getLogger("memoryd")

# Recall ranks a memory whose code changed a little lower: it may still be useful history.
DRIFT_WEIGHT = 0.9
_OFF = object()
_ALL = 2**31 - 1  # `stale` checks every anchored memory of the repository


def to_code_change(c: Change) -> CodeChange:
    """The model of a change the drift check made (its fields are already what the model allows: no
    validation on the recall path)."""
    return CodeChange.model_construct(kind=cast(ChangeKind, c.kind), path=c.path, symbol=c.symbol, since=c.since, to=c.to,
                                      new_symbol=c.new_symbol, aspect=c.aspect, detail=c.detail)  # fmt: skip


class Anchors:
    """Code anchors of the engine's repository: taken at write, checked on reads, moved on confirm."""

    def __init__(self, core: Core, *, memories: MemoryReads) -> None:
        self.memories = memories
        self.core = core
        self._code_state: Any = None
        self.last_checked = 0  # anchored memories the last `stale` checked

    # -- the repository ----------------------------------------------------------------------

    def checker(self) -> DriftChecker | None:
        """The drift checker of this engine's working tree; None outside git or with anchors off."""
        if self._code_state is None:
            state: Any = _OFF
            if self.core.settings.anchors and not self.core.scope.is_global and self.core.scope.root:
                try:
                    repo = GitRepo.discover(self.core.scope.root)
                except Exception:  # noqa: BLE001 - anchoring never breaks a write or a read
                    log.exception("git discovery failed; code anchors are off")
                    repo = None
                if repo is not None:
                    cache = self.core.settings.home / "cache"
                    state = DriftChecker(repo, cache / "symbols", cache / "drift")
            self._code_state = state
        return None if self._code_state is _OFF else self._code_state

    def anchorable(self, scope_hash: str) -> bool:
        return scope_hash == self.core.scope.scope_hash and not self.core.scope.is_global

    @staticmethod
    def _check_refs(anchors: object) -> list[str]:
        if anchors is None:
            return []
        if isinstance(anchors, str) or not isinstance(anchors, (list, tuple)):
            raise InvalidInput("anchors must be a list of strings: path, path::Symbol or Symbol")
        check_texts("anchors", "anchor", anchors)  # the limits table: count, length, NUL/surrogates
        refs = []
        for i, ref in enumerate(anchors):
            if not ref.strip():
                raise InvalidInput(f"anchors[{i}] must be a non-empty string")
            if any(ord(ch) < 32 for ch in ref):
                raise InvalidInput(f"anchors[{i}] contains control characters")
            refs.append(ref.strip())
        return refs

    def explicit(self, anchors: object, scope_hash: str) -> list[Anchor]:
        """Resolve the `anchors` argument of a save. Raises InvalidInput."""
        refs = self._check_refs(anchors)
        if not refs:
            return []
        if not self.anchorable(scope_hash):
            raise InvalidInput("anchors are only kept for memories of this repository, not global ones")
        checker = self.checker()
        if checker is None:
            why = (
                "code anchors are turned off (MEMORYD_ANCHORS)"
                if not self.core.settings.anchors
                else (
                    f"{self.core.scope.root or 'this directory'} is not in a git working tree, so code anchors are off"
                )
            )
            raise InvalidInput(why)
        try:
            return checker.resolver.explicit(refs)
        except AnchorError as exc:
            raise InvalidInput(str(exc)) from exc

    def auto(self, atom: Atom, explicit: Sequence[Anchor]) -> tuple[list[Anchor], str | None]:
        """The anchors of a new memory: what its text names that exists here, plus the explicit ones."""
        names_code = any(e.startswith(("entity:file:", "entity:function:")) for e in atom.entities)
        if not self.anchorable(atom.scope_hash):
            return list(explicit), None
        checker = self.checker()
        if checker is None:
            if names_code and self.core.settings.anchors:
                return [], "not in a git working tree: code anchors are off"
            return [], None
        found: dict[tuple[str, str], Anchor] = {(a.path, a.symbol): a for a in explicit}
        note = None
        try:
            auto, reports = checker.resolver.resolve_text(atom.content, atom.entities)
            for a in auto:
                found.setdefault((a.path, a.symbol), a)
            missed = [r.words() for r in reports if r.outcome != "anchored"]
            if missed:  # say what was seen and not anchored, and why (issue 26)
                note = "not anchored: " + "; ".join(missed[:8])
        except Exception:  # noqa: BLE001 - a write never fails because of anchoring
            log.exception("anchoring failed; the memory is stored without automatic anchors")
        return list(found.values()), note

    # -- freshness ---------------------------------------------------------------------------

    def code_changes(self, atom_ids: Sequence[str]) -> dict[str, tuple[str, list[CodeChange]]]:
        """atom id -> (freshness, changes) for each listed atom that has anchors (others are left out)."""
        return {
            i: (fresh, [to_code_change(c) for c in changes]) for i, (fresh, changes) in self._fresh(atom_ids).items()
        }

    def _fresh(self, atom_ids: Sequence[str], *, save: bool = True) -> dict[str, tuple[str, list[Change]]]:
        """`code_changes` with the drift check's own records (made into models only for what is shown);
        `save=False` (recall) leaves saving what was learnt to the checker's next periodic save."""
        checker = self.checker()
        if checker is None or not atom_ids:
            return {}
        found = self.memories.anchors_of(list(atom_ids))
        if not found:
            return {}
        try:
            checked: list[list[Change] | None] = list(checker.check_all(list(found.values()), save=save))
        except Exception:  # noqa: BLE001 - a read never fails because of a drift check: one memory at a time
            checked = [self._check_one(checker, atom_id, anchors) for atom_id, anchors in found.items()]
        return {atom_id: (freshness(anchors, changes) or "current", changes)
                for (atom_id, anchors), changes in zip(found.items(), checked, strict=True)
                if changes is not None}  # fmt: skip

    @staticmethod
    def _check_one(checker: DriftChecker, atom_id: str, anchors: list[Anchor]) -> list[Change] | None:
        try:
            return checker.check(anchors)
        except Exception:  # noqa: BLE001 - a read never fails because of a drift check
            log.exception("drift check failed for %s", atom_id)
            return None

    def rank_with_drift(
        self, scored: list[tuple[float, str, Any]], own: set[str], n: int
    ) -> tuple[list[tuple[float, str, Any]], dict[str, tuple[str, list[CodeChange]]]]:
        """Demote drifted memories in a ranking (best first), checking only as deep as the top `n` needs.

        A multiplier applied after `search.rank.rank`, named in the hit's signals (`drift`: 0.9).

        Demotion only lowers scores, so once the n-th best checked score is at least the next unchecked
        candidate's score, nothing further down can enter the top n.
        """
        if self.checker() is None or not own:
            return scored, {}
        drift: dict[str, tuple[str, list[Change]]] = {}
        checked, k = 0, min(len(scored), 2 * n)
        while True:
            drift.update(self._fresh([i for _, i, _ in scored[checked:k] if i in own], save=False))
            checked = k
            head = sorted(
                ((round(sc * DRIFT_WEIGHT, 4), i, {**sig, "drift": DRIFT_WEIGHT})
                 if drift.get(i, ("",))[0] == "code_changed" else (sc, i, sig)
                 for sc, i, sig in scored[:k]), key=lambda s: (-s[0], s[1]),
            )  # fmt: skip
            if k >= len(scored) or (len(head) >= n and head[n - 1][0] >= scored[k][0]):
                shown = {i for _, i, _ in head[:n]}  # the hits: their changes as models
                return head + scored[k:], {i: (f, [to_code_change(c) for c in ch] if i in shown else [])
                                           for i, (f, ch) in drift.items()}  # fmt: skip
            k = min(len(scored), 2 * k)

    def anchors(self, atom_id: str) -> list[Anchor]:
        """The anchors of one memory within reach. Raises NotFound."""
        atom = self.core.get(atom_id)  # the scope boundary (issue 10): NotFound out of reach
        return self.memories.anchors_of([atom.id]).get(atom.id, [])

    def stale(self, *, limit: int | None = None) -> list[StaleMemory]:
        """Active memories of this repository whose anchored code changed, newest first.

        Every anchored memory is checked unless `limit` is given (issue 26: the old 500 stopped silently);
        `self.last_checked` says how many were.
        """
        self.last_checked = 0
        if self.checker() is None:
            return []
        self.core.guard_read(self.core.scope.scope_hash, self.core.scope.name)
        ids = self.memories.anchored_atoms(scope_hashes=[self.core.scope.scope_hash], statuses=["active"],
                                             limit=limit if limit is not None else _ALL)  # fmt: skip
        self.last_checked = len(ids)
        fresh = self.code_changes(ids)
        stale_ids = [i for i in ids if i in fresh and fresh[i][0] == "code_changed"]
        atoms = self.memories.get_atoms(stale_ids)
        return [StaleMemory(atom=atoms[i], changes=fresh[i][1]) for i in stale_ids if i in atoms]

    def stale_checked(self) -> int:
        """How many anchored memories the last `stale` checked (all of them, unless it was given a limit)."""
        return self.last_checked

    def code_status(self) -> str:
        """Whether anchoring is on here, in words (for `memoryd stale` and doctor)."""
        if not self.core.settings.anchors:
            return "off (MEMORYD_ANCHORS=0)"
        checker = self.checker()
        if checker is None:
            return f"off: {self.core.scope.root or 'this directory'} is not in a git working tree"
        head = checker.repo.head()
        return f"on: {checker.repo.root} at {head[:7] if head else 'no commits yet'}"

    # -- re-anchoring --------------------------------------------------------------------------

    def reanchor_plan(self, atom: Atom) -> tuple[list[Anchor], str] | None:
        """The anchors of `atom` taken again at HEAD, following renames and moves; None: no anchors."""
        checker = self.checker()
        if checker is None or not self.anchorable(atom.scope_hash):
            return None  # another repository's anchors are not checked against this working tree
        old = self.memories.anchors_of([atom.id]).get(atom.id, [])
        if not old:
            return None
        resolver = checker.resolver
        commit = checker.repo.head()
        new: dict[tuple[str, str], Anchor] = {}
        moved, dropped = [], []
        for a, change in _pair(old, checker.check(old)):
            path = a.path if change is None or change.kind not in ("file_renamed", "symbol_moved") else change.to
            if change is not None and change.kind in ("file_deleted", "symbol_removed"):
                dropped.append(a.ref)
                continue
            if a.kind == "file":
                b = resolver.file_anchor(path or a.path, commit=commit, origin=a.origin)
                found = [b] if b is not None else []
            elif change is not None and change.kind == "symbol_renamed" and change.new_symbol:
                # the same body under a new name (checked by the drift check): follow it, and say so
                found = [x for x in resolver.symbol_in(change.to or a.path, change.new_symbol, commit=commit,
                                                       origin=a.origin) if x.symbol == change.new_symbol]  # fmt: skip
                if found:
                    moved.append(f"{a.ref} → {found[0].ref} (renamed, same body)")
                    new[(found[0].path, found[0].symbol)] = found[0]
                    continue
            else:
                if change is not None and change.kind == "symbol_changed":
                    path = change.path
                found = [x for x in resolver.symbol_in(path or a.path, a.symbol, commit=commit, origin=a.origin)
                         if x.symbol == a.symbol]  # fmt: skip
            if not found:
                dropped.append(a.ref)
                continue
            if found[0].path != a.path:
                moved.append(f"{a.ref} → {found[0].ref}")
            new[(found[0].path, found[0].symbol)] = found[0]
        parts = [f"re-anchored to {commit[:7] if commit else 'the working tree'}: {len(new)} anchor(s)"]
        if moved:
            parts.append("followed " + ", ".join(moved))
        if dropped:
            parts.append("dropped " + ", ".join(dropped) + " (gone: no definition with the same name or body)")
            if not any(a.kind == "symbol" for a in new.values()) and any("::" in d for d in dropped):
                parts.append("this memory now has no symbol anchor")
        return list(new.values()), "; ".join(parts)

    def apply_reanchor(self, tx: TrackedTx, atom_id: str, plan: tuple[list[Anchor], str], *, actor: str,
                        reason: str | None = None) -> None:  # fmt: skip
        anchors, summary = plan
        tx.index.set_anchors(atom_id, anchors)
        text = f"{reason}; {summary}" if reason else summary
        tx.append_event(atom_id=atom_id, actor=actor, action="reanchor", reason=text, content=None)

    def confirm_anchors(self, atom_id: str, *, reason: str | None = None, actor: str = "cli") -> list[Anchor]:
        """`memoryd stale --confirm ID`: the memory still holds; anchor it to the code as it is now.

        Raises:
            NotFound: no such memory within reach. Conflict: another repository's, not active, or not anchored.
        """
        check_text("reason", reason)
        atom = self.core.get(atom_id)  # the scope boundary (issue 10): NotFound out of reach
        if atom.scope_hash != self.core.scope.scope_hash:  # a person may reach it, but its code is elsewhere
            raise Conflict(f"memory {atom_id} belongs to {atom.scope.name}; confirm it from that repository")
        if atom.status not in ("active", "pending"):
            raise Conflict(f"memory {atom_id} is {atom.status}; only active or pending memories are re-anchored")
        plan = self.reanchor_plan(atom)
        if plan is None:
            raise Conflict(f"memory {atom_id} has no code anchors here ({self.code_status()})")
        with self.core.write() as tx:
            self.apply_reanchor(tx, atom.id, plan, actor=actor, reason=reason or "confirmed: still true")
        return plan[0]

    def carried(self, atom: Atom) -> list[Anchor]:
        """The explicit anchors of `atom` taken again at HEAD (for its replacement or update)."""
        checker = self.checker()
        old = [a for a in self.memories.anchors_of([atom.id]).get(atom.id, []) if a.origin == "explicit"]
        if checker is None or not old:
            return []
        try:
            return checker.resolver.explicit([a.ref for a in old])
        except AnchorError:
            plan = self.reanchor_plan(atom)  # some moved or went away: follow what can be followed
            return [a for a in (plan[0] if plan else []) if a.origin == "explicit"]

    # -- file context ---------------------------------------------------------------------------

    def memories_for_path(self, path: str, *, budget_tokens: int | None = None, session_id: str | None = None,
                          record: bool = False) -> FileContext:  # fmt: skip
        """The memories anchored to a file, newest first, within a token budget (the file hook's answer).

        `session_id` leaves out what was already added in that agent session (by any hook: the session's
        `memoryd.shared.injected.InjectedRecord`); `record` claims what this answer adds there. Raises
        InvalidInput (path too long), AuthorizationRequired (sensitive scope).
        """
        path = _check_filter(path, "path") or ""
        checker = self.checker()
        rel = checker.repo.relpath(path) if checker is not None and path else None
        if rel is None or checker is None:
            return FileContext(path=path, text="")
        self.core.guard_read(self.core.scope.scope_hash, self.core.scope.name)
        ids = self.memories.anchored_atoms(
            scope_hashes=[self.core.scope.scope_hash], statuses=["active"], path=rel, limit=50
        )
        record_file = InjectedRecord(self.core.settings.home, session_id) if session_id else None
        seen = record_file.ids() if record_file is not None else set()
        ids = [i for i in ids if i not in seen]
        atoms = self.memories.get_atoms(ids)
        anchors = self.memories.anchors_of(ids)
        ids = [i for i in ids if i in atoms]
        checked = checker.check_all([anchors.get(i, []) for i in ids])
        memories = [FileMemory(i, atoms[i].type, atoms[i].content, anchors.get(i, []), changes)
                    for i, changes in zip(ids, checked, strict=True)]  # fmt: skip
        budget = budget_tokens if budget_tokens is not None else self.core.settings.file_context_tokens
        out = compose_once(rel, memories, budget, record_file) if record else compose(rel, memories, budget)
        return FileContext(path=rel, text=out.text, memory_ids=out.included, tokens=out.tokens, left_out=out.left_out)

    # -- the brief: code moved since the last session ---------------------------------------------

    def _session_state_path(self) -> Path:
        return self.core.settings.home / "state" / f"code-{self.core.scope.scope_hash}.json"

    def code_moved_since_last_session(self, *, mark: bool = False) -> list[StaleMemory]:
        """Stale memories whose changes were not reported at the last marked session start."""
        try:
            stale = self.stale()
        except Exception:  # noqa: BLE001 - the brief goes on without this section
            log.exception("drift check for the brief failed")
            return []
        path = self._session_state_path()
        try:
            seen = json.loads(path.read_text("utf-8")).get("reported", {})
        except (OSError, ValueError, AttributeError):
            seen = {}
        current = {s.atom.id: sorted("|".join(_key(c)) for c in s.changes) for s in stale}
        new = [s for s in stale if seen.get(s.atom.id) != current[s.atom.id]]
        if mark:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"reported": current}, fh)
                os.replace(tmp, path)
            except OSError:
                log.exception("could not record the brief's code state")
        return new


def _key(c: CodeChange) -> list[str]:
    return [c.kind, c.path, c.symbol or "", c.to or ""]


def _pair(anchors: Sequence[Anchor], changes: Sequence[Change]) -> list[tuple[Anchor, Change | None]]:
    """Each anchor with the change reported for it (checks report at most one per anchor)."""
    out = []
    pending = list(changes)
    for a in anchors:
        match = next((c for c in pending if c.path == a.path and (c.symbol or "") == a.symbol), None)
        if match is None and a.kind == "symbol":  # followed through a rename: reported at the new path
            match = next((c for c in pending if (c.symbol or "") == a.symbol and c.kind == "symbol_changed"), None)
        if match is not None:
            pending.remove(match)
        out.append((a, match))
    return out


def _check_filter(value: object, name: str) -> str | None:
    if value is None:
        return None
    check_text(name, value)  # the limits table (`path`, `symbol`): type, length, NUL/surrogates
    assert isinstance(value, str)
    value = value.strip()
    if not value:
        return None
    if any(ord(ch) < 32 for ch in value):
        raise InvalidInput(f"{name} contains control characters")
    return value


def check_filters(path: object, symbol: object) -> tuple[str | None, str | None]:
    """Validated `path` / `symbol` search filters (symbol as a qualified name). Raises InvalidInput."""
    p = _check_filter(path, "path")
    s = _check_filter(symbol, "symbol")
    if s is not None:
        _, s = parse_ref("::" + s)
    return p, s
