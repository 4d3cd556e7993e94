"""What memoryd's hooks already put into one agent session's context, so no memory goes in twice.

Every hook that injects memories (SessionStart's brief, UserPromptSubmit's recall, and any
PreToolUse handler that adds memories, e.g. the ones anchored to a file) leaves out what the record
holds, and records what it adds once the answer is in the hook process's hands (`memoryd.agents.hooks`):
`claim_all(ids)` records them only if none was recorded before, `claim(ids)` records and returns the new
ones, both under a file lock, so two hooks racing in one session never both inject the same memory.

The record is a small JSON file per session, `<MEMORYD_HOME>/sessions/<session id>.json`
(`{"session_id": …, "ids": {"<memory id>": "<hook>", …}}`; a session id with characters outside
`[A-Za-z0-9_.-]` or over 128 long is named by its hash): no database write on the prompt path, and it
works the same whichever store (SQLite or PostgreSQL) holds the memories. Records older than 30 days
are pruned when a new session starts one. This module is standard library only (the claim's lock is
`fcntl.flock`; filelock only where there is no fcntl), so the file hook, which must answer in ~100 ms,
uses it too.

`estimate_tokens` is the one token count the hook budgets use: a CJK character counts as one
token, any other run of text as one token per 4 characters (rounded up), which is about what
Claude's and GPT's tokenizers give for English prose and code and slightly over for Chinese.
memoryd ships no tokenizer model (none may be downloaded at run time), so this is an estimate.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PRUNE_AFTER_DAYS", "InjectedRecord", "estimate_tokens"]

PRUNE_AFTER_DAYS = 30
LOCK_TIMEOUT = 5.0  # seconds a claim waits for another hook of the same session
# CJK punctuation, kana, ideographs, Hangul, compatibility ideographs and full-width forms: one token each.
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_SESSION_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def estimate_tokens(text: str) -> int:
    """Tokens `text` costs in an agent's context (see the module docstring for the rule)."""
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return cjk + -(-other // 4)


def _safe(session_id: str) -> str:
    """The record's file name: the id itself when it is a plain name, else its hash (two ids never share one)."""
    if _SESSION_SAFE.match(session_id) and session_id.strip("."):
        return session_id
    import hashlib

    return "h-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class InjectedRecord:
    """The memories already injected into session `session_id` (see the module docstring)."""

    def __init__(self, home: str | Path, session_id: str) -> None:
        self.dir = Path(home) / "sessions"
        self.session_id = session_id
        self.path = self.dir / f"{_safe(session_id)}.json"

    def ids(self) -> set[str]:
        return set(self._read())

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        ids = data.get("ids") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in ids.items()} if isinstance(ids, dict) else {}

    def claim(self, ids: Sequence[str], by: str) -> list[str]:
        """Record `ids` as injected by hook `by`; returns those that were not injected before, in order."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with _exclusive(str(self.path) + ".lock"):
            known = self._read()
            new = [i for i in dict.fromkeys(ids) if i not in known]
            if not new:
                return []
            self._write({**known, **dict.fromkeys(new, by)}, new=not self.path.exists())
        return new

    def claim_all(self, ids: Sequence[str], by: str) -> bool:
        """Record `ids` as injected by hook `by` if none of them was before (True); else record nothing (False):
        another hook of the session gave some of them first, and the caller asks for its answer again."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with _exclusive(str(self.path) + ".lock"):
            known = self._read()
            if any(i in known for i in ids):
                return False
            self._write({**known, **dict.fromkeys(ids, by)}, new=not self.path.exists())
        return True

    def _write(self, known: dict[str, str], *, new: bool) -> None:
        """The record as `known` (the lock is held)."""
        if new:
            self._prune()
        tmp = self.path.with_name(self.path.name + ".tmp")  # one writer at a time: the lock is held
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"session_id": self.session_id, "ids": known}, fh)
        os.replace(tmp, self.path)

    def _prune(self) -> None:
        cutoff = time.time() - PRUNE_AFTER_DAYS * 86400
        for old in self.dir.glob("*.json*"):
            try:
                if old.stat().st_mtime < cutoff:
                    old.unlink()
            except OSError:
                continue


@contextmanager
def _exclusive(lock_path: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """An exclusive lock on `lock_path` across processes. POSIX: `fcntl.flock` on the file, the lock
    filelock takes there too, without its ~25 ms import on the file hook's path; elsewhere filelock."""
    try:
        import fcntl
    except ImportError:  # Windows
        from filelock import FileLock

        with FileLock(lock_path, timeout=timeout):
            yield
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"injected-memory record {lock_path} locked for over {timeout:g} s") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
