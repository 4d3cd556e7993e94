"""What the web console (`memoryd ui`) reads: filtered pages of memories, one memory with its
history, sessions with what they wrote and recalled, the entity graph, and store health.

The console is a surface like the MCP tools: every page is one of these methods, and its
writes are the engine's own (`update`, `correct`, `govern`, `restore`, `promote`, `reject`,
`request_access`). Every form field passes the limits table first. The console opens the engine as
the person (authority "operator": every scope) with sensitive scopes enforced: those without a
running grant are left out of every listing and refused by id (AuthorizationRequired). Opened as
an agent (the SDK's default), the same methods keep to the agent's reach (its repository and the
global scope), as every other engine operation does.
"""

from __future__ import annotations

import dataclasses
import difflib
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..formats import vault
from ..search.decay import DECAY_STATES, HALF_LIFE_DAYS, decay_state
from ..search.tokenize import tokens
from ..shared.errors import AuthorizationRequired, InvalidInput, NotFound
from ..shared.limits import check_text
from ..shared.models import ATOM_TYPES, Atom, Event, Hit, Scope, Session
from ..shared.stamps import utc_now
from ..storage.base import AccessReads, AtomFilter, AuditReads, LastUsedWindow, MemoryReads, Reports
from .core import PLACEHOLDERS, shown

if TYPE_CHECKING:
    from .admin import Admin
    from .core import Core
    from .reads import Reader
    from .review import Review

__all__ = [
    "COUNT_CAP", "STATUSES", "BrowseQuery", "Console", "EntityGraph", "HealthOverview", "MemoryDetail", "MemoryPage",
    "ScopeInfo", "SessionDetail", "decay_windows",
]  # fmt: skip

STATUSES = ("active", "pending", "negated", "superseded", "quarantined", "sealed", "tombstoned")
MAX_PAGE = 200
COUNT_CAP = 10_000  # the Memories page counts matches up to here ("10000+"), so a count never scans 100k rows
_CHAIN_LIMIT = 50  # supersede chains longer than this are cut (and said so)


def decay_windows(state: str, now: datetime) -> tuple[LastUsedWindow, ...]:
    """The last-used windows (per type) in which an atom is in decay `state` (see search.decay)."""
    by_half: dict[int, list[str]] = {}
    for t in ATOM_TYPES:
        by_half.setdefault(HALF_LIFE_DAYS.get(t, 90), []).append(t)
    out: list[LastUsedWindow] = []
    for half, types in sorted(by_half.items()):
        one, three = now - timedelta(days=half), now - timedelta(days=3 * half)
        group = tuple(types)
        if state == "fresh":
            out.append(LastUsedWindow(group, since=one))
        elif state == "stale":
            out += [LastUsedWindow(group, since=three, before=one), LastUsedWindow(group, before=three, necessary=True)]
        else:
            out.append(LastUsedWindow(group, before=three, necessary=False))
    return tuple(out)


class BrowseQuery(BaseModel):
    """The Memories page's filters; every field is optional. `q` switches to hybrid search."""

    q: str | None = None
    scope: str | None = Field(None, description="A scope hash; None = every scope you may read.")
    type: str | None = None
    status: str | None = Field("active", description="One status, or None for any.")
    decay: str | None = None
    tag: str | None = None
    source: str | None = None
    created_from: date | None = None
    created_to: date | None = Field(None, description="Inclusive: memories created on this day count.")
    before: str | None = Field(None, description="Keyset cursor: the last memory id of the previous page.")
    limit: int = 50


class MemoryPage(BaseModel):
    atoms: list[Atom] = Field(default_factory=list)
    hits: list[Hit] | None = Field(None, description="Search results (with score and signals) when q was given.")
    next_before: str | None = None
    total: int | None = Field(None, description="How many memories match (listing only); COUNT_CAP + 1 means more.")
    search_scope: str | None = Field(
        None, description="What a search covered: '<scope> + global', or every readable scope with their names."
    )


class ScopeInfo(BaseModel):
    scope_hash: str
    name: str
    count: int = 0
    sensitive: bool = False
    locked: bool = False
    grant_expires_at: datetime | None = None


class Version(BaseModel):
    """One content-bearing event along the supersede chain, with the diff from the version before it."""

    event: Event
    diff: list[str] = Field(default_factory=list)


class Link(BaseModel):
    kind: str
    direction: str = Field(description="out: this memory → other; in: other → this memory.")
    atom: Atom


class MemoryDetail(BaseModel):
    atom: Atom
    decay: str
    path: str | None
    history: list[Event]
    versions: list[Version]
    chain: list[Atom] = Field(description="The supersede chain, oldest first (this memory included).")
    chain_cut: bool = False
    links: list[Link]
    scope_name: str
    frontmatter: dict[str, Any] = Field(default_factory=dict, description="As the vault file holds it (live states).")


class SessionRow(BaseModel):
    session: Session
    scope_name: str


class Recall(BaseModel):
    """A recall that ran in the session's scope and window: when, and what it returned (no query is kept)."""

    at: datetime
    hits: list[Atom]


class SessionDetail(BaseModel):
    session: Session
    scope_name: str
    wrote: list[Atom]
    wrote_more: bool
    handoffs: list[Atom]
    recalls: list[Recall]


class EntityGraph(BaseModel):
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class HealthOverview(BaseModel):
    atoms: int
    edges: int
    snapshot_version: int
    by_status: dict[str, int]
    by_type: dict[str, int]
    by_decay: dict[str, int]
    growth: list[tuple[str, int]] = Field(description="Memories created per UTC day, every day of the window.")
    scopes: list[ScopeInfo]
    access_requests: list[dict[str, Any]]


class Console:
    """The console's pages over the other parts (reads through `Reader`, decisions through `Review`)."""

    def __init__(
        self,
        core: Core,
        reader: Reader,
        review: Review,
        admin: Admin,
        *,
        memories: MemoryReads,
        audit: AuditReads,
        access: AccessReads,
        reports: Reports,
    ) -> None:
        self.memories = memories
        self.audit = audit
        self.access = access
        self.reports = reports
        self.core = core
        self.reader = reader
        self.review = review
        self.admin = admin

    # -- scopes ---------------------------------------------------------------------------

    def _locked_scopes(self) -> tuple[str, ...]:
        """Sensitive scopes this engine may not read now (none when it does not enforce them)."""
        if not self.core.enforce_sensitive:
            return ()
        return tuple(h for h, _ in self.access.sensitive_scopes() if self.access.grant_expiry(h) is None)

    def _in_reach(self, scope_hash: str) -> bool:
        """Whether this engine may see the scope at all (trust's boundary: an agent its own and the global
        scope only; the console's person, an operator, every scope)."""
        reach = self.core.reachable_scopes()
        return reach is None or scope_hash in reach

    def console_scopes(self, counts: dict[str, int] | None = None) -> list[ScopeInfo]:
        """Every scope within reach holding memories, plus sensitive ones, with its lock state."""
        counts = counts if counts is not None else self.reports.console_counts(("by_scope",))["by_scope"]
        counts = {h: n for h, n in counts.items() if self._in_reach(h)}
        sensitive = {h: n for h, n in self.access.sensitive_scopes() if self._in_reach(h)}
        names = self._scope_names(set(counts))
        out = []
        for h in dict.fromkeys([*counts, *sensitive]):
            expiry = self.access.grant_expiry(h) if h in sensitive else None
            out.append(ScopeInfo(
                scope_hash=h, name=names.get(h) or sensitive.get(h, h), count=counts.get(h, 0), sensitive=h in sensitive,
                locked=h in sensitive and expiry is None and self.core.enforce_sensitive, grant_expires_at=expiry,
            ))  # fmt: skip
        return sorted(out, key=lambda s: (s.name != self.core.scope.name, s.name))

    def scope_of(self, scope_hash: str) -> Scope:
        """The scope with this hash (the current or global scope, or one that holds memories)."""
        check_text("scope", scope_hash, required=True)
        for s in (self.core.scope, self.core.global_scope):
            if s.scope_hash == scope_hash:
                return s
        found = self.memories.list_atoms(scope_hashes=[scope_hash], limit=1) if self._in_reach(scope_hash) else []
        if not found:
            raise NotFound(f"no scope {scope_hash!r} holds memories")
        return found[0].scope

    def request_access(self, scope_hash: str, reason: str) -> dict[str, Any]:
        """File a request to read a sensitive scope; a person grants it with `memoryd scope grant`."""
        return self.admin.request_read(self.scope_of(scope_hash), reason, by="console")

    # -- memories -------------------------------------------------------------------------

    def _atom_filter(self, q: BrowseQuery, *, now: datetime) -> AtomFilter:
        # Every form field through the limits table before any work (tokenising the tag, a query).
        check_text("query", q.q, field="q")
        check_text("scope", q.scope)
        check_text("tag", q.tag)
        check_text("source", q.source)
        check_text("id", q.before, field="before")
        if q.type is not None and q.type not in ATOM_TYPES:
            raise InvalidInput(f"unknown type {q.type!r}; expected one of {', '.join(ATOM_TYPES)}")
        if q.status is not None and q.status not in STATUSES:
            raise InvalidInput(f"unknown status {q.status!r}; expected one of {', '.join(STATUSES)}")
        if q.decay is not None and q.decay not in DECAY_STATES:
            raise InvalidInput(f"unknown decay state {q.decay!r}; expected one of {', '.join(DECAY_STATES)}")
        if not isinstance(q.limit, int) or not 1 <= q.limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}, got {q.limit!r}")
        if q.created_from and q.created_to and q.created_from > q.created_to:
            raise InvalidInput(f"created_from {q.created_from} is after created_to {q.created_to}")
        locked = self._locked_scopes()
        if q.scope is not None and not self._in_reach(q.scope):
            raise NotFound(f"no scope {q.scope!r} holds memories")
        if q.scope is not None and q.scope in locked:
            raise AuthorizationRequired(
                f"scope {q.scope} is sensitive and has no running grant; request access on the Health page, "
                "then a person runs `memoryd scope grant --minutes 30` in that repository"
            )
        reach = self.core.reachable_scopes()
        return AtomFilter(
            scope_hashes=(q.scope,) if q.scope else (tuple(reach) if reach is not None else None), exclude_scopes=locked,
            statuses=(q.status,) if q.status else None, types=(q.type,) if q.type else None,
            source=q.source or None, tag=q.tag or None, tag_terms=tuple(dict.fromkeys(tokens(q.tag))) if q.tag else (),
            created_from=datetime.combine(q.created_from, time(), UTC) if q.created_from else None,
            created_to=datetime.combine(q.created_to + timedelta(days=1), time(), UTC) if q.created_to else None,
            last_used=decay_windows(q.decay, now) if q.decay else None, before=q.before or None, limit=q.limit,
        )  # fmt: skip

    def browse(self, q: BrowseQuery) -> MemoryPage:
        """One page of memories matching the filters, newest first; with `q.q`, hybrid search instead.

        Search covers the chosen scope (default: the current one) plus the global scope, like
        recall, and the other filters narrow its hits. Raises InvalidInput, AuthorizationRequired.
        """
        now = utc_now()
        f = self._atom_filter(q, now=now)
        if q.q is not None and q.q.strip():
            return self._search(q, f, now)
        rows = self.reports.browse_atoms(dataclasses.replace(f, limit=f.limit + 1))
        more = len(rows) > f.limit
        rows = rows[: f.limit]
        total = self.reports.count_atoms(f, cap=COUNT_CAP + 1) if f.before is None else None
        return MemoryPage(atoms=rows, next_before=rows[-1].id if more and rows else None, total=total)

    def _search(self, q: BrowseQuery, f: AtomFilter, now: datetime) -> MemoryPage:
        """Search the chosen scope plus global; with no scope chosen, every readable (unlocked) scope, as the
        list shows them: one recall per scope, hits merged by score (each atom once)."""
        statuses = list(f.statuses or STATUSES[:-1])  # tombstoned atoms have nothing left to find
        if q.scope:
            scopes = [self.scope_of(q.scope)]
        else:
            readable = [s.scope_hash for s in self.console_scopes() if not s.locked]
            scopes = [self.core.scope, *(self.scope_of(h) for h in readable
                                         if h not in (self.core.scope.scope_hash, self.core.global_scope.scope_hash))]  # fmt: skip
        best: dict[str, Hit] = {}
        for scope in scopes:
            found = self.reader.recall(
                q.q or "", max_results=min(q.limit, 100), types=list(f.types) if f.types else None, scope=scope,
                statuses=statuses, record=False,
            )  # fmt: skip
            for h in found.hits:
                if h.atom.id not in best or h.score > best[h.atom.id].score:
                    best[h.atom.id] = h
        merged = sorted(best.values(), key=lambda h: -h.score)[: min(q.limit, 100)]
        kept = []
        for h in merged:
            a = h.atom
            if a.scope_hash in f.exclude_scopes or (f.source and a.source != f.source):
                continue
            if (f.tag and f.tag not in a.tags) or (f.created_from and a.created_at < f.created_from):
                continue
            if (f.created_to and a.created_at >= f.created_to) or (q.decay and decay_state(a, now) != q.decay):
                continue
            kept.append(h)
        names = sorted({s.name for s in scopes} | {self.core.global_scope.name})
        where = scopes[0].name + " + global" if q.scope else f"every readable scope ({', '.join(names)})"
        return MemoryPage(hits=kept, search_scope=where)

    def decay_of(self, atoms: list[Atom]) -> dict[str, str]:
        """Decay state of each atom now (fresh, stale, soft_forgotten)."""
        now = utc_now()
        return {a.id: decay_state(a, now) for a in atoms}

    def memory_detail(self, atom_id: str) -> MemoryDetail:
        """One memory with its audit history, versions and diffs, supersede chain and links."""
        atom = self.core.get(atom_id)
        history = self.reader.history(atom_id)
        chain, cut = self._chain(atom)
        versions: list[Version] = []
        previous: str | None = None
        for e in (e for a in chain for e in (history if a.id == atom.id else self.audit.events(a.id))):
            if e.content is None:
                continue
            diff = [] if previous is None else [
                line for line in difflib.unified_diff(previous.splitlines(), e.content.splitlines(), "before", "after",
                                                      lineterm="", n=2)
            ]  # fmt: skip
            versions.append(Version(event=e, diff=diff))
            previous = e.content
        links: list[Link] = []
        edges = self.reports.atom_links(atom.id)
        others = self.memories.get_atoms({dst if src == atom.id else src for src, dst, _ in edges})
        locked = self._locked_scopes()
        for src, dst, kind in edges:
            other = others.get(dst if src == atom.id else src)
            if other is not None and other.scope_hash not in locked and self._in_reach(other.scope_hash):
                links.append(Link(kind=kind, direction="out" if src == atom.id else "in", atom=other))
        path = self.core.path_of(atom)
        front = {} if atom.status in PLACEHOLDERS else vault.atom_frontmatter(atom)
        return MemoryDetail(
            atom=atom, decay=decay_state(atom, utc_now()), path=str(path) if path else None, history=history,
            versions=versions, chain=chain, chain_cut=cut, links=links, scope_name=atom.scope.name, frontmatter=front,
        )  # fmt: skip

    def _chain(self, atom: Atom) -> tuple[list[Atom], bool]:
        older, newer = self._supersede_walk(atom, "supersedes"), self._supersede_walk(atom, "superseded_by")
        cut = len(older) >= _CHAIN_LIMIT or len(newer) >= _CHAIN_LIMIT
        return [*reversed(older), atom, *newer], cut

    def _supersede_walk(self, atom: Atom, link: str) -> list[Atom]:
        """The atoms reached from `atom` through `link` (supersedes / superseded_by), nearest first."""
        out: list[Atom] = []
        cur = atom
        while (next_id := getattr(cur, link)) and len(out) < _CHAIN_LIMIT:
            nxt = self.memories.get_atoms([next_id]).get(next_id)
            if nxt is None:
                break
            out.append(nxt)
            cur = nxt
        return out

    def decide_promotions(self, action: str, ids: list[int], *, actor: str) -> tuple[list[int], list[dict[str, Any]]]:
        """Promote or reject held saves; a promotion of a locked sensitive scope is refused, not decided.

        Raises InvalidInput (unknown action), AuthorizationRequired.
        """
        if action not in ("promote", "reject"):
            raise InvalidInput(f"unknown review action {action!r}; expected promote or reject")
        for p in self.memories.get_promotions(ids).values():
            self.core.guard_read(p.scope_hash)
        return self.review.promote(ids, actor=actor) if action == "promote" else self.review.reject(ids, actor=actor)

    # -- sessions -------------------------------------------------------------------------

    def sessions_page(self, *, before: str | None = None, limit: int = 50) -> tuple[list[SessionRow], str | None]:
        """Sessions newest first, and the cursor of the next page (None at the end)."""
        if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}, got {limit!r}")
        check_text("id", before, field="before")
        rows = self.reports.list_sessions(before=before or None, limit=limit + 1, exclude_scopes=self._locked_scopes())
        if self.core.reachable_scopes() is not None:  # an agent: its own and the global scope's sessions only
            rows = [r for r in rows if self._in_reach(r.scope_hash)]
        names = self._scope_names({s.scope_hash for s in rows})
        out = [SessionRow(session=s, scope_name=names.get(s.scope_hash, s.scope_hash)) for s in rows[:limit]]
        return out, rows[limit - 1].id if len(rows) > limit else None

    def session_detail(self, session_id: str, *, limit: int = 100) -> SessionDetail:
        """What one session wrote, handed off and recalled: memories created and recalls run in its
        scope between its start and its end (now while open). Sessions carry no id on the memories
        they write, so a session running beside another in the same scope shares their activity.
        """
        own = self.core.find_atom(session_id)  # the scope boundary and sensitive gate, by id
        session = self.memories.get_session(own.id) if own is not None else None
        if own is None or session is None:
            raise NotFound(f"no session with id {shown(session_id)}")
        end = session.ended_at or utc_now()
        f = AtomFilter(scope_hashes=(session.scope_hash,), created_from=session.started_at,
                       created_to=end + timedelta(microseconds=1), limit=limit + 2)  # fmt: skip
        wrote = [a for a in self.reports.browse_atoms(f) if a.id != own.id]
        handoffs = [a for a in wrote if a.type == "handoff"]
        recalls = []
        logged = self.reports.recalls(
            scope_hashes=[session.scope_hash], since=session.started_at, until=end, limit=limit
        )
        atoms = self.memories.get_atoms({i for r in logged for i in r["hits"]})
        for r in logged:
            recalls.append(Recall(at=r["at"], hits=[atoms[i] for i in r["hits"] if i in atoms]))
        return SessionDetail(
            session=session, scope_name=own.scope.name, wrote=wrote[:limit], wrote_more=len(wrote) > limit,
            handoffs=handoffs, recalls=recalls,
        )  # fmt: skip

    def _scope_names(self, hashes: set[str]) -> dict[str, str]:
        names = {s.scope_hash: s.name for s in (self.core.scope, self.core.global_scope)}
        missing = [h for h in hashes if h not in names]
        if missing:
            names.update(self.reports.scope_names(missing))
        return names

    # -- entities -------------------------------------------------------------------------

    def entity_graph(self, *, entities: int = 25, per_entity: int = 6) -> EntityGraph:
        """The most mentioned entities and the newest active memories that mention each."""
        if not 1 <= entities <= 200 or not 1 <= per_entity <= 50:
            raise InvalidInput("entities must be 1-200 and per_entity 1-50")
        locked = self._locked_scopes()
        # Ranked by an index-only count of every mention; an entity shows only with a mention by an
        # active memory of a readable scope (so a locked scope's entity names never appear).
        ranked = self.reports.top_entities(limit=entities * 3)
        mentions = self.reports.entity_mentions([e for e, _ in ranked], per_entity=per_entity, exclude_scopes=locked)
        if self.core.reachable_scopes() is not None:  # an agent sees the names its own scopes mention only
            scoped = self.memories.get_atoms({a for _, a in mentions})
            mentions = [(e, a) for e, a in mentions if a in scoped and self._in_reach(scoped[a].scope_hash)]
        visible = {e for e, _ in mentions}
        top = [(e, n) for e, n in ranked if e in visible][:entities]
        mentions = [(e, a) for e, a in mentions if e in dict(top)]
        atoms = self.memories.get_atoms({a for _, a in mentions})
        nodes: list[dict[str, Any]] = [
            {"id": e, "kind": "entity", "label": e.split(":", 2)[-1], "group": e.split(":", 2)[1], "count": n}
            for e, n in top
        ]
        for atom_id, a in atoms.items():
            text = a.title or a.content
            nodes.append({"id": atom_id, "kind": "memory", "label": text[:60] + ("…" if len(text) > 60 else ""),
                          "group": a.type, "count": 0})  # fmt: skip
        edges = [{"source": a, "target": e, "kind": "mentions"} for e, a in mentions if a in atoms]
        return EntityGraph(nodes=nodes, edges=edges)

    def entity_page(self, entity_id: str, *, before: str | None = None, limit: int = 50) -> MemoryPage:
        """Memories (any status) that mention one entity, newest first."""
        check_text("entity", entity_id, field="entity id", required=True)
        if not entity_id.startswith("entity:") or entity_id.count(":") < 2:
            raise InvalidInput(f"entity ids look like entity:<kind>:<name>, got {entity_id!r}")
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}, got {limit!r}")
        check_text("id", before, field="before")
        reach = self.core.reachable_scopes()
        f = AtomFilter(entity=entity_id, scope_hashes=tuple(reach) if reach is not None else None,
                       exclude_scopes=self._locked_scopes(), before=before or None, limit=limit + 1)  # fmt: skip
        rows = self.reports.browse_atoms(f)
        return MemoryPage(atoms=rows[:limit], next_before=rows[limit - 1].id if len(rows) > limit else None)

    # -- health ---------------------------------------------------------------------------

    def health_overview(self, *, days: int = 90) -> HealthOverview:
        """Counts by status, type and decay state, growth per day, scopes and their locks (index-only
        queries; index coverage and the chain are on-demand checks: `stats`, `verify_chain`)."""
        now = utc_now()
        c = self.reports.console_counts()
        counted = {  # two scans of the covering decay index; stale is the rest of the active memories
            s: self.reports.count_atoms(AtomFilter(statuses=("active",), last_used=decay_windows(s, now)))
            for s in ("fresh", "soft_forgotten")
        }
        counted["stale"] = c["by_status"].get("active", 0) - counted["fresh"] - counted["soft_forgotten"]
        by_decay = {s: counted[s] for s in DECAY_STATES}
        return HealthOverview(
            atoms=sum(c["by_status"].values()), edges=c["edges"], snapshot_version=self.audit.snapshot_version(),
            by_status=c["by_status"], by_type=c["by_type"], by_decay=by_decay,
            growth=_dense(self.reports.growth(now - timedelta(days=days - 1)), now.date(), days),
            scopes=self.console_scopes(c["by_scope"]), access_requests=self.access.access_requests(),
        )  # fmt: skip


def _dense(counts: list[tuple[str, int]], today: date, days: int) -> list[tuple[str, int]]:
    """One (day, count) per day of the window, oldest first, zeros included."""
    have = dict(counts)
    out = []
    for back in range(days - 1, -1, -1):
        day = (today - timedelta(days=back)).isoformat()
        out.append((day, have.get(day, 0)))
    return out
