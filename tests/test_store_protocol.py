"""`Store` and `StoreTx` (storage/base.py) are the whole contract: the engine calls nothing else.

Two checks, because each misses what the other sees:

- a static one: every `….store.<name>` in the engine and the surfaces names a member of `Store`
  (it sees every line, also paths no test runs, but not a transaction object passed around);
- a dynamic one: the engine runs a representative session — every write path, recall, review,
  sessions, sensitive scopes, the vault, import, observations, admin, a store copy — on a store
  wrapped in a proxy that exposes only the protocols' names, on both backends; anything else it
  touches raises (it sees every object the store hands out, on the paths it runs).

mypy (strict on engine/ and storage/, run by .ci/run) checks the same contract by types.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Protocol

import pytest

import memoryd
from memoryd.anchors.symbols import parse_python
from memoryd.engine import Engine
from memoryd.engine.migrate import migrate_store
from memoryd.search.embed import UseEmbedder
from memoryd.shared.config import Settings
from memoryd.shared.scope import infer_scope
from memoryd.storage import open_store
from memoryd.storage.base import Store, StoreTx

SRC = Path(memoryd.__file__).parent


def _own(protocol: type) -> set[str]:
    return {n for n in vars(protocol) if not n.startswith("_")} | set(vars(protocol).get("__annotations__", {}))


def _members(protocol: type) -> set[str]:
    """A protocol's names with those of the roles it is made of."""
    return set().union(*(_own(c) for c in protocol.__mro__ if c not in (object, Protocol, Generic)))


STORE, STORE_TX = _members(Store), _members(StoreTx)
READ_ROLES = [c for c in Store.__mro__[1:] if c not in (object, Protocol, Generic)]
WRITE_ROLES = [c for c in StoreTx.__mro__[1:] if c not in (object, Protocol, Generic)]


class _Strict:
    """Exposes only `allowed` names of the wrapped object; anything else is a test failure."""

    def __init__(self, inner: Any, allowed: set[str], what: str) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_allowed", allowed)
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "used", set())

    def __getattr__(self, name: str) -> Any:
        if name not in self._allowed:
            raise AssertionError(
                f"the engine used {self._what}.{name}, which the {self._what} protocol does not declare"
            )
        self.used.add(name)
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._allowed:
            raise AssertionError(
                f"the engine set {self._what}.{name}, which the {self._what} protocol does not declare"
            )
        setattr(self._inner, name, value)


class StrictStore(_Strict):
    def __init__(self, inner: Store) -> None:
        super().__init__(inner, STORE, "Store")
        object.__setattr__(self, "tx_used", set())

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        self.used.add("transaction")
        with self._inner.transaction() as tx:
            strict = _Strict(tx, STORE_TX, "StoreTx")
            yield strict
        self.tx_used.update(strict.used)


def _session(e: Engine, tmp_path: Path) -> None:
    """A bit of everything an agent, a person and a server do."""
    a = e.memorize("We decided to use PostgreSQL 16 for the billing service's main database", source="user").atom_id
    assert a
    e.memorize("We decided to use PostgreSQL 16 for the billing service's main database")  # duplicate
    pending = e.memorize("maybe look at the cache later", gate="review")
    held = e.memorize("Always run make test before pushing to main", gate="hold")
    assert e.recall("PostgreSQL billing").hits
    e.search("billing database", types=["decision"], entity_ids=["entity:library:PostgreSQL"])
    e.context(a)
    e.timeline(since="1y")
    e.timeline_window(since="30d")
    e.patch(a, tags=["db"], title="main database")
    e.update(a, content="We decided to use PostgreSQL 17 for the billing service's main database")
    new = e.correct(
        a, "replace", "upgraded", new_content="The billing service runs on PostgreSQL 18 since May"
    ).new_atom_id
    assert new
    e.correct(new, "confirm_necessary", "checked")
    b = e.memorize("The cache layer uses Redis 7 with a 5 minute TTL", source="user").atom_id
    assert b
    e.govern(b, "quarantine", "unsure")
    e.restore(b, "checked")
    e.govern(b, "derive_lesson", "too specific", lesson_content="Cache TTLs belong in the config file")
    c = e.memorize("Deploy keys live in the ops vault under /infra/deploy", source="user").atom_id
    assert c
    e.govern(c, "tombstone", "secret-ish")
    d = e.memorize("Never deploy the billing service on Fridays", source="user").atom_id
    assert d
    e.delete(d)
    e.handoff("Upgraded the billing database; next: load test the pool")
    s = e.session_start(title="pool work")
    e.session_end(s.id, "Pool sized to 50")
    e.session_summary(s.id)
    e.capture_passive("The search service caches queries for ten minutes", source="mirror")
    rows = e.review_pending(limit=10)
    assert rows
    e.promote([p.id for p, _ in rows if p.atom_id == pending.atom_id] or [rows[0][0].id])
    if held.promotion_id:
        e.reject([held.promotion_id])
    e.judge("We switched billing to MySQL", new)
    e.compare(new, b)
    e.stats()
    e.stats_detail()
    e.agent_brief()
    e.session_context()
    e.history(new)
    assert e.verify_chain().ok
    e.doctor()
    e.current_project()
    e.scope_info()
    e.request_sensitive_read("need the billing notes")
    e.mark_sensitive(True)
    e.request_sensitive_read("need the billing notes")
    e.access_requests()
    e.grant(5)
    e.session_context()
    e.mark_sensitive(False)
    other = Engine(e.settings, e.store, e.embedder, e.scope.global_scope())
    other.memorize("Prefer uv over pip for Python tools", source="user", type="preference")
    e.merge_projects(e.scope.scope_hash, e.scope.global_scope().scope_hash, dry_run=True)
    edited = e.path_of(e.get(new))
    assert edited is not None
    edited.write_text(edited.read_text().replace("PostgreSQL 18", "PostgreSQL 18.1"))
    (e.vault_root / "note.md").write_text("---\ntype: fact\n---\nThe staging cluster runs in eu-west-1\n")
    e.vault_check()
    e.vault_sync()
    lines = tmp_path / "import.jsonl"
    lines.write_text("".join(json.dumps({"content": f"Imported fact number {i} about service s{i}"}) + "\n"
                             for i in range(3)))  # fmt: skip
    e.import_jsonl(lines)
    e.import_state("0" * 64)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content":
                                      "From now on always use pnpm instead of npm in this repo."},
                                      "timestamp": "2026-05-12T10:00:00.000Z"}) + "\n")  # fmt: skip
    e.observe_transcript(transcript, "s-1")
    e.observation_state("s-1")
    with (tmp_path / "export.jsonl").open("w") as out:
        e.export(out)
    # the console, anchors, prompts and resources, other tools' formats, crash recovery
    from memoryd.engine.console import BrowseQuery

    e.browse(BrowseQuery(status=None, tag="db", decay="fresh"))
    e.browse(BrowseQuery(q="billing"))
    e.memory_detail(new)
    e.sessions_page()
    e.session_detail(s.id)
    e.entity_graph()
    e.entity_page("entity:library:PostgreSQL")
    e.health_overview()
    e.console_scopes()
    e.recall("billing database", path="src/billing.py", symbol="Pool.size")
    e.code_changes([new])
    e.stale()
    e.memories_for_path("src/billing.py")
    e.resource(e.resources()[0].id)
    e.brief_resource()
    e.export_markdown(tmp_path / "notes")
    graph = tmp_path / "memory.jsonl"
    graph.write_text(
        json.dumps(
            {
                "type": "entity",
                "name": "billing",
                "entityType": "service",
                "observations": ["The billing service retries webhooks three times"],
            }
        )
        + "\n"
    )
    e.import_file(graph)
    e.recover_vault()
    e.warm()


def test_the_engine_uses_only_the_store_protocol(settings: Settings, repo: Path, embedder: UseEmbedder,
                                                 tmp_path: Path) -> None:  # fmt: skip
    store = StrictStore(open_store(settings))
    with Engine(settings, store, embedder, infer_scope(repo)) as e:  # type: ignore[arg-type]
        _session(e, tmp_path)
    assert {"transaction", "get_atoms", "keyword_candidates", "touch", "events"} <= store.used
    assert {"insert_atom", "update_atom", "append_event", "scrub_atom", "delete_atom"} <= store.tx_used


def test_a_store_copy_uses_only_the_store_protocol(tmp_path: Path, repo: Path, embedder: UseEmbedder,
                                                   pg_server: Any) -> None:  # fmt: skip
    source_settings = Settings(home=tmp_path / "src", db=None)
    with Engine.open(source_settings, cwd=repo, embedder=embedder) as e:
        e.memorize("We decided to use PostgreSQL 16 for the billing service", source="user")
        e.handoff("Done with the billing database")
    dsn = pg_server.fresh_database()
    try:
        source = StrictStore(open_store(source_settings))
        target = StrictStore(open_store(Settings(home=tmp_path / "dst", db=dsn)))
        try:
            copied = migrate_store(source, target)  # type: ignore[arg-type]
        finally:
            source.close()
            target.close()
    finally:
        pg_server.drop_database(dsn)
    assert copied["atoms"] == 2 and copied["events"] == 2


def _store_attributes(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every `<something>.store.<name>` and `store.<name>` in a module."""
    out = []
    for node in ast.walk(parse_python(path.read_text())):
        if isinstance(node, ast.Attribute):
            base = node.value
            if (isinstance(base, ast.Attribute) and base.attr == "store") or (
                isinstance(base, ast.Name) and base.id == "store"
            ):
                out.append((node.lineno, node.attr))
    return out


def test_every_store_call_in_the_engine_is_declared() -> None:
    undeclared = [
        f"{path.relative_to(SRC)}:{line}: store.{name}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "storage"
        for line, name in _store_attributes(path)
        if name not in STORE
    ]
    assert undeclared == []


def test_every_declared_store_method_is_used() -> None:
    """The protocol lists what the engine needs, and nothing more."""
    text = "\n".join(p.read_text() for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] != "storage")
    unused = sorted(n for n in STORE | STORE_TX if not re.search(rf"\.{n}\b", text))
    assert unused == ["tracer"]  # for benchmarks and tests that look at the SQL


def test_the_roles_split_the_store_without_overlap() -> None:
    """Every method belongs to exactly one role; `Store` and `StoreTx` add nothing but plumbing."""
    for whole, roles, plumbing in ((Store, READ_ROLES, {"where", "tracer", "transaction", "acting_for", "close"}),
                                   (StoreTx, WRITE_ROLES, set())):  # fmt: skip
        assert len(roles) >= 4
        names = [n for r in roles for n in _own(r)]
        assert len(names) == len(set(names)), "a method is declared by two roles"
        assert _own(whole) == plumbing and set(names) | plumbing == _members(whole)


def test_engine_parts_reach_the_store_only_through_their_roles() -> None:
    """A part is given the roles it reads (its constructor's keywords); only the core, the tracked
    transaction, the facade that builds the parts and the store-to-store copy hold the whole store."""
    whole_store = {"core.py", "tracked.py", "__init__.py", "migrate.py"}
    reaches = [
        f"engine/{path.name}:{line}: .store.{name}"
        for path in sorted((SRC / "engine").glob("*.py"))
        if path.name not in whole_store
        for line, name in _store_attributes(path)
    ]
    assert reaches == []
    from memoryd.engine.console import Console
    from memoryd.engine.tenancy import Tenancy

    assert set(inspect.signature(Console).parameters) >= {"reports", "memories", "audit", "access"}
    assert [p for p in inspect.signature(Tenancy).parameters if p != "core"] == ["access"]


@pytest.mark.parametrize("role", READ_ROLES + WRITE_ROLES, ids=lambda r: r.__name__)
@pytest.mark.parametrize("name", ["sqlite", "postgresql"])
def test_each_backend_implements_each_role(name: str, role: type) -> None:
    store_cls, tx_cls = _backend(name)
    impl = store_cls if role in READ_ROLES else tx_cls
    assert [n for n in sorted(_own(role)) if not callable(getattr(impl, n, None))] == []


def _backend(name: str) -> tuple[type, type]:
    if name == "sqlite":
        from memoryd.storage.sqlite import SqliteStore, _SqliteTx

        return SqliteStore, _SqliteTx
    from memoryd.storage.postgres import PostgresStore, _PostgresTx

    return PostgresStore, _PostgresTx


@pytest.mark.parametrize("name", ["sqlite", "postgresql"])
def test_the_backends_implement_the_protocols(name: str) -> None:
    if name == "sqlite":
        from memoryd.storage.sqlite import SqliteStore as store_cls
        from memoryd.storage.sqlite import _SqliteTx as tx_cls
    else:
        from memoryd.storage.postgres import PostgresStore as store_cls  # type: ignore[assignment]
        from memoryd.storage.postgres import _PostgresTx as tx_cls  # type: ignore[assignment]
    assert [n for n in sorted(STORE - {"where", "tracer"}) if not callable(getattr(store_cls, n, None))] == []
    assert [n for n in sorted(STORE_TX) if not callable(getattr(tx_cls, n, None))] == []
