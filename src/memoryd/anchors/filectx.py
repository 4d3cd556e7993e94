"""The memories anchored to one file, as context for an agent about to read or edit it.

Used by `Engine.memories_for_path` and by the Claude Code PreToolUse hook on file tools (which
cannot afford to import the engine). Memories are listed newest first, each with its freshness,
until the token budget is spent; the header reports the tokens used. Tokens are estimated, not
counted with a model's tokenizer (none ships offline): one per CJK character, one per four other
characters, rounded up.

`InjectedRecord` is the file hook's memory of what it already added in a Claude Code session
(`<home>/hooks/injected/<session id>.txt`, one atom id per line, appended), so a memory is shown
once per session however often its file is opened.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple
from pathlib import Path

from .model import Anchor, Change  # noqa: F401 - Change is used in annotations

__all__ = ["FileMemory", "InjectedRecord", "compose", "estimate_tokens"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_MAX_MEMORY_CHARS = 400
_SESSION_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def estimate_tokens(text: str) -> int:
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


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


class InjectedRecord:
    """Atom ids already added to one agent session's context (append-only file)."""

    def __init__(self, home: Path, session_id: str) -> None:
        name = session_id if _SESSION_SAFE.match(session_id or "") else hashlib.sha256(
            (session_id or "").encode("utf-8", "surrogatepass")).hexdigest()[:32]  # fmt: skip
        self.path = home / "hooks" / "injected" / f"{name}.txt"

    def ids(self) -> set[str]:
        try:
            return set(self.path.read_text("utf-8").split())
        except OSError:
            return set()

    def add(self, atom_ids: Iterable[str]) -> None:
        ids = list(atom_ids)
        if not ids:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One O_APPEND write per call: concurrent hooks of one session do not interleave lines.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, ("\n".join(ids) + "\n").encode())
        finally:
            os.close(fd)
