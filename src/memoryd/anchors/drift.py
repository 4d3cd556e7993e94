"""How far the working tree has moved past a memory's anchors.

For each anchor, against the working tree of the repository (what the agent sees, committed or not):

- file anchor: gone and renamed since the anchor's commit (git's rename detection between that
  commit and the working tree, or, for a file edited past git's 50% similarity, the one added file
  defining what it defined: `anchors.renames`) -> `file_renamed` to the new path; gone otherwise ->
  `file_deleted`; different content -> `file_changed`, but only when the memory anchors no symbol
  in that file (its symbol anchors say more precisely what changed);
- symbol anchor: the file's blob unchanged -> unchanged, without parsing; otherwise the definition
  is looked up in the file (followed through a rename): a different fingerprint -> `symbol_changed`;
  not there -> searched in the rest of the repository: found -> `symbol_moved` to that file, else
  `symbol_removed`.

Costs: a stat per anchored file (blob ids are cached by stat), a parse only for files whose blob
differs from the anchor's (cached per blob), a `git diff` per anchor commit only when a file is
missing (and one `git cat-file --batch` when git left it unpaired) and a `git grep` only when a
symbol left its file (all cached per HEAD/index state).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .git import GREP_MAX_FILES, GREP_TTL, GitRepo, _stat_key
from .model import Anchor, Change
from .symbols import LANGUAGES, definition_names, file_table, language_of, parser_available, save

if TYPE_CHECKING:
    from .resolve import Resolver

__all__ = ["DriftChecker", "freshness"]

_MEMO_MAX = 50_000


def freshness(anchors: Sequence[Anchor], changes: Sequence[Change]) -> str | None:
    """ "code_changed", "current", or None for a memory without anchors."""
    if not anchors:
        return None
    return "code_changed" if any(not c.minor for c in changes) else "current"


class DriftChecker:
    """Checks anchors against one working tree; keep one per repository to reuse its caches."""

    def __init__(self, repo: GitRepo, cache_dir: Path | None = None) -> None:
        self.repo = repo
        self.cache_dir = cache_dir
        self._resolver: Resolver | None = None
        self._memo: dict[Any, tuple[Any, ...]] = {}
        self._unsaved: dict[str, Any] = {}
        self._root = str(repo.root)

    @property
    def resolver(self) -> Resolver:
        """Name resolution against this repository (the engine's anchoring; the file hook never needs it)."""
        if self._resolver is None:
            from .resolve import Resolver

            self._resolver = Resolver(self.repo, self.cache_dir)
        return self._resolver

    def check(self, anchors: Sequence[Anchor], stamp: Any = None) -> list[Change]:
        """What changed since each anchor was taken, in anchor order (empty: all current).

        Verdicts are remembered per anchor and reused while its file's stat, the repository stamp
        (pass `stamp()` when checking many memories at once) and any searched answer still hold, so a
        steady working tree costs one stat per anchor.
        """
        stamp = self.repo.stamp() if stamp is None else stamp
        file_paths = {a.path for a in anchors if a.kind == "file"}
        symbol_paths = {a.path for a in anchors if a.kind == "symbol"}
        changes = [c for a in anchors if (c := self._remembered(a, file_paths, symbol_paths, stamp)) is not None]
        for blob, table in self._unsaved.items():  # file versions parsed for this check, saved once each
            save(table, blob, self.cache_dir)
        self._unsaved.clear()
        # A deleted file the memory names explains its symbols being gone: say it once.
        deleted = {c.path for c in changes if c.kind == "file_deleted"}
        return [c for c in changes if not (c.kind == "symbol_removed" and c.path in deleted)]

    def _remembered(self, a: Anchor, file_paths: set[str], symbol_paths: set[str], stamp: Any) -> Change | None:
        key = (a, a.path in file_paths, a.path in symbol_paths)
        st = _stat_key(f"{self._root}/{a.path}")
        bucket = int(time.monotonic() // GREP_TTL)
        hit = self._memo.get(key)
        if hit is not None and hit[0] == st and hit[1] == stamp and hit[3] in (None, bucket):
            change: Change | None = hit[4]
            if change is None or change.to is None or _stat_key(f"{self._root}/{change.to}") == hit[2]:
                return change
        change = self.check_anchor(a, file_paths, symbol_paths)
        searched = change is not None and change.kind in ("symbol_removed", "symbol_moved")
        to_stat = _stat_key(f"{self._root}/{change.to}") if change is not None and change.to else None
        if len(self._memo) > _MEMO_MAX:
            self._memo.clear()
        self._memo[key] = (st, stamp, to_stat, bucket if searched else None, change)
        return change

    def check_anchor(
        self,
        a: Anchor,
        file_paths: set[str] = frozenset(),  # type: ignore[assignment]
        symbol_paths: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> Change | None:
        """The change of one anchor; `file_paths`/`symbol_paths`: the paths of the memory's other anchors."""
        since = a.commit[:7] if a.commit else None
        if a.kind == "file":
            return self._file(a, since, symbol_paths)
        return self._symbol(a, since, file_paths)

    def _renamed(self, a: Anchor) -> str | None:
        """Where the anchor's file went: git's rename detection, else the one added file that defines
        what it defined (`anchors.renames`: a rename edited past git's 50% similarity)."""
        if not a.commit:
            return None
        renames, deleted, _ = self.repo.diff(a.commit)
        to = renames.get(a.path)
        if to is None and a.path in deleted:
            lang = language_of(a.path)
            if lang is not None:
                key = ("paired", a.commit, lang, self.repo.stamp(), int(time.monotonic() // GREP_TTL))
                if key not in self._memo:
                    from .renames import pair_by_names  # only when a file is gone

                    self._memo[key] = (pair_by_names(self.repo, a.commit, lang, self.cache_dir),)
                to = self._memo[key][0].get(a.path)
        return to if to and self.repo.blob(to) is not None else None

    def _file(self, a: Anchor, since: str | None, symbol_paths: set[str]) -> Change | None:
        blob = self.repo.blob(a.path)
        if blob is None:
            to = self._renamed(a)
            if to is not None:
                return Change("file_renamed", a.path, since=since, to=to)
            return Change("file_deleted", a.path, since=since)
        if blob != a.blob and a.path not in symbol_paths:
            return Change("file_changed", a.path, since=since)
        return None

    def _symbol(self, a: Anchor, since: str | None, file_paths: set[str]) -> Change | None:
        path = a.path
        blob = self.repo.blob(path)
        renamed = False
        if blob is None:
            to = self._renamed(a)
            if to is not None:
                path, blob, renamed = to, self.repo.blob(to), True
        if blob is not None:
            if blob == a.blob and not renamed:
                return None
            lang = language_of(path)
            if lang is None or not parser_available(lang):
                # No parser here (the code extra is missing): the file changed, the symbol cannot be told.
                return Change("file_changed", path, since=since) if blob != a.blob else None
            table, _ = file_table(self.repo, path, self.cache_dir)
            if table is None:
                return None  # does not parse (mid-edit): not evidence of a change
            fp = table.fingerprint(a.symbol) if a.symbol in table.defs else None
            if table._dirty:
                self._unsaved[blob] = table
            if fp is not None:
                if fp != a.fingerprint:
                    old = self._old_table(a)
                    aspect = old.aspect(a.symbol, table) if old is not None else None
                    return Change("symbol_changed", path, symbol=a.symbol, since=since, aspect=aspect)
                if table.defs[a.symbol][0] == "class":  # a class is also what its methods do
                    old = self._old_table(a)
                    if old is not None and old.members(a.symbol) != table.members(a.symbol):
                        aspect = old.aspect(a.symbol, table)
                        aspect = aspect if aspect in ("annotation_only", "docstring_only") else "members"
                        return Change("symbol_changed", path, symbol=a.symbol, since=since, aspect=aspect)
                if renamed and a.path not in file_paths:  # the file anchor already reports the rename
                    return Change("symbol_moved", a.path, symbol=a.symbol, since=since, to=path)
                return None
        return self._vanished(a, since, path)

    def _old_table(self, a: Anchor) -> Any:
        """The symbol table of the anchor's file as it was when the anchor was taken (None: unreadable)."""
        if not a.blob:
            return None
        from .symbols import symbol_table

        data = self.repo.read_blob(a.blob)
        return symbol_table(a.path, data, a.blob, self.cache_dir) if data is not None else None

    def _vanished(self, a: Anchor, since: str | None, path: str) -> Change:
        """The symbol is not in its file: moved (same definition elsewhere), renamed (the same body under
        another name, in its file or a changed one), or removed. Never a move to a different definition."""
        old = self._old_table(a)
        body = old.body_fingerprint(a.symbol) if old is not None and a.symbol in old.defs else None
        moved = self._find_elsewhere(a.symbol, exclude=path, fingerprint=a.fingerprint)
        if moved is not None:
            return Change("symbol_moved", a.path, symbol=a.symbol, since=since, to=moved)
        if body is not None and old is not None:
            found = self._same_body(a, body, old, path)
            if found is not None:
                to, name = found
                return Change("symbol_renamed", a.path, symbol=a.symbol, since=since, to=to, new_symbol=name)
        return Change("symbol_removed", a.path, symbol=a.symbol, since=since)

    def _same_body(self, a: Anchor, body: str, old: Any, path: str) -> tuple[str, str] | None:
        """(file, name) of the one definition with the anchor's body under a new name: in its own file
        first, then in the files changed since the anchor's commit (same language, at most 60)."""
        lang = language_of(a.path)
        candidates = [path] if self.repo.blob(path) is not None else []
        if a.commit:
            candidates += [p for p in self.repo.changed_files(a.commit) if p != path and language_of(p) == lang][:60]
        parent = a.symbol.rsplit(".", 1)[0] if "." in a.symbol else ""
        for rel in candidates:
            table, _ = file_table(self.repo, rel, self.cache_dir)
            if table is None:
                continue
            hits = [q for q in table.defs if q not in old.defs or rel != a.path
                    if table.defs[q][0] == old.defs[a.symbol][0] and table.body_fingerprint(q) == body]  # fmt: skip
            if len(hits) > 1 and parent:
                hits = [q for q in hits if q.rsplit(".", 1)[0] == parent] or hits
            if len(hits) == 1:
                return rel, hits[0]
            if hits:
                return None  # the same body twice: not ours to pick
        return None

    def _find_elsewhere(self, symbol: str, exclude: str, fingerprint: str | None = None) -> str | None:
        """The file that now defines `symbol` (the exact qualified name) with the same definition
        (`fingerprint`), if another one does: a different thing of the same name is not a move."""
        key = ("elsewhere", symbol, exclude, fingerprint, self.repo.stamp(), int(time.monotonic() // GREP_TTL))
        if key in self._memo:
            known: str | None = self._memo[key][0]
            return known
        suffixes = tuple(sorted({ext for ext, lang in LANGUAGES.items() if parser_available(lang)}))
        files = [f for f in self.repo.grep_files(symbol.rsplit(".", 1)[-1], suffixes) if f != exclude]
        found = None
        for rel in sorted(files)[:GREP_MAX_FILES]:
            blob = self.repo.blob(rel)
            names = definition_names(rel, blob, lambda r=rel: self.repo.read(r), self.cache_dir) if blob else None
            if names is not None and symbol in names:
                table, _ = file_table(self.repo, rel, self.cache_dir) if fingerprint is not None else (None, None)
                if fingerprint is not None and (table is None or table.fingerprint(symbol) != fingerprint):
                    continue
                found = rel
                break
        self._memo[key] = (found,)
        return found
