"""Renames git's rename detection misses: a file moved and heavily edited in the same change.

git pairs a deleted file with an added one when their lines are ≥ 50% similar. A file renamed and
then rewritten in half its lines falls below that and shows up as one deletion and one addition. The
names a source file defines survive such edits far better than its lines do, so the files git left
unpaired are paired here by the definitions they share:

- names: the qualified names of the functions, classes and methods a file defines (Python: read from
  its `def`/`class` lines and their indentation, so a file that does not parse mid-edit still has
  them; other languages: the tree-sitter table, which tolerates errors);
- a deleted file D (its version at the anchor's commit) and an added file A (in the working tree), of
  the same language, qualify when they share at least `MIN_SHARED` names and those are at least
  half of all the names either defines (Jaccard ≥ `MIN_JACCARD`);
- D is renamed to A only when A is the one added file that qualifies for D and D the one deleted file
  that qualifies for A; anything ambiguous stays a deletion (a wrong rename misleads more than a
  deletion does).

Bounded: at most `MAX_FILES` deleted and added files of the language are considered (a bigger change
pairs nothing), read with one `git cat-file --batch`.
"""

from __future__ import annotations

import re
from pathlib import Path

from .git import GitRepo, blob_id
from .symbols import definition_names, language_of, parser_available

__all__ = ["MAX_FILES", "MIN_JACCARD", "MIN_SHARED", "defined_names", "pair_by_names", "qualifies"]

MIN_SHARED = 3
MIN_JACCARD = 0.5
MAX_FILES = 300

_PY_DEF = re.compile(rb"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def _python_names(source: bytes) -> frozenset[str]:
    names: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, qualified name) of the enclosing definitions
    for m in _PY_DEF.finditer(source):
        indent = len(m.group(1).expandtabs(8))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        own = m.group(2).decode("ascii")
        name = f"{stack[-1][1]}.{own}" if stack else own
        names.add(name)
        stack.append((indent, name))
    return frozenset(names)


def defined_names(path: str, data: bytes, cache_dir: Path | None = None) -> frozenset[str]:
    """The qualified names a file version defines, as rename evidence (empty: none, or no parser)."""
    lang = language_of(path)
    if lang == "python":
        return _python_names(data)
    if lang is None or not parser_available(lang):
        return frozenset()
    return definition_names(path, blob_id(data), lambda: data, cache_dir) or frozenset()


def qualifies(old: frozenset[str], new: frozenset[str]) -> bool:
    shared = len(old & new)
    return shared >= MIN_SHARED and shared >= MIN_JACCARD * len(old | new)


def pair_by_names(repo: GitRepo, commit: str, lang: str, cache_dir: Path | None = None) -> dict[str, str]:
    """Deleted -> added files of language `lang` between `commit` and the working tree that git did not
    pair and that are each other's only match by the names they define."""
    _, deleted, added = repo.diff(commit)
    gone = [p for p in deleted if language_of(p) == lang and "\n" not in p]
    new = [p for p in added if language_of(p) == lang and repo.blob(p) is not None]
    if not gone or not new or len(gone) > MAX_FILES or len(new) > MAX_FILES:
        return {}
    new_names: dict[str, frozenset[str]] = {}
    for p in new:
        data = repo.read(p)
        if data is not None:
            new_names[p] = defined_names(p, data, cache_dir)
    old_names = {p: defined_names(p, data, cache_dir) for p, data in repo.show_many(commit, gone).items()}
    matches: dict[str, list[str]] = {}  # deleted -> qualifying added
    back: dict[str, list[str]] = {}  # added -> qualifying deleted
    for d, dn in old_names.items():
        if len(dn) < MIN_SHARED:
            continue
        for a, an in new_names.items():
            if qualifies(dn, an):
                matches.setdefault(d, []).append(a)
                back.setdefault(a, []).append(d)
    return {d: a[0] for d, a in matches.items() if len(a) == 1 and len(back[a[0]]) == 1}
