"""Reading memories: hybrid recall (SPEC §3), context and timeline, the audit chain, the session brief."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO

from ..errors import InvalidInput, NotFound
from ..lifecycle.decay import decay_state, parse_since
from ..models import (
    Atom,
    Brief,
    ChainReport,
    Event,
    Hit,
    IndexCoverage,
    RecallResult,
    Scope,
    Stats,
    Timeline,
)  # fmt: skip
from ..search import fusion
from ..search.tokenize import language, tokens
from ..stamps import GENESIS, chain_hash, content_hash, iso, utc_now
from ..storage.base import Store
from ..write.entities import extract_entities
from .core import Core, log

__all__ = ["Reader", "fit_lines", "verify_chain"]

# Soft-forgotten memories rank lower but are never dropped from recall.
_DECAY_WEIGHT = {"fresh": 1.0, "stale": 0.95, "soft_forgotten": 0.85}
_LABELS = {  # the brief's section titles and pending line, in the language of its memories
    "en": ("Latest handoff", "Constraints", "Preferences", "Recent decisions", "Pending review: {n}"),
    "zh": ("最近交接", "约束", "偏好", "近期决策", "待审核：{n} 条"),
    "zh-Hant": ("最近交接", "約束", "偏好", "近期決策", "待審核：{n} 條"),
}
_GUIDE = (
    "memoryd: no memories for this project yet.\n"
    "- Save what you learn that will still matter later (decisions, constraints, preferences, "
    "facts, warnings) with memory_memorize / mem_save, one self-contained sentence each.\n"
    "- Before answering from assumptions, search with memory_recall / mem_search using noun phrases.\n"
    "- Fix outdated memories with memory_correct (replace), and end a task with memory_handoff."
)


class Reader:
    """Every read of memories; agent surfaces get the sensitive-scope check through `Core.guard_read`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def recall(
        self, query: str, *, max_results: int = 10, include_negated: bool = False, types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None, scope: Scope | None = None, statuses: Sequence[str] | None = None,
    ) -> RecallResult:  # fmt: skip
        """Hybrid search over the current repository and the tenant-global scope.

        Raises:
            InvalidInput: empty query, or max_results outside 1..100.
        """
        core, store = self.core, self.core.store
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        if not isinstance(max_results, int) or not 1 <= max_results <= 100:
            raise InvalidInput(f"max_results must be between 1 and 100, got {max_results!r}")
        core.check_types(types)
        statuses = list(statuses or (["active", "negated"] if include_negated else ["active"]))
        current = scope or core.scope
        core.guard_read(current.scope_hash, current.name)
        scopes = core.recall_scopes(scope)
        q_terms = list(dict.fromkeys(tokens(query, query=True)))
        q_entities = [e.id for e in extract_entities(query)]
        boost = list(entity_ids or [])
        pool = max(50, max_results * 5)

        candidates: dict[str, float | None] = {}
        total, df = store.term_stats(q_terms)
        for atom_id in store.keyword_candidates(q_terms, scope_hashes=scopes, statuses=statuses, limit=pool,
                                                stats=(total, df)):  # fmt: skip
            candidates[atom_id] = None
        q_vec = None
        try:
            q_vec = core.embedder.query(query)
        except Exception:
            log.exception("query embedding failed; keyword and entity signals only")
        if q_vec is not None:
            for atom_id, cos in store.vector_candidates(q_vec, scope_hashes=scopes, k=pool):
                candidates[atom_id] = cos
        for atom_id in store.atoms_for_entities(list(dict.fromkeys(q_entities + boost)), scope_hashes=scopes,
                                                statuses=statuses, limit=pool):  # fmt: skip
            candidates.setdefault(atom_id, None)
        if q_vec is not None:
            candidates.update(store.cosines(q_vec, [i for i, cos in candidates.items() if cos is None]))
        facts = store.candidate_facts(list(candidates))
        keyword = fusion.keyword_scorer(q_terms, total, df)
        floor, ceil = core.embedder.cosine_floor, core.embedder.cosine_ceil
        now = utc_now()
        scored: list[tuple[float, str, dict[str, float]]] = []
        for atom_id, cosine in candidates.items():
            fact = facts.get(atom_id)
            if fact is None or fact.status not in statuses or fact.scope_hash not in scopes:
                continue
            if types is not None and fact.type not in types:
                continue
            signals = {
                "keyword": keyword(fact.terms),
                "semantic": fusion.semantic_score(cosine, floor, ceil),
                "entity": max(fusion.entity_score(q_entities, fact.entities), fusion.entity_score(boost, fact.entities)),
            }
            score = fusion.fuse(signals) * _DECAY_WEIGHT[decay_state(fact, now)]
            if fact.status == "negated":
                score *= 0.8  # shown on request, never above live knowledge
            score = round(score, 4)
            if score > 0:
                scored.append((score, atom_id, signals))
        scored.sort(key=lambda s: (-s[0], s[1]))
        scored = scored[:max_results]
        atoms = store.get_atoms(atom_id for _, atom_id, _ in scored)  # full atoms for the hits only
        hits = [
            Hit(atom=atoms[atom_id], score=score, signals={k: round(v, 4) for k, v in signals.items()})
            for score, atom_id, signals in scored
            if atom_id in atoms  # deleted between the two reads
        ]
        store.touch([h.atom.id for h in hits])
        return RecallResult(hits=hits)

    def search(self, query: str, *, scope: str | None = "auto", top_k: int = 10, types: Sequence[str] | None = None,
               entity_ids: Sequence[str] | None = None) -> RecallResult:  # fmt: skip
        """mem_search: recall with types as a post-filter and entity ids as a boost."""
        return self.recall(query, max_results=top_k, types=types, entity_ids=entity_ids,
                           scope=self.core.resolve_scope(scope))  # fmt: skip

    def context(self, memory_id: str, *, neighbors: int = 3) -> tuple[list[Atom], Atom, list[Atom]]:
        """The memories created just before and after one memory, in its scope."""
        if not isinstance(neighbors, int) or not 0 <= neighbors <= 50:
            raise InvalidInput(f"neighbors must be between 0 and 50, got {neighbors!r}")
        anchor = self.core.get(memory_id)
        before, after = self.core.store.neighbors(anchor.id, scope_hash=anchor.scope_hash, n=neighbors)
        return before, anchor, after

    def timeline_window(self, *, scope: str | None = "auto", since: str = "30d", types: Sequence[str] | None = None,
                        limit: int = 100) -> Timeline:  # fmt: skip
        """Active memories of a scope created since `since` (30d, 2w, 6m, 1y), newest first, soft-forgotten
        ones left out; with the moment the window starts."""
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit must be between 1 and 1000, got {limit!r}")
        self.core.check_types(types)
        now = utc_now()
        start = parse_since(since, now)
        target = self.core.resolve_scope(scope)
        self.core.guard_read(target.scope_hash, target.name)
        atoms = self.core.store.atoms_since(scope_hashes=[target.scope_hash], since=start, types=types, limit=limit * 2)
        return Timeline(since=start, memories=[a for a in atoms if decay_state(a, now) != "soft_forgotten"][:limit])

    def history(self, atom_id: str) -> list[Event]:
        """Every audit event of an atom, oldest first. Raises NotFound."""
        events = self.core.store.events(atom_id)
        if not events:
            raise NotFound(f"no atom with id {atom_id!r}")
        return events

    def verify_chain(self) -> ChainReport:
        """Recompute the hash chain, payload hashes and each live atom's content hash."""
        return verify_chain(self.core.store)

    def stats(self) -> Stats:
        c = self.core.store.counts()
        return Stats(
            atoms=c["atoms"], edges=c["edges"], snapshot_version=self.core.store.snapshot_version(),
            by_status=c["by_status"], indexes=IndexCoverage(semantic=c["semantic"], keyword=c["keyword"],
                                                            temporal=c["temporal"], categorical=c["categorical"]),
        )  # fmt: skip

    def export(self, out: IO[str]) -> int:
        """Write every atom, then every event, as JSON lines. Returns the number of lines."""
        n = 0
        for atom in self.core.store.list_atoms(limit=-1, newest_first=False):
            out.write(json.dumps({"kind": "atom", **atom.model_dump(mode="json")}, ensure_ascii=False) + "\n")
            n += 1
        for event in self.core.store.events():
            out.write(json.dumps({"kind": "event", **event.model_dump(mode="json")}, ensure_ascii=False) + "\n")
            n += 1
        return n

    def agent_brief(self, scope: Scope | None = None) -> Brief:
        """The session-start brief: latest handoff, constraints, preferences, recent decisions."""
        return self._brief(scope)[0]

    def _brief(self, scope: Scope | None) -> tuple[Brief, str | None]:
        """The brief, and its pending-review line (when anything waits), which may not have fit in it."""
        store, scopes, active = self.core.store, self.core.recall_scopes(scope), ["active"]
        handoffs = store.list_atoms(scope_hashes=scopes, statuses=active, types=["handoff"], limit=1)
        constraints = store.list_atoms(scope_hashes=scopes, statuses=active, epistemic="necessary", limit=10)
        prefs = store.list_atoms(scope_hashes=scopes, statuses=active, types=["preference"], limit=10)
        decisions = store.list_atoms(scope_hashes=scopes, statuses=active, types=["decision"], limit=5)
        pending = len(store.list_atoms(scope_hashes=scopes, statuses=["pending"], limit=1000))
        constraints = [a for a in constraints if a.type != "handoff"]
        prefs = [a for a in prefs if a not in constraints]
        decisions = [a for a in decisions if a not in constraints]
        everything = [*handoffs, *constraints, *prefs, *decisions]
        if not everything and not pending:
            return Brief(text=_GUIDE, empty_store=True), None
        labels = _LABELS[language(" ".join(a.content for a in everything))]
        limit = self.core.settings.brief_max_chars
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
                if not add(f"- {a.content if len(a.content) <= 600 else a.content[:597] + '…'} ({a.id})"):
                    break
        pending_line = labels[4].format(n=pending) if pending else None
        if pending_line:
            add(pending_line)
        brief = Brief(text="\n".join(parts), handoff=handoffs[0] if handoffs else None, constraints=constraints,
                      preferences=prefs, decisions=decisions, pending_review=pending)  # fmt: skip
        return brief, pending_line

    def session_context(self) -> str:
        """What a new agent session is told: `[memoryd · <scope>]` and the brief, at most `brief_max_chars`
        characters, the pending-review count kept when the brief is cut; a notice instead when the scope
        (or its tenant's global scope) is sensitive without a running grant."""
        core = self.core
        header = f"[memoryd · {core.scope.name}]"
        if any(core.locked(h) for h in core.recall_scopes()):
            body = (f"memoryd: the memories of {core.scope.name} are marked sensitive and there is no running read "
                    "grant, so none are shown. A person can run `memoryd scope grant --minutes 30` in this "
                    "repository; you can ask with mem_request_sensitive_read.")  # fmt: skip
            return fit_lines(header, body, core.settings.brief_max_chars)
        brief, pending_line = self._brief(None)
        body = brief.text
        if pending_line and not body.endswith(pending_line):  # the brief ran out of room before its count
            body = f"{body}\n{pending_line}" if body else pending_line
        return fit_lines(header, body, core.settings.brief_max_chars, pending_line)


def verify_chain(store: Store) -> ChainReport:
    """Recompute a store's hash chain, payload hashes and each live atom's content hash."""
    events = store.events()
    prev = GENESIS
    last_content: dict[str, str] = {}
    for e in events:
        problem = None
        if e.prev_hash != prev:
            problem = "broken link to previous event"
        elif e.hash != chain_hash(prev, e.id, e.atom_id, e.actor, e.action, e.reason, iso(e.at), e.content_hash):
            problem = "event hash mismatch"
        elif e.content is not None and content_hash(e.content) != e.content_hash:
            problem = "payload does not match its hash"
        if problem:
            return ChainReport(ok=False, events=len(events), first_bad_seq=e.seq, problem=problem)
        if e.atom_id and e.content_hash:
            last_content[e.atom_id] = e.content_hash
        prev = e.hash
    atoms = store.get_atoms(last_content)
    for atom_id, expected in last_content.items():
        atom = atoms.get(atom_id)
        if atom is not None and atom.status != "tombstoned" and content_hash(atom.content) != expected:
            return ChainReport(ok=False, events=len(events), problem=f"atom {atom_id} content differs from its audit chain")
    return ChainReport(ok=True, events=len(events))


def fit_lines(header: str, body: str, limit: int, tail: str | None = None) -> str:
    """`header` + `body`, cut at a line boundary to stay within `limit` characters; `tail`, the body's
    last line (the pending-review count), is kept whatever is cut."""
    text = f"{header}\n{body}" if body else header
    if len(text) <= limit:
        return text
    lines = body.splitlines()
    if tail is not None and lines and lines[-1] == tail:
        lines.pop()
    else:
        tail = None
    room = limit - (len(tail) + 1 if tail else 0)
    kept: list[str] = []
    used = len(header)
    for line in lines:
        if used + 1 + len(line) > room - 2:
            break
        kept.append(line)
        used += 1 + len(line)
    return "\n".join([header, *kept, "…", *([tail] if tail else [])])[:limit]
