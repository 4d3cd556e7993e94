"""The file hook: memories anchored to a file an agent is about to read or edit (Claude Code PreToolUse).

`Engine.memories_for_path` answers the same question through the engine; this is its fast twin for
a hook process, which must answer in ~100 ms and so reads the store through `storage.light` (no
engine, numpy or pydantic). It leaves out what the session's `memoryd.shared.injected.InjectedRecord`
(shared with the SessionStart brief and the UserPromptSubmit recall) says it was already given, composes
the answer with `anchors.filectx.compose`, and `hook_output` claims what it adds once printed. This is the
`file` handler of `pretool.PRE_TOOL_USE`.

Settings come from the environment as `Settings` reads them: `MEMORYD_HOME`, `MEMORYD_DB`,
`MEMORYD_ANCHORS`, `MEMORYD_FILE_CONTEXT_TOKENS` (tests/test_anchors.py checks they agree).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..anchors.git import GitRepo
from ..shared.injected import InjectedRecord
from .hookenv import FILE_TOOLS, FILE_TOOLS_MATCHER, target_of

if TYPE_CHECKING:
    from ..anchors.filectx import Composed

__all__ = ["FILE_TOOLS", "FILE_TOOLS_MATCHER", "file_context", "hook_output", "settings_from_env", "target_of"]

DEFAULT_BUDGET = 600


def hook_output(payload: dict[str, Any], home: Path | None = None) -> str:
    """The PreToolUse hook's stdout for a file tool: additionalContext, or nothing."""
    import json

    from ..shared.home import data_home

    home = home or data_home()
    out = file_context(payload, home)
    session = payload.get("session_id")
    if out is not None and isinstance(session, str) and session:  # printed right below: recorded as given
        if not InjectedRecord(home, session).claim_all(out.included, "pre-tool-use:file"):
            return ""
    if out is None:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": out.text}},
                      ensure_ascii=False)  # fmt: skip


def settings_from_env(home: Path) -> tuple[str | None, bool, int]:
    """(database URL, anchors on, token budget), read like `Settings` reads them."""
    db = os.environ.get("MEMORYD_DB") or None
    anchors = os.environ.get("MEMORYD_ANCHORS", "1").strip().lower() not in ("0", "false", "no", "off")
    try:
        budget = int(os.environ.get("MEMORYD_FILE_CONTEXT_TOKENS", DEFAULT_BUDGET))
    except ValueError:
        budget = DEFAULT_BUDGET
    return db, anchors, min(max(budget, 50), 20_000)


def file_context(payload: dict[str, Any], home: Path) -> Composed | None:
    """The context for a file tool call, or None when there is nothing (new) to add. What the session was given
    already is left out; recording what this adds is the caller's, once it has the answer (`agents.hooks`)."""
    target = target_of(payload)
    if target is None:
        return None
    db, enabled, budget = settings_from_env(home)
    if not enabled:
        return None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    start = Path(target)
    repo = GitRepo.find(start.parent if start.parent.is_dir() else (cwd or os.getcwd()))
    rel = repo.relpath(str(start)) if repo is not None else None
    if repo is None or rel is None:
        return None
    from ..shared.scope import repository_scope_hash
    from ..storage.light import open_reader

    reader = open_reader(home, db)
    if reader is None:
        return None
    try:
        scope_hash = repository_scope_hash(repo.root, repo.origin_url() or "")
        if reader.locked(scope_hash):
            return None  # a sensitive scope without a grant shows nothing, as every agent read
        rows = reader.anchored([scope_hash], rel)
        session = payload.get("session_id")
        record = InjectedRecord(home, session) if isinstance(session, str) and session else None
        seen = record.ids() if record is not None else set()
        rows = [r for r in rows if r[0] not in seen]
        if not rows:
            return None
        anchors = reader.anchors_of([r[0] for r in rows])
    finally:
        reader.close()
    from ..anchors.drift import DriftChecker  # only when something is anchored here: parsers load lazily
    from ..anchors.filectx import FileMemory, compose

    checker = DriftChecker(repo, home / "cache" / "symbols", home / "cache" / "drift")  # the engine's caches
    checked = checker.check_all([anchors.get(i, []) for i, _, _ in rows])
    memories = [
        FileMemory(i, t, c, anchors.get(i, []), changes) for (i, t, c), changes in zip(rows, checked, strict=True)
    ]
    out = compose(rel, memories, budget)
    return out if out.included else None
