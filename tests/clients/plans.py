"""One representative call per tool of each surface, with what its result must show; shared by the clients.

A step is (tool, arguments, captures, check): a string argument "$name" is the value an earlier step
captured (`captures` maps a name to a field of that step's structured content); `check` is asserted
on the structured content. Every plan runs against a fresh MEMORYD_HOME and a git checkout with the
remote acme/widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Step:
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    capture: dict[str, str] = field(default_factory=dict)
    check: Check = lambda r: True  # noqa: E731
    error: str | None = None  # the tool must fail with a text containing this

    def as_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": self.args, "capture": self.capture}


HMG = [
    Step("memory_memorize", {"content": "本專案用 PostgreSQL 16 做主資料庫，不用 MongoDB，因為需要事務和複雜查詢", "source": "user"},
         {"a1": "atom_id"}, lambda r: r["effect"] == "applied"),
    Step("memory_recall", {"query": "PostgreSQL 連線池配置"}, {},
         lambda r: "PostgreSQL 16" in r["atoms"][0]["content"]),
    Step("memory_correct", {"target_atom": "$a1", "action": "replace", "reason": "v3 已遷移",
                            "new_content": "主資料庫用 PostgreSQL 16，替換原 MongoDB 方案"},
         {"a2": "new_atom_id"}, lambda r: r["effect"] == "applied" and bool(r["new_atom_id"])),
    Step("memory_govern", {"target_atom": "$a2", "action": "derive_lesson", "reason": "原文包含洩露的 API key",
                           "lesson_content": "不要在程式碼或記憶中硬編碼 API key，使用環境變數"}, {},
         lambda r: r["effect"] == "applied" and bool(r["lesson_atom_id"])),
    Step("memory_handoff", {"summary": "修復了 login.py 的空指標問題，下一步：補整合測試。", "source": "agent"}, {},
         lambda r: r["effect"] == "applied"),
    Step("memory_stats", {}, {}, lambda r: r["atoms"] >= 3 and "snapshot_version" in r),
]  # fmt: skip

MEM_AGENT = [
    Step("mem_save", {"content": "We decided to move the frontend from React to Solid for bundle size and speed",
                      "type": "decision", "tags": ["frontend"], "triggers": ["solid", "react"]},
         {"m1": "memory_id"}, lambda r: r["status"] == "saved" and r["path"].endswith(".md")),
    Step("mem_save", {"content": "The frontend build uses Vite 6 with the Solid plugin", "type": "fact"},
         {"m2": "memory_id"}, lambda r: r["status"] == "saved"),
    Step("mem_get", {"memory_id": "$m1"}, {}, lambda r: r["type"] == "decision" and "Solid" in r["body"]),
    Step("mem_update", {"memory_id": "$m1", "tags": ["frontend", "perf"]}, {},
         lambda r: r["status"] == "updated" and r["updated_fields"] == ["tags"]),
    Step("mem_search", {"query": "why Solid instead of React", "types": ["decision"]}, {},
         lambda r: bool(r["results"]) and "Solid" in r["results"][0]["content_preview"]),
    Step("mem_context", {"memory_id": "$m1", "neighbors": 2}, {}, lambda r: "Solid" in r["anchor"]["content_preview"]),
    Step("mem_timeline", {"since": "2w"}, {}, lambda r: len(r["memories"]) == 2),
    Step("mem_session_start", {"source": "claude-code", "title": "fix the login bug"}, {"s1": "session_id"},
         lambda r: bool(r["session_id"])),
    Step("mem_session_end", {"session_id": "$s1", "summary": "fixed the null session in login.py"}, {},
         lambda r: r["status"] == "closed"),
    Step("mem_session_summary", {"session_id": "$s1"}, {}, lambda r: "fixed the null session" in r["body"]),
    Step("mem_capture_passive", {"content": "The user prefers answers in Chinese with an English summary",
                                 "source": "openclaw", "type": "preference"}, {}, lambda r: r["status"] == "saved"),
    Step("mem_judge", {"new_text": "The frontend no longer uses Solid, we switched back to React", "old_memory_id": "$m1"},
         {}, lambda r: r["source"] == "heuristic" and r["judgment"]["type"] in {"supersedes", "contradicts"}),
    Step("mem_compare", {"memory_id_a": "$m1", "memory_id_b": "$m2"}, {},
         lambda r: r["band"] in {"auto", "review", "ignore"} and bool(r["diff_lines"])),
    Step("mem_save", {"content": "I am now looking at the file"}, {"p1": "promotion_id"},
         lambda r: r["status"] == "pending"),
    Step("mem_save", {"content": "I am now looking at the other file"}, {"p2": "promotion_id"},
         lambda r: r["status"] == "pending"),
    Step("mem_review_pending", {"limit": 10}, {}, lambda r: r["count"] == 2),
    Step("mem_promote", {"promotion_ids": ["$p1"]}, {}, lambda r: len(r["promoted"]) == 1 and r["skipped"] == []),
    Step("mem_reject", {"promotion_ids": ["$p2"]}, {}, lambda r: len(r["rejected"]) == 1 and r["skipped"] == []),
    Step("mem_request_sensitive_read", {"reason": "need the payroll schedule to fix a cron bug"}, {},
         lambda r: r["status"] == "not_needed" and "not sensitive" in r["message"]),
    Step("mem_delete", {"memory_id": "$m2"}, {}, lambda r: r["deleted"] is True),
]  # fmt: skip

MEM_ADMIN = [
    Step("mem_current_project", {}, {"scope": "scope_hash"}, lambda r: r["scope_name"] == "acme/widgets"),
    Step("mem_stats", {}, {}, lambda r: r["total"] >= 1 and "by_type" in r),
    Step("mem_merge_projects", {"scope_a": "$scope", "scope_b": "$scope"}, error="invalid_input: scope_a and scope_b are the same scope"),
    Step("mem_save", {"content": "Prefer small pull requests with one topic each", "type": "preference",
                      "scope": "global"}, {"g1": "memory_id"}, lambda r: r["status"] == "saved"),
    Step("mem_get", {"memory_id": "$g1"}, {"global": "scope_hash"}, lambda r: r["scope_hash"] != ""),
    Step("mem_merge_projects", {"scope_a": "$scope", "scope_b": "$global", "dry_run": True}, {},
         lambda r: r["dry_run"] is True and r["would_move"] == 1),
    Step("mem_doctor", {}, {}, lambda r: "data_root" in r and "index_db" in r),
    Step("mem_save_prompt", {"name": "dura-extract", "content": "Score DURA for: {text}"}, {},
         lambda r: r["name"] == "dura-extract" and r["path"].endswith("dura-extract.md")),
    Step("mem_suggest_topic_key", {"content": "React → Solid switch for the frontend"}, {},
         lambda r: bool(r["topic_key"]) and r["source"] == "heuristic"),
]  # fmt: skip

SURFACES = {  # name: (memoryd-mcp arguments, plan)
    "hmg": (["--profile", "hmg"], HMG),
    "memoryd": ([], MEM_AGENT),
    "memoryd-admin": (["--admin"], MEM_AGENT + MEM_ADMIN),
}


def verify(plan: list[Step], results: list[tuple[bool, dict[str, Any] | None, str]]) -> None:
    """Each (is_error, structured content, text) against its step: success and check, or the expected error."""
    assert len(results) == len(plan)
    for i, (step, (is_error, data, text)) in enumerate(zip(plan, results, strict=True)):
        where = f"step {i} {step.tool}: {text[:500]}"
        if step.error is not None:
            assert is_error and step.error in text, where
            continue
        assert not is_error and data is not None, where
        assert step.check(data), where
