"""A store written by main before issues 10-15 (schema 1-3, with data) upgrades to today's schema and keeps
every memory, on both backends. The stores are fixtures made by main's own code
(tests/data/legacy/make_main_v3.py); migrations 4 (vault outbox), 5 (console), 6 (code anchors), 7 (team) and 8 (keyword statistics per scope) run
when today's engine opens them, up to migration 14 (a memory's source time, the links between memories by
scope)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.engine.console import BrowseQuery
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings
from memoryd.storage.migrations import MIGRATIONS, Backend

from .conftest import git, make_repo

LEGACY = Path(__file__).parent / "data" / "legacy" / "main-v3"
# sha256 of the released migration scripts 1-3 as each backend runs them: never edit a released entry.
# (Issue 11 wrote main's two script lists once, `storage/migrations.py`; the stores main made, the
# fixtures below, open and work with them.)
# The digest of the first N released migrations on each backend: a released migration never changes
# (stores in the field applied it as it was); a new one is appended and then added here.
RELEASED = {
    3: {"sqlite": "a026761bc2ea8d4c1e5c81b1ad47dca5dab8477d82250b971ab80be3ba49d579",
        "postgres": "acc66168f9e968e6a2b913e8073d0b575a1d6fc78a12dda92fcdcc6b8748f063"},
    8: {"sqlite": "236703b3d7d78e7e157380fc6987382efe367321fe2a9ae36adf4a34612f7bbe",
        "postgres": "60b3a1cbcc18ea832a5dcd820ee511b606643d0829107ad2b13c354aebddd4f6"},
    9: {"sqlite": "922ed84ae7c36bbbd26dcf488a9c1aa251ccea3044cc1eaebce7138ee8e331c1",
        "postgres": "b3f2395661f4d6e5fcffaaa3ea4b2c7d1505e1e41b232dff84449fecbbcf4fbe"},
    10: {"sqlite": "26a3b0c7fb30ed4278337e869839b57db2939420c852607867716631bacb9c1a",
         "postgres": "452e7987fa399030e77b16506b1cae9d5a38f70e2e4e017893068984ffe80c76"},
    11: {"sqlite": "141dccf9e930ab7a5f0a07a53cadd3d1acc795a13e90718b9373d4b66c829e4f",
         "postgres": "fb57f1ce60a94fe614ea755019d8db36abe8ed365794b2f3851965023f744292"},
    12: {"sqlite": "95037cd507caa73a95f7d87a7c883e6b9e399c9d95095bd957b297d90889c607",
         "postgres": "8307ff861d49aaf99689c3369216ff1843d73c418b5cbb69b7ffad782e150a8c"},
    13: {"sqlite": "9599966fddd9a645a2ba25b5bec3c036aa796d628d90b2569eb2962a02aef35d",
         "postgres": "0c320ad518dff9069ff015314ae268b81ae442d2d84f76f2f95471615d623f44"},
}  # fmt: skip
ALL = list(range(1, 16))


def _digest(backend: Backend, n: int) -> str:
    return hashlib.sha256("\x1e".join(f"{m.version}\x1f{m.name}\x1f{m.script(backend)}"
                                      for m in MIGRATIONS[:n]).encode()).hexdigest()  # fmt: skip


def test_released_migrations_are_unchanged_and_numbered_alike() -> None:
    for n, digests in RELEASED.items():
        assert _digest("sqlite", n) == digests["sqlite"], f"a released migration (1-{n}) changed on SQLite"
        assert _digest("postgres", n) == digests["postgres"], f"a released migration (1-{n}) changed on PostgreSQL"
    assert [m.version for m in MIGRATIONS] == ALL
    names = {m.version: m.name for m in MIGRATIONS}
    assert names[4].startswith("vault outbox") and names[5].startswith("console") and names[6] == "code anchors"
    assert names[7].startswith("team server") and names[8] == "keyword statistics per scope"
    assert names[9].startswith("entity candidates by scope") and names[10].startswith(
        "exact vector search of a small scope"
    )
    assert names[11].startswith("keyword search by scope") and names[12].startswith("vector search in half")
    assert names[13].startswith("vacuumed often enough") and names[14].startswith("source time of a memory")
    assert names[15].startswith("a second vector per memory")


@pytest.fixture(params=["sqlite", "postgres"])
def legacy(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A copy of main's store (its database and vault) as Settings; the tenant main wrote it under."""
    kind = request.param
    manifest = json.loads((LEGACY / f"manifest-{kind}.json").read_text(encoding="utf-8"))
    monkeypatch.setenv("MEMORYD_TENANT", manifest["tenant"])
    home = tmp_path / "home"
    shutil.copytree(LEGACY / kind / "vault", home / "vault")
    if kind == "sqlite":
        shutil.copy(LEGACY / "sqlite" / "memoryd.db", home / "memoryd.db")
        yield Settings(home=home, db=None)
        return
    server = request.getfixturevalue("pg_server")
    dsn = server.fresh_database(template=None)
    script = "\n".join(line for line in (LEGACY / "postgres.sql").read_text(encoding="utf-8").splitlines()
                       if not line.startswith("\\"))  # psql meta-commands (\restrict) are not SQL  # fmt: skip
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(script)  # type: ignore[arg-type]
    yield Settings(home=home, db=dsn)
    server.drop_database(dsn)


def _versions(settings: Settings) -> list[int]:
    if settings.db:
        import psycopg

        with psycopg.connect(settings.db) as conn:
            return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    with sqlite3.connect(settings.home / "memoryd.db") as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]


def test_main_store_upgrades_and_keeps_every_memory(legacy: Settings, tmp_path: Path) -> None:
    kind = "postgres" if legacy.db else "sqlite"
    manifest = json.loads((LEGACY / f"manifest-{kind}.json").read_text(encoding="utf-8"))
    assert _versions(legacy) == [1, 2, 3]  # as main left it
    widgets = make_repo(tmp_path / "widgets")
    with Engine.open(legacy, cwd=widgets, embedder=HashEmbedder(), authority="operator") as e:
        assert _versions(legacy) == ALL
        atoms = e.store.get_atoms(list(manifest["atoms"]))
        assert all(a.written_at is None for a in atoms.values())  # migration 14: main never knew a source time
        # migration 8 counted each scope's keyword statistics from the terms main indexed
        facts = e.store.candidate_facts(list(manifest["atoms"]))
        by_scope: dict[str, list[set[str]]] = {}
        for f in facts.values():
            if f.terms:
                by_scope.setdefault(f.scope_hash, []).append(set(f.terms))
        assert by_scope
        for scope_hash, docs in by_scope.items():
            terms = sorted(set().union(*docs))
            assert e.store.term_stats(terms, scope_hashes=[scope_hash]) == (
                len(docs),
                {t: sum(t in d for d in docs) for t in terms},
            )
        # migration 9 gave each of main's edges its atom's scope: the entity candidates find main's memories
        mentioned = {a: f for a, f in facts.items() if f.entities and f.status == "active"}
        assert mentioned
        for atom_id, f in mentioned.items():
            assert atom_id in e.store.atoms_for_entities(list(f.entities), scope_hashes=[f.scope_hash],
                                                         statuses=["active"], limit=200)  # fmt: skip
        assert set(atoms) == set(manifest["atoms"])  # every memory main stored, by id
        for atom_id, want in manifest["atoms"].items():
            got = atoms[atom_id]
            assert (got.status, got.type, got.scope_hash, got.content, got.title, got.tags) == (
                want["status"], want["type"], want["scope_hash"], want["content"], want["title"], want["tags"]
            ), atom_id  # fmt: skip
        assert len(e.store.events()) == manifest["events"]  # opening added no event
        assert e.verify_chain().ok
        # the hand-edit sync finds main's files exactly as the database says (nothing invented or deleted)
        report = e.vault_sync()
        assert not any(report.values()), report
        # old memories work with today's features
        hits = e.recall("PostgreSQL 主資料庫").hits
        assert hits and hits[0].atom.content.startswith("本專案用 PostgreSQL 16") and hits[0].freshness is None
        assert e.browse(BrowseQuery(status=None)).total == len(manifest["atoms"])  # the console's indexes (5)
        (widgets / "login.py").write_text("def login(user):\n    return user.active\n")
        git(widgets, "add", "-A")
        git(widgets, "commit", "-q", "-m", "login")
        r = e.memorize("`login()` in login.py refuses inactive users", source="user")
        assert r.effect == "applied" and r.anchors == ["login.py", "login.py::login"]
        assert e.store.recalls(scope_hashes=[e.scope.scope_hash], since=hits[0].atom.created_at, until=None, limit=5)
        pending = [a for a in atoms.values() if a.status == "pending"]
        assert len(pending) == 1 and [a.id for _, a in e.review_pending(scope="global")] == [pending[0].id]
        # migration 14: a source time is kept and orders supersession; main's own supersession (a `correct
        # replace`) is undone like today's, and a new memory replaces one main stored
        old_port = next(i for i, a in manifest["atoms"].items() if a["status"] == "superseded")
        port = atoms[old_port].superseded_by
        assert port is not None
        e.restore(old_port, "both ports are in use")
        assert e.get(old_port).status == "active" and e.get(port).supersedes is None
        r = e.memorize("The API server listens on port 9443 behind nginx", source="user", replaces=port,
                       written_at="2026-12-05T08:00:00Z")  # fmt: skip
        assert r.supersedes == port and e.get(r.atom_id or "").written_at == datetime(2026, 12, 5, 8, tzinfo=UTC)
        assert e.get(port).status == "superseded" and e.get(port).superseded_by == r.atom_id
        hits = e.recall("API server port nginx", include_superseded=True).hits
        order = [h.atom.id for h in hits]
        assert r.atom_id in order and port in order and order.index(r.atom_id) < order.index(port)
    # and reopening is a no-op (every migration recorded once)
    with Engine.open(legacy, cwd=widgets, embedder=HashEmbedder(), authority="operator") as e:
        assert _versions(legacy) == ALL and e.verify_chain().ok
        assert e.get(port).status == "superseded"


def test_main_store_gets_its_english_vectors_and_keeps_every_memory(legacy: Settings, tmp_path: Path) -> None:
    """Migration 15 on a store written before it: the backfill (what a server's warm-up runs) embeds every memory
    with content in the English model, and changes nothing else (no atom, event or content)."""
    from memoryd.search.embed import UseEmbedder, english_embedder

    kind = "postgres" if legacy.db else "sqlite"
    manifest = json.loads((LEGACY / f"manifest-{kind}.json").read_text(encoding="utf-8"))
    widgets = make_repo(tmp_path / "widgets")
    english = english_embedder("minilm")
    assert english is not None
    with Engine.open(legacy, cwd=widgets, embedder=UseEmbedder(), authority="operator", english=english) as e:
        before = e.store.get_atoms(list(manifest["atoms"]))
        with_content = sorted(a for a, atom in before.items() if atom.content)
        assert [i for i, _ in e.store.missing_model_vectors(english.name, limit=1000)] == with_content
        assert e.backfill_vectors() == len(with_content)
        assert e.store.missing_model_vectors(english.name, limit=1000) == [] and e.backfill_vectors() == 0
        after = e.store.get_atoms(list(manifest["atoms"]))
        assert {a: (x.content, x.status, x.updated_at) for a, x in after.items()} == {
            a: (x.content, x.status, x.updated_at) for a, x in before.items()}  # fmt: skip
        assert len(e.store.events()) == manifest["events"] and e.verify_chain().ok
        assert e.store.table_counts()["model_vectors"] == len(with_content)
