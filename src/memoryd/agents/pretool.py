"""The PreToolUse dispatch: every handler in `PRE_TOOL_USE` whose matcher takes the tool runs, and their
answers merge into one `hookSpecificOutput` (see `ToolHandler`). memoryd's handlers: `scope` pins the scope
of its scoped memory tools to the one inferred from `cwd`; `file` adds the memories anchored to a file that
Claude Code's file tools touch (`memoryd.agents.filehook`, no engine). The hook's module docstring
(`memoryd.agents.hooks`) says what each answer means to Claude Code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .hookenv import data_home, payload_cwd

if TYPE_CHECKING:
    from ..shared.config import Settings

__all__ = ["DESTRUCTIVE_SCOPED", "HMG_SCOPED", "MEM_REVIEW_SCOPED", "MEM_SCOPED", "PRE_TOOL_USE", "SERVERS",
           "ToolHandler", "dispatch"]  # fmt: skip

HMG_SCOPED = frozenset({"memory_memorize", "memory_recall", "memory_correct", "memory_govern", "memory_handoff"})
MEM_SCOPED = frozenset({"mem_save", "mem_search", "mem_timeline", "mem_session_start", "mem_capture_passive",
                        "mem_request_sensitive_read"})  # fmt: skip
MEM_REVIEW_SCOPED = frozenset({"mem_review_pending", "mem_promote"})  # "global" = every scope (their default)
DESTRUCTIVE_SCOPED = frozenset({"memory_govern"})  # destructiveHint: the person confirms (permissionDecision "ask")
SERVERS = ("memoryd", "hmg")


class ToolHandler(NamedTuple):
    """One PreToolUse handler. `matches(tool_name)` picks the calls it sees; `run(payload, settings)`
    returns `hookSpecificOutput` fields (`updatedInput`, `permissionDecision`,
    `permissionDecisionReason`, `additionalContext`) or None.

    Handlers run in `PRE_TOOL_USE` order; a later one sees the `tool_input` an earlier one updated.
    Their answers merge: the last `updatedInput`, the strictest `permissionDecision` (deny > ask >
    allow), every `additionalContext` joined. A handler that injects memories claims them in the
    session's `InjectedRecord` first (see `_claim`), as the prompt recall does.
    """

    name: str
    matches: Callable[[str], bool]
    run: Callable[[dict[str, Any], Settings | None], dict[str, Any] | None]


def _split_tool(tool_name: str) -> tuple[str, str] | None:
    """(server, tool) of one of memoryd's tools: `mcp__<server>__<tool>`, or `mcp__plugin_<plugin>_<server>__<tool>`
    for the server of a Claude Code plugin (memoryd's plugin: `mcp__plugin_memoryd_memoryd__mem_save`)."""
    if not tool_name.startswith("mcp__"):
        return None
    server, sep, tool = tool_name[len("mcp__") :].partition("__")
    if server.startswith("plugin_"):
        server = next((s for s in SERVERS if server.endswith(f"_{s}") and len(server) > len(f"plugin__{s}")), "")
    if not sep or server not in SERVERS:
        return None
    return server, tool


def _is_scoped_memory_tool(tool_name: str) -> bool:
    parts = _split_tool(tool_name)
    return parts is not None and parts[1] in HMG_SCOPED | MEM_SCOPED | MEM_REVIEW_SCOPED


def _pin_scope(payload: dict[str, Any], settings: Settings | None) -> dict[str, Any] | None:
    """memoryd's scoped tools: the scope inferred from `cwd` replaces what the agent passed."""
    parts = _split_tool(str(payload.get("tool_name") or ""))
    if parts is None:
        return None
    _, tool = parts
    given = payload.get("tool_input")
    tool_input: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    updated = dict(tool_input)
    from ..shared.scope import infer_scope

    s = infer_scope(payload_cwd(payload))
    if tool in HMG_SCOPED:
        updated["scope"] = {"tenant_id": s.tenant_id, "workspace": s.workspace, "repository": s.repository,
                            "branch": s.branch}  # fmt: skip
    elif tool in MEM_SCOPED:
        updated["scope"] = "global" if tool_input.get("scope") == "global" else "auto"
    elif tool in MEM_REVIEW_SCOPED:
        if "scope" in tool_input and tool_input["scope"] not in ("global", "auto"):
            updated["scope"] = "auto"  # a scope hash would name another repository
    else:
        return None
    decision = "ask" if tool in DESTRUCTIVE_SCOPED else "allow"
    return {"updatedInput": updated, "permissionDecision": decision,
            "permissionDecisionReason": f"memoryd: scope pinned to {s.name} (inferred from the working directory)"}  # fmt: skip


def _is_file_tool(tool_name: str) -> bool:
    if tool_name.startswith("mcp__"):
        return False  # an MCP tool's hook does not pay for importing the file hook
    from .filehook import FILE_TOOLS  # light: no engine, numpy or pydantic

    return tool_name in FILE_TOOLS


def _file_context(payload: dict[str, Any], settings: Settings | None) -> dict[str, Any] | None:
    """Claude Code's file tools: the memories anchored to the file (`memoryd.agents.filehook`, no engine)."""
    from .filehook import file_context

    out = file_context(payload, data_home(settings))
    return {"additionalContext": out.text} if out is not None else None


# The PreToolUse handlers, in order, each with its own matcher; `memoryd install` (and plugin/hooks/hooks.json)
# register one hook entry per matcher: the profile's memory tools, and filehook.FILE_TOOLS_MATCHER.
PRE_TOOL_USE: list[ToolHandler] = [
    ToolHandler("scope", _is_scoped_memory_tool, _pin_scope),
    ToolHandler("file", _is_file_tool, _file_context),
]
_STRICTNESS = {"deny": 3, "ask": 2, "allow": 1}


def dispatch(payload: dict[str, Any], settings: Settings | None = None) -> str:
    tool = str(payload.get("tool_name") or "")
    merged: dict[str, Any] = {}
    contexts: list[str] = []
    for handler in PRE_TOOL_USE:
        if not handler.matches(tool):
            continue
        out = handler.run(payload, settings)
        if not out:
            continue
        if "updatedInput" in out:
            merged["updatedInput"] = out["updatedInput"]
            payload = {**payload, "tool_input": out["updatedInput"]}
        decision = out.get("permissionDecision")
        if decision in _STRICTNESS and _STRICTNESS[decision] >= _STRICTNESS.get(
            merged.get("permissionDecision", ""), 0
        ):
            merged["permissionDecision"] = decision
            if out.get("permissionDecisionReason"):
                merged["permissionDecisionReason"] = out["permissionDecisionReason"]
        if out.get("additionalContext"):
            contexts.append(out["additionalContext"])
    if contexts:
        merged["additionalContext"] = "\n\n".join(contexts)
    if not merged:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **merged}}, ensure_ascii=False)
