"""Agent hooks: SessionStart brief, PreToolUse scope injection, transcripts → observations held for review."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.agents import hooks, pretool
from memoryd.agents.hooks import run_hook
from memoryd.engine import Engine
from memoryd.engine.observations import Message, extract_candidates, read_transcript
from memoryd.engine.reads import fit_lines
from memoryd.search.embed import E5Embedder
from memoryd.shared.config import Settings

DATA = Path(__file__).parent / "data" / "transcripts"
EN = ("claude_en_session.jsonl", "5f0c2d1e-8a41-4c52-9b7e-2f3a6d9e1c01")
ZH = ("claude_zh_session.jsonl", "a3b9e7f2-1c55-4d0e-8f6a-7b2c9d4e5f10")
TW = ("claude_zh_hant_handoff.jsonl", "c7d1f3a9-5e2b-4b8c-a1d0-9e8f7a6b5c40")


def open_engine(settings: Settings, repo: Path, embedder: E5Embedder) -> Any:
    return Engine.open(settings, cwd=repo, embedder=embedder)


@pytest.fixture
def eng(settings: Settings, repo: Path, embedder: E5Embedder) -> Iterator[Any]:
    with open_engine(settings, repo, embedder) as e:
        yield e


def transcript(tmp_path: Path, fixture: tuple[str, str]) -> Path:
    dst = tmp_path / "claude" / "projects" / "-home-dev-widgets" / f"{fixture[1]}.jsonl"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / fixture[0], dst)
    return dst


def payload(event: str, repo: Path, path: Path | None = None, session_id: str = "s-1", **extra: Any) -> str:
    return json.dumps({
        "session_id": session_id, "transcript_path": str(path or "/nonexistent.jsonl"), "cwd": str(repo),
        "hook_event_name": hooks.EVENTS[event], "permission_mode": "default", **extra,
    })  # fmt: skip


def context_of(out: hooks.HookOutput) -> str:
    assert out.exit_code == 0
    data = json.loads(out.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return data["hookSpecificOutput"]["additionalContext"]


def snapshot(e: Any) -> tuple[int, int, list[tuple[str, str]]]:
    atoms = e.store.list_atoms(limit=-1)
    return len(atoms), len(e.store.events()), sorted((a.id, a.status) for a in atoms)


def log_text(settings: Settings) -> str:
    path = settings.home / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


# -- session-start -------------------------------------------------------------------------------------


def test_session_start_on_an_empty_store_prints_the_short_guide(
    settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    ctx = context_of(run_hook("session-start", payload("session-start", repo, source="startup"), settings=settings,
                              embedder=embedder))  # fmt: skip
    assert ctx.startswith("[memoryd · acme/widgets]")
    assert "no memories for this project yet" in ctx
    assert len(ctx) <= settings.brief_max_chars


def test_session_start_brief_is_bounded_in_the_memories_language_with_pending_count(
    tmp_path: Path, repo: Path, embedder: E5Embedder
) -> None:
    settings = Settings(home=tmp_path / "home", brief_max_chars=400)
    with open_engine(settings, repo, embedder) as e:
        e.memorize("禁止在生产环境直接执行 `DROP TABLE`，必须先走迁移脚本 migrations/。", source="user")
        e.memorize("团队偏好用 pnpm 管理依赖，不要用 npm install。", source="user")
        e.memorize("决定前端从 React 切到 Solid，理由是性能和体积。", source="user", type="decision")
        e.handoff("修好了 login.py 的空指针；下一步：补 test_login 的并发用例。")
        for i in range(30):
            e.memorize(f"约定 {i}：服务 svc_{i} 的配置文件放在 config/svc_{i}.toml，必须带版本号 v{i}.0。",
                       source="user", type="preference")  # fmt: skip
        held = e.memorize("我现在正在看这个文件", source="agent", gate="review")
        assert held.status == "pending"
    ctx = context_of(run_hook("session-start", payload("session-start", repo), settings=settings, embedder=embedder))
    assert len(ctx) <= 400
    assert "最近交接" in ctx and "修好了 login.py" in ctx  # the latest handoff comes first, Chinese labels
    assert ctx.endswith("\n待审核：1 条")  # cut to fit, the pending count kept
    big = Settings(home=settings.home, brief_max_chars=4000)
    full = context_of(run_hook("session-start", payload("session-start", repo), settings=big, embedder=embedder))
    assert "待审核：1 条" in full
    assert "## 约束" in full and "## 近期决策" in full and "React 切到 Solid" in full


def test_the_context_is_cut_at_line_boundaries_keeping_the_pending_count() -> None:
    body = "\n".join(
        ["## 约束", *(f"- 约定 {i}：必须用 v{i}。 (01M8VKR9WNNTQBXJKQD6PRGNBV)" for i in range(20)), "待审核：3 条"]
    )
    out = fit_lines("[memoryd · a/b]", body, 200, "待审核：3 条")
    assert len(out) <= 200 and out.endswith("\n…\n待审核：3 条")
    assert all(line in body.splitlines() for line in out.splitlines()[1:-2])
    assert fit_lines("[h]", "short", 200) == "[h]\nshort"


def test_session_start_never_shows_a_sensitive_scope_without_a_grant(eng: Any, settings: Settings, repo: Path,
                                                                        embedder: E5Embedder) -> None:  # fmt: skip
    eng.memorize("The staging database password rotates every Monday; never paste it into tickets.", source="user")
    eng.mark_sensitive(True)
    ctx = context_of(run_hook("session-start", payload("session-start", repo), settings=settings, embedder=embedder))
    assert "sensitive" in ctx and "Monday" not in ctx
    eng.grant(30, by="test")
    ctx = context_of(run_hook("session-start", payload("session-start", repo), settings=settings, embedder=embedder))
    assert "Monday" in ctx


# -- user-prompt-submit ---------------------------------------------------------------------------------------


def prompt_context(out: hooks.HookOutput) -> str:
    assert out.exit_code == 0
    if not out.stdout:
        return ""
    data = json.loads(out.stdout)["hookSpecificOutput"]
    assert data["hookEventName"] == "UserPromptSubmit"
    return str(data["additionalContext"])


def ask(repo: Path, prompt: str, settings: Settings, embedder: Any, session_id: str = "s-1") -> str:
    return prompt_context(
        run_hook(
            "user-prompt-submit",
            payload("user-prompt-submit", repo, session_id=session_id, prompt=prompt),
            settings=settings,
            embedder=embedder,
        )
    )


def test_a_prompt_gets_its_relevant_memories_once_per_session(eng: Any, settings: Settings, repo: Path,
                                                               embedder: Any) -> None:  # fmt: skip
    inv = eng.memorize(
        "The billing service stores invoices in PostgreSQL 16; MongoDB was rejected.", source="user"
    ).atom_id
    eng.memorize("Frontend components are written in Solid, not React.", source="user", type="decision")
    eng.memorize("Deploys go out on Tuesdays through `make release`.", source="user")
    ctx = ask(repo, "Where do we store invoices, and in which database?", settings, embedder)
    assert ctx.startswith("[memoryd · acme/widgets] memories relevant to this prompt:")
    assert f"({'fact'}, {inv}) The billing service stores invoices in PostgreSQL 16" in ctx
    assert "Solid" not in ctx  # unrelated memories stay out (prompt_min_score)
    assert ask(repo, "Which database holds the invoices again?", settings, embedder) == ""  # already in context
    assert inv in ask(repo, "Where do we store invoices?", settings, embedder, session_id="s-2")  # a new session
    record = json.loads((settings.home / "sessions" / "s-1.json").read_text(encoding="utf-8"))
    assert record == {"session_id": "s-1", "ids": {inv: "user-prompt-submit"}}


def test_the_prompt_recall_keeps_to_its_token_budget(tmp_path: Path, repo: Path, embedder: Any) -> None:
    from memoryd.shared.injected import estimate_tokens

    settings = Settings(home=tmp_path / "home", prompt_context_tokens=60, prompt_min_score=0.0)
    with open_engine(settings, repo, embedder) as e:
        for i in range(8):
            e.memorize(f"Invoice rule {i}: invoices of region r{i} are stored in the PostgreSQL schema billing_r{i}.",
                       source="user")  # fmt: skip
    ctx = ask(repo, "invoice storage rules per region", settings, embedder)
    assert ctx and estimate_tokens(ctx) <= 60
    first = ctx.count("\n- (")
    more = ask(repo, "invoice storage rules per region", settings, embedder)
    assert more and not set(more.splitlines()[1:]) & set(ctx.splitlines()[1:])  # the next ones, none repeated
    assert first >= 1 and estimate_tokens(more) <= 60
    off = Settings(home=settings.home, prompt_context_tokens=0)
    assert ask(repo, "invoice storage rules per region", off, embedder, session_id="s-off") == ""


def test_token_estimates() -> None:
    from memoryd.shared.injected import estimate_tokens

    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("连线池") == 3 and estimate_tokens("用 PostgreSQL") == 1 + 3


def test_the_prompt_recall_skips_a_sensitive_scope_and_empty_prompts(eng: Any, settings: Settings, repo: Path,
                                                                       embedder: Any) -> None:  # fmt: skip
    eng.memorize("The staging database password rotates every Monday; never paste it into tickets.", source="user")
    eng.mark_sensitive(True)
    assert ask(repo, "when does the staging database password rotate?", settings, embedder) == ""
    eng.grant(30, by="test")
    assert "Monday" in ask(repo, "when does the staging database password rotate?", settings, embedder)
    assert ask(repo, "   ", settings, embedder, session_id="s-9") == ""


def test_what_the_brief_showed_is_not_injected_again_by_a_prompt(eng: Any, settings: Settings, repo: Path,
                                                                  embedder: Any) -> None:  # fmt: skip
    pnpm = eng.memorize("The team prefers pnpm for dependencies; never npm install.", source="user",
                        type="preference").atom_id  # fmt: skip
    ctx = context_of(run_hook("session-start", payload("session-start", repo), settings=settings, embedder=embedder))
    assert "pnpm" in ctx
    assert pnpm not in ask(repo, "Which package manager do we use for dependencies, pnpm or npm?", settings, embedder)
    assert pnpm in ask(repo, "Which package manager do we use, pnpm or npm?", settings, embedder, session_id="s-2")


def test_a_second_pre_tool_use_handler_shares_the_dispatch_and_the_injected_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repo: Path
) -> None:
    """Handlers added to PRE_TOOL_USE (as the file handler is) share the dispatch: own matcher, context,
    claimed ids, the strictest permission decision."""
    settings = Settings(home=tmp_path / "home")

    def file_memories(p: dict[str, Any], way: hooks.Way) -> dict[str, Any] | None:
        ids = ["01ANCHORED0000000000000001", "01ANCHORED0000000000000002"]
        return {"additionalContext": "memories of " + p["tool_input"]["file_path"] + ": " + ", ".join(ids),
                "claim": ids}  # fmt: skip

    def deny_env(p: dict[str, Any], way: hooks.Way) -> dict[str, Any] | None:
        return (
            {"permissionDecision": "deny", "permissionDecisionReason": "no .env"}
            if p["tool_input"]["file_path"].endswith(".env")
            else None
        )

    monkeypatch.setattr(
        pretool,
        "PRE_TOOL_USE",
        [
            *pretool.PRE_TOOL_USE,
            pretool.ToolHandler("stub", lambda t: t == "Read", file_memories),
            pretool.ToolHandler("env", lambda t: t == "Read", deny_env),
        ],
    )

    def read(path: str) -> dict[str, Any]:
        out = run_hook("pre-tool-use", payload("pre-tool-use", repo, tool_name="Read", tool_input={"file_path": path}),
                       settings=settings)  # fmt: skip
        return json.loads(out.stdout)["hookSpecificOutput"] if out.stdout else {}

    got = read(str(repo / "login.py"))
    assert got == {"hookEventName": "PreToolUse", "additionalContext": f"memories of {repo / 'login.py'}: "
                   "01ANCHORED0000000000000001, 01ANCHORED0000000000000002"}  # fmt: skip
    assert read(str(repo / "login.py")) == {}  # the same memories are not injected twice (the hook's record says so)
    assert read(str(repo / ".env"))["permissionDecision"] == "deny"
    # memoryd's own scope handler is untouched by the others
    assert updated_input(pre(repo, "mcp__memoryd__mem_search", {"query": "q"})) == {"query": "q", "scope": "auto"}


# -- pre-tool-use ---------------------------------------------------------------------------------------------


def updated_input(out: hooks.HookOutput, decision: str = "allow") -> dict[str, Any]:
    assert out.exit_code == 0 and out.stdout
    data = json.loads(out.stdout)["hookSpecificOutput"]
    assert data["hookEventName"] == "PreToolUse"
    # Claude Code's documented pairing: a rewrite comes with a decision (the user's deny/ask rules still win,
    # tests/clients/test_claude_code_hooks.py checks both with the real CLI).
    assert data["permissionDecision"] == decision
    assert (
        data["permissionDecisionReason"]
        == "memoryd: scope pinned to acme/widgets (inferred from the working directory)"
    )
    return data["updatedInput"]


def pre(repo: Path, tool: str, tool_input: Any) -> hooks.HookOutput:
    return run_hook("pre-tool-use", payload("pre-tool-use", repo, tool_name=tool, tool_input=tool_input,
                                            tool_use_id="toolu_01ABC"))  # fmt: skip


def test_pre_tool_use_overrides_the_hmg_scope_with_the_inferred_one(repo: Path) -> None:
    from memoryd.shared.scope import infer_scope

    got = updated_input(
        pre(
            repo,
            "mcp__hmg__memory_recall",
            {"query": "数据库", "max_results": 5, "scope": {"tenant_id": "x", "repository": "other"}},
        )
    )
    s = infer_scope(repo)
    assert got == {
        "query": "数据库",
        "max_results": 5,
        "scope": {"tenant_id": s.tenant_id, "workspace": "acme", "repository": "widgets", "branch": "main"},
    }
    assert updated_input(pre(repo, "mcp__hmg__memory_memorize", {"content": "x"}))["scope"]["repository"] == "widgets"
    # already right: the same answer, so approval does not depend on what the agent passed
    assert (
        updated_input(pre(repo, "mcp__hmg__memory_recall", {"query": "q", "scope": got["scope"]}))["scope"]
        == got["scope"]
    )
    # destructive: the person confirms the rewritten input
    assert updated_input(pre(repo, "mcp__hmg__memory_govern", {"target_atom": "a", "action": "seal", "reason": "r"}),
                         "ask")["scope"]["repository"] == "widgets"  # fmt: skip
    assert pre(repo, "mcp__hmg__memory_stats", {}).stdout == ""


def test_pre_tool_use_pins_mem_scopes_to_auto_unless_global(repo: Path) -> None:
    assert (
        updated_input(pre(repo, "mcp__memoryd__mem_save", {"content": "c", "scope": "acme/other"}))["scope"] == "auto"
    )
    assert updated_input(pre(repo, "mcp__memoryd__mem_search", {"query": "q"})) == {"query": "q", "scope": "auto"}
    assert updated_input(pre(repo, "mcp__memoryd__mem_search", {"query": "q", "scope": "global"}))["scope"] == "global"
    assert updated_input(pre(repo, "mcp__memoryd__mem_timeline", {"scope": "auto"})) == {"scope": "auto"}
    # review tools: "global" (every scope) is their default; a scope hash is pinned to this repository
    assert updated_input(pre(repo, "mcp__memoryd__mem_review_pending", {"limit": 5})) == {"limit": 5}
    assert updated_input(pre(repo, "mcp__memoryd__mem_promote", {"promotion_ids": [1], "scope": "ab12cd34ef56ab78"})) \
        == {"promotion_ids": [1], "scope": "auto"}  # fmt: skip
    assert pre(repo, "mcp__memoryd__mem_get", {"memory_id": "x"}).stdout == ""


def test_pre_tool_use_knows_the_plugin_servers_tool_names(repo: Path) -> None:
    """Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>."""
    assert updated_input(pre(repo, "mcp__plugin_memoryd_memoryd__mem_search", {"query": "q", "scope": "acme/x"})) \
        == {"query": "q", "scope": "auto"}  # fmt: skip
    assert pre(repo, "mcp__plugin_memoryd__mem_search", {"query": "q"}).stdout == ""
    assert pre(repo, "mcp__plugin_other_github__mem_search", {"query": "q"}).stdout == ""


@pytest.mark.parametrize(
    "tool", ["Bash", "Edit", "mcp__github__search", "mcp__memoryd", "mcp__memoryd_x__mem_save", ""]
)
def test_pre_tool_use_ignores_other_tools(repo: Path, tool: str) -> None:
    out = pre(repo, tool, {"command": "ls", "scope": "evil"})
    assert out == hooks.HookOutput()


def test_the_scoped_tool_lists_match_the_servers_input_schemas() -> None:
    from memoryd.mcp.app import build_server

    async def scoped(profile: str) -> set[str]:
        mcp = build_server(profile, include_admin=False)
        return {t.name for t in await mcp.list_tools() if "scope" in t.input_schema.get("properties", {})}

    assert asyncio.run(scoped("hmg")) == pretool.HMG_SCOPED
    assert asyncio.run(scoped("memoryd")) == pretool.MEM_SCOPED | pretool.MEM_REVIEW_SCOPED

    async def destructive(profile: str) -> set[str]:
        mcp = build_server(profile, include_admin=True)
        return {t.name for t in await mcp.list_tools() if t.annotations and t.annotations.destructive_hint}

    scoped_all = pretool.HMG_SCOPED | pretool.MEM_SCOPED | pretool.MEM_REVIEW_SCOPED
    assert (
        asyncio.run(destructive("hmg")) | asyncio.run(destructive("memoryd"))
    ) & scoped_all == pretool.DESTRUCTIVE_SCOPED


# -- transcripts -> observations -------------------------------------------------------------------------------


def test_extraction_keeps_statements_and_drops_questions_logs_code_and_briefs() -> None:
    msgs = [
        Message("user", "Can we always use uv here?\nWe always deploy with `make release`, never by hand.", 0),
        Message("user", "Traceback (most recent call last):\nValueError: value must be a string", 1),
        Message("user", "- 决定从 React 切到 Solid，理由是性能+体积 (01JTZ5K8Q2W3E4R5T6Y7V8X9Z0)", 2),
        Message("user", "```\nalways = never()\n```\nok", 3),
        Message("user", "if (x) { always(); } else { never(); } return [a, b];", 4),
        Message(
            "assistant", "I'll always check this first.\nThe root cause was a stale lock file in .git/index.lock.", 5
        ),
        Message("user", "以后都不要直接改 main 分支。这样可以吗？", 6),
    ]
    got = [(c.role, c.text) for c in extract_candidates(msgs)]
    assert got == [
        ("user", "We always deploy with `make release`, never by hand."),
        ("assistant", "The root cause was a stale lock file in .git/index.lock."),
        ("user", "以后都不要直接改 main 分支。"),
    ]


def test_reading_a_transcript_skips_meta_commands_reminders_and_tool_results() -> None:
    chunk = read_transcript(DATA / ZH[0])
    texts = [m.text for m in chunk.messages]
    assert not any("system-reminder" in t or "opened the file" in t for t in texts)
    assert "Report 页面也一起改掉，记住 Report 里的时区必须用 Asia/Shanghai。" in texts
    assert chunk.files == ["/home/dev/widgets/src/utils/date.ts", "/home/dev/widgets/src/components/Calendar.tsx",
                           "/home/dev/widgets/src/pages/Report.tsx"]  # fmt: skip
    assert chunk.end == chunk.size and chunk.bad_lines == 0 and chunk.handoff_tools == 0
    en = read_transcript(DATA / EN[0])
    assert not any(t.startswith(("<command-name>", "<local-command", "Caveat:")) for t in (m.text for m in en.messages))
    assert read_transcript(DATA / TW[0]).handoff_tools == 1


def test_a_transcript_larger_than_one_read_is_finished_in_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eng: Any, settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    from memoryd.engine import observations

    monkeypatch.setattr(observations, "MAX_READ_BYTES", 3000)
    path = transcript(tmp_path, EN)
    run_hook("session-end", payload("session-end", repo, path, EN[1]), settings=settings, embedder=embedder,
             defer=False)  # fmt: skip
    assert eng.observation_state(EN[1])["offset"] == path.stat().st_size
    assert len(eng.review_pending(limit=50)) == 3 and len(eng.store.list_atoms(types=["handoff"], limit=-1)) == 1
    assert log_text(settings).count("more to read") >= 2


def test_a_long_transcript_is_summarised_from_its_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryd.engine import observations

    monkeypatch.setattr(observations, "SUMMARY_WINDOW", 2000)
    path = tmp_path / "long.jsonl"
    rows = [
        {
            "type": "user",
            "message": {"role": "user", "content": "Port the billing job to Rust."},
            "timestamp": "2026-05-01T08:00:00.000Z",
        }
    ]
    rows += [
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Step {i}: moved module billing_{i} and its tests over to the new crate.",
                    },
                    {"type": "tool_use", "id": f"t{i}", "name": "Edit", "input": {"file_path": f"/r/src/b{i}.rs"}},
                ],
            },
            "timestamp": "2026-05-01T09:00:00.000Z",
        }
        for i in range(200)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert path.stat().st_size > 4000
    summary = observations.summarize_transcript(path)
    assert summary.first_request == "Port the billing job to Rust."
    assert summary.last_update.startswith("Step 199:") and summary.started_at == "2026-05-01T08:00:00.000Z"
    assert "/r/src/b0.rs" in summary.files and "/r/src/b199.rs" in summary.files
    assert "/r/src/b100.rs" not in summary.files  # the middle was not read


def test_session_end_holds_every_observation_for_review_and_writes_a_handoff(
    tmp_path: Path, eng: Any, settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    path = transcript(tmp_path, EN)
    out = run_hook("session-end", payload("session-end", repo, path, EN[1], reason="prompt_input_exit"),
                   settings=settings, embedder=embedder, defer=False)  # fmt: skip
    assert out == hooks.HookOutput()
    pending = eng.review_pending(limit=50)
    texts = {a.content for _, a in pending}
    assert texts == {
        "We always run pytest-xdist with `-n auto` in CI, so tests must never share one SQLite file.",
        "prefer the `tmp_path` fixture over tempfile.mkdtemp() — don't use /tmp directly in tests.",
        (
            "The root cause was that every xdist worker shared /tmp/app.db; each test now gets its own database under "
            "`tmp_path`."
        ),
    }
    assert all(p.origin == "observation" and a.status == "pending" and a.source == "transcript" for p, a in pending)
    assert all(eng.path_of(a) is None for _, a in pending)  # no markdown file until promoted
    active = eng.store.list_atoms(statuses=["active"], limit=-1)
    assert [a.type for a in active] == ["handoff"]  # nothing from the transcript went straight to active
    handoff = active[0].content
    assert handoff.startswith("Session summary (from the transcript")
    assert "Task: The login test in tests/test_login.py is flaky" in handoff
    assert "Files changed: conftest.py" in handoff and "All 48 tests pass" in handoff
    assert "Observations held for review: 3" in handoff and EN[1] in handoff and "(2026-05-12)" in handoff
    assert "3 held for review" in log_text(settings)
    assert eng.verify_chain().ok


def test_running_the_hook_twice_for_a_session_adds_nothing(
    tmp_path: Path, eng: Any, settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    path = transcript(tmp_path, EN)
    args = {"settings": settings, "embedder": embedder, "defer": False}
    run_hook("session-end", payload("session-end", repo, path, EN[1]), **args)
    before = snapshot(eng)
    run_hook("session-end", payload("session-end", repo, path, EN[1]), **args)
    run_hook("pre-compact", payload("pre-compact", repo, path, EN[1], trigger="auto"), **args)
    assert snapshot(eng) == before
    # even after a reviewer rejected one (dedup alone would let it back in as a new pending save)
    pid = eng.review_pending(limit=1)[0][0].id
    eng.reject([pid])
    before = snapshot(eng)
    run_hook("session-end", payload("session-end", repo, path, EN[1]), **args)
    assert snapshot(eng) == before
    assert "nothing new since the last run" in log_text(settings)


def test_pre_compact_then_session_end_reads_each_part_once(
    tmp_path: Path, eng: Any, settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    path = transcript(tmp_path, ZH)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "提交信息".encode() in line)
    path.write_bytes(b"".join(lines[:cut]) + lines[cut][:40])  # a line still being written is left alone
    args = {"settings": settings, "embedder": embedder, "defer": False}
    run_hook("pre-compact", payload("pre-compact", repo, path, ZH[1], trigger="auto"), **args)
    first = {a.content for _, a in eng.review_pending(limit=50)}
    assert first == {"帮我把日期处理从 moment.js 换成 dayjs。", "以后都不要再引入 moment，体积太大了。"}
    assert not eng.store.list_atoms(types=["handoff"], limit=-1)  # compaction is not the end of the session
    path.write_bytes(b"".join(lines))
    run_hook("session-end", payload("session-end", repo, path, ZH[1]), **args)
    pending = {a.content for _, a in eng.review_pending(limit=50)}
    assert pending == first | {
        "提交信息统一用中文，格式是 `类型: 描述`。",
        "Report 页面也一起改掉，记住 Report 里的时区必须用 Asia/Shanghai。",
        "结论：dayjs 的 `format` 与 moment 的大部分 token 兼容，但 `Do` 需要 advancedFormat 插件。",
    }
    [handoff] = eng.store.list_atoms(types=["handoff"], limit=-1)
    assert handoff.content.startswith("会话小结（由对话记录整理")
    assert "任务：帮我把日期处理从 moment.js 换成 dayjs。" in handoff.content
    assert "修改的文件：date.ts, Calendar.tsx, Report.tsx" in handoff.content
    assert "待审核的观察：5 条" in handoff.content
    state = eng.observation_state(ZH[1])
    assert state["offset"] == path.stat().st_size and state["handoff_atom_id"] == handoff.id
    assert "moment" not in json.dumps(state, ensure_ascii=False)  # progress only: a tombstone could not reach it
    eng.govern(handoff.id, "tombstone", "test")
    assert all("moment" not in (e.content or "") for e in eng.store.events(f"transcript:{ZH[1]}"))


def test_a_session_that_wrote_its_own_handoff_gets_none_from_the_hook(
    tmp_path: Path, eng: Any, settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    path = transcript(tmp_path, TW)
    run_hook("session-end", payload("session-end", repo, path, TW[1]), settings=settings, embedder=embedder,
             defer=False)  # fmt: skip
    assert not eng.store.list_atoms(types=["handoff"], limit=-1)
    assert {a.content for _, a in eng.review_pending(limit=50)} == {
        "我們決定改用 PostgreSQL 16，不再使用 MySQL。",
        "連線池一律用 pgbouncer 的 transaction 模式。",
    }
    assert "the session wrote its own handoff" in log_text(settings)


def test_a_clear_win_from_a_transcript_still_waits_for_review(
    tmp_path: Path, eng: Any, settings: Settings, repo: Path, embedder: E5Embedder
) -> None:
    text = "Always run `make test` before pushing; CI uses pytest -n auto with pytest-timeout 300 in tests/."
    glob = eng.scope.global_scope()  # a normal save would be stored (elsewhere: here it would be a restatement)
    assert eng.memorize(text, source="user", gate="review", scope=glob).status == "active"
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s-9",
                "message": {"role": "user", "content": text},
                "uuid": "u1",
                "parentUuid": None,
                "timestamp": "2026-05-12T10:00:00.000Z",
            }
        )
        + "\n"
    )
    report = eng.observe_transcript(path, "s-9", final=False)
    assert report.held == 1 and report.candidates[0]["status"] == "pending"
    [(promotion, atom)] = [(p, a) for p, a in eng.review_pending(limit=50) if a.content == text]
    assert promotion.origin == "observation" and promotion.average >= settings.dura_pending_below
    eng.promote([promotion.id])
    assert eng.get(atom.id).status == "active" and eng.path_of(eng.get(atom.id)) is not None


def test_chit_chat_and_questions_in_a_transcript_write_nothing(tmp_path: Path, eng: Any) -> None:
    path = tmp_path / "t.jsonl"
    rows = ["ok always", "thanks, never mind!", "Should we always use uv?", "要不要以后都用 pnpm？", "好的"]
    path.write_text("".join(json.dumps({"type": "user", "message": {"role": "user", "content": t},
                                        "timestamp": "2026-05-12T10:00:00.000Z"}) + "\n" for t in rows))  # fmt: skip
    before = snapshot(eng)
    report = eng.observe_transcript(path, "s-junk", final=False)
    assert report.candidates == [] and report.held == 0
    assert snapshot(eng)[0] == before[0] and not eng.review_pending(limit=10)  # only the progress marker was added


# -- never blocks, never breaks --------------------------------------------------------------------------------


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"cwd": 5}'])
@pytest.mark.parametrize("event", list(hooks.EVENTS))
def test_bad_input_exits_zero_and_is_logged(tmp_path: Path, event: str, stdin: str) -> None:
    settings = Settings(home=tmp_path / "home", embedder="hash")
    out = run_hook(event, stdin, settings=settings, defer=False)
    assert out.exit_code == 0
    if event == "session-start" and stdin in ("", '{"cwd": 5}'):
        assert "additionalContext" in out.stdout  # no usable cwd: the brief of the process's own directory
        return
    assert out.stdout == ""
    if stdin in ("not json", "[1, 2]"):
        assert "bad hook input" in log_text(settings)


def test_unknown_events_and_internal_errors_exit_zero_with_the_error_logged(tmp_path: Path, repo: Path) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("x")
    broken = Settings(home=home)
    assert run_hook("post-tool-use", "{}", settings=broken) == hooks.HookOutput()
    assert run_hook("session-start", payload("session-start", repo), settings=broken) == hooks.HookOutput()
    ok = Settings(home=tmp_path / "home")
    assert run_hook("session-end", payload("session-end", repo, tmp_path / "missing.jsonl"), settings=ok,
                    defer=False) == hooks.HookOutput()  # fmt: skip
    text = log_text(ok)
    assert "no transcript at" in text


def test_a_slow_hook_is_abandoned_within_its_budget(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repo: Path
) -> None:
    monkeypatch.setitem(hooks.BUDGETS, "pre-tool-use", 0.3)
    monkeypatch.setattr(hooks, "dispatch", lambda p, way: time.sleep(5) or ("late", []))
    settings = Settings(home=tmp_path / "home")
    started = time.perf_counter()
    out = run_hook(
        "pre-tool-use", payload("pre-tool-use", repo, tool_name="mcp__hmg__memory_recall"), settings=settings
    )
    assert out == hooks.HookOutput() and time.perf_counter() - started < 2
    assert "gave up after 0.3s" in log_text(settings)


# -- as Claude Code runs them: a subprocess, JSON on stdin ---------------------------------------------------------


def spawn(event: str, stdin: str, home: Path, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORYD_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "memoryd.agents.hooks", *extra, event], input=stdin, capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)  # fmt: skip


def test_hooks_as_subprocesses(tmp_path: Path, repo: Path) -> None:
    home = tmp_path / "home"
    r = spawn("session-start", payload("session-start", repo, source="startup"), home)
    assert r.returncode == 0, r.stderr
    assert "no memories for this project yet" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    r = spawn("pre-tool-use", payload("pre-tool-use", repo, tool_name="mcp__memoryd__mem_save",
                                      tool_input={"content": "c", "scope": "x"}), home, "hook")  # fmt: skip
    assert r.returncode == 0 and json.loads(r.stdout)["hookSpecificOutput"]["updatedInput"]["scope"] == "auto"
    r = spawn("pre-tool-use", "garbage", home)
    assert (r.returncode, r.stdout) == (0, "")


def test_session_end_returns_at_once_and_a_detached_worker_does_the_work(tmp_path: Path, repo: Path) -> None:
    home = tmp_path / "home"
    path = transcript(tmp_path, EN)
    started = time.perf_counter()
    r = spawn("session-end", payload("session-end", repo, path, EN[1], reason="other"), home)
    assert (r.returncode, r.stdout) == (0, "")
    assert time.perf_counter() - started < 1.5  # Claude Code's default SessionEnd budget
    deadline = time.monotonic() + 90
    settings = Settings(home=home, embedder="hash")
    while time.monotonic() < deadline:
        if "held for review" in log_text(settings):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the worker never finished; log: {log_text(settings)!r}")
    with Engine.open(settings, cwd=repo) as e:
        assert len(e.review_pending(limit=50)) == 3
        assert e.observation_state(EN[1])["offset"] == path.stat().st_size


_CLAIMER = """
import sys, time
from memoryd.shared.injected import InjectedRecord
home, who, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
rec = InjectedRecord(home, "race-session")
got = []
for i in range(40):
    got += rec.claim([f"m{i}", f"m{i + 1}"], who)
print(" ".join(got))
"""


def test_hooks_racing_in_one_session_claim_each_memory_exactly_once(tmp_path: Path) -> None:
    """Four processes claim overlapping ids at the same moment through the record's lock: every id is
    handed to exactly one of them, and the record lists each with the process that won it."""
    from memoryd.shared.injected import InjectedRecord

    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIMER, str(tmp_path), f"p{k}", str(start)],
                              stdout=subprocess.PIPE, text=True) for k in range(4)]  # fmt: skip
    won = [p.communicate(timeout=60)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    flat = [i for ids in won for i in ids]
    assert sorted(flat) == sorted({f"m{i}" for i in range(41)}) and len(flat) == 41  # none twice, none lost
    record = InjectedRecord(tmp_path, "race-session")
    assert record.ids() == set(flat)
    assert not list((tmp_path / "sessions").glob("*.tmp"))  # no half-written record left behind


def test_a_claim_waits_for_the_lock_and_gives_up_with_a_clear_error(tmp_path: Path) -> None:
    import fcntl

    from memoryd.shared import injected

    rec = injected.InjectedRecord(tmp_path, "held")
    rec.claim(["a"], "brief")
    with open(str(rec.path) + ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(TimeoutError, match="locked for over 0.2 s"):
            with injected._exclusive(str(rec.path) + ".lock", timeout=0.2):
                pass
    assert rec.claim(["a", "b"], "prompt") == ["b"]  # released: the next claim goes through
