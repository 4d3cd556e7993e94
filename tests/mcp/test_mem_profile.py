"""Every mem_* tool through a real MCP client, over stdio and over streamable HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from memoryd.engine import Engine
from memoryd.mcp.app import build_server, list_tool_names
from memoryd.mcp.mem import ADMIN_TOOLS, AGENT_TOOLS
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

from ..conftest import make_repo
from .clients import err, ok, open_session

pytestmark = pytest.mark.anyio
TRANSPORTS = ["stdio", "http"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def where(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "home", make_repo(tmp_path / "widgets")


def sdk(home: Path, repo: Path) -> Engine:
    """The same store, opened in-process as a person's CLI would (no sensitive gate)."""
    return Engine.open(Settings(home=home), cwd=repo, embedder=HashEmbedder(), authority="operator")


async def test_build_server_tiers() -> None:
    assert await list_tool_names(build_server()) == AGENT_TOOLS
    assert await list_tool_names(build_server(include_admin=True)) == AGENT_TOOLS + ADMIN_TOOLS
    assert len(AGENT_TOOLS) == 17 and len(ADMIN_TOOLS) == 6  # 16 of the seed + mem_request_sensitive_read


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_listing_descriptions_and_annotations(transport: str, where: tuple[Path, Path]) -> None:
    async with open_session(transport, *where, "--admin") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert list(tools) == AGENT_TOOLS + ADMIN_TOOLS
    for t in tools.values():
        assert t.description and len(t.description) < 600, t.name
        assert t.output_schema is not None, t.name
    for name in ("mem_get", "mem_search", "mem_context", "mem_timeline", "mem_stats", "mem_review_pending"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("mem_delete", "mem_merge_projects"):
        assert tools[name].annotations.destructive_hint is True, name
    props = tools["mem_search"].input_schema["properties"]
    assert props["top_k"]["default"] == 10 and props["scope"]["default"] == "auto"
    assert tools["mem_timeline"].input_schema["properties"]["since"]["default"] == "30d"
    assert tools["mem_timeline"].input_schema["properties"]["limit"]["default"] == 100
    assert tools["mem_context"].input_schema["properties"]["neighbors"]["default"] == 3
    review = tools["mem_review_pending"].input_schema["properties"]
    assert (review["scope"]["default"], review["limit"]["default"]) == ("global", 10)
    assert (review["min_score"]["default"], review["max_score"]["default"]) == (0.0, 1.0)
    promote = tools["mem_promote"].input_schema["properties"]
    assert (promote["auto_high"]["default"], promote["threshold"]["default"]) == (False, 0.85)


async def test_admin_tools_hidden_without_flag(where: tuple[Path, Path]) -> None:
    async with open_session("stdio", *where) as s:
        names = [t.name for t in (await s.list_tools()).tools]
    assert names == AGENT_TOOLS


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_memory_tools(transport: str, where: tuple[Path, Path]) -> None:
    home, repo = where
    async with open_session(transport, home, repo) as s:
        saved = await ok(s, "mem_save", {"content": "决定从 React 切到 Solid，理由是性能+体积", "type": "decision",
                                         "tags": ["frontend"], "triggers": ["solid", "react", "切换"],
                                         "title": "2026-05-12 前端切换决策"})  # fmt: skip
        assert saved["status"] == "saved" and saved["memory_id"]
        mid, path = saved["memory_id"], Path(saved["path"])
        text = path.read_text()
        assert f"id: {mid}" in text and "决定从 React 切到 Solid" in text and "title: 2026-05-12 前端切换决策" in text
        dup = await ok(s, "mem_save", {"content": "决定从 React 切到 Solid，理由是性能+体积", "type": "decision"})
        assert dup["status"] == "duplicate" and dup["deduped_with"] == mid
        junk = await ok(s, "mem_save", {"content": "好的"})
        assert junk["status"] == "rejected" and "not worth keeping" in junk["reasoning"]
        bad_type = await err(s, "mem_save", {"content": "x y z", "type": "rumour"})
        assert "type" in bad_type
        got = await ok(s, "mem_get", {"memory_id": mid})
        assert got["body"] == "决定从 React 切到 Solid，理由是性能+体积" and got["type"] == "decision"
        assert got["frontmatter"]["tags"] == ["frontend"] and got["frontmatter"]["scope"]["repository"] == "widgets"
        upd = await ok(s, "mem_update", {"memory_id": mid, "tags": ["frontend", "perf"], "title": "前端切换"})
        assert upd["status"] == "updated" and sorted(upd["updated_fields"]) == ["tags", "title"]
        assert "perf" in path.read_text()
        upd2 = await ok(s, "mem_update", {"memory_id": mid, "content": "决定从 React 切到 Solid 1.9，理由是性能和体积"})
        assert upd2["updated_fields"] == ["content"] and "Solid 1.9" in path.read_text()
        nothing = await err(s, "mem_update", {"memory_id": mid})
        assert "invalid_input: nothing to update" in nothing
        other = await ok(s, "mem_save", {"content": "The CI pipeline runs pytest and ruff on every pull request",
                                         "type": "fact"})  # fmt: skip
        third = await ok(s, "mem_save", {"content": "Never deploy the billing service on Fridays", "type": "warning"})
        found = await ok(s, "mem_search", {"query": "Solid 切换决策"})
        assert found["results"][0]["memory_id"] == mid and 0 < found["results"][0]["score"] <= 1
        assert found["results"][0]["path"] == str(path)
        typed = await ok(s, "mem_search", {"query": "Solid pytest deploy", "types": ["warning"]})
        assert [r["memory_id"] for r in typed["results"]] == [third["memory_id"]]
        boosted = await ok(s, "mem_search", {"query": "what did we decide", "entity_ids": ["entity:library:Solid"]})
        assert boosted["results"][0]["memory_id"] == mid
        ctx = await ok(s, "mem_context", {"memory_id": other["memory_id"], "neighbors": 3})
        assert [b["memory_id"] for b in ctx["before"]] == [mid]
        assert [a["memory_id"] for a in ctx["after"]] == [third["memory_id"]]
        assert ctx["anchor"]["memory_id"] == other["memory_id"]
        tl = await ok(s, "mem_timeline", {"since": "2w"})
        assert [m["memory_id"] for m in tl["memories"]] == [third["memory_id"], other["memory_id"], mid]
        tl_types = await ok(s, "mem_timeline", {"since": "1y", "types": ["decision"]})
        assert [m["memory_id"] for m in tl_types["memories"]] == [mid]
        for bad in ("30", "2x", "-1d", "a while"):
            assert "since must look like 30d, 2w, 6m or 1y" in await err(s, "mem_timeline", {"since": bad})
        assert "not_found: no atom with id" in await err(s, "mem_get", {"memory_id": "01JNOTAMEMORY0000000000000"})
        assert "not_found" in await err(s, "mem_context", {"memory_id": "01JNOTAMEMORY0000000000000"})
        assert "top_k" in await err(s, "mem_search", {"query": "x", "top_k": 0})
        assert "invalid_input: query is empty" in await err(s, "mem_search", {"query": " "})
        deleted = await ok(s, "mem_delete", {"memory_id": other["memory_id"]})
        assert deleted["deleted"] is True and not Path(deleted["path"]).exists()
        assert "not_found" in await err(s, "mem_delete", {"memory_id": other["memory_id"]})
    with sdk(home, repo) as e:
        assert [ev.action for ev in e.store.events(other["memory_id"])] == ["create", "delete"]
        assert e.verify_chain().ok


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_session_tools(transport: str, where: tuple[Path, Path]) -> None:
    async with open_session(transport, *where) as s:
        sid = (await ok(s, "mem_session_start", {"source": "claude-code", "title": "修 login bug"}))["session_id"]
        body = (await ok(s, "mem_session_summary", {"session_id": sid}))["body"]
        assert body.startswith("# 修 login bug") and "claude-code" in body
        end = await ok(s, "mem_session_end", {"session_id": sid, "summary": "修好了 login.py 的空指標，補了測試"})
        assert end["status"] == "closed" and end["summary"] == "修好了 login.py 的空指標，補了測試"
        again = await ok(s, "mem_session_end", {"session_id": sid, "summary": "a different summary"})
        assert again["status"] == "already_closed" and again["summary"] == "修好了 login.py 的空指標，補了測試"
        body = (await ok(s, "mem_session_summary", {"session_id": sid}))["body"]
        assert "## Summary" in body and "a different summary" not in body
        assert "not_found: no session" in await err(s, "mem_session_end", {"session_id": "nope", "summary": "x"})
        assert "not_found: no session" in await err(s, "mem_session_summary", {"session_id": "nope"})
        assert "summary is empty" in await err(s, "mem_session_end",
                                                {"session_id": (await ok(s, "mem_session_start"))["session_id"],
                                                 "summary": "  "})  # fmt: skip
        passive = await ok(s, "mem_capture_passive", {"content": "abble 偏好 autonomous + 中文汇总", "source": "openclaw",
                                                      "type": "preference", "tags": ["meta"],
                                                      "triggers": ["autonomous", "中文"]})  # fmt: skip
        assert passive["status"] == "saved"
        # the DURA gate is skipped: a grey-zone text is stored at once
        grey = await ok(s, "mem_capture_passive", {"content": "I am now looking at the file", "source": "importer"})
        assert grey["status"] == "saved"
        assert "type" in await err(s, "mem_capture_passive", {"content": "x y", "source": "o", "type": "session"})


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_judge_and_compare(transport: str, where: tuple[Path, Path]) -> None:
    async with open_session(transport, *where) as s:
        old = (await ok(s, "mem_save", {"content": "前端框架用 React 18，配合 Redux 管理状态", "type": "decision"}))[
            "memory_id"
        ]
        verdict = await ok(s, "mem_judge", {"new_text": "前端改用 Solid，不再使用 React", "old_memory_id": old})
        assert verdict["judgment"]["type"] == "supersedes" and verdict["source"] == "heuristic"
        assert verdict["band"] in ("auto", "review") and 0 <= verdict["judgment"]["confidence"] <= 1
        unrelated = await ok(
            s, "mem_judge", {"new_text": "Backups run nightly at 02:00 UTC to S3", "old_memory_id": old}
        )
        assert unrelated["judgment"]["type"] == "unrelated" and unrelated["band"] == "ignore"
        # judging applies nothing
        assert (await ok(s, "mem_get", {"memory_id": old}))["status"] == "active"
        saved = await ok(s, "mem_save", {"content": "前端框架改用 Solid 1.9，不再使用 React", "type": "decision"})
        new = saved["memory_id"]
        assert saved["supersedes"] == old  # a save does: the write path applies the auto band (issue 35)
        cmp = await ok(s, "mem_compare", {"memory_id_a": old, "memory_id_b": new})
        assert cmp["a"]["memory_id"] == old and cmp["b"]["memory_id"] == new
        assert any(line.startswith("-") for line in cmp["diff_lines"]) and any(
            line.startswith("+") for line in cmp["diff_lines"]
        )
        assert cmp["judgment"]["type"] == "supersedes"
        assert "not_found" in await err(s, "mem_judge", {"new_text": "x y z", "old_memory_id": "nope"})
        assert "not_found" in await err(s, "mem_compare", {"memory_id_a": old, "memory_id_b": "nope"})
        assert "new_text is empty" in await err(s, "mem_judge", {"new_text": " ", "old_memory_id": old})
        assert (await ok(s, "mem_get", {"memory_id": old}))["status"] == "superseded"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_promotion_review(transport: str, where: tuple[Path, Path]) -> None:
    home, repo = where
    async with open_session(transport, home, repo) as s:
        grey = ["I am now looking at the file", "we use tabs", "Right now the build is red"]
        pend = [await ok(s, "mem_save", {"content": c}) for c in grey]
        assert [p["status"] for p in pend] == ["pending"] * 3 and all("path" not in p for p in pend)
        listed = await ok(s, "mem_review_pending", {})
        avgs = [p["dura"]["average"] for p in listed["pending"]]
        assert listed["count"] == 3 and avgs == sorted(avgs) and listed["pending"][0]["reasoning"]
        narrow = await ok(s, "mem_review_pending", {"min_score": avgs[-1], "max_score": 1.0})
        assert all(p["dura"]["average"] >= avgs[-1] for p in narrow["pending"])
        assert "max_score" in await err(s, "mem_review_pending", {"max_score": 1.5})
        assert "min_score 0.9 is above max_score 0.1" in await err(s, "mem_review_pending",
                                                                   {"min_score": 0.9, "max_score": 0.1})  # fmt: skip
        ids = [p["promotion_id"] for p in pend]
        promoted = await ok(s, "mem_promote", {"promotion_ids": [ids[0], 99999]})
        assert promoted["promoted"] == [ids[0]]
        assert promoted["skipped"] == [{"promotion_id": 99999, "reason": "no promotion with id 99999"}]
        got = await ok(s, "mem_get", {"memory_id": pend[0]["memory_id"]})
        assert got["status"] == "active" and got["path"] and Path(got["path"]).exists()
        rejected = await ok(s, "mem_reject", {"promotion_ids": [ids[1]]})
        assert rejected["rejected"] == [ids[1]]
        twice = await ok(s, "mem_reject", {"promotion_ids": [ids[1]]})
        assert twice["skipped"][0]["reason"] == f"promotion {ids[1]} is already rejected"
        assert (await ok(s, "mem_get", {"memory_id": pend[1]["memory_id"]}))["status"] == "sealed"
        assert "pass promotion_ids, or auto_high" in await err(s, "mem_promote", {})
        auto = await ok(s, "mem_promote", {"auto_high": True, "threshold": 0.0, "scope": "auto"})
        assert auto["promoted"] == [ids[2]]
        assert (await ok(s, "mem_review_pending", {}))["count"] == 0
        assert "promotion_ids is empty" in await err(s, "mem_reject", {"promotion_ids": []})
    with sdk(home, repo) as e:
        files = {p.name for p in e.vault_root.rglob("*.md")}
        assert f"{pend[1]['memory_id']}.md" not in files  # rejected: no markdown
        assert [ev.action for ev in e.store.events(pend[1]["memory_id"])] == ["create", "reject"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_admin_tools(transport: str, where: tuple[Path, Path], tmp_path: Path) -> None:
    home, repo = where
    other = make_repo(tmp_path / "widgets-old", "https://github.com/acme/widgets-old.git")
    with sdk(home, other) as e:
        e.memorize("The build uses Bazel 7 with remote caching on buildbuddy")
        e.memorize("Never deploy the billing service on Fridays", type="warning")
        old_hash = e.scope.scope_hash
    async with open_session(transport, home, repo, "--admin") as s:
        await ok(s, "mem_save", {"content": "Never deploy the billing service on Fridays", "type": "warning"})
        await ok(s, "mem_save", {"content": "Frontend tests run with Vitest 3 and Playwright", "type": "fact"})
        cur = await ok(s, "mem_current_project", {})
        assert cur["scope_name"] == "acme/widgets" and cur["scope_root"] == str(repo.resolve())
        assert (await ok(s, "mem_current_project", {"cwd": str(other)}))["scope_hash"] == old_hash
        stats = await ok(s, "mem_stats", {})
        assert stats["total"] == 4 and stats["by_type"]["warning"] == 2
        assert {v["name"] for v in stats["by_scope"].values()} == {"acme/widgets", "acme/widgets-old"}
        assert stats["by_decay"] == {"fresh": 4, "stale": 0, "soft_forgotten": 0}
        assert any(t["id"] == "entity:library:Vitest" for t in stats["top_entities"]) or stats["top_entities"]
        one = await ok(s, "mem_stats", {"scope": old_hash})
        assert one["total"] == 2
        assert "not_found: no scope" in await err(s, "mem_stats", {"scope": "nope/nope"})
        preview = await ok(s, "mem_merge_projects", {"scope_a": cur["scope_hash"], "scope_b": "acme/widgets-old"})
        assert (preview["would_move"], preview["would_dedup"], preview["dry_run"]) == (1, 1, True)
        assert len(preview["samples"]) == 2
        assert (await ok(s, "mem_stats", {"scope": old_hash}))["total"] == 2  # dry run changed nothing
        done = await ok(s, "mem_merge_projects", {"scope_a": cur["scope_hash"], "scope_b": old_hash, "dry_run": False})
        assert (done["moved"], done["deduped"]) == (1, 1)
        assert "same scope" in await err(
            s, "mem_merge_projects", {"scope_a": cur["scope_hash"], "scope_b": "acme/widgets"}
        )
        found = await ok(s, "mem_search", {"query": "Bazel remote caching"})
        assert "Bazel 7" in found["results"][0]["content_preview"]
        doctor = await ok(s, "mem_doctor", {})
        assert set(doctor) == {"data_root", "index_db", "embeddings", "llm", "kg", "sync"}
        assert doctor["data_root"].startswith("ok") and doctor["index_db"].startswith("ok")
        assert doctor["embeddings"].startswith("ok") and doctor["kg"].startswith("ok")
        assert doctor["llm"].startswith("warn: ANTHROPIC_API_KEY not set")
        assert doctor["sync"].startswith("ok"), doctor["sync"]
        prompt = await ok(s, "mem_save_prompt", {"name": "dura-extract", "content": "Score DURA for: {text}"})
        assert Path(prompt["path"]) == home / "prompts" / "dura-extract.md"
        assert Path(prompt["path"]).read_text() == "Score DURA for: {text}\n"
        for bad in ("../escape", "a/b", "", ".hidden", "x" * 80):
            assert "is not allowed" in await err(s, "mem_save_prompt", {"name": bad, "content": "c"})
        assert "prompt content is empty" in await err(s, "mem_save_prompt", {"name": "ok", "content": " "})
        key = await ok(s, "mem_suggest_topic_key", {"content": "React → Solid 的切换决策"})
        assert key["source"] == "heuristic" and key["topic_key"] == key["topic_key"].lower()
        assert key == await ok(s, "mem_suggest_topic_key", {"content": "React → Solid 的切换决策"})


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_sensitive_scope_requires_a_grant(transport: str, where: tuple[Path, Path]) -> None:
    home, repo = where
    with sdk(home, repo) as e:
        mid = e.memorize("The payroll export runs from payroll_job.py every 25th").atom_id
        e.mark_sensitive(True)
    async with open_session(transport, home, repo) as s:
        for name, args in [
            ("mem_search", {"query": "payroll"}), ("mem_get", {"memory_id": mid}),
            ("mem_context", {"memory_id": mid}), ("mem_timeline", {}),
            ("mem_review_pending", {"scope": "auto"}),
        ]:  # fmt: skip
            with pytest.raises(MCPError) as info:
                await s.call_tool(name, args)
            assert info.value.error.code == -32001, name
            assert info.value.error.message.startswith("AuthorizationRequired:"), name
        req = await ok(s, "mem_request_sensitive_read", {"reason": "need the payroll schedule to fix a cron bug"})
        assert req["status"] == "pending" and req["request_id"] and "memoryd scope grant" in req["message"]
        assert "reason is required" in await err(s, "mem_request_sensitive_read", {"reason": " "})
        with sdk(home, repo) as e:
            e.grant(5)
        assert (await ok(s, "mem_get", {"memory_id": mid}))["body"].startswith("The payroll export")
        assert (await ok(s, "mem_request_sensitive_read", {"reason": "again"}))["status"] == "granted"


async def test_one_store_across_profiles(where: tuple[Path, Path]) -> None:
    home, repo = where
    async with open_session("stdio", home, repo) as mem:
        saved = await ok(mem, "mem_save", {"content": "主資料庫用 MongoDB 6，文件模型方便迭代", "type": "decision"})
        old_id, old_path = saved["memory_id"], Path(saved["path"])
        async with open_session("stdio", home, repo, "--profile", "hmg") as hmg:
            hits = await ok(hmg, "memory_recall", {"query": "主資料庫 MongoDB"})
            assert hits["atoms"][0]["atom_id"] == old_id
            r = await ok(hmg, "memory_correct", {"target_atom": old_id, "action": "replace", "reason": "v3 已遷移",
                                                 "new_content": "主資料庫用 PostgreSQL 16，替換原 MongoDB 方案"})  # fmt: skip
            new_id = r["new_atom_id"]
        old = await ok(mem, "mem_get", {"memory_id": old_id})
        assert old["status"] == "superseded" and "path" not in old
        new = await ok(mem, "mem_get", {"memory_id": new_id})
        assert new["status"] == "active" and new["body"] == "主資料庫用 PostgreSQL 16，替換原 MongoDB 方案"
        assert not old_path.exists()
        assert "PostgreSQL 16" in Path(new["path"]).read_text()
        assert new["type"] == "decision"


async def test_server_start_imports_hand_edits(where: tuple[Path, Path]) -> None:
    home, repo = where
    with sdk(home, repo) as e:
        mid = e.memorize("Deploys go through the blue/green switch in deploy.sh").atom_id
        path = e.path_of(e.get(mid))
    assert path is not None
    path.write_text(path.read_text().replace("blue/green switch", "canary rollout"))
    (path.parent / "broken.md").write_text("---\nid: [\n---\n\nbody\n")
    async with open_session("stdio", home, repo) as s:
        got = await ok(s, "mem_get", {"memory_id": mid})
        assert got["status"] == "superseded"
        hit = (await ok(s, "mem_search", {"query": "canary rollout deploy.sh"}))["results"][0]
        assert "canary rollout" in hit["content_preview"]
    assert (path.parent / "broken.md").read_text() == "---\nid: [\n---\n\nbody\n"
