"""The memories anchored to one file, as context for an agent about to read or edit it.

Used by `Engine.memories_for_path` and by the Claude Code PreToolUse hook on file tools (which
cannot afford to import the engine). Memories are listed newest first, each with its freshness,
until the token budget is spent; the header reports the tokens used (`memoryd.shared.injected.estimate_tokens`,
the one estimate every hook budget uses). What a session was already given is not composed again:
both callers ask the session's `memoryd.shared.injected.InjectedRecord`, which every injecting hook shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..shared.injected import InjectedRecord, estimate_tokens
from .model import Anchor, Change  # noqa: F401 - Change is used in annotations

__all__ = ["CLAIMED_BY", "Composed", "FileMemory", "compose", "compose_once"]

_MAX_MEMORY_CHARS = 400
CLAIMED_BY = "pre-tool-use:file"  # how the session's injected record names this context's memories


class FileMemory(NamedTuple):
    atom_id: str
    type: str
    content: str
    anchors: list[Anchor]
    changes: list[Change]


class Composed(NamedTuple):
    text: str
    included: list[str]
    tokens: int
    left_out: int


def _line(m: FileMemory) -> str:
    text = " ".join(m.content.split())
    if len(text) > _MAX_MEMORY_CHARS:
        text = text[: _MAX_MEMORY_CHARS - 1] + "…"
    line = f"- [{m.type} {m.atom_id}] {text}"
    if m.changes:
        what = "; ".join(c.detail for c in m.changes[:3])
        line += f"\n  ⚠ code changed: {what}. Check before relying on it; when it still holds, confirm it (memory_correct confirm_actual)."
    return line


def compose(rel: str, memories: Sequence[FileMemory], budget_tokens: int) -> Composed:
    """The context text for `rel`: as many memories (in the given order) as fit in the budget."""
    lines: list[str] = []
    included: list[str] = []
    used = 0
    for m in memories:
        line = _line(m)
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            if not included and budget_tokens > 20:  # the first one, cut to fit, beats nothing
                room = max(0, (budget_tokens - 16) * 2)
                line = line[:room] + "…"
                cost = estimate_tokens(line) + 1
            else:
                break
        lines.append(line)
        included.append(m.atom_id)
        used += cost
    if not included:
        return Composed("", [], 0, len(memories))
    left = len(memories) - len(included)
    more = f"; {left} more: mem_search / memory_recall with path={rel!r}" if left else ""
    head = f"[memoryd · {len(included)} memor{'y' if len(included) == 1 else 'ies'} anchored to {rel}"
    body = "\n".join(lines)
    tokens = used + estimate_tokens(head) + 12
    text = f"{head} · ~{tokens} tokens{more}]\n{body}"
    return Composed(text, included, estimate_tokens(text), left)


def compose_once(rel: str, memories: Sequence[FileMemory], budget_tokens: int,
                 record: InjectedRecord | None) -> Composed:  # fmt: skip
    """`compose`, then claim what it included in the session's record (`memories` already leaves out what
    the record held). A memory another hook of the session claimed in between is dropped and the rest
    composed again, so no memory reaches one session twice whichever hooks race."""
    out = compose(rel, memories, budget_tokens)
    if record is None or not out.included:
        return out
    fresh = set(record.claim(out.included, CLAIMED_BY))
    if len(fresh) == len(out.included):
        return out
    return compose(rel, [m for m in memories if m.atom_id in fresh], budget_tokens)
