"""Entity extraction: explicit cases plus a labelled set scored for precision and recall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.text.entities import KINDS, Entity, extract_entities

DATA = Path(__file__).parent / "data" / "entities_labelled.jsonl"


def ids(text: str) -> list[str]:
    return [e.id for e in extract_entities(text)]


def test_entity_id_format() -> None:
    assert Entity("library", "Solid").id == "entity:library:Solid"
    found = extract_entities("abble 說 login.py 的 get_session() 要配 PostgreSQL")
    assert [e.kind for e in found] == ["person", "file", "function", "library"]
    assert {e.kind for e in found} <= set(KINDS)


def test_chinese_with_spaces() -> None:
    got = ids("本專案用 PostgreSQL 16 做主資料庫，不用 MongoDB")
    assert got == ["entity:library:PostgreSQL", "entity:library:MongoDB"]


def test_chinese_without_spaces() -> None:
    assert ids("本專案用PostgreSQL 16做主資料庫") == ["entity:library:PostgreSQL"]
    assert ids("修復了login.py的空指標") == ["entity:file:login.py"]
    assert ids("我們用Redis當快取") == ["entity:library:Redis"]


def test_files_kept_as_written() -> None:
    got = ids("Edit src/app/main.ts, .env, docker-compose.yml and the Makefile; see ./scripts/run.sh")
    assert got == [
        "entity:file:src/app/main.ts",
        "entity:file:.env",
        "entity:file:docker-compose.yml",
        "entity:file:Makefile",
        "entity:file:./scripts/run.sh",
    ]


def test_versions_domains_and_libraries_are_not_files() -> None:
    got = ids("Python 3.11 and Node.js 18, e.g. on example.com")
    assert got == ["entity:library:Python", "entity:library:Node.js"]


def test_functions() -> None:
    assert ids("Always call get_session() first") == ["entity:function:get_session"]
    assert ids("Engine.recall() returns hits") == ["entity:function:Engine.recall"]
    got = ids("The `refresh_token` helper and `parseConfig`")
    assert got == ["entity:function:refresh_token", "entity:function:parseConfig"]
    assert ids("check the file(s) in the `DEBUG` flag") == []


def test_aliases_map_to_canonical_names() -> None:
    assert ids("postgres, Postgres and PostgreSQL") == ["entity:library:PostgreSQL"]
    assert ids("k8s 上的 pod") == ["entity:library:Kubernetes"]
    assert ids("written in golang") == ["entity:library:Go"]
    assert ids("pg is slow") == []


def test_pins_are_libraries() -> None:
    assert ids("numpy==1.26.4, pandas>=2.1, numpy<2, psycopg2-binary~=2.9") == [
        "entity:library:numpy",
        "entity:library:pandas",
        "entity:library:psycopg2-binary",
    ]
    assert ids("django>=4.2 is required") == ["entity:library:Django"]


def test_ambiguous_words() -> None:
    assert ids("Go to the page and click save") == []
    assert ids("go to the page") == []
    assert ids("The indexer is written in Go") == ["entity:library:Go"]
    assert ids("Go 1.22 adds range-over-func") == ["entity:library:Go"]
    assert ids("Go 的 goroutine 很便宜") == ["entity:library:Go"]
    assert ids("A solid test suite saves time") == []
    assert ids("Follow SOLID principles") == []
    assert ids("The frontend is built with Solid") == ["entity:library:Solid"]
    assert ids("Please react quickly to alerts") == []
    assert ids("rust on the old server") == []


def test_persons() -> None:
    assert ids("abble 偏好用 pnpm") == ["entity:person:abble", "entity:library:pnpm"]
    assert ids("Ask @alice before merging") == ["entity:person:alice"]
    assert ids("Bob said the script is deprecated") == ["entity:person:Bob"]
    assert ids("According to Carol, builds are slow") == ["entity:person:Carol"]
    assert ids("dave 认为应该换掉它") == ["entity:person:dave"]


@pytest.mark.parametrize(
    "text",
    [
        "The user said the UI is slow",
        "PM 說要延後",
        "Use @pytest.fixture and @property",
        "mail bob@example.com",
        "npm i @types/node",
        "Docker said nothing useful",
        "The team decided to wait",
    ],
)
def test_persons_are_conservative(text: str) -> None:
    assert not [e for e in extract_entities(text) if e.kind == "person"]


def test_unique_in_order_of_first_appearance() -> None:
    got = ids("Redis, then MySQL, then Redis again and redis once more")
    assert got == ["entity:library:Redis", "entity:library:MySQL"]


def test_labelled_precision_recall() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 30
    tp = fp = fn = 0
    misses = []
    for row in rows:
        got, want = set(ids(row["text"])), set(row["entities"])
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
        if got != want:
            misses.append(f"  {row['text']}: extra {sorted(got - want)} missing {sorted(want - got)}")
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    print(f"\nentities: {len(rows)} sentences, {tp + fn} labelled")
    print(f"precision {precision:.3f}  recall {recall:.3f}")
    print("\n".join(misses))
    assert precision >= 0.85
    assert recall >= 0.85
