"""One memory per fact (SPEC §2, step 4b): what a new memory is to the memories already in its scope, and
the link that follows.

`Linker.find` looks for the active memories of the same scope that a new one may restate or change:
candidates by keyword and by vector (the index's own searches), the closest few by term overlap and cosine,
each judged (`text.judge`: the heuristic, refined by the LLM when one is configured). It returns at most one
`Link`, which `Linker.apply` writes inside the save's transaction:

- `merge` (a `duplicates` judgment, auto band): a reworded restatement. The existing memory stays as it is;
  the new wording is kept as a record of its own (status `superseded`, `superseded_by` the existing memory,
  an edge `restates`, its source and tags with it), findable with `include_superseded`. The save answers
  `effect: "merged"` with the existing memory's id.
- `supersede` (a `supersedes` judgment, auto band, or the save named what it replaces): the older memory
  becomes `superseded`, with an edge `supersedes` from the newer one. Which one is newer goes by
  `Atom.written` (the time at its source, else the time stored): an older note stored later is stored
  already superseded by the newer one (`superseded`), never the other way round.
- `review` (a `supersedes` or `contradicts` judgment in the review band, or a contradiction: a newer
  statement of the opposite may be a change or a mistake): an edge `may_supersede`, applied by nobody
  until a person decides (`review_links`, `supersede`, `dismiss_link`).

Every link is an audit event on each memory naming the other and why. `unlink` undoes a supersession or a
merge (`Engine.restore` on the superseded memory): both are active again, the edge is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Literal

import numpy as np

from ..search.tokenize import tokens
from ..shared.errors import Conflict, InvalidInput, NotFound
from ..shared.limits import check_text
from ..shared.models import Atom, CorrectResult, Scope
from ..storage.base import AuditReads, IndexReads, MemoryReads, Reports, Vector
from ..text.judge import Judgment, band, judge, judge_heuristic
from ..text.llm import LLM
from .core import Core, shown
from .tracked import TrackedTx

__all__ = ["CANDIDATES", "Link", "Linker", "LinkSuggestion"]

LinkKind = Literal["merge", "supersede", "superseded", "review"]
# memories judged per save: the closest by term overlap and cosine (on the dev set the replaced one was the first)
CANDIDATES = 3
POOL = 10  # memories each index search proposes before the closest are picked
EDGE = {"merge": "restates", "supersede": "supersedes", "superseded": "supersedes", "review": "may_supersede"}


@dataclass(frozen=True)
class Link:
    """What a new memory does to an existing one: `kind` (see the module docstring), the existing memory,
    the judgment that decided it (None: the save named it) and why in words."""

    kind: LinkKind
    target: Atom
    why: str
    judgment: Judgment | None = None


@dataclass(frozen=True)
class LinkSuggestion:
    """A suggested supersession waiting for a person: `atom` may replace `older`, and why."""

    atom: Atom
    older: Atom
    why: str


class Linker:
    """Finds and writes the links between a new memory and the memories of its scope."""

    def __init__(self, core: Core, *, memories: MemoryReads, index: IndexReads, audit: AuditReads, reports: Reports,
                 llm: Callable[[], LLM | None] | None = None) -> None:  # fmt: skip
        self.core = core
        self.memories = memories
        self.index = index
        self.audit = audit
        self.reports = reports
        self.llm = llm  # the configured LLM, read when first needed (`Review.llm`)

    # -- finding --------------------------------------------------------------------------------

    def find(
        self, atom: Atom, vector: Vector | None, *, batch: Sequence[tuple[Atom, Vector | None]] = ()
    ) -> Link | None:
        """The link a new memory makes, if any. `batch`: memories written in the same transaction before it
        (an import batch), judged as well. With an LLM configured, the closest pair the heuristic finds related
        is judged again by it, and its judgment decides (one call per save at most)."""
        if atom.status not in ("active", "pending") or atom.type in ("handoff", "session"):
            return None
        judged = []
        for other in self._candidates(atom, vector, batch):
            newer, older = (atom, other) if atom.written >= other.written else (other, atom)
            judged.append((other, newer is atom, newer, older, judge_heuristic(newer.content, older.content)))
        links = [link for other, is_newer, _, _, j in judged if (link := self._link(atom, other, is_newer, j))]
        llm = self.llm() if self.llm is not None else None
        related = [x for x in judged if band(x[4].confidence, x[4].type) != "ignore"]
        if llm is not None and related:  # the best link's pair (else the closest related one), judged by the LLM
            first = max(links, key=_rank).target.id if links else related[0][0].id
            other, is_newer, newer, older, _ = next(x for x in related if x[0].id == first)
            link = self._link(atom, other, is_newer, judge(newer.content, older.content, llm=llm))
            links = [link] if link is not None else []
        best = max(links, key=_rank, default=None)
        if best is not None and atom.status == "pending" and best.kind in ("supersede", "review"):
            return None  # a held memory changes nothing until it is promoted (`Review.promote` links it then)
        return best

    def explicit(self, replaces: object, scope: Scope, written: datetime) -> Link:
        """The link of a save that names what it replaces: an active memory of the same scope, written before it.

        Raises:
            NotFound: no such memory in this scope (another scope's id answers the same).
            Conflict: it is not active (already superseded: replace its successor), or written after this one.
        """
        target = self.core.find_atom(replaces)
        if target is None or target.scope_hash != scope.scope_hash:
            raise NotFound(f"no atom with id {shown(replaces)} in this scope")
        if target.status == "superseded":
            raise Conflict(f"memory {target.id} is already superseded by {target.superseded_by}; "
                           "replace the current one instead")  # fmt: skip
        if target.status != "active":
            raise Conflict(f"memory {target.id} is {target.status}; only an active memory can be replaced")
        if target.written > written:
            raise Conflict(f"memory {target.id} was written {target.written.isoformat()}, after this one "
                           f"({written.isoformat()}); an older memory cannot replace a newer one")  # fmt: skip
        return Link("supersede", target, "named as the memory it replaces")

    def _candidates(self, atom: Atom, vector: Vector | None, batch: Sequence[tuple[Atom, Vector | None]]) -> list[Atom]:
        """The closest active memories of the atom's scope: proposed by the vector index (by the keyword index when
        the atom has no vector), and among `batch` by cosine; ranked by term Jaccard + ½ the scaled cosine."""
        scope = [atom.scope_hash]
        terms = _terms(atom.content)
        if vector is not None:
            found: dict[str, float | None] = dict(self.index.vector_candidates(vector, scope_hashes=scope, k=POOL))
        else:  # the model failed on this text: the keyword index proposes
            found = dict.fromkeys(self.index.keyword_candidates(list(terms), scope_hashes=scope, statuses=["active"],
                                                                limit=POOL))  # fmt: skip
        found.pop(atom.id, None)
        facts = self.index.candidate_facts(list(found), query=vector) if found else {}
        floor, ceil = self.core.embedder.cosine_floor, self.core.embedder.cosine_ceil

        def closeness(other_terms: frozenset[str], cos: float | None) -> float:
            union = terms | other_terms
            jac = len(terms & other_terms) / len(union) if union else 0.0
            near = 0.0 if cos is None else min(max((cos - floor) / max(ceil - floor, 1e-6), 0.0), 1.0)
            return jac + 0.5 * near

        scored: list[tuple[float, str]] = [
            (closeness(frozenset(f.terms), f.cos), i)
            for i, f in facts.items()
            if f.status == "active" and f.scope_hash in scope
        ]
        pending: dict[str, Atom] = {}
        mates = [
            (o, v) for o, v in batch if o.scope_hash == atom.scope_hash and o.status == "active" and o.id != atom.id
        ]
        if mates:
            vecs = [v for _, v in mates if v is not None]
            if vector is not None and len(vecs) == len(mates):
                cos = np.stack(vecs) @ vector
                picks: list[tuple[Atom, float | None]] = [(mates[k][0], float(cos[k])) for k in np.argsort(-cos)[:POOL]]
            else:
                picks = [(o, None) for o, _ in mates[-POOL:]]
            for other, c in picks:
                scored.append((closeness(_terms(other.content), c), other.id))
                pending[other.id] = other
        top = [i for _, i in sorted(scored, reverse=True)[:CANDIDATES]]
        stored = self.memories.get_atoms([i for i in top if i not in pending])
        return [a for i in top if (a := pending.get(i) or stored.get(i)) is not None]

    @staticmethod
    def _link(atom: Atom, other: Atom, atom_is_newer: bool, j: Judgment) -> Link | None:
        """The link a judgment of the newer against the older memory makes, if any."""
        level = band(j.confidence, j.type)
        if j.type == "duplicates" and level == "auto":
            return Link("merge", other, j.reason, j)
        if j.type == "supersedes" and level == "auto":
            return Link("supersede" if atom_is_newer else "superseded", other, j.reason, j)
        if atom_is_newer and (j.type == "contradicts" or (j.type == "supersedes" and level == "review")):
            return Link("review", other, j.reason, j)
        return None

    # -- writing ---------------------------------------------------------------------------------

    def prepare(self, atom: Atom, link: Link) -> Atom:
        """The new atom as the link stores it (a restatement, or an older note, is stored superseded)."""
        if link.kind in ("merge", "superseded"):
            return atom.model_copy(update={"status": "superseded", "superseded_by": link.target.id})
        if link.kind == "supersede" and atom.supersedes is None:
            return atom.model_copy(update={"supersedes": link.target.id})
        return atom

    def current(self, link: Link) -> bool:
        """Whether the link's target is still active (read in the transaction that writes the link)."""
        target = self.memories.get_atoms([link.target.id]).get(link.target.id)
        return target is not None and target.status == "active"

    @staticmethod
    def reason(link: Link) -> str:
        """The reason of the new atom's `create` event: the link and why."""
        how = {"merge": "restates", "supersede": "supersedes", "superseded": "is superseded by (written later)",
               "review": "may supersede (for review)"}[link.kind]  # fmt: skip
        return f"{how} {link.target.id}: {_why(link)}"

    def apply(self, tx: TrackedTx, atom: Atom, link: Link, *, actor: str) -> None:
        """Write the link of `atom` (inserted in this transaction, `prepare`d) to its still active target (`current`):
        the edge, the target's change and its audit event naming both and why."""
        target = link.target
        why = _why(link)
        if link.kind == "merge":
            tx.index.link(atom.id, target.id, "restates")
            tx.append_event(atom_id=target.id, actor=actor, action="merge",
                            reason=f"restated by {atom.id} ({atom.source}): {why}", content=None)  # fmt: skip
        elif link.kind == "supersede":
            tx.update_atom(target.id, status="superseded", superseded_by=atom.id, prior_status=target.status)
            tx.index.link(atom.id, target.id, "supersedes")
            tx.append_event(atom_id=target.id, actor=actor, action="superseded",
                            reason=f"superseded by {atom.id}: {why}", content=None)  # fmt: skip
        elif link.kind == "superseded":
            tx.index.link(target.id, atom.id, "supersedes")
            if target.supersedes is None:
                tx.update_atom(target.id, supersedes=atom.id, updated_at=target.updated_at)
            tx.append_event(atom_id=target.id, actor=actor, action="supersede",
                            reason=f"supersedes {atom.id} (written earlier, stored later): {why}", content=None)  # fmt: skip
        else:
            tx.index.link(atom.id, target.id, "may_supersede")

    def unlink(self, tx: TrackedTx, atom: Atom, *, actor: str, reason: str) -> str:
        """Undo the supersession or merge that made `atom` superseded: it is active again, its successor stays,
        the edge goes. Returns the successor's id. Raises Conflict when `atom` is not superseded."""
        successor = atom.superseded_by
        if atom.status != "superseded" or successor is None:
            raise Conflict(f"memory {atom.id} is {atom.status}, not superseded")
        edges = set(self.reports.atom_links(atom.id))
        restated = (atom.id, successor, "restates") in edges
        tx.update_atom(atom.id, status=atom.prior_status or "active", superseded_by=None, prior_status=None)
        if restated:
            tx.index.unlink(atom.id, successor, "restates")
        else:
            tx.index.unlink(successor, atom.id, "supersedes")
            succ = self.memories.get_atoms([successor]).get(successor)
            if succ is not None and succ.supersedes == atom.id:
                tx.update_atom(successor, supersedes=None, updated_at=succ.updated_at)
        what = "restated by" if restated else "supersedes"
        tx.append_event(atom_id=successor, actor=actor, action="unlink",
                        reason=f"no longer {what} {atom.id}: {reason}", content=None)  # fmt: skip
        return successor

    # -- after the fact: suggestions for review, links made or dismissed by a person ---------------

    def review_links(self, *, scope: str | Scope | None = "auto", limit: int = 20) -> list[LinkSuggestion]:
        """Suggested supersessions waiting for a person (both memories still active), newest first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidInput(f"limit must be between 1 and 100, got {limit!r}")
        if scope == "global":
            scopes = self.core.reachable_scopes()  # None: every scope (a person)
        else:
            target = self.core.resolve_scope(scope)
            self.core.reach_scope(target)
            scopes = [target.scope_hash]
        pairs = self.memories.atom_edges("may_supersede", scope_hashes=scopes, limit=limit * 3)
        atoms = self.memories.get_atoms({i for pair in pairs for i in pair})
        out: list[LinkSuggestion] = []
        for src, dst in pairs:
            a, b = atoms.get(src), atoms.get(dst)
            if a is None or b is None or a.status != "active" or b.status != "active":
                continue
            if self.core.enforce_sensitive and self.core.locked(a.scope_hash):
                continue
            out.append(LinkSuggestion(a, b, self._suggested_why(a, b)))
            if len(out) >= limit:
                break
        return out

    def _suggested_why(self, atom: Atom, older: Atom) -> str:
        for event in self.audit.events(atom.id):
            if event.action == "create" and event.reason and older.id in event.reason:
                return event.reason.split(": ", 1)[-1]
        return ""

    def supersede(self, atom_id: str, older_id: str, reason: str, *, actor: str = "user") -> CorrectResult:
        """Let one stored memory supersede another of its scope (a suggestion accepted, or a link the write path
        missed): `older_id` becomes superseded by `atom_id`. Undone by `restore` on the older one.

        Raises:
            NotFound: either id unknown or out of reach, or the two in different scopes.
            InvalidInput: the same id twice, no reason.
            Conflict: either memory not active, or the older one written after the other.
        """
        atom, older = self._pair(atom_id, older_id, reason)
        for a in (atom, older):
            if a.status != "active":
                raise Conflict(f"memory {a.id} is {a.status}; only active memories can be linked")
        if older.written > atom.written:
            raise Conflict(f"memory {older.id} was written after {atom.id}; an older memory cannot replace a newer one "
                           f"(pass them the other way round)")  # fmt: skip
        link = Link("supersede", older, reason.strip())
        with self.core.write() as tx:
            if atom.supersedes is None:
                tx.update_atom(atom.id, supersedes=older.id)
            self.apply(tx, atom, link, actor=actor)
            tx.index.unlink(atom.id, older.id, "may_supersede")
            tx.append_event(atom_id=atom.id, actor=actor, action="supersede", reason=f"supersedes {older.id}: "
                            f"{reason.strip()}", content=None)  # fmt: skip
        return CorrectResult(effect="applied", target_atom=older.id, new_atom_id=atom.id)

    def dismiss_link(self, atom_id: str, older_id: str, reason: str, *, actor: str = "user") -> CorrectResult:
        """Drop a suggestion that `atom_id` may supersede `older_id` (both stay as they are).

        Raises:
            NotFound: either id unknown or out of reach, or no such suggestion.
            InvalidInput: the same id twice, no reason.
        """
        atom, older = self._pair(atom_id, older_id, reason)
        if (atom.id, older.id, "may_supersede") not in set(self.reports.atom_links(atom.id)):
            raise NotFound(f"no suggestion that {atom.id} supersedes {older.id}")
        with self.core.write() as tx:
            tx.index.unlink(atom.id, older.id, "may_supersede")
            tx.append_event(atom_id=atom.id, actor=actor, action="dismiss_link",
                            reason=f"does not supersede {older.id}: {reason.strip()}", content=None)  # fmt: skip
        return CorrectResult(effect="applied", target_atom=older.id, new_atom_id=atom.id)

    def _pair(self, atom_id: str, older_id: str, reason: object) -> tuple[Atom, Atom]:
        """Two distinct memories of one scope within reach, and a reason. Raises NotFound, InvalidInput."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("reason is required")
        check_text("reason", reason)
        atom, older = self.core.get(atom_id), self.core.get(older_id)
        if atom.id == older.id:
            raise InvalidInput("a memory cannot supersede itself")
        if atom.scope_hash != older.scope_hash:
            raise NotFound(f"no atom with id {shown(older_id)} in the scope of {atom.id}")
        return atom, older


@lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    """A text's query terms, once per text (an import batch compares each line with the lines before it)."""
    return frozenset(tokens(text, query=True))


def _why(link: Link) -> str:
    if link.judgment is None:
        return link.why
    j = link.judgment
    return f"{j.reason} [{j.source}, {j.type} {j.confidence:.2f}]"


def _rank(link: Link) -> tuple[int, float]:
    """Which link wins when several candidates judge: merge, then supersession, then review; then confidence."""
    order = {"merge": 3, "supersede": 2, "superseded": 2, "review": 1}[link.kind]
    return order, link.judgment.confidence if link.judgment else 1.0
