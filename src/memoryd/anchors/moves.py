"""Where a definition went when it is no longer in its file: moved, renamed, or gone.

Only files that changed since the anchor's commit can hold it now (`git diff --name-only` against the
working tree, plus untracked files): those are the candidates, of the anchor's language. In order:

1. moved: a candidate defines the same qualified name with the same fingerprint (the same definition,
   anywhere in the repository; the one in the anchor's package when several do);
2. renamed: the same body under another name (`forms` "body"), new in its own file or in a changed
   file that holds a line of the old body; one such definition, or one in the same class;
3. moved and edited: one candidate in the same package (directory) as the anchor's file and of its kind
   (test or not), or one test file for a test, defines the same name, same kind, with a body at least
   `SIMILAR` alike
   (difflib over its tokens): a test moved from one `_test.go` file to another, a helper moved
   within a package, both edited on the way. A different definition of the name in another kind
   of file (a stub in a test for a library function) or a body that has little in common is not;
4. otherwise removed.

Cost: the candidates' bytes are searched for the name (or a line of the body) before any is parsed;
tables and forms come from the per-blob cache, so a search costs parsing only the versions no
process parsed before. Verdicts are kept per working-tree state (`anchors.verdicts`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .model import Anchor, Change
from .symbols import LANGUAGES, SymbolTable, file_table, language_of

if TYPE_CHECKING:
    from .git import GitRepo

__all__ = ["MAX_CANDIDATES", "SIMILAR", "candidates", "is_test", "same_package", "vanished"]

SIMILAR = 0.5
MAX_CANDIDATES = 3000  # changed files read for one search (a change bigger than this is searched in part)
_MARKERS = 3  # lines of the old body looked for in candidate files
_MARKER_MIN = 16  # characters a marker line has at least (shorter lines are too common)
_TEST = re.compile(r"(^|/)(tests?|testing|__tests__|spec)/|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+"
                   r"|conftest\.py)$")  # fmt: skip


def is_test(path: str) -> bool:
    return _TEST.search(path) is not None


def same_package(a: str, b: str) -> bool:
    """Two files of one package (one directory) and one kind (both tests or neither), or two test files:
    where a definition moves and stays itself (a library function does not become a test's stub)."""
    if is_test(a) != is_test(b):
        return False
    return is_test(a) or a.rpartition("/")[0] == b.rpartition("/")[0]


def candidates(repo: GitRepo, a: Anchor, exclude: str) -> list[str]:
    """Files of the anchor's language that changed since its commit (and untracked ones), but `exclude`."""
    lang = language_of(a.path)
    suffixes = tuple(sorted(ext for ext, lg in LANGUAGES.items() if lg == lang))
    files = set(repo.changed_files(a.commit)) if a.commit else set()
    files.update(repo.untracked(suffixes))
    return sorted(f for f in files if f != exclude and language_of(f) == lang)[:MAX_CANDIDATES]


def _has_word(data: bytes, word: bytes) -> bool:
    """Whether `word` stands in `data` as a whole word (a plain search first: most files do not hold it)."""
    i = data.find(word)
    while i >= 0:
        end = i + len(word)
        if (i == 0 or data[i - 1 : i] not in _WORDISH) and (end == len(data) or data[end : end + 1] not in _WORDISH):
            return True
        i = data.find(word, i + 1)
    return False


_WORDISH = frozenset(bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def _similar(old: SymbolTable, new: SymbolTable, name: str) -> bool:
    import difflib  # here: the file hook imports this module and rarely searches

    a, b = old.body_tokens(name), new.body_tokens(name)
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return m.quick_ratio() >= SIMILAR and m.ratio() >= SIMILAR


def _markers(old: SymbolTable, name: str) -> list[bytes]:
    """The longest lines of the old definition after its first (looked for verbatim in candidates)."""
    if not old._source and old._read is not None:
        old._source = old._read() or b""  # kept: the next marker of this version reads no blob again
    source = old._source
    _, first, last = old.defs[name]
    lines = {x.strip() for x in source.splitlines()[first : last]}  # fmt: skip
    return sorted((x for x in lines if len(x) >= _MARKER_MIN), key=len, reverse=True)[:_MARKERS]


def _marked(data: bytes, markers: list[bytes], most: int = 16) -> list[int]:
    """The lines (1-based) where `data` holds one of the markers (each place: a body copied elsewhere in
    the file must not hide the renamed one)."""
    lines: list[int] = []
    for m in markers:
        i = data.find(m)
        while i >= 0 and len(lines) < most * len(markers):
            lines.append(data.count(b"\n", 0, i) + 1)
            i = data.find(m, i + 1)
    return lines


def vanished(repo: GitRepo, cache_dir: Path | None, a: Anchor, old: SymbolTable | None, path: str,
             since: str | None) -> Change:  # fmt: skip
    """The change of symbol anchor `a` that is not in its file (`path`, the file's current path)."""
    kind = old.defs[a.symbol][0] if old is not None and a.symbol in old.defs else None
    files = candidates(repo, a, path)
    parts = [p.encode() for p in a.symbol.split(".")]
    markers = _markers(old, a.symbol) if old is not None and kind is not None else []
    defining: list[tuple[str, SymbolTable]] = []
    bodies: list[tuple[str, SymbolTable, list[int]]] = []  # files holding a line of the old body, and where
    for rel in files:
        data = repo.read(rel)
        if data is None:
            continue
        named = all(_has_word(data, p) for p in parts)
        at = _marked(data, markers)
        if not named and not at:
            continue
        table, _ = file_table(repo, rel, cache_dir)
        if table is None:
            continue
        if named and a.symbol in table.defs and (kind is None or table.defs[a.symbol][0] == kind):
            defining.append((rel, table))
        if at:
            bodies.append((rel, table, at))
    exact = [rel for rel, t in defining if t.fingerprint(a.symbol) == a.fingerprint]
    if len(exact) > 1:
        exact = [rel for rel in exact if same_package(a.path, rel)]
    if len(exact) == 1:
        return Change("symbol_moved", a.path, symbol=a.symbol, since=since, to=exact[0])
    if old is None or kind is None:
        return Change("symbol_removed", a.path, symbol=a.symbol, since=since)
    renamed = _renamed(repo, cache_dir, a, old, kind, path, bodies)
    if renamed is not None:
        return Change("symbol_renamed", a.path, symbol=a.symbol, since=since, to=renamed[0], new_symbol=renamed[1])
    near = [(rel, t) for rel, t in defining if same_package(a.path, rel) and _similar(old, t, a.symbol)]
    if len(near) == 1:
        rel, t = near[0]
        aspect = old.aspect(a.symbol, t)
        return Change("symbol_moved", a.path, symbol=a.symbol, since=since, to=rel,
                      aspect=None if aspect == "same" else aspect)  # fmt: skip
    return Change("symbol_removed", a.path, symbol=a.symbol, since=since)


def _renamed(repo: GitRepo, cache_dir: Path | None, a: Anchor, old: SymbolTable, kind: str, path: str,
             bodies: list[tuple[str, SymbolTable, list[int]]]) -> tuple[str, str] | None:  # fmt: skip
    """(file, name) of the one definition with the anchor's body under a new name: new in its own file,
    else in a changed file holding a line of the old body (only the definitions around that line)."""
    body = old.form(a.symbol, "body")
    if body is None:
        return None
    parent = a.symbol.rsplit(".", 1)[0] if "." in a.symbol else ""
    own, _ = file_table(repo, path, cache_dir)
    places: list[tuple[str, SymbolTable, list[str]]] = []
    if own is not None:  # new in its own file; around a line of the old body when it has such lines
        lines = _marked(repo.read(path) or b"", _markers(old, a.symbol))
        places.append((path, own, [q for q, (_, first, last) in own.defs.items()
                                   if (q not in old.defs or path != a.path)
                                   and (not lines or any(first <= n <= last for n in lines))]))  # fmt: skip
    for rel, table, lines in bodies:
        around = [q for q, (_, first, last) in table.defs.items() if any(first <= n <= last for n in lines)]
        places.append((rel, table, around))
    for rel, table, names in places:
        hits = [q for q in names if table.defs[q][0] == kind and table.form(q, "body") == body]
        if len(hits) > 1 and parent:
            hits = [q for q in hits if q.rsplit(".", 1)[0] == parent] or hits
        if len(hits) == 1:
            return rel, hits[0]
        if hits:
            return None  # the same body twice: not ours to pick
    return None
