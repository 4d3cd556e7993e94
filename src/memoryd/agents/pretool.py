"""The PreToolUse dispatch: every handler in `PRE_TOOL_USE` whose matcher takes the tool runs, and their
answers merge into one `hookSpecificOutput` (see `ToolHandler`). memoryd's handlers: `scope` pins the scope
of its scoped memory tools to the one inferred from `cwd`; `file` adds the memories anchored to a file that
Claude Code's file tools touch. Each asks the daemon when the hook has one (`/v1/scope`, `/v1/context`), else
works here without the engine (`shared.scope`, `memoryd.agents.filehook`). The hook's module docstring
(`memoryd.agents.hooks`) says what each answer means to Claude Code.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # not `typing`'s: its import costs a hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

    from .hooks import Way

__all__ = ["DESTRUCTIVE_SCOPED", "HMG_SCOPED", "MEM_REVIEW_SCOPED", "MEM_SCOPED", "PRE_TOOL_USE", "SERVERS",
           "ToolHandler", "dispatch"]  # fmt: skip

HMG_SCOPED = frozenset({"memory_memorize", "memory_recall", "memory_correct", "memory_govern", "memory_handoff"})
MEM_SCOPED = frozenset({"mem_save", "mem_search", "mem_timeline", "mem_session_start", "mem_capture_passive",
                        "mem_request_sensitive_read"})  # fmt: skip
MEM_REVIEW_SCOPED = frozenset({"mem_review_pending", "mem_promote"})  # "global" = every scope (their default)
DESTRUCTIVE_SCOPED = frozenset({"memory_govern"})  # destructiveHint: the person confirms (permissionDecision "ask")
SERVERS = ("memoryd", "hmg")


ToolHandler = namedtuple("ToolHandler", ["name", "matches", "run"])  # noqa: PYI024 - no typing import
ToolHandler.__doc__ = """One PreToolUse handler. `matches(tool_name)` picks the calls it sees; `run(payload, way)` (`way`:
the hook's `memoryd.agents.hooks.Way`) returns `hookSpecificOutput` fields (`updatedInput`, `permissionDecision`,
`permissionDecisionReason`, `additionalContext`) and `claim` (the ids of the memories its context adds), or None.

Handlers run in `PRE_TOOL_USE` order; a later one sees the `tool_input` an earlier one updated. Their answers
merge: the last `updatedInput`, the strictest `permissionDecision` (deny > ask > allow), every
`additionalContext` joined. The memories they add are recorded as given by the hook once it has the answer
(`memoryd.agents.hooks`), all or none, as the prompt recall's are."""


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


def _scope(way: Way) -> dict[str, Any]:
    """The scope of the hook's directory: the daemon's (`/v1/scope`, inferred and cached there), else inferred here."""
    answer = way.ask("scope", {}, fallback=False) if way.client is not None else None
    if isinstance(answer, dict):
        return answer
    from ..shared.scope import infer_scope

    s = infer_scope(way.cwd)
    return {"tenant_id": s.tenant_id, "workspace": s.workspace, "repository": s.repository, "branch": s.branch,
            "name": s.name}  # fmt: skip


def _pin_scope(payload: dict[str, Any], way: Way) -> dict[str, Any] | None:
    """memoryd's scoped tools: the scope inferred from `cwd` replaces what the agent passed."""
    parts = _split_tool(str(payload.get("tool_name") or ""))
    if parts is None:
        return None
    _, tool = parts
    given = payload.get("tool_input")
    tool_input: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    updated = dict(tool_input)
    s = _scope(way)
    if tool in HMG_SCOPED:
        updated["scope"] = {k: s[k] for k in ("tenant_id", "workspace", "repository", "branch")}
    elif tool in MEM_SCOPED:
        updated["scope"] = "global" if tool_input.get("scope") == "global" else "auto"
    elif tool in MEM_REVIEW_SCOPED:
        if "scope" in tool_input and tool_input["scope"] not in ("global", "auto"):
            updated["scope"] = "auto"  # a scope hash would name another repository
    else:
        return None
    decision = "ask" if tool in DESTRUCTIVE_SCOPED else "allow"
    return {"updatedInput": updated, "permissionDecision": decision,
            "permissionDecisionReason": f"memoryd: scope pinned to {s['name']} (inferred from the working directory)"}  # fmt: skip


def _is_file_tool(tool_name: str) -> bool:
    if tool_name.startswith("mcp__"):
        return False  # an MCP tool's hook does not pay for importing the file hook
    from .hookenv import FILE_TOOLS

    return tool_name in FILE_TOOLS


def _file_context(payload: dict[str, Any], way: Way) -> dict[str, Any] | None:
    """Claude Code's file tools: the memories anchored to the file, those the session was not given yet: the
    daemon's (`/v1/context`, `Engine.memories_for_path`), else its fast twin here (`memoryd.agents.filehook`)."""
    from .hookenv import target_of

    if way.client is not None:
        target = target_of(payload)
        session = payload.get("session_id")
        body = {
            "path": target,
            "record": False,
            **({"session": session} if isinstance(session, str) and session else {}),
        }
        answer = way.ask("context", body, fallback=False) if target is not None else None
        if isinstance(answer, dict):
            text = answer.get("text")
            return {"additionalContext": text, "claim": [i["id"] for i in answer.get("items", [])]} if text else None
        if way.client is not None:  # the daemon failed or took too long: nothing this time
            return None
    from .filehook import file_context  # no engine: the store read directly, the anchors' own checks

    out = file_context(payload, way.home())
    return {"additionalContext": out.text, "claim": list(out.included)} if out is not None else None


# The PreToolUse handlers, in order, each with its own matcher; `memoryd install` (and plugin/hooks/hooks.json)
# register one hook entry per matcher: the profile's memory tools, and filehook.FILE_TOOLS_MATCHER.
PRE_TOOL_USE: list[ToolHandler] = [
    ToolHandler("scope", _is_scoped_memory_tool, _pin_scope),
    ToolHandler("file", _is_file_tool, _file_context),
]
_STRICTNESS = {"deny": 3, "ask": 2, "allow": 1}


def dispatch(payload: dict[str, Any], way: Way) -> tuple[dict[str, Any], list[tuple[str, list[str]]]]:
    """The handlers' merged `hookSpecificOutput` fields but `additionalContext`, and each context they add with
    the ids of its memories (the hook records those once it has the answer, and leaves out a context whose
    memories another hook of the session gave first)."""
    tool = str(payload.get("tool_name") or "")
    merged: dict[str, Any] = {}
    contexts: list[tuple[str, list[str]]] = []
    for handler in PRE_TOOL_USE:
        if not handler.matches(tool):
            continue
        out = handler.run(payload, way)
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
            contexts.append((out["additionalContext"], list(out.get("claim", []))))
    return merged, contexts
