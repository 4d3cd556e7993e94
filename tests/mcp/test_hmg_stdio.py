"""The HMG profile end to end: the SDK's client spawns `memoryd-mcp --profile hmg` over stdio."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd.mcp.app import build_server, list_tool_names

from ..conftest import make_repo

pytestmark = pytest.mark.anyio

HMG_TOOLS = ["memory_memorize", "memory_recall", "memory_correct", "memory_govern", "memory_handoff", "memory_stats"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _server_command() -> str:
    found = shutil.which("memoryd-mcp", path=str(Path(sys.executable).parent))
    assert found, "memoryd-mcp is not installed in this environment (pip install -e .)"
    return found


@asynccontextmanager
async def hmg_session(home: Path, cwd: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=_server_command(), args=["--profile", "hmg"], cwd=str(cwd),
        env={"MEMORYD_HOME": str(home), "HOME": os.environ.get("HOME", str(home)),
             **{k: v for k, v in os.environ.items() if k.startswith("MEMORYD_DAEMON")}},
    )  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    r = await session.call_tool(name, args or {})
    assert not r.is_error, r.content
    assert r.structured_content is not None
    return r.structured_content


@pytest.fixture
def where(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "home", make_repo(tmp_path / "widgets")


async def test_build_server_lists_the_six_tools() -> None:
    mcp = build_server("hmg")
    assert await list_tool_names(mcp) == HMG_TOOLS
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        build_server("nope")


async def test_tools_have_descriptions_schemas_and_annotations(where: tuple[Path, Path]) -> None:
    async with hmg_session(*where) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert list(tools) == HMG_TOOLS
    for t in tools.values():
        assert t.description and len(t.description) < 600
        assert t.output_schema is not None
        assert t.annotations is not None
    assert tools["memory_recall"].annotations.read_only_hint is True
    assert tools["memory_govern"].annotations.destructive_hint is True
    recall_props = tools["memory_recall"].input_schema["properties"]
    assert recall_props["max_results"]["default"] == 10
    assert recall_props["include_negated"]["default"] is False
    assert set(tools["memory_correct"].input_schema["required"]) == {"target_atom", "action", "reason"}
    assert set(tools["memory_govern"].input_schema["required"]) == {"target_atom", "action", "reason"}
    assert tools["memory_memorize"].input_schema["required"] == ["content"]
    assert tools["memory_handoff"].input_schema["required"] == ["summary"]


async def test_memorize_recall_dedup_and_scope_override(where: tuple[Path, Path]) -> None:
    home, repo = where
    async with hmg_session(home, repo) as s:
        content = "本專案用 PostgreSQL 16 做主資料庫，不用 MongoDB，因為需要事務和複雜查詢"
        fake_scope = {"tenant_id": "mallory", "workspace": "evil", "repository": "elsewhere", "branch": "x"}
        m = await call(s, "memory_memorize", {"content": content, "source": "user", "scope": fake_scope})
        assert m["effect"] == "applied" and set(m) == {"atom_id", "effect", "warning"}
        assert "mallory" in m["warning"] and "acme/widgets" in m["warning"]  # never silently: says where it went
        d = await call(s, "memory_memorize", {"content": content})
        assert d == {"atom_id": m["atom_id"], "effect": "no_op", "deduped_with": m["atom_id"],
                     "reason": d["reason"]}  # fmt: skip
        j = await call(s, "memory_memorize", {"content": "好的"})
        assert j["effect"] == "rejected" and "not worth keeping" in j["reason"] and "atom_id" not in j
        r = await call(s, "memory_recall", {"query": "PostgreSQL 連線池配置"})
        top = r["atoms"][0]
        assert top["atom_id"] == m["atom_id"] and top["content"] == content and top["source"] == "user"
        assert 0.0 < top["score"] <= 1.0 and top["created_at"]
    from memoryd.engine import Engine
    from memoryd.search.embed import HashEmbedder
    from memoryd.shared.config import Settings

    with Engine.open(Settings(home=home), cwd=repo, embedder=HashEmbedder()) as e:
        atom = e.get(m["atom_id"])
        assert (atom.scope.workspace, atom.scope.repository) == ("acme", "widgets")
        assert atom.scope.tenant_id != "mallory"


async def test_recall_argument_errors(where: tuple[Path, Path]) -> None:
    async with hmg_session(*where) as s:
        r = await s.call_tool("memory_recall", {"query": "   "})
        assert r.is_error and "invalid_input: query is empty" in r.content[0].text
        r = await s.call_tool("memory_recall", {"query": "x", "max_results": 0})
        assert r.is_error and "max_results" in r.content[0].text
        r = await s.call_tool("memory_memorize", {})
        assert r.is_error and "content" in r.content[0].text


async def test_every_correct_action_and_rejection(where: tuple[Path, Path]) -> None:
    async with hmg_session(*where) as s:
        a = (
            await call(
                s,
                "memory_memorize",
                {"content": "The flaky test is probably caused by the shared tmp dir in conftest.py"},
            )
        )["atom_id"]
        for action in ("confirm_actual", "confirm_necessary", "demote"):
            r = await call(s, "memory_correct", {"target_atom": a, "action": action, "reason": "checked"})
            assert r == {"effect": "applied", "target_atom": a}
        r = await call(s, "memory_correct", {"target_atom": a, "action": "replace", "reason": "root cause found",
                                             "new_content": "The flaky test was caused by the shared tmp dir in conftest.py"})  # fmt: skip
        assert r["effect"] == "applied" and r["new_atom_id"] and "reason" not in r
        new = r["new_atom_id"]
        stale = await call(
            s, "memory_correct", {"target_atom": a, "action": "replace", "reason": "x", "new_content": "y z w"}
        )
        assert stale["effect"] == "rejected" and "superseded" in stale["reason"] and "new_atom_id" not in stale
        missing = await call(s, "memory_correct", {"target_atom": new, "action": "replace", "reason": "x"})
        assert missing["reason"] == "new_content is required for replace"
        bad = await call(s, "memory_correct", {"target_atom": new, "action": "undo", "reason": "x"})
        assert "unknown action 'undo'" in bad["reason"]
        unknown = await call(s, "memory_correct", {"target_atom": "01JNOTANATOM", "action": "negate", "reason": "x"})
        assert unknown["effect"] == "rejected" and "no atom with id" in unknown["reason"]
        n = await call(s, "memory_correct", {"target_atom": new, "action": "negate", "reason": "wrong"})
        assert n == {"effect": "applied", "target_atom": new}
        twice = await call(s, "memory_correct", {"target_atom": new, "action": "negate", "reason": "again"})
        assert twice["effect"] == "rejected"
        hidden = await call(s, "memory_recall", {"query": "flaky test tmp dir"})
        assert all(x["atom_id"] != new for x in hidden["atoms"])
        shown = await call(s, "memory_recall", {"query": "flaky test tmp dir", "include_negated": True})
        assert any(x["atom_id"] == new for x in shown["atoms"])


async def test_every_govern_action_and_rejection(where: tuple[Path, Path]) -> None:
    async with hmg_session(*where) as s:
        ids = [
            (await call(s, "memory_memorize", {"content": text}))["atom_id"]
            for text in (
                "Deploy keys live in the ops vault under /infra/deploy",
                "The staging cluster name is kite-staging-eu and it scales to 12 nodes",
                "Internal code name for the billing rewrite is Project Heron",
                "Our prod API key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 is in settings.py",
            )
        ]
        q = await call(s, "memory_govern", {"target_atom": ids[0], "action": "quarantine", "reason": "review"})
        assert q == {"effect": "applied", "target_atom": ids[0]}
        again = await call(s, "memory_govern", {"target_atom": ids[0], "action": "quarantine", "reason": "x"})
        assert again["effect"] == "rejected" and again["reason"] == "atom is already quarantined"
        sealed = await call(s, "memory_govern", {"target_atom": ids[1], "action": "seal", "reason": "audit only"})
        assert sealed["effect"] == "applied"
        t = await call(s, "memory_govern", {"target_atom": ids[2], "action": "tombstone", "reason": "code name"})
        assert t["effect"] == "applied"
        dead = await call(s, "memory_govern", {"target_atom": ids[2], "action": "seal", "reason": "x"})
        assert dead["effect"] == "rejected" and "tombstoned" in dead["reason"]
        no_lesson = await call(s, "memory_govern", {"target_atom": ids[3], "action": "derive_lesson", "reason": "leak"})
        assert no_lesson["reason"] == "lesson_content is required for derive_lesson"
        lesson = await call(s, "memory_govern", {"target_atom": ids[3], "action": "derive_lesson", "reason": "原文包含洩露的 API key",
                                                 "lesson_content": "不要在程式碼或記憶中硬編碼 API key，使用環境變數"})  # fmt: skip
        assert lesson["effect"] == "applied" and lesson["lesson_atom_id"]
        bad = await call(s, "memory_govern", {"target_atom": ids[3], "action": "burn", "reason": "x"})
        assert "unknown action 'burn'" in bad["reason"]
        unknown = await call(s, "memory_govern", {"target_atom": "01JNOTANATOM", "action": "seal", "reason": "x"})
        assert "no atom with id" in unknown["reason"]
        r = await call(
            s, "memory_recall", {"query": "deploy keys staging cluster Heron API key", "include_negated": True}
        )
        assert {x["atom_id"] for x in r["atoms"]}.isdisjoint(ids)
        lesson_hit = await call(s, "memory_recall", {"query": "硬編碼 API key"})
        assert lesson_hit["atoms"][0]["atom_id"] == lesson["lesson_atom_id"]


async def test_handoff_and_stats(where: tuple[Path, Path]) -> None:
    async with hmg_session(*where) as s:
        st0 = await call(s, "memory_stats")
        assert set(st0) == {"atoms", "edges", "indexes", "snapshot_version"}
        assert set(st0["indexes"]) == {"semantic", "keyword", "temporal", "categorical"}
        h = await call(
            s,
            "memory_handoff",
            {
                "summary": "修復了 login.py 的空指標問題，根因是 get_session() 返回 None。下一步：補整合測試。",
                "source": "agent",
            },
        )
        assert h["effect"] == "applied" and h["atom_id"] and set(h) == {"atom_id", "effect"}
        empty = await call(s, "memory_handoff", {"summary": "  "})
        assert empty == {"effect": "rejected", "reason": "summary is empty"}
        st = await call(s, "memory_stats")
        assert st["atoms"] == st0["atoms"] + 1
        assert st["snapshot_version"] == st0["snapshot_version"] + 1
        assert st["indexes"]["semantic"] == st["indexes"]["keyword"] == 1
        assert st["edges"] >= 2  # login.py and get_session
