"""Reading memories: hybrid recall (SPEC §3), context and timeline, the audit chain, the session brief."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, NamedTuple

from ..search import rank
from ..search.decay import decay_state, parse_since
from ..search.tokenize import language, tokens
from ..shared.errors import InvalidInput, NotFound
from ..shared.limits import LIMITS, check_text, check_texts
from ..shared.models import (
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
from ..shared.stamps import GENESIS, chain_hash, content_hash, iso, utc_now
from ..storage.base import AuditReads, IndexReads, MemoryReads, Reports, TermStats
from ..text.entities import extract_entities
from .anchoring import Anchors, check_filters
from .core import Core, log, shown

__all__ = ["Reader", "SessionContext", "fit_lines", "verify_chain"]


class SessionContext(NamedTuple):
    text: str  # the session-start context
    shown: list[str] | None  # the memories it shows (None: the sensitive-scope notice, no memories)


# Soft-forgotten memories rank lower but are never dropped from recall.
_DECAY_WEIGHT = {"fresh": 1.0, "stale": 0.95, "soft_forgotten": 0.85}
_LABELS = {  # the brief's section titles and pending line, in the language of its memories
    "en": (
        "Latest handoff",
        "Constraints",
        "Preferences",
        "Recent decisions",
        "Pending review: {n}",
        "Code changed since the last session",
    ),
    "zh": ("最近交接", "约束", "偏好", "近期决策", "待审核：{n} 条", "上次会话以来代码已变"),
    "zh-Hant": ("最近交接", "約束", "偏好", "近期決策", "待審核：{n} 條", "上次會話以來程式碼已變"),
}
_BRIEF_MOVED = 5  # memories listed under "code changed" (the rest: `memoryd stale`)
# A reply counts as one when it was saved within this long after the question (Store.successors).
_REPLY_WINDOW_S = 3600.0
_GUIDE = (
    "memoryd: no memories for this project yet.\n"
    "- Save what you learn that will still matter later (decisions, constraints, preferences, "
    "facts, warnings) with memory_memorize / mem_save, one self-contained sentence each.\n"
    "- Before answering from assumptions, search with memory_recall / mem_search using noun phrases.\n"
    "- Fix outdated memories with memory_correct (replace), and end a task with memory_handoff."
)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _in_background(fn: Callable[[str], Any], arg: str) -> Future[Any]:
    """`fn(arg)` on the process's one helper thread (recall's English query vector, beside the main one)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryd-recall")
    return _POOL.submit(fn, arg)


SUPERSEDED_WEIGHT = 0.8  # a superseded memory (asked for) ranks lower, and below its successor when both are found


def _below_successors(hits: list[Hit]) -> list[Hit]:
    """The hits with every superseded memory scored just below its successor when that one is among them (down
    a chain of versions too)."""
    by_id = {h.atom.id: h for h in hits}
    moved = True
    for _ in range(len(hits)):
        if not moved:
            break
        moved = False
        for h in hits:
            succ = by_id.get(h.atom.superseded_by or "") if h.atom.status == "superseded" else None
            if succ is not None and h.score >= succ.score:
                h.score, moved = round(succ.score * 0.99, 6), True
    return sorted(hits, key=lambda h: -h.score)


class Reader:
    """Every read of memories; agent surfaces get the sensitive-scope check through `Core.guard_read`."""

    def __init__(
        self,
        core: Core,
        anchors: Anchors,
        *,
        memories: MemoryReads,
        index: IndexReads,
        audit: AuditReads,
        reports: Reports,
    ) -> None:
        self.memories = memories
        self.index = index
        self.audit = audit
        self.reports = reports
        self.core = core
        self.anchors = anchors

    def recall(
        self, query: str, *, max_results: int = 10, include_negated: bool = False, types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None, scope: Scope | None = None, statuses: Sequence[str] | None = None,
        path: str | None = None, symbol: str | None = None, record: bool = True, semantic: bool = True,
        include_superseded: bool = False,
    ) -> RecallResult:  # fmt: skip
        """Hybrid search over the current repository and the tenant-global scope.

        `include_superseded` adds the memories a newer one replaced (or that a restatement was merged into):
        each ranks ×0.8, and below its successor when both are found (`Atom.superseded_by` names it).

        `path` (a file or directory of the repository) and `symbol` (`Table.insert_all`, or its last
        parts) keep only memories anchored to that code. Memories whose anchored code changed rank
        ×0.9 and say so (`freshness`, `code_changes`). `record` logs when the recall ran and its hit
        ids (not the query) for the console's Sessions page, and refreshes the hits' access times (their
        decay); the console's searches pass False, so a person browsing changes nothing agents see.
        `semantic` False: no query embedding (the model is not loaded in time: keyword and entity signals only).

        Raises:
            InvalidInput: empty query, max_results outside 1..100, a field over its limit (`memoryd.shared.limits`).
        """
        core = self.core
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        check_text("query", query)  # before any work that grows with the query
        if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= 100:
            raise InvalidInput(f"max_results must be between 1 and 100, got {max_results!r}")
        core.check_types(types)
        check_texts("entity_ids", "entity", entity_ids)
        path, symbol = check_filters(path, symbol)
        for model in (core.term_embedder, core.english):  # they load while candidates are gathered
            start = getattr(model, "start", None)
            if start is not None:
                start()
        if statuses is None and include_superseded:
            statuses = ["active", "negated", "superseded"] if include_negated else ["active", "superseded"]
        q, cands, stats = self.gather(query, max_results=max_results, include_negated=include_negated, types=types,
                                      entity_ids=entity_ids, scope=scope, statuses=statuses, path=path,
                                      symbol=symbol, semantic=semantic)  # fmt: skip
        # A path/symbol filter lists every memory anchored there, whatever the query's signals say.
        words = self._english if core.term_embedder is not None and not q.english else None
        ranked = rank.rank(q, cands, stats, english=words, keep_zero=bool(path or symbol))
        scored = [(score * (SUPERSEDED_WEIGHT if c.status == "superseded" else 1.0), c.atom_id, signals)
                  for score, c, signals in ranked]  # fmt: skip
        scored.sort(key=lambda x: -x[0])
        # Code anchors: a memory whose code moved on ranks ×DRIFT_WEIGHT, a multiplier after the ranking.
        # Anchors are checked against this working tree, so only this repository's memories, and only as
        # deep as the top max_results needs.
        here = core.scope.scope_hash
        own = {c.atom_id for _, c, _ in ranked if c.scope_hash == here}
        scored, drift = self.anchors.rank_with_drift(scored, own, max_results)
        scored = scored[:max_results]
        atoms = self.memories.get_atoms(atom_id for _, atom_id, _ in scored)  # full atoms for the hits only
        hits = [
            Hit(
                atom=atoms[atom_id],
                score=score,
                signals={k: round(v, 4) for k, v in signals.items()},
                freshness=drift[atom_id][0] if atom_id in drift else None,
                code_changes=(drift[atom_id][1] or None) if atom_id in drift else None,
            )  # fmt: skip
            for score, atom_id, signals in scored
            if atom_id in atoms  # deleted between the two reads
        ]
        hits = _below_successors(hits)
        if record:  # a person browsing (the console) neither freshens memories nor counts as a recall
            self.memories.touch([h.atom.id for h in hits])
            self.index.log_recall((scope or core.scope).scope_hash, [h.atom.id for h in hits])
        return RecallResult(hits=hits)

    def _english(self, q: rank.Query, cands: Sequence[rank.Candidate]) -> list[float | None]:
        """Cosines of the English term embedder (`search.embed.WordLlamaTerms`) for these candidates."""
        term_embedder = self.core.term_embedder
        assert term_embedder is not None
        try:
            q_vec = term_embedder.query(q.text)
            return [float(x) for x in term_embedder.bags([c.terms for c in cands]) @ q_vec]
        except Exception:  # a broken second model must not break recall
            log.exception("English term embedding failed; ranked without it")
            return [None] * len(cands)

    def gather(
        self, query: str, *, max_results: int = 10, include_negated: bool = False, types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None, scope: Scope | None = None, statuses: Sequence[str] | None = None,
        path: str | None = None, symbol: str | None = None, semantic: bool = True,
    ) -> tuple[rank.Query, list[rank.Candidate], TermStats]:  # fmt: skip
        """recall's first half: the query's terms and entities, every candidate with its scoring facts.

        The ranking (`search.rank.rank`) is a pure function of what this returns, so
        bench/replay.py caches it once and re-ranks offline. `path`/`symbol` (checked by recall)
        keep only the memories anchored to that code.
        """
        core = self.core
        statuses = list(statuses or (["active", "negated"] if include_negated else ["active"]))
        core.reach_scope(scope or core.scope)
        scopes = core.recall_scopes(scope)
        allowed: set[str] | None = None
        if path or symbol:  # only memories anchored to that code, whatever the query surfaces
            checker = self.anchors.checker()
            rel = (checker.repo.relpath(path) or path) if path and checker is not None else path
            allowed = set(self.memories.anchored_atoms(scope_hashes=scopes, statuses=statuses, path=rel, symbol=symbol))
        # The English sentence vector of the query, computed on another thread while the candidates are read
        # (onnxruntime lets go of the GIL): a Chinese query has none, that model cannot read it.
        english = core.english if core.english is not None and language(query) == "en" else None
        q_en = _in_background(english.query, query) if english is not None else None
        q = rank.Query(
            text=query, terms=tuple(dict.fromkeys(tokens(query, query=True))),
            entities=tuple(dict.fromkeys(e.id for e in extract_entities(query))),
            boost=tuple(dict.fromkeys(entity_ids or [])),
            cosine_floor=core.embedder.cosine_floor, cosine_ceil=core.embedder.cosine_ceil,
            english=english is not None,
        )  # fmt: skip
        pool = max(50, max_results * 5)
        candidates: dict[str, float | None] = {}
        stats = self.index.term_stats(rank.stat_terms(q), scope_hashes=scopes)
        for atom_id in self.index.keyword_candidates(list(q.terms), scope_hashes=scopes, statuses=statuses, limit=pool,
                                                stats=stats):  # fmt: skip
            candidates[atom_id] = None
        q_vec = None
        try:
            q_vec = core.embedder.query(query) if semantic else None
        except Exception:
            log.exception("query embedding failed; keyword and entity signals only")
        if q_vec is not None:
            for atom_id, cos in self.index.vector_candidates(q_vec, scope_hashes=scopes, k=pool):
                candidates[atom_id] = cos
        for atom_id in self.index.atoms_for_entities(list(dict.fromkeys(q.entities + q.boost)), scope_hashes=scopes,
                                                statuses=statuses, limit=pool):  # fmt: skip
            candidates.setdefault(atom_id, None)
        if allowed is not None:
            candidates = {i: cos for i, cos in candidates.items() if i in allowed}
            for atom_id in allowed:
                candidates.setdefault(atom_id, None)
        # The facts of every candidate, and the cosines the keyword and entity candidates lack, in one read.
        facts = self.index.candidate_facts(list(candidates), query=q_vec)
        candidates.update({i: facts[i].cos for i, cos in candidates.items() if cos is None and i in facts})
        # A question's reply, the memory saved right after it, joins the candidates: the ranking
        # passes it part of the question's score (a conversation answers in the next turn).
        asks = [i for i, f in facts.items() if f.epistemic == "possible" and f.status in statuses]
        nexts = self.index.successors(asks, statuses=statuses, within_seconds=_REPLY_WINDOW_S) if asks else {}
        if allowed is not None:
            nexts = {i: n for i, n in nexts.items() if n in allowed}
        new = [n for n in dict.fromkeys(nexts.values()) if n not in candidates]
        if new:
            new_facts = self.index.candidate_facts(new, query=q_vec)
            candidates.update({n: new_facts[n].cos if n in new_facts else None for n in new})
            facts.update(new_facts)
        cos_en: dict[str, float] = {}
        if english is not None and q_en is not None:
            try:
                cos_en = self.index.model_cosines(english.name, q_en.result(), list(candidates))
            except Exception:  # a broken second model must not break recall
                log.exception("English query embedding failed; ranked without it")
        now = utc_now()
        cands: list[rank.Candidate] = []
        for atom_id, cosine in candidates.items():
            fact = facts.get(atom_id)
            if fact is None or fact.status not in statuses or fact.scope_hash not in scopes:
                continue
            if types is not None and fact.type not in types:
                continue
            cands.append(rank.Candidate(
                atom_id=atom_id, cos=cosine, terms=frozenset(fact.terms), entities=fact.entities, status=fact.status,
                type=fact.type, decay=_DECAY_WEIGHT[decay_state(fact, now)], epistemic=fact.epistemic,
                polarity=fact.polarity, next_id=nexts.get(atom_id), scope_hash=fact.scope_hash,
                cos_en=cos_en.get(atom_id),
            ))  # fmt: skip
        return q, cands, stats

    def search(self, query: str, *, scope: str | Scope | None = "auto", top_k: int = 10, types: Sequence[str] | None = None,
               entity_ids: Sequence[str] | None = None, path: str | None = None,
               symbol: str | None = None, include_superseded: bool = False) -> RecallResult:  # fmt: skip
        """mem_search: recall with types as a post-filter, entity ids as a boost, path/symbol as anchor filters."""
        return self.recall(query, max_results=top_k, types=types, entity_ids=entity_ids,
                           scope=self.core.resolve_scope(scope), path=path, symbol=symbol,
                           include_superseded=include_superseded)  # fmt: skip

    def context(self, atom_id: str, *, neighbors: int = 3) -> tuple[list[Atom], Atom, list[Atom]]:
        """The memories created just before and after one memory, in its scope."""
        if isinstance(neighbors, bool) or not isinstance(neighbors, int) or not 0 <= neighbors <= 50:
            raise InvalidInput(f"neighbors must be between 0 and 50, got {neighbors!r}")
        anchor = self.core.get(atom_id)
        before, after = self.memories.neighbors(anchor.id, scope_hash=anchor.scope_hash, n=neighbors)
        return before, anchor, after

    def timeline_window(self, *, scope: str | Scope | None = "auto", since: str = "30d", types: Sequence[str] | None = None,
                        limit: int = 100) -> Timeline:  # fmt: skip
        """Active memories of a scope created since `since` (30d, 2w, 6m, 1y), newest first, soft-forgotten
        ones left out; with the moment the window starts."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIMITS["limit"][0]:
            raise InvalidInput(f"limit must be between 1 and {LIMITS['limit'][0]}, got {limit!r}")
        self.core.check_types(types)
        check_text("since", since, required=True)
        now = utc_now()
        start = parse_since(since, now)
        target = self.core.resolve_scope(scope)
        self.core.reach_scope(target)
        atoms = self.memories.atoms_since(scope_hashes=[target.scope_hash], since=start, types=types, limit=limit * 2)
        return Timeline(since=start, memories=[a for a in atoms if decay_state(a, now) != "soft_forgotten"][:limit])

    def history(self, atom_id: str) -> list[Event]:
        """Every audit event of an atom within reach, oldest first. Raises NotFound.

        An agent sees the history of an atom of its own or the global scope only; the events of a
        deleted atom (whose scope is gone with its row) only a person sees.
        """
        core = self.core
        missing = NotFound(f"no atom with id {shown(atom_id)}")
        if not core.valid_id(atom_id):
            raise missing
        if core.reachable_scopes() is not None and core.find_atom(atom_id) is None:
            raise missing
        events = self.audit.events(atom_id)
        if not events:
            raise missing
        return events

    def verify_chain(self) -> ChainReport:
        """Recompute the hash chain, payload hashes and each live atom's content hash."""
        return verify_chain(self.audit, self.memories)

    def stats(self) -> Stats:
        """Counts of the memories within reach: an agent's repository and global scope (on a team server
        nothing of another tenant shows, not even a number), every scope for a person at the CLI."""
        c = self.reports.counts(self.core.reachable_scopes())
        return Stats(
            atoms=c["atoms"], edges=c["edges"], snapshot_version=self.audit.snapshot_version(self.core.reachable_scopes()),
            by_status=c["by_status"], indexes=IndexCoverage(semantic=c["semantic"], keyword=c["keyword"],
                                                            temporal=c["temporal"], categorical=c["categorical"]),
        )  # fmt: skip

    def export_file(self, path: Path) -> int:
        """`export` into the file `path`, written whole or not at all (a temporary file beside it, renamed over it
        once every line is written). Returns the number of lines. Raises InvalidInput when it cannot be written."""
        from ..shared.files import atomic_text

        path = Path(path)
        try:
            with atomic_text(path) as fh:
                return self.export(fh)
        except OSError as exc:
            raise InvalidInput(f"cannot write the export to {path}: {exc.strerror or exc}") from None

    def export(self, out: IO[str]) -> int:
        """Write every atom, then every event, as JSON lines. Returns the number of lines."""
        n = 0
        for atom in self.memories.list_atoms(limit=-1, newest_first=False):
            out.write(json.dumps({"kind": "atom", **atom.model_dump(mode="json")}, ensure_ascii=False) + "\n")
            n += 1
        for event in self.audit.events():
            out.write(json.dumps({"kind": "event", **event.model_dump(mode="json")}, ensure_ascii=False) + "\n")
            n += 1
        return n

    def agent_brief(self, scope: Scope | None = None, *, mark_session: bool = False) -> Brief:
        """The session-start brief: latest handoff, memories whose code moved since the last session,
        constraints, preferences, recent decisions.

        `mark_session` (the SessionStart hook) records which code changes this brief reported, so the
        next session lists only new ones; `memoryd stale` lists them all.
        """
        return self._brief(scope, mark_session=mark_session)[0]

    def _brief(self, scope: Scope | None, *, mark_session: bool = False) -> tuple[Brief, str | None]:
        """The brief, and its pending-review line (when anything waits), which may not have fit in it."""
        if scope is not None:
            self.core.reach_scope(scope)
        scopes, active = self.core.recall_scopes(scope), ["active"]
        handoffs = self.memories.list_atoms(scope_hashes=scopes, statuses=active, types=["handoff"], limit=1)
        constraints = self.memories.list_atoms(scope_hashes=scopes, statuses=active, epistemic="necessary", limit=10)
        prefs = self.memories.list_atoms(scope_hashes=scopes, statuses=active, types=["preference"], limit=10)
        decisions = self.memories.list_atoms(scope_hashes=scopes, statuses=active, types=["decision"], limit=5)
        pending = len(self.memories.list_atoms(scope_hashes=scopes, statuses=["pending"], limit=1000))
        constraints = [a for a in constraints if a.type != "handoff"]
        prefs = [a for a in prefs if a not in constraints]
        decisions = [a for a in decisions if a not in constraints]
        moved = self.anchors.code_moved_since_last_session(mark=mark_session) if scope is None else []
        everything = [*handoffs, *constraints, *prefs, *decisions, *(m.atom for m in moved)]
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
                if not add(f"- {a.content if len(a.content) <= 600 else a.content[:597] + '…'} ({a.id})"):
                    break
        pending_line = labels[4].format(n=pending) if pending else None
        if pending_line:
            add(pending_line)
        brief = Brief(text="\n".join(parts), handoff=handoffs[0] if handoffs else None, constraints=constraints,
                      preferences=prefs, decisions=decisions, pending_review=pending, code_changed=moved)  # fmt: skip
        return brief, pending_line

    def session_context(self, *, mark_session: bool = False) -> SessionContext:
        """What a new agent session is told: `[memoryd · <scope>]` and the brief, at most `brief_max_chars`
        characters, the pending-review count kept when the brief is cut; a notice instead when the scope
        (or its tenant's global scope) is sensitive without a running grant. With the ids of the memories
        the text shows (None for the notice), so hooks do not inject them again in this session;
        `mark_session` as in `agent_brief`."""
        core = self.core
        header = f"[memoryd · {core.scope.name}]"
        if any(core.locked(h) for h in core.recall_scopes()):
            body = (f"memoryd: the memories of {core.scope.name} are marked sensitive and there is no running read "
                    "grant, so none are shown. A person can run `memoryd scope grant --minutes 30` in this "
                    "repository; you can ask with mem_request_sensitive_read.")  # fmt: skip
            return SessionContext(fit_lines(header, body, core.settings.brief_max_chars), None)
        brief, pending_line = self._brief(None, mark_session=mark_session)
        body = brief.text
        if pending_line and not body.endswith(pending_line):  # the brief ran out of room before its count
            body = f"{body}\n{pending_line}" if body else pending_line
        text = fit_lines(header, body, core.settings.brief_max_chars, pending_line)
        listed = (*([brief.handoff] if brief.handoff else []), *(m.atom for m in brief.code_changed),
                  *brief.constraints, *brief.preferences, *brief.decisions)  # fmt: skip
        return SessionContext(text, [a.id for a in listed if a.content[:60] in text])


def verify_chain(audit: AuditReads, memories: MemoryReads) -> ChainReport:
    """Recompute a store's hash chain, payload hashes and each live atom's content hash."""
    events = audit.events()
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
    atoms = memories.get_atoms(last_content)
    for atom_id, expected in last_content.items():
        atom = atoms.get(atom_id)
        if atom is not None and atom.status != "tombstoned" and content_hash(atom.content) != expected:
            return ChainReport(
                ok=False, events=len(events), problem=f"atom {atom_id} content differs from its audit chain"
            )
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
