"""Code anchors through a real MCP client: both profiles' new optional fields and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import git, make_repo
from .clients import err, ok, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def where(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "widgets")
    (repo / "auth").mkdir()
    (repo / "auth" / "session.py").write_text("def get_session(token):\n    return STORE.get(token)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    return tmp_path / "home", repo


async def test_memoryd_profile_anchors_filters_and_freshness(where: tuple[Path, Path]) -> None:
    home, repo = where
    async with open_session("stdio", home, repo) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {"path", "symbol"} <= set(tools["mem_search"].input_schema["properties"])
        assert "anchors" in tools["mem_save"].input_schema["properties"]
        assert "freshness" in tools["mem_search"].output_schema["$defs"]["Result"]["properties"]
        saved = await ok(s, "mem_save", {"content": "Sessions come from `get_session()` in auth/session.py",
                                         "type": "decision"})  # fmt: skip
        assert saved["anchors"] == ["auth/session.py", "auth/session.py::get_session"]
        plain = await ok(s, "mem_save", {"content": "Deploys happen on Fridays after the review", "type": "decision"})
        assert "anchors" not in plain and "anchor_note" not in plain
        (repo / "auth" / "session.py").write_text("def get_session(token):\n    return STORE[token]\n")
        found = (await ok(s, "mem_search", {"query": "sessions", "path": "auth/session.py"}))["results"]
        assert [r["memory_id"] for r in found] == [saved["memory_id"]]
        assert found[0]["freshness"] == "code_changed"
        assert found[0]["code_changes"][0]["kind"] == "symbol_changed"
        assert found[0]["code_changes"][0]["detail"].startswith("the definition of get_session (auth/session.py)")
        other = (await ok(s, "mem_search", {"query": "deploys Fridays"}))["results"]
        assert other[0]["memory_id"] == plain["memory_id"] and "freshness" not in other[0]
        ctx = await ok(s, "mem_context", {"memory_id": plain["memory_id"]})
        assert ctx["before"][0]["freshness"] == "code_changed" and "freshness" not in ctx["anchor"]
        assert (await err(s, "mem_search", {"query": "x", "path": "a" * 4097})).startswith(
            "invalid_input: path is 4097 characters; the limit is 4096"
        )
        assert (await err(s, "mem_save", {"content": "x is y", "anchors": ["nope.py"]})).startswith(
            "invalid_input: anchors[0] 'nope.py': no such file in the working tree"
        )


async def test_hmg_profile_keeps_its_contract_and_gains_optional_fields(where: tuple[Path, Path]) -> None:
    home, repo = where
    async with open_session("stdio", home, repo, "--profile", "hmg") as s:
        r = await ok(s, "memory_memorize", {"content": "Sessions come from `get_session()` in auth/session.py"})
        assert set(r) == {"atom_id", "effect"}  # the seed's output, unchanged
        pinned = await ok(s, "memory_memorize", {"content": "Token lookups must stay O(1)",
                                                 "anchors": ["auth/session.py::get_session"]})  # fmt: skip
        hits = (await ok(s, "memory_recall", {"query": "sessions token", "symbol": "get_session"}))["atoms"]
        assert {h["atom_id"] for h in hits} == {r["atom_id"], pinned["atom_id"]}
        assert {h["freshness"] for h in hits} == {"current"} and not any("code_changes" in h for h in hits)
        git(repo, "rm", "-q", "auth/session.py")
        hits = (await ok(s, "memory_recall", {"query": "sessions token"}))["atoms"]
        gone = {h["atom_id"]: h for h in hits}[pinned["atom_id"]]
        assert gone["freshness"] == "code_changed" and gone["code_changes"][0]["kind"] == "symbol_removed"
        assert (await err(s, "memory_recall", {"query": "x", "symbol": "a\x00b"})).startswith(
            "invalid_input: symbol holds a NUL character"
        )
        assert (await err(s, "memory_recall", {"query": "x", "symbol": "a\x01b"})).startswith(
            "invalid_input: symbol contains control characters"
        )
        fixed = await ok(s, "memory_correct", {"target_atom": r["atom_id"], "action": "confirm_actual",
                                               "reason": "still how it works"})  # fmt: skip
        assert fixed == {"effect": "applied", "target_atom": r["atom_id"]}
