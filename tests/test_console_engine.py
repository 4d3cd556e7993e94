"""What the web console reads, through the engine, on both backends (SQLite file and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import Engine
from memoryd.engine.console import BrowseQuery
from memoryd.search.embed import UseEmbedder
from memoryd.shared.config import Settings
from memoryd.shared.errors import AuthorizationRequired, InvalidInput, NotFound

from .conftest import make_repo

PG = "We use PostgreSQL 16 for the main database, not MongoDB, because we need transactions"
PUSH = "Never push directly to main; open a pull request for every change to login.py"
SOLID = "决定从 React 切到 Solid，理由是性能+体积"


@pytest.fixture
def other(settings: Settings, tmp_path: Path, embedder: UseEmbedder) -> Iterator[Engine]:
    """A second repository on the same store (scope acme/billing)."""
    repo = make_repo(tmp_path / "billing", remote="git@github.com:acme/billing.git")
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        yield e


@pytest.fixture
def console(settings: Settings, repo: Path, embedder: UseEmbedder) -> Iterator[Engine]:
    """The engine as the console opens it: sensitive scopes enforced."""
    with Engine.open(settings, cwd=repo, embedder=embedder, authority="operator", enforce_sensitive=True) as e:
        yield e


def _age(engine: Engine, atom_id: str, days: int) -> None:
    old = datetime.now(UTC) - timedelta(days=days)
    with engine.store.transaction() as tx:
        tx.update_atom(atom_id, updated_at=old)


def test_browse_filters_and_keyset_pages(console: Engine, engine: Engine, other: Engine) -> None:
    a = engine.memorize(PG, source="user", tags=["db", "infra"]).atom_id
    b = engine.memorize(PUSH, source="agent", type="warning").atom_id
    c = engine.memorize(SOLID, source="user", type="decision", tags=["frontend"]).atom_id
    d = other.memorize("Invoices are generated nightly by the billing cron job", source="importer").atom_id
    engine.correct(b, "negate", "we allow direct pushes for docs")
    # an agent's engine keeps to its own repository and the global scope (issue 10), in the console's reads too
    assert [x.id for x in engine.browse(BrowseQuery()).atoms] == [c, a]
    with pytest.raises(NotFound, match="no scope"):
        engine.browse(BrowseQuery(scope=other.scope.scope_hash))
    engine = console  # the console's person reads every repository
    assert [x.id for x in engine.browse(BrowseQuery()).atoms] == [d, c, a]  # active, newest first
    assert engine.browse(BrowseQuery()).total == 3
    assert [x.id for x in engine.browse(BrowseQuery(status=None)).atoms] == [d, c, b, a]
    assert [x.id for x in engine.browse(BrowseQuery(status="negated")).atoms] == [b]
    assert [x.id for x in engine.browse(BrowseQuery(type="decision")).atoms] == [c]
    assert [x.id for x in engine.browse(BrowseQuery(tag="db")).atoms] == [a]
    assert [x.id for x in engine.browse(BrowseQuery(source="importer")).atoms] == [d]
    assert [x.id for x in engine.browse(BrowseQuery(scope=engine.scope.scope_hash)).atoms] == [c, a]
    today = datetime.now(UTC).date()
    assert len(engine.browse(BrowseQuery(created_from=today, created_to=today)).atoms) == 3
    assert engine.browse(BrowseQuery(created_to=today - timedelta(days=1))).atoms == []
    first = engine.browse(BrowseQuery(status=None, limit=2))
    assert [x.id for x in first.atoms] == [d, c] and first.next_before == c and first.total == 4
    second = engine.browse(BrowseQuery(status=None, limit=2, before=first.next_before))
    assert [x.id for x in second.atoms] == [b, a] and second.next_before is None and second.total is None


def test_tag_filter_is_exact(engine: Engine) -> None:
    zh = engine.memorize(SOLID, source="user", tags=["性能优化", "C++"]).atom_id
    engine.memorize("We profile the renderer before every release to keep it fast", source="user", tags=["性能"])
    sub = engine.memorize("Use get_session() for every request that needs the user", source="user",
                          tags=["get_session"]).atom_id  # fmt: skip
    assert [x.id for x in engine.browse(BrowseQuery(tag="性能优化")).atoms] == [zh]
    assert [x.id for x in engine.browse(BrowseQuery(tag="C++")).atoms] == [zh]  # "c" alone is no prefilter bug
    assert [x.id for x in engine.browse(BrowseQuery(tag="get_session")).atoms] == [sub]
    assert engine.browse(BrowseQuery(tag="session")).atoms == []  # a tag matches whole, not by its parts
    assert engine.browse(BrowseQuery(tag='"!')).atoms == []


def test_browse_by_decay_state(engine: Engine) -> None:
    fresh = engine.memorize(PG, source="user").atom_id
    stale = engine.memorize(SOLID, source="user", type="decision").atom_id  # decision: half-life 180 days
    gone = engine.memorize("The staging cluster runs in eu-west-1 behind the VPN", type="fact").atom_id  # fact: 90
    rule = engine.memorize(PUSH, source="user", type="warning").atom_id
    engine.correct(rule, "confirm_necessary", "team rule")
    _age(engine, stale, 200)
    _age(engine, gone, 300)
    _age(engine, rule, 1000)  # hard constraints never go past stale

    def ids(state: str) -> set[str]:
        return {x.id for x in engine.browse(BrowseQuery(decay=state)).atoms}

    assert ids("fresh") == {fresh}
    assert ids("stale") == {stale, rule}
    assert ids("soft_forgotten") == {gone}
    assert engine.health_overview().by_decay == {"fresh": 1, "stale": 2, "soft_forgotten": 1}
    assert engine.decay_of([engine.get(gone)]) == {gone: "soft_forgotten"}


def test_search_shows_score_and_signals_and_keeps_filters(engine: Engine) -> None:
    a = engine.memorize(PG, source="user", tags=["db"]).atom_id
    engine.memorize("PostgreSQL connection pool size is 20 in production", source="agent")
    page = engine.browse(BrowseQuery(q="PostgreSQL main database"))
    assert page.hits and page.hits[0].atom.id == a and page.search_scope.startswith("every readable scope (")
    top = page.hits[0]
    # the ranking's signals (search/rank.py), the English one when the term embedder is loaded
    assert 0 < top.score <= 1 and {"keyword", "semantic", "entity"} <= set(top.signals) <= {
        "keyword", "semantic", "entity", "semantic_en", "english", "reply", "cues", "drift"}  # fmt: skip
    assert {h.atom.id for h in engine.browse(BrowseQuery(q="PostgreSQL", tag="db")).hits or []} == {a}
    assert engine.browse(BrowseQuery(q="PostgreSQL", source="nobody")).hits == []
    # the console's own searches are not recorded as agent recalls
    assert engine.store.recalls(scope_hashes=[engine.scope.scope_hash], since=datetime(2000, 1, 1, tzinfo=UTC),
                                until=None, limit=10) == []  # fmt: skip


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (BrowseQuery(type="rumour"), "unknown type 'rumour'"),
        (BrowseQuery(status="gone"), "unknown status 'gone'"),
        (BrowseQuery(decay="rotten"), "unknown decay state 'rotten'"),
        (BrowseQuery(limit=0), "limit must be between 1 and 200"),
        (BrowseQuery(created_from=date(2026, 2, 1), created_to=date(2026, 1, 1)), "is after created_to"),
    ],
)
def test_browse_refuses_bad_filters(engine: Engine, query: BrowseQuery, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        engine.browse(query)


def test_memory_detail_history_versions_chain_links(engine: Engine) -> None:
    a = engine.memorize(PG, source="user", title="Main database", tags=["db"]).atom_id
    engine.update(a, tags=["db", "core"], actor="console", reason="more tags")
    b = engine.correct(a, "replace", "upgraded", PG.replace("16", "17")).new_atom_id
    assert b
    d = engine.memory_detail(b)
    assert [x.id for x in d.chain] == [a, b] and not d.chain_cut
    assert [(v.event.atom_id, v.event.action) for v in d.versions] == [(a, "create"), (b, "replace")]
    assert "-" + PG in d.versions[1].diff and "+" + PG.replace("16", "17") in d.versions[1].diff
    assert [(link.kind, link.direction, link.atom.id) for link in d.links] == [("supersedes", "out", a)]
    assert d.frontmatter["id"] == b and d.frontmatter["tags"] == ["db", "core"] and d.path and d.decay == "fresh"
    old = engine.memory_detail(a)
    assert [e.action for e in old.history] == ["create", "update", "superseded"]
    assert old.history[1].actor == "console" and old.history[1].reason == "more tags"
    assert [(link.kind, link.direction) for link in old.links] == [("supersedes", "in")] and old.path is None
    engine.govern(b, "quarantine", "check it")
    assert engine.memory_detail(b).frontmatter == {}  # hidden states show no user text outside the audit view
    with pytest.raises(NotFound, match="no atom with id 'NOPE'"):
        engine.memory_detail("NOPE")


def test_sessions_with_what_they_wrote_recalled_and_handed_off(engine: Engine) -> None:
    before = engine.memorize(SOLID, source="user").atom_id
    s = engine.session_start(source="claude-code", title="Fix the login bug")
    wrote = engine.memorize(PUSH, source="agent").atom_id
    engine.recall("pull request login.py")
    handoff = engine.handoff("Fixed login.py null pointer; next: integration tests").atom_id
    engine.session_end(s.id, "fixed it")
    after = engine.session_start(title="Later")
    rows, cursor = engine.sessions_page()
    assert [r.session.id for r in rows] == [after.id, s.id] and cursor is None
    assert rows[1].scope_name == "acme/widgets"
    page, cursor = engine.sessions_page(limit=1)
    assert [r.session.id for r in page] == [after.id] and cursor == after.id
    assert [r.session.id for r in engine.sessions_page(before=cursor, limit=1)[0]] == [s.id]
    d = engine.session_detail(s.id)
    assert {a.id for a in d.wrote} == {wrote, handoff} and before not in {a.id for a in d.wrote}
    assert [a.id for a in d.handoffs] == [handoff]
    assert len(d.recalls) == 1 and d.recalls[0].hits[0].id == wrote
    with pytest.raises(NotFound, match="no session with id 'NOPE'"):
        engine.session_detail("NOPE")
    with pytest.raises(InvalidInput, match="limit must be between 1 and 200"):
        engine.sessions_page(limit=500)


def test_recall_log_keeps_hits_not_queries(engine: Engine) -> None:
    a = engine.memorize(PG, source="user").atom_id
    engine.recall("PostgreSQL main database hunter2secret")
    logged = engine.store.recalls(scope_hashes=[engine.scope.scope_hash], since=datetime(2000, 1, 1, tzinfo=UTC),
                                  until=None, limit=5)  # fmt: skip
    assert len(logged) == 1 and logged[0]["hits"][0] == a and set(logged[0]) == {"at", "scope_hash", "hits"}


def test_entity_graph_and_entity_page(engine: Engine) -> None:
    a = engine.memorize(PUSH, source="user").atom_id
    b = engine.memorize("login.py calls get_session() before every request", source="user").atom_id
    c = engine.memorize(PG, source="user").atom_id
    engine.govern(c, "seal", "private")
    g = engine.entity_graph()
    entities = {n["id"]: n["count"] for n in g.nodes if n["kind"] == "entity"}
    assert entities["entity:file:login.py"] == 2 and "entity:library:PostgreSQL" not in entities  # sealed: left out
    assert {(e["source"], e["target"]) for e in g.edges} >= {(a, "entity:file:login.py"), (b, "entity:file:login.py")}
    assert [x.id for x in engine.entity_page("entity:file:login.py").atoms] == [b, a]
    assert [x.id for x in engine.entity_page("entity:library:PostgreSQL").atoms] == [c]  # any status, by id
    with pytest.raises(InvalidInput, match="entity ids look like entity:<kind>:<name>"):
        engine.entity_page("login.py")


def test_health_overview_counts_and_growth(engine: Engine) -> None:
    engine.memorize(PG, source="user")
    engine.memorize(SOLID, source="user", type="decision")
    h = engine.health_overview()
    assert h.atoms == 2 and h.by_status == {"active": 2} and h.by_type == {"fact": 1, "decision": 1}
    assert len(h.growth) == 90 and h.growth[-1] == (datetime.now(UTC).strftime("%Y-%m-%d"), 2)
    assert sum(n for _, n in h.growth) == 2
    assert [s.name for s in h.scopes] == ["acme/widgets"] and not h.scopes[0].locked
    applied = {v for v, _ in engine.store.applied_migrations()}  # type: ignore[attr-defined]
    assert 5 in applied


def test_sensitive_scopes_stay_locked_for_the_console(engine: Engine, other: Engine, console: Engine) -> None:
    mine = engine.memorize(PG, source="user").atom_id
    secret = other.memorize("Payroll runs on the 25th through the bank's SFTP drop", source="user").atom_id
    s = other.session_start(title="payroll work")
    other.mark_sensitive(True)
    locked = other.scope.scope_hash
    assert [x.id for x in console.browse(BrowseQuery()).atoms] == [mine]
    assert console.browse(BrowseQuery()).total == 1
    with pytest.raises(AuthorizationRequired, match="is sensitive and has no running grant"):
        console.browse(BrowseQuery(scope=locked))
    with pytest.raises(AuthorizationRequired):
        console.memory_detail(secret)
    with pytest.raises(AuthorizationRequired):
        console.session_detail(s.id)
    assert [r.session.id for r in console.sessions_page()[0]] == []
    assert not any(n["id"] == secret for n in console.entity_graph().nodes)
    info = {x.scope_hash: x for x in console.console_scopes()}
    assert info[locked].locked and info[locked].sensitive and info[locked].name == "acme/billing"
    r = console.request_access(locked, "need the payroll date")
    assert r["status"] == "pending" and r["request_id"]
    assert console.store.access_requests()[-1]["reason"] == "need the payroll date"
    with pytest.raises(InvalidInput, match="reason is required"):
        console.request_access(locked, " ")
    other.grant(5)  # a person grants it from the CLI; then the console may read
    assert secret in [x.id for x in console.browse(BrowseQuery()).atoms]
    assert console.memory_detail(secret).atom.id == secret


def test_search_without_a_scope_covers_every_readable_scope_and_says_so(engine: Engine, settings: Any, tmp_path: Path,
                                                                       embedder: Any) -> None:  # fmt: skip
    """Issue 25: what the list shows, search finds; the page names what it searched."""
    from .conftest import make_repo

    other_repo = make_repo(tmp_path / "billing", remote="git@github.com:acme/billing.git")
    with Engine.open(settings, cwd=other_repo, embedder=embedder) as other:
        far = other.memorize("Invoices are archived to cold storage after seven years", source="user").atom_id
        other_name = other.scope.name
    near = engine.memorize("Invoices render as PDF through WeasyPrint", source="user").atom_id
    # the console's engine: every scope within an operator's reach (what `memoryd ui` opens)
    with Engine.open(settings, cwd=engine._core.scope.root or tmp_path, embedder=embedder, authority="operator") as op:
        _search_every_scope(op, far, near, other_name)


def _search_every_scope(engine: Engine, far: str | None, near: str | None, other_name: str) -> None:
    page = engine.browse(BrowseQuery(q="invoices archived cold storage"))
    assert far in {h.atom.id for h in page.hits or []} and near in {h.atom.id for h in page.hits or []}
    assert (
        page.search_scope
        == f"every readable scope ({', '.join(sorted({engine.scope.name, other_name, engine.scope.global_scope().name}))})"
    )  # noqa: E501
    only = engine.browse(BrowseQuery(q="invoices archived cold storage", scope=engine.scope.scope_hash))
    assert far not in {h.atom.id for h in only.hits or []} and only.search_scope == f"{engine.scope.name} + global"
