"""How far the working tree has moved past a memory's anchors.

For each anchor, against the working tree of the repository (what the agent sees, committed or not):

- file anchor: gone and renamed since the anchor's commit (git's rename detection between that
  commit and the working tree, or, for a file edited past git's 50% similarity, the one added file
  defining what it defined: `anchors.renames`) -> `file_renamed` to the new path; gone otherwise ->
  `file_deleted`; different content -> `file_changed`, but only when the memory anchors no symbol
  in that file (its symbol anchors say more precisely what changed);
- symbol anchor: the file's blob unchanged -> unchanged, without parsing; otherwise the definition
  is looked up in the file (followed through a rename): a different fingerprint -> `symbol_changed`
  with the aspect that changed (a class: also when a member's signature changed, `members`); not
  there -> searched among the files changed since the anchor's commit (`anchors.moves`): moved,
  renamed, or removed.

Costs: a stat per anchored file (blob ids are cached by stat); symbol tables and their forms once
per file version, kept on disk (`anchors.symbols`), the anchors' old versions read with one `git
cat-file --batch`; a search (a symbol or file gone) once per working-tree state, its verdict kept
on disk under that state (`anchors.verdicts`), so a second process with the same tree, a warm
`memoryd stale` or the next session's recalls, searches nothing.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .git import GREP_TTL, GitRepo, _stat_key
from .model import Anchor, Change
from .moves import vanished
from .symbols import (
    CACHE_VERSION,
    LANGUAGES,
    SymbolTable,
    cached_table,
    file_table,
    language_of,
    parser_available,
    save_dirty,
    stored_table,
)
from .verdicts import Verdicts, anchor_key

if TYPE_CHECKING:
    from .resolve import Resolver

__all__ = ["SAVE_EVERY", "DriftChecker", "freshness"]

_MEMO_MAX = 50_000
SAVE_EVERY = 10.0  # seconds between saves of what recall checks learnt (`check_all(save=False)`)


_unsaved: weakref.WeakSet[DriftChecker] = weakref.WeakSet()  # checkers with something left to save


@atexit.register
def _save_at_exit() -> None:
    for checker in list(_unsaved):
        home = checker.cache_dir.parent.parent if checker.cache_dir is not None else None
        if home is None or home.exists():  # not into a data home removed meanwhile (a test's)
            checker.flush()


def freshness(anchors: Sequence[Anchor], changes: Sequence[Change]) -> str | None:
    """ "code_changed", "current", or None for a memory without anchors."""
    if not anchors:
        return None
    return "code_changed" if any(not c.minor for c in changes) else "current"


class DriftChecker:
    """Checks anchors against one working tree; keep one per repository to reuse its caches.

    `cache_dir` holds symbol tables per blob, `verdict_dir` searched verdicts per working-tree state
    (both optional: without them the caches live as long as this checker).
    """

    def __init__(self, repo: GitRepo, cache_dir: Path | None = None, verdict_dir: Path | None = None) -> None:
        self.repo = repo
        self.cache_dir = cache_dir
        self.verdicts = Verdicts(verdict_dir)
        self._resolver: Resolver | None = None
        self._memo: dict[Any, tuple[Any, ...]] = {}
        self._root = str(repo.root)
        self._lock = threading.RLock()
        self._batch: Sequence[Sequence[Anchor]] = ()
        self._old_blobs: dict[str, bytes] | None = None
        self._fetched_cached = False
        self._searched_now = False  # whether the verdict being made searched the repository
        self._pure = True  # whether it follows from the anchor and its file's blob alone
        self._saved = -SAVE_EVERY  # when learnt tables and verdicts were last saved (monotonic)
        self._suffixes: tuple[str, ...] | None = None  # of the languages with a parser: loaded when a search needs them

    @property
    def resolver(self) -> Resolver:
        """Name resolution against this repository (the engine's anchoring; the file hook never needs it)."""
        if self._resolver is None:
            from .resolve import Resolver

            self._resolver = Resolver(self.repo, self.cache_dir)
        return self._resolver

    def check(self, anchors: Sequence[Anchor], stamp: Any = None) -> list[Change]:
        """What changed since each anchor was taken, in anchor order (empty: all current)."""
        return self.check_all([anchors], stamp)[0]

    def check_all(self, groups: Sequence[Sequence[Anchor]], stamp: Any = None, *,
                  save: bool = True) -> list[list[Change]]:  # fmt: skip
        """`check` for the anchors of many memories at once (one memory's anchors per group), then what
        was learnt (tables, verdicts) is saved: at once with `save`, else at most every `SAVE_EVERY`
        seconds (recall checks a few memories at a time: a table rewritten on every recall costs more
        than the check), and when the process exits.

        Verdicts are remembered per anchor and reused while its file's stat, the repository stamp
        (HEAD and the index) and, for a searched answer, GREP_TTL still hold, so a steady working
        tree costs one stat per anchor.
        """
        with self._lock:
            stamp = self.repo.stamp() if stamp is None else stamp
            self._batch, self._old_blobs, self._fetched_cached = groups, None, False
            try:
                return [self._group(anchors, stamp) for anchors in groups]
            finally:
                self._batch, self._old_blobs = (), None
                if save or time.monotonic() - self._saved >= SAVE_EVERY:
                    self.flush()
                else:
                    _unsaved.add(self)

    def flush(self) -> None:
        """Save the symbol tables and verdicts learnt since the last flush."""
        self._saved = time.monotonic()
        _unsaved.discard(self)
        save_dirty()
        self.verdicts.flush()

    def _group(self, anchors: Sequence[Anchor], stamp: Any) -> list[Change]:
        file_paths = {a.path for a in anchors if a.kind == "file"}
        symbol_paths = {a.path for a in anchors if a.kind == "symbol"}
        changes = [c for a in anchors if (c := self._remembered(a, file_paths, symbol_paths, stamp)) is not None]
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
        change = self._decide(a, file_paths, symbol_paths)
        to_stat = _stat_key(f"{self._root}/{change.to}") if change is not None and change.to else None
        if len(self._memo) > _MEMO_MAX:
            self._memo.clear()
        self._memo[key] = (st, stamp, to_stat, bucket if self._searched_now else None, change)
        return change

    def _decide(self, a: Anchor, file_paths: set[str], symbol_paths: set[str]) -> Change | None:
        """`check_anchor`, or the verdict kept for this anchor and its file's blob (`anchors.verdicts`):
        a symbol anchor whose file changed and whose symbol is still there is decided by that blob alone."""
        self._searched_now, self._pure = False, True
        blob = self.repo.blob(a.path) if a.kind == "symbol" else None
        if blob is None or blob == a.blob:
            return self.check_anchor(a, file_paths, symbol_paths)
        key = anchor_key(a, a.path in file_paths, blob, CACHE_VERSION)
        known, change = self.verdicts.get_file(a.path, key)
        if known:
            return change
        change = self.check_anchor(a, file_paths, symbol_paths)
        if self._pure and not self._searched_now:
            self.verdicts.put_file(a.path, key, change)
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

    def _searched(self, a: Anchor, extra: tuple[Any, ...], compute: Callable[[], Change | None]) -> Change | None:
        """A verdict that searched the repository: kept per working-tree state, on disk."""
        self._searched_now = True
        if self._suffixes is None:
            self._suffixes = tuple(sorted(ext for ext, lang in LANGUAGES.items() if parser_available(lang)))
        token = self.repo.state_token(self._suffixes)
        if token is None:
            return compute()
        key = anchor_key(a, *extra)
        known, change = self.verdicts.get(token, key)
        if not known:
            change = compute()
            self.verdicts.put(token, key, change)
        return change

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

    def _gone(self, a: Anchor, since: str | None) -> Change | None:
        """What became of the anchor's file, which is not there: renamed (followed) or deleted."""

        def follow() -> Change:
            to = self._renamed(a)
            if to is not None:
                return Change("file_renamed", a.path, since=since, to=to)
            return Change("file_deleted", a.path, since=since)

        return self._searched(a._replace(symbol="", kind="file", fingerprint=None), ("file",), follow)

    def _file(self, a: Anchor, since: str | None, symbol_paths: set[str]) -> Change | None:
        blob = self.repo.blob(a.path)
        if blob is None:
            return self._gone(a, since)
        if blob != a.blob and a.path not in symbol_paths:
            return Change("file_changed", a.path, since=since)
        return None

    def _symbol(self, a: Anchor, since: str | None, file_paths: set[str]) -> Change | None:
        blob = self.repo.blob(a.path)
        if blob is not None and blob == a.blob:
            return None
        if blob is not None:
            return self._in_file(a, since, file_paths, a.path, blob, renamed=False)

        gone = self._gone(a, since)  # the file is gone: followed through a rename, else searched
        to = gone.to if gone is not None and gone.kind == "file_renamed" else None
        to_blob = self.repo.blob(to) if to is not None else None
        if to is not None and to_blob is not None:
            return self._in_file(a, since, file_paths, to, to_blob, renamed=True)
        return self._searched(a, ("gone", a.path in file_paths),
                              lambda: vanished(self.repo, self.cache_dir, a, self._old_table(a), a.path, since))  # fmt: skip

    def _in_file(self, a: Anchor, since: str | None, file_paths: set[str], path: str, blob: str,
                 renamed: bool) -> Change | None:  # fmt: skip
        """The anchor's symbol looked up in file `path` (its own, or where its file was renamed to)."""
        lang = language_of(path)
        if lang is None or not parser_available(lang):
            # No parser here (the code extra is missing): the file changed, the symbol cannot be told.
            self._pure = False  # another process may have the parser: not kept
            return Change("file_changed", path, since=since) if blob != a.blob else None
        table, _ = file_table(self.repo, path, self.cache_dir)
        if table is None:
            return None  # does not parse (mid-edit): not evidence of a change
        if a.symbol not in table.defs:

            def search() -> Change:
                return vanished(self.repo, self.cache_dir, a, self._old_table(a), path, since)

            return self._searched(a, ("vanished", path, blob), search)
        kept = self._old_table(a, parse=False)  # what the anchor's version left in the cache, if anything
        text = kept.known(a.symbol, "text") if kept is not None else None
        # The same text is the same definition; a class's too, with its members, unless they live outside it
        # (Go methods, Rust impl blocks).
        outside = table.defs[a.symbol][0] == "class" and table.lang in ("go", "rust")
        if text is None or text != table.text(a.symbol) or outside:
            change = self._compare(a, since, path, table, kept)
            if change is not None:
                return change
        if renamed and a.path not in file_paths:  # the file anchor already reports the rename
            return Change("symbol_moved", a.path, symbol=a.symbol, since=since, to=path)
        return None

    def _compare(self, a: Anchor, since: str | None, path: str, table: SymbolTable,
                 old: SymbolTable | None) -> Change | None:  # fmt: skip
        """The change of the anchor's definition to its version in `table` (`old`: the anchor's own version,
        when the cache had it)."""
        if old is not None and a.symbol in old.defs:  # kept at write: compare forms (no fingerprint walk first)
            aspect: str | None = old.aspect(a.symbol, table)
        elif table.fingerprint(a.symbol) != a.fingerprint:
            old = self._old_table(a)
            aspect = old.aspect(a.symbol, table) if old is not None and a.symbol in old.defs else None
        else:
            aspect = "same"
        if aspect != "same":  # "same" also when only the fingerprint's format differs (another Python's ast)
            return Change("symbol_changed", path, symbol=a.symbol, since=since, aspect=aspect)
        if table.defs[a.symbol][0] == "class":  # a class is also its members' signatures
            old = old or self._old_table(a)
            aspect = old.interface_change(a.symbol, table) if old is not None and a.symbol in old.defs else None
            if aspect is not None:
                return Change("symbol_changed", path, symbol=a.symbol, since=since, aspect=aspect)
        return None

    def _old_table(self, a: Anchor, *, parse: bool = True) -> SymbolTable | None:
        """The symbol table of the anchor's file as it was when the anchor was taken (None: unreadable).
        The old versions this check needs and no cache holds are read with one `git cat-file --batch`."""
        if not a.blob:
            return None
        blob = a.blob

        def read() -> bytes | None:
            if self._old_blobs is None:
                self._old_blobs = self._prefetch(cached=False)
            data = self._old_blobs.get(blob)
            if data is None and not self._fetched_cached:  # a cached version asked for its source (a search)
                self._fetched_cached = True
                self._old_blobs.update(self._prefetch(cached=True))
                data = self._old_blobs.get(blob)
            return data if data is not None else self.repo.read_blob(blob)

        return stored_table(a.path, blob, self.cache_dir, read, parse=parse)

    def _prefetch(self, *, cached: bool) -> dict[str, bytes]:
        """The old versions of the anchors in this check whose file changed: those no cache holds (`cached`
        False: their tables will be parsed), or those it does (their source is wanted by a search)."""
        want = set()
        for anchors in self._batch:
            for a in anchors:
                if a.kind != "symbol" or not a.blob or a.blob in want or self.repo.blob(a.path) == a.blob:
                    continue
                known = cached_table(a.path, a.blob, self.cache_dir) is not None or (
                    self.cache_dir is not None and os.path.exists(self.cache_dir / a.blob[:2] / f"{a.blob}.json")
                )
                if known == cached:
                    want.add(a.blob)
        return self.repo.read_blobs(sorted(want))
