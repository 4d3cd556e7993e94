"""Searched drift verdicts kept on disk, under the state of the working tree they were found in.

Most verdicts cost a stat and a look at the anchor's own file (its symbol table is cached per blob).
The rest search: a symbol that left its file (moved? renamed? gone?) or a file that is gone (renamed?)
are answered from the files changed since the anchor's commit. Those answers depend on the whole
working tree, which `GitRepo.state_token` names (HEAD and the blob of every file that differs from it),
so they are kept in one JSON file per token: the next process (a warm `memoryd stale`, the recalls of
a session, the file hook) with the same tree reads them instead of searching again. A new commit or
edit is a new token; the newest `KEEP` files are kept.
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
_VERSION = 1


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
        return self.directory / f"{token}.json" if self.directory is not None else None

    def _read(self, token: str) -> dict[str, Any]:
        path = self._path(token)
        if path is None:
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
            known = self._known[token] = self._read(token)
        if key not in known:
            return False, None
        value = known[key]
        try:
            return True, (Change(*value) if value is not None else None)
        except TypeError:
            return False, None  # a damaged entry: search again

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
            self.directory.mkdir(parents=True, exist_ok=True)
            for token, entries in new.items():
                merged = {**self._read(token), **entries}
                fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"v": _VERSION, "verdicts": merged}, fh, separators=(",", ":"))
                path = self._path(token)
                assert path is not None
                os.replace(tmp, path)
            files = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
            for old in files[:-KEEP]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache: the next process searches again
