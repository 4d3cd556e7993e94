"""Other tools' exports in (server-memory, mem0, basic-memory) and a markdown folder out, on realistic files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import Engine
from memoryd.errors import InvalidInput
from memoryd.formats import detect

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
    assert r.duplicates == 1  # the same decision written in two notes
    assert r.imported == len(got) == 8


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
