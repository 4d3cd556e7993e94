"""Other tools' exports in (server-memory, mem0, basic-memory) and a markdown folder out, on realistic files."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import Engine
from memoryd.formats import detect
from memoryd.shared.errors import InvalidInput

from .conftest import backend_settings

DATA = Path(__file__).parent / "data" / "imports"


def contents(engine: Engine, source: str) -> dict[str, Any]:
    return {a.content: a for a in engine.store.list_atoms(limit=-1) if a.source == source}


def test_formats_are_detected() -> None:
    assert detect(DATA / "server-memory.jsonl") == "server-memory"
    assert detect(DATA / "mem0-export.json") == "mem0"
    assert detect(DATA / "basic-memory") == "basic-memory"
    assert detect(Path(__file__).parent / "data" / "classifier_labelled.jsonl") == "jsonl"


def test_server_memory_graph(engine: Engine) -> None:
    r = engine.import_file(DATA / "server-memory.jsonl")
    assert r.format == "server-memory"
    got = contents(engine, "server-memory")
    assert "billing-service: Stores invoices in PostgreSQL 16" in got
    assert got["billing-service: Stores invoices in PostgreSQL 16"].title == "billing-service"
    assert got["billing-service: Stores invoices in PostgreSQL 16"].tags == ["service"]
    assert "default_user works on billing-service" in got and "billing-service reads from staging-db" in got
    assert "登录服务: login.py 的 get_session() 在令牌过期时返回 None，需要先判空" in got
    secret = next(c for c in got if c.startswith("staging-db: Connection string"))
    assert "hunter2" not in secret and "[REDACTED]" in secret  # redacted before storage
    assert r.imported == len(got) == 10 and r.bad == 2 and r.duplicates == 0
    problems = {p["origin"]: p["reason"] for p in r.problems}
    assert problems == {"server-memory.jsonl:7": "a relation needs from, relationType and to",
                        "server-memory.jsonl:8": "invalid JSON: Expecting value"}  # fmt: skip
    again = engine.import_file(DATA / "server-memory.jsonl")
    assert again.imported == 0 and again.skipped == r.lines  # the same source: nothing twice
    assert len(contents(engine, "server-memory")) == 10


def test_mem0_export(engine: Engine) -> None:
    r = engine.import_file(DATA / "mem0-export.json")
    got = contents(engine, "mem0")
    assert r.imported == 3 and r.duplicates == 1 and r.bad == 1
    assert r.problems == [{"line": 5, "kind": "bad", "reason": "no memory text (memory, text or content)",
                           "origin": "mem0-export.json: item 5"}]  # fmt: skip
    trip = got["User is planning a trip to Tokyo in April and prefers trains over flights"]
    assert trip.tags == ["travel", "preferences"]
    assert got["Decided to use pnpm instead of npm for all frontend repositories"].type == "decision"
    leaked = next(c for c in got if c.startswith("Her OpenAI key"))
    assert "sk-proj-AbCd" not in leaked and "[REDACTED]" in leaked


def test_basic_memory_folder(engine: Engine) -> None:
    r = engine.import_file(DATA / "basic-memory")
    got = contents(engine, "basic-memory")
    pg = got["Use PostgreSQL 16 for invoices (needs multi-row transactions)"]
    assert pg.type == "decision" and pg.title == "Coding Preferences"  # notes are read in path order
    assert pg.tags == ["style", "decision", "database"]
    assert got["Amounts are stored as integer cents, never floats"].tags == ["architecture", "billing", "requirement",
                                                                            "money"]  # fmt: skip
    assert got["Prefer pnpm over npm install"].type == "preference"
    assert "团队偏好用中文写提交说明，代码标识符保持英文" in got
    assert "Database Choice implements Billing Service" in got and "Database Choice relates to Invoice Schema" in got
    standup = next(c for c in got if c.startswith("The staging deploy failed"))
    assert got[standup].title == "Standup 2026-04-02" and "lock_timeout" in standup
    assert got["We compared MongoDB and PostgreSQL for the billing service in March."].title == "Database Choice"
    assert r.duplicates == 1  # the same decision written in two notes
    assert r.imported == len(got) == 9


def test_an_interrupted_import_of_another_format_resumes(engine: Engine) -> None:
    calls = []

    def stop_after_first_batch(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.import_file(DATA / "server-memory.jsonl", batch_size=3, progress=stop_after_first_batch)
    first = len(contents(engine, "server-memory"))
    assert first == 3
    r = engine.import_file(DATA / "server-memory.jsonl", batch_size=3)
    assert r.skipped == 3 and len(contents(engine, "server-memory")) == 10 and r.duplicates == 0


def test_bad_import_arguments(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no file or folder"):
        engine.import_file(tmp_path / "missing.json")
    with pytest.raises(InvalidInput, match="unknown format 'yaml'"):
        engine.import_file(DATA / "mem0-export.json", format="yaml")
    with pytest.raises(InvalidInput, match="basic-memory imports a folder"):
        engine.import_file(DATA / "mem0-export.json", format="basic-memory")
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [', encoding="utf-8")
    with pytest.raises(InvalidInput, match="is not a mem0 export"):
        engine.import_file(broken, format="mem0")


def test_markdown_export_links_memories_and_entities(engine: Engine, tmp_path: Path) -> None:
    a = engine.memorize("Use PostgreSQL 16 for the billing service; MongoDB was rejected.", source="user").atom_id
    r = engine.correct(a, "replace", "moved on", "Use PostgreSQL 17 for the billing service; MongoDB was rejected.")
    engine.memorize("login.py: get_session() returns None when the token expired.", source="user")
    out = tmp_path / "vault"
    counts = engine.export_markdown(out)
    notes = {p.stem: p for p in out.rglob("*.md")}
    assert counts["memories"] == 2 and counts["entities"] >= 3 and len(notes) == counts["memories"] + counts["entities"]
    links = {m for p in notes.values() for m in re.findall(r"\[\[([^\]]+)\]\]", p.read_text(encoding="utf-8"))}
    assert links and links <= set(notes)  # every wikilink resolves to a note of the export
    new = next(p for p in notes.values() if r.new_atom_id[-6:] in p.stem)
    text = new.read_text(encoding="utf-8")
    assert text.startswith("---\n") and f"id: {r.new_atom_id}" in text and "PostgreSQL 17" in text
    assert "[[PostgreSQL (library)]]" in text or any("PostgreSQL" in link for link in links)
    entity = next(p for n, p in notes.items() if n.startswith("login.py"))
    assert f"[[{new.stem}]]" not in entity.read_text(encoding="utf-8")
    assert any(n.startswith("login.py") for n in links)
    shutil.rmtree(out)


# -- issue 25: OpenMemory, mem0's graph, compressed files, and what could not be carried -----------------------

OPENMEMORY = DATA / "openmemory" / "memories.json"  # the relational dump, as OpenMemory's backup router writes it


def _openmemory_files(tmp_path: Path) -> dict[str, Path]:
    """The export as OpenMemory's `POST /api/v1/backup/export` builds it (api/app/routers/backup.py): a zip of
    memories.json (indent 2) and memories.jsonl.gz (one record per memory: id, content, metadata, created_at,
    updated_at, state, app, categories by name)."""
    import gzip
    import io
    import zipfile

    doc = json.loads(OPENMEMORY.read_text(encoding="utf-8"))
    names = {c["id"]: c["name"] for c in doc["categories"]}
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz:
        for m in doc["memories"]:
            record = {"id": m["id"], "content": m["content"], "metadata": m["metadata"] or {},
                      "created_at": m["created_at"], "updated_at": m["updated_at"], "state": m["state"],
                      "app": "claude", "categories": [names[c] for c in m["category_ids"]]}  # fmt: skip
            gz.write((json.dumps(record) + "\n").encode("utf-8"))
    blob = buf.getvalue()
    (tmp_path / "memories.jsonl.gz").write_bytes(blob)
    with zipfile.ZipFile(tmp_path / "memories_export_alice.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", json.dumps(doc, indent=2))
        zf.writestr("memories.jsonl.gz", blob)
    return {"zip": tmp_path / "memories_export_alice.zip", "json": OPENMEMORY, "gz": tmp_path / "memories.jsonl.gz"}


@pytest.mark.parametrize("kind", ["zip", "json", "gz"])
def test_openmemory_export_honours_state_and_keeps_categories(engine: Engine, tmp_path: Path, kind: str) -> None:
    path = _openmemory_files(tmp_path)[kind]
    assert detect(path) == "openmemory"
    r = engine.import_file(path)
    got = contents(engine, "openmemory")
    # given 6: 3 active imported intact, 3 not active (archived, deleted, paused) reported, none lost
    assert (r.format, r.imported, r.bad, r.rejected, r.duplicates) == ("openmemory", 3, 0, 0, 0)
    assert set(got) == {"Prefers pytest over unittest for every new Python project",
                        "The billing team deploys on Tuesdays after the 10:00 stand-up",
                        "我们的主数据库是 PostgreSQL 16，只读副本在 eu-west-1"}  # fmt: skip
    assert all(a.status == "active" for a in got.values())
    assert got["Prefers pytest over unittest for every new Python project"].tags == ["preferences", "technology"]
    assert got["The billing team deploys on Tuesdays after the 10:00 stand-up"].tags == ["work"]
    states = {k: n for k, n in r.not_carried.items() if "state" in k}
    assert states == {"openmemory state archived": 1, "openmemory state deleted": 1, "openmemory state paused": 1}
    # when each was written is carried (its updated_at, the time of its current text); created_at is left
    assert r.not_carried["openmemory created_at (kept updated_at)"] == 3
    assert r.not_carried["openmemory metadata.mcp_client"] == 1 and "openmemory updated_at" not in r.not_carried
    source = {
        m["content"]: m["updated_at"]
        for m in json.loads((DATA / "openmemory" / "memories.json").read_text())["memories"]
    }
    assert {a.content: a.written_at for a in got.values()} == {c: datetime.fromisoformat(source[c]) for c in got}
    assert "not carried (by kind): " in r.summary() and "openmemory state deleted 1" in r.summary()
    if kind != "gz":
        assert r.not_carried["openmemory status history entries"] == 2
    before = engine.store.snapshot_version()
    again = engine.import_file(path)  # re-import: a no-op
    assert (again.imported, again.skipped) == (0, r.lines) and engine.store.snapshot_version() == before


def test_compressed_and_zip_files_are_read_or_refused_by_name(engine: Engine, tmp_path: Path) -> None:
    import gzip
    import zipfile

    rows = [{"content": "Release branches are cut every second Monday"}, {"content": "CI caches pip wheels for a week"}]
    gz = tmp_path / "mine.jsonl.gz"
    gz.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    r = engine.import_file(gz)
    assert (r.format, r.imported, r.bad) == ("jsonl", 2, 0) and r.problems == []  # no "not UTF-8" lines
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"content": "x"}\n')[:12])
    with pytest.raises(InvalidInput, match=r"broken\.jsonl\.gz looks gzip-compressed but does not decompress"):
        engine.import_file(broken)
    other = tmp_path / "photos.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("a.txt", "hello")
    with pytest.raises(InvalidInput, match=r"photos\.zip is a zip file without memories\.json or memories\.jsonl\.gz"):
        engine.import_file(other)


def test_mem0_graph_relations_are_carried_and_the_rest_reported(engine: Engine, tmp_path: Path) -> None:
    """mem0 with a graph store: `get_all()` returns {"results": [...], "relations": [{source, relationship,
    target}]} (mem0's Memory.get_all with enable_graph)."""
    export = json.loads((DATA / "mem0-export.json").read_text(encoding="utf-8"))
    export["relations"] = [{"source": "alice", "relationship": "plans_trip_to", "target": "tokyo"},
                           {"source": "alice", "relationship": "uses", "target": "pnpm"},
                           {"source": "alice", "relationship": "", "target": "npm"}]  # fmt: skip
    path = tmp_path / "mem0-graph.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    r = engine.import_file(path)
    got = contents(engine, "mem0")
    assert "alice plans trip to tokyo" in got and got["alice plans trip to tokyo"].tags == ["relation", "plans_trip_to"]
    assert "alice uses pnpm" in got
    assert r.imported == 5 and r.duplicates == 1 and r.bad == 2
    assert {p["origin"]: p["reason"] for p in r.problems} == {
        "mem0-graph.json: relation 3": "a relation needs source, relationship and target",
        "mem0-graph.json: item 5": "no memory text (memory, text or content)"}  # fmt: skip
    for text in export["results"][:3]:  # the items' text unchanged (only secrets redacted)
        assert text["memory"] in got or text["memory"].startswith("Her OpenAI key")
    assert "mem0 created_at" not in r.not_carried and r.not_carried["mem0 user_id"] == 4
    # when each was written is carried, beside the import time: its updated_at (the time of its current text),
    # else its created_at
    updated = [item for item in export["results"] if item.get("updated_at")]
    assert updated and r.not_carried["mem0 created_at (kept updated_at)"] == len(updated)
    for item in export["results"][:3]:
        atom = got.get(item["memory"])
        assert atom is None or atom.written_at == datetime.fromisoformat(item["updated_at"] or item["created_at"])
    assert got["alice uses pnpm"].written_at is None  # a relation has no time of its own
    assert r.not_carried["mem0 metadata.source"] == 1


def test_export_lines_not_carried_are_reported_by_kind(engine: Engine, tmp_path: Path) -> None:
    rows = [{"kind": "atom", "status": "active", "content": "Staging resets nightly at 02:00 UTC"},
            {"kind": "atom", "status": "superseded", "content": "Staging resets weekly"},
            {"kind": "event", "action": "create"}, {"kind": "event", "action": "replace"}]  # fmt: skip
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = engine.import_file(path)
    assert r.imported == 1 and r.not_carried == {"export atom with status superseded": 1, "export audit event": 2}


def test_a_malformed_lines_message_is_whole_and_names_the_limit(engine: Engine, tmp_path: Path) -> None:
    from memoryd.shared.limits import LIMITS

    top = LIMITS["tag"][0]
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"content": "Logs are kept for 30 days", "tags": ["x" * (top + 5)]}) + "\n" +
                    json.dumps({"content": "y" * (LIMITS["content"][0] + 1)}) + "\n", encoding="utf-8")  # fmt: skip
    r = engine.import_file(path)
    reasons = [p["reason"] for p in r.problems]
    assert reasons == [
        f"tags[0] is {top + 5} characters; the limit is {top}",
        f"content is {LIMITS['content'][0] + 1} characters; the limit is {LIMITS['content'][0]}",
    ]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_markdown_export_import_export_is_byte_stable(engine: Engine, repo: Path, tmp_path: Path) -> None:
    from memoryd.shared.config import Settings

    engine.memorize("决定从 React 切到 Solid，理由是性能+体积", type="decision", tags=["frontend"], title="前端切换决策",
                    source="user")  # fmt: skip
    engine.memorize("Prefer short commit subjects under 60 characters", type="preference",
                    scope=engine.scope.global_scope(), source="user")  # fmt: skip
    engine.memorize("The payments service calls billing-service and retries webhooks three times.\n\n"
                    "## Related\n\nNot a list: this heading is part of the memory.", source="agent")  # fmt: skip
    engine.memorize("Never run `kubectl apply` by hand on prod-cluster; use Argo CD", type="warning", source="user")
    first = tmp_path / "first"
    counts = engine.export_markdown(first)
    assert detect(first) == "memoryd-markdown"
    with Engine.open(Settings(home=tmp_path / "fresh", db=None), cwd=repo, embedder=engine.embedder) as fresh:
        r = fresh.import_file(first)
        # given 4 memories: 4 imported intact, the entity notes reported as derived, none lost
        assert (r.format, r.imported, r.bad, r.rejected, r.duplicates) == ("memoryd-markdown", 4, 0, 0, 0)
        assert r.not_carried == {"entity notes (derived again from the memories' text)": counts["entities"]}
        second = tmp_path / "second"
        fresh.export_markdown(second)
        assert _tree(second) == _tree(first)  # byte for byte
        before = fresh.store.snapshot_version()
        again = fresh.import_file(first)  # re-import: a no-op
        assert again.imported == 0 and fresh.store.snapshot_version() == before
    # a broken note is named, the others still come in
    bad = next((first / "memories").rglob("*.md"))
    bad.write_text("---\nid: [unclosed\n---\n\n# x\n\ny\n", encoding="utf-8")
    with Engine.open(Settings(home=tmp_path / "fresh2", db=None), cwd=repo, embedder=engine.embedder) as fresh:
        r = fresh.import_file(first)
        assert r.imported == 3 and r.bad == 1
        assert r.problems[0]["origin"] == bad.relative_to(first).as_posix()
        assert r.problems[0]["reason"].startswith("frontmatter is not valid YAML: ")


@pytest.fixture
def fresh_settings(settings: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Settings of a second, empty store on the same backend as `settings`."""
    with backend_settings(request, "sqlite" if settings.db is None else "postgresql", tmp_path / "fresh") as s:
        yield s


def test_markdown_round_trip_of_a_realistic_store_is_byte_identical(engine: Engine, repo: Path, tmp_path: Path,
                                                                    fresh_settings: Any) -> None:  # fmt: skip
    """Other tools' exports (entities, relations, Chinese and English) and memories saved in an order unlike the
    folder's (a warning before the decision it guards): export → import into an empty store → export gives the
    same bytes, entity notes listing several memories included."""
    for name in ("server-memory.jsonl", "mem0-export.json", "basic-memory-docs"):
        assert engine.import_file(DATA / name).imported
    for text, kind in (("Never run schema migrations on PostgreSQL 16 during business hours", "warning"),
                       ("The billing service keeps its ledger in PostgreSQL 16", "decision"),
                       ("billing 服务的 PostgreSQL 16 连接池上限是 50，超过会排队", "fact"),
                       ("登录服务的 login.py 在 get_session() 返回 None 时要先判空", "warning"),
                       ("Prefer Redis 7 streams over RabbitMQ for the billing service's webhook retries", "preference"),
                       ("Redis 7 的缓存键统一加 billing: 前缀", "decision")):  # fmt: skip
        assert engine.memorize(text, type=kind, source="user").effect == "applied"
    first = tmp_path / "first"
    counts = engine.export_markdown(first)
    assert engine.export_markdown(tmp_path / "again") == counts
    assert _tree(tmp_path / "again") == _tree(first)  # the same store twice: the same bytes
    shared = [p for p in (first / "entities").rglob("*.md") if p.read_text(encoding="utf-8").count("- [[") >= 2]
    assert len(shared) >= 5, "the store must have entity notes that list several memories"
    with Engine.open(fresh_settings, cwd=repo, embedder=engine.embedder) as fresh:
        r = fresh.import_file(first)
        assert (r.imported, r.bad, r.rejected, r.duplicates) == (counts["memories"], 0, 0, 0)
        second = tmp_path / "second"
        fresh.export_markdown(second)
    got, want = _tree(second), _tree(first)
    assert sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []  # byte for byte, every note


def test_basic_memory_reads_notes_as_its_own_parser_does(engine: Engine) -> None:
    """Fixtures from basic-memory's documented examples (its docs/NOTE-FORMAT.md note) and from the rules of its
    parser (markdown/plugins.py, entity_parser.py): every observation, relation and prose paragraph arrives intact,
    broken frontmatter is reported, and a second import adds nothing."""
    src = DATA / "basic-memory-docs"
    r = engine.import_file(src)
    assert r.format == "basic-memory"
    got = contents(engine, "basic-memory")
    # the documented example: three observations, three relations, the note's list tags and the category as tags
    assert got["Water temperature at 205°F extracts optimal compounds"].tags == ["coffee", "brewing", "technique"]
    assert got["Ethiopian beans work well with lighter roasts (personal experience)"].type == "preference"
    assert "Coffee Brewing Methods contrasts with Tea Brewing Methods" in got
    # relation types basic-memory accepts: non-Latin, quoted multi-word (either quote), with a (context)
    assert "Search Design 依赖 SQLite FTS5" in got
    assert "Search Design is replaced by Search Design v2" in got
    assert "Search Design was inspired by Lucene Scoring (the 2024 spike)" in got
    # `- text #tag` is an observation without a category; `tags: a, b` (a comma string) is read
    fallback = got["Keyword search stays on when the model is missing"]
    assert fallback.tags == ["search", "ranking", "fallback"] and fallback.title == "Search Design"
    assert got["检索默认按仓库隔离"].tags == ["search", "ranking", "decision", "范围"]
    # the prose of a note that has observations is kept, with its links, its tasks and timestamped lines, its
    # callout and code fence, and the line whose unquoted multi-word prefix makes it prose (inline links)
    prose = next(c for c in got if c.startswith("We rank with BM25"))
    assert got[prose].type == "decision" and got[prose].title == "Search Design"
    for kept in ("see [[Embedding Service]] for the model", "- part of the plan, see [[Roadmap]] and [[Search Design v2]]",
                 "- [ ] benchmark the reranker", "- [x] ship the keyword index", "- [-] drop the trigram index",
                 "- [00:01:12] Ana: the reranker doubles latency", "- [1:02:03.500] Bo: only on cold start",
                 "> - [note] quoted lines stay prose", "- [example] inside a code fence"):  # fmt: skip
        assert kept in prose, kept
    assert "## Observations" not in prose and "# Search Design\n" not in prose  # emptied headings, the title
    tags = {t for a in got.values() for t in a.tags}
    assert not tags & {" ", "x", "-", "00:01:12", "1:02:03.500", "note", "example", "!info"}
    # broken frontmatter: reported with the YAML error, the note read without it (titled by its file name)
    assert got["Never tag a release from a dirty tree"].title == "broken-frontmatter"
    assert got["The nightly build runs at 02:00 UTC"].title == "unclosed-frontmatter"
    reasons = {p["origin"]: p["reason"] for p in r.problems}
    assert reasons["notes/broken-frontmatter.md: frontmatter"].startswith(
        "frontmatter is not valid YAML (while scanning a quoted scalar"
    )
    assert reasons["notes/broken-frontmatter.md: frontmatter"].endswith(
        "); the note is read without it, titled by its file name"
    )
    assert reasons["notes/unclosed-frontmatter.md: frontmatter"] == (
        "the frontmatter opened by --- on line 1 is never closed; the note is read as plain markdown"
    )
    assert r.bad == 2 and r.rejected == 0 and r.duplicates == 0
    # given: coffee 6, search design 1 prose + 4 observations + 4 relations, broken 1, unclosed 2 = 18
    assert r.imported == len(got) == 18
    assert r.not_carried == {"basic-memory frontmatter permalink": 2, "basic-memory frontmatter status": 1}
    before = engine.store.snapshot_version()
    again = engine.import_file(src)  # re-import: a no-op
    assert (again.imported, again.skipped) == (0, r.lines) and engine.store.snapshot_version() == before


@pytest.mark.parametrize(("line", "expected"), [
    ("- [fact] plain", ("fact", "plain", [], None)),
    ("- [decision] Selected bcrypt #security #auth (Based on audit)", ("decision", "Selected bcrypt #security #auth",
                                                                       ["security", "auth"], "Based on audit")),
    ("- text #a#b", (None, "text #a#b", ["a", "b"], None)),
    ("- [/] in progress #t", (None, "[/] in progress #t", ["t"], None)),
    ("- [00:00:11 - 00:00:14] said #t", (None, "[00:00:11 - 00:00:14] said #t", ["t"], None)),
    ("- [] empty category #t", (None, "empty category #t", ["t"], None)),
])  # fmt: skip
def test_basic_memory_observation_rules(line: str, expected: tuple[Any, ...]) -> None:
    from memoryd.formats.basic_memory import _bm_is_observation, _bm_observation

    content = line[2:]
    assert _bm_is_observation(content)
    assert _bm_observation(content) == expected


@pytest.mark.parametrize(
    "line",
    [
        "- [ ] task #t",
        "- [x] done #t",
        "- [-] dropped #t",
        "- [00:01:12] no tag",
        "- [X] upper task",
        "- [link](https://x.org)",
        "- [[Only A Link]]",
        "- plain",
    ],
)
def test_basic_memory_non_observations(line: str) -> None:
    from memoryd.formats.basic_memory import _bm_is_observation

    assert not _bm_is_observation(line[2:])


@pytest.mark.parametrize(("line", "expected"), [
    ("implements [[Billing Service]]", ("implements", "Billing Service", None)),
    ("依赖 [[X]]", ("依赖", "X", None)),
    ('"is replaced by" [[X]]', ("is replaced by", "X", None)),
    ("relates_to [[X]] (since (v2))", ("relates_to", "X", "since (v2)")),
    ("some other thing [[X]]", None),
    ("implements [[X]] and more", None),
    ("implements [[X]] (a) and [[Y]] (b)", None),
    ("[[X]]", None),
    ('"" [[X]]', None),
])  # fmt: skip
def test_basic_memory_relation_rules(line: str, expected: tuple[Any, ...] | None) -> None:
    from memoryd.formats.basic_memory import _bm_relation

    assert _bm_relation(line) == expected


def test_basic_memory_tags_and_frontmatter_shapes(tmp_path: Path) -> None:
    from memoryd.formats.basic_memory import _bm_split, _bm_tags

    assert _bm_tags("a, b,,#c ") == ["a", "b", "c"]
    assert _bm_tags(["#x", " y ", 3, None, "x"]) == ["x", "y", "3"]
    assert _bm_tags(None) == []
    assert _bm_split("---\n- a\n- b\n---\nbody\n") == (
        {},
        "body\n",
        "frontmatter is not a YAML mapping of fields; the note is read without it",
    )
    meta, body, problem = _bm_split("---\ntitle: T\ntags: a, b\n---\n\n# T\n")
    assert (meta, problem) == ({"title": "T", "tags": "a, b"}, None) and body.strip() == "# T"
    assert _bm_split("no frontmatter\n") == ({}, "no frontmatter\n", None)


def test_markdown_export_is_readable_by_basic_memory(engine: Engine, tmp_path: Path) -> None:
    """basic-memory resolves `[[link]]` by permalink, then exact title: every exported note carries a `title` (its
    file name, the text links use), titles are unique, and read back with basic-memory's rules every link of the
    export names an exported note's title, including entities whose names clean to the same file name."""
    from memoryd.formats import write_markdown
    from memoryd.formats.basic_memory import _bm_split

    engine.memorize("Use PostgreSQL 16 for the billing service; MongoDB was rejected.", source="user")
    old = engine.memorize("Deploys run from the release/2026 branch on Tuesdays", source="user").atom_id
    engine.correct(old, "replace", "moved", "Deploys run from the release/2027 branch on Tuesdays")
    atoms = engine.store.list_atoms(statuses=["active", "superseded"], limit=-1, newest_first=False)
    first = atoms[0]
    clash = [*first.entities, "entity:service:a/b", "entity:service:a b", "entity:service:A b"]
    atoms = [first.model_copy(update={"entities": clash}), *atoms[1:]]
    out = tmp_path / "vault"
    write_markdown(atoms, out)
    titles: dict[str, Path] = {}
    for path in sorted(out.rglob("*.md")):
        meta, body, problem = _bm_split(path.read_text(encoding="utf-8"))
        assert problem is None and meta["title"] == path.stem, path
        assert meta["title"].lower() not in {t.lower() for t in titles}, meta["title"]
        titles[meta["title"]] = path
    assert {"A b (service)", "a b (service) 2", "a b (service) 3"} <= set(titles)  # numbered in entity-id order
    links = [m for p in titles.values() for m in re.findall(r"\[\[([^\]]+)\]\]", p.read_text(encoding="utf-8"))]
    assert links and set(links) <= set(titles)
    text = "\n".join(p.read_text(encoding="utf-8") for p in titles.values())
    assert "- superseded_by [[" in text and "- supersedes [[" in text  # explicit relations in basic-memory's syntax


def test_basic_memory_paragraph_hashtags_and_multiline_items(engine: Engine, tmp_path: Path) -> None:
    """A prose paragraph holding a `#word` is an observation for basic-memory: its text stays whole (only trailing
    tags leave the text, kept as tags); a list item continued on the next line keeps both lines."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "rust.md").write_text(
        "---\ntitle: Rust Move\ntags: '#lang'\n---\n\nWe moved the parser to #rust last year.\n\n"
        "- [lesson] Pin the toolchain\n  in rust-toolchain.toml #ci\n", encoding="utf-8")  # fmt: skip
    r = engine.import_file(tmp_path / "notes", format="basic-memory")
    got = contents(engine, "basic-memory")
    assert got["We moved the parser to #rust last year."].tags == ["lang", "rust"]
    assert got["Pin the toolchain\nin rust-toolchain.toml"].type == "lesson"
    assert r.imported == 2 and r.bad == 0 and r.problems == []
