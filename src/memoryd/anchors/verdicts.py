"""Drift verdicts kept on disk, so that the next process (a warm `memoryd stale`, the recalls of a
session, the file hook) reads them instead of working them out again.

Two kinds, by what decides them:

- a symbol still in its file: its verdict follows from the anchor and the file's blob alone, so it is
  kept per anchored path (one small file per path under `files/`, the verdicts of its recent blobs);
- a search (a symbol that left its file: moved? renamed? gone?; a file that is gone: renamed?): its
  verdict depends on the whole working tree, which `GitRepo.state_token` names (HEAD and the blob of
  every file that differs from it), so it is kept in one file per token; a new commit or edit is a new
  token, and the newest `KEEP` of those files are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .model import Anchor, Change

__all__ = ["KEEP", "Verdicts", "anchor_key"]

KEEP = 32
_VERSION = 2  # bump when a verdict would come out differently for the same key
_IN_MEMORY = 8  # states whose verdicts a process keeps in memory
_PER_FILE = 4000  # verdicts kept per anchored path (the oldest go first)
_FILES_IN_MEMORY = 2048  # anchored paths whose verdicts a process keeps in memory


def anchor_key(a: Anchor, *extra: Any) -> str:
    """A short stable key for an anchor as it was taken (not its line or origin) and what else decides."""
    raw = "\x1f".join(str(x) for x in (a.path, a.symbol, a.kind, a.commit, a.blob, a.fingerprint, *extra))
    return hashlib.sha1(raw.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()[:24]


class Verdicts:
    """Verdicts by (state token, anchor key); `flush` writes what is new (merged with what another
    process wrote meanwhile, atomically). Without a directory it remembers for this process only."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._known: dict[str, dict[str, Any]] = {}
        self._new: dict[str, dict[str, Any]] = {}

    def _path(self, token: str) -> Path | None:
        if self.directory is None:
            return None
        if token.startswith("file:"):  # a path's own verdicts
            name = hashlib.sha1(token.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()[:24]
            return self.directory / "files" / f"{name}.json"
        return self.directory / f"state-{token}.json"

    def _read(self, token: str) -> dict[str, Any]:
        path = self._path(token)
        if path is None or not path.exists():
            return {}
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("v") != _VERSION or not isinstance(data.get("verdicts"), dict):
            return {}
        verdicts: dict[str, Any] = data["verdicts"]
        return verdicts

    def get(self, token: str, key: str) -> tuple[bool, Change | None]:
        """(known, the change or None for "current")."""
        known = self._known.get(token)
        if known is None:
            # a long-lived daemon sees many states and paths: keep the latest
            limit = _IN_MEMORY if not token.startswith("file:") else _FILES_IN_MEMORY
            same = [t for t in self._known if t.startswith("file:") == token.startswith("file:")]
            for old in same[: max(0, len(same) - limit + 1)]:
                self._known.pop(old)
            known = self._known[token] = self._read(token)
        if key not in known:
            return False, None
        value = known[key]
        try:
            return True, (Change(*value) if value is not None else None)
        except TypeError:
            return False, None  # a damaged entry: search again

    def get_file(self, path: str, key: str) -> tuple[bool, Change | None]:
        """A verdict kept for anchored file `path` (`key` names the anchor and the file's blob)."""
        return self.get(f"file:{path}", key)

    def put_file(self, path: str, key: str, change: Change | None) -> None:
        self.put(f"file:{path}", key, change)

    def put(self, token: str, key: str, change: Change | None) -> None:
        value = list(change) if change is not None else None
        self._known.setdefault(token, {})[key] = value
        self._new.setdefault(token, {})[key] = value

    def flush(self) -> None:
        new, self._new = self._new, {}
        if self.directory is None or not new:
            return
        import tempfile

        try:
            for token, entries in new.items():
                path = self._path(token)
                assert path is not None
                path.parent.mkdir(parents=True, exist_ok=True)
                merged = {**self._read(token), **entries}
                if len(merged) > _PER_FILE:
                    merged = dict(list(merged.items())[-_PER_FILE:])
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"v": _VERSION, "verdicts": merged}, fh, separators=(",", ":"))
                os.replace(tmp, path)
            states = sorted(self.directory.glob("state-*.json"), key=lambda p: p.stat().st_mtime)
            for old in states[:-KEEP]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache: the next process searches again
