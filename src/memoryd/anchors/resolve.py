"""Which files and symbols a memory names, found in the working tree and fingerprinted.

Automatic anchors come from the memory's text:
- every file entity (`login.py`, `src/app/main.ts`) that is a path of the repository, or the one
  tracked file whose path ends with it (a name several files share is skipped as ambiguous);
- every function entity (`get_session()`, `Table.insert_all`) and every backticked identifier
  (`` `Database` ``) defined in one of those files; a function entity defined in no named file is
  looked up in the whole repository (a word search, then the parser), and anchored only when exactly
  one definition matches. Backticked plain words are never searched repository-wide.

Explicit anchors (`anchors` on save) are `path`, `path::Symbol.name` or a bare symbol; each must
resolve, or the save fails with a message saying which one and why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .git import GREP_MAX_FILES, GitRepo
from .model import Anchor
from .symbols import LANGUAGES, file_table, language_of, parser_available

__all__ = ["AnchorError", "Resolver", "parse_ref"]

_AUTO_LIMIT = 12  # automatic anchors per memory (a long text naming many files keeps the first ones)
_AUTO_SEARCH_FILES = 15  # an automatic repository-wide lookup gives up on names in more files than this
_BACKTICK = re.compile(r"`([A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*)(?:\(\))?`")
_RECEIVERS = ("self.", "this.", "cls.", "super().")
# Suffixes that make a bare anchor a file name rather than a dotted symbol (`db.py`, not `Table.insert`).
_FILE_SUFFIXES = frozenset(
    "py pyi js mjs cjs jsx ts tsx go rs java kt rb php c h cc cpp hpp cs swift md rst txt json yml yaml toml "
    "ini cfg sql sh html css lock".split()
)
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$")


class AnchorError(ValueError):
    """An explicit anchor that does not resolve; the message says which and why."""


def parse_ref(ref: str) -> tuple[str, str]:
    """`path::Symbol` -> (path, symbol); `path` -> (path, ""); `::Symbol` -> ("", symbol)."""
    path, sep, symbol = ref.partition("::")
    return path.strip(), _norm_symbol(symbol) if sep else ""


def _norm_symbol(name: str) -> str:
    name = name.strip().removesuffix("()").replace("::", ".").replace("#", ".")
    for prefix in _RECEIVERS:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


@dataclass
class Resolver:
    """Resolves names against one repository; `cache_dir` holds parsed symbol tables."""

    repo: GitRepo
    cache_dir: Path | None = None

    # -- files -------------------------------------------------------------------------------

    def find_file(self, name: str) -> tuple[str | None, list[str]]:
        """(the repository path `name` means, or None; the candidates when it is ambiguous)."""
        name = name.strip()
        if not name or name.startswith("~"):
            return None, []
        rel = self.repo.relpath(name)
        if rel is not None and self.repo.abspath(rel).is_file():
            return rel, []
        if name.startswith("/"):
            return None, []
        clean = name.removeprefix("./")
        tracked = self.repo.tracked().get(clean.rsplit("/", 1)[-1], [])
        matches = [p for p in tracked if p == clean or p.endswith("/" + clean)]
        if len(matches) == 1 and self.repo.abspath(matches[0]).is_file():
            return matches[0], []
        return None, sorted(matches)

    def file_anchor(self, rel: str, *, commit: str | None, origin: str) -> Anchor | None:
        blob = self.repo.blob(rel)
        if blob is None:
            return None
        return Anchor(path=rel, kind="file", lang=language_of(rel), commit=commit, blob=blob, origin=origin)

    # -- symbols -----------------------------------------------------------------------------

    def table(self, rel: str):
        """(symbol table of the working-tree file, its blob id); (None, blob or None) when unreadable."""
        return file_table(self.repo, rel, self.cache_dir)

    def symbol_in(self, rel: str, name: str, *, commit: str | None, origin: str) -> list[Anchor]:
        """Anchors for the definitions of `name` in file `rel` (several when the name is ambiguous there)."""
        table, blob = self.table(rel)
        if table is None:
            return []
        found = []
        for q in table.find(name):
            kind, line, _ = table.defs[q]
            found.append(Anchor(path=rel, symbol=q, kind="symbol", lang=table.lang, commit=commit, blob=blob,
                                fingerprint=table.fingerprint(q), line=line, origin=origin))  # fmt: skip
        # Not written to the disk cache here: a file version anchored now is the anchor's own blob, which
        # a drift check never needs to parse; drift checks save the versions they do parse.
        return found

    def search(self, name: str, *, commit: str | None, origin: str, exclude: Iterable[str] = (),
               max_files: int = GREP_MAX_FILES) -> list[Anchor]:  # fmt: skip
        """Definitions of `name` anywhere in the repository (tracked or untracked code files)."""
        last = name.rsplit(".", 1)[-1]
        suffixes = tuple(sorted({ext for ext, lang in LANGUAGES.items() if parser_available(lang)}))
        files = [f for f in self.repo.grep_files(last, suffixes) if f not in set(exclude)]
        if len(files) > max_files:
            return []  # a word this common is not a name we can pin down
        out: list[Anchor] = []
        for rel in files:
            out += self.symbol_in(rel, name, commit=commit, origin=origin)
        return out

    # -- memories ----------------------------------------------------------------------------

    def auto(self, text: str, entity_ids: Sequence[str]) -> list[Anchor]:
        """The anchors a memory's text implies (unresolvable or ambiguous names are skipped)."""
        files = [e.split(":", 2)[2] for e in entity_ids if e.startswith("entity:file:")]
        functions = [_norm_symbol(e.split(":", 2)[2]) for e in entity_ids if e.startswith("entity:function:")]
        ticked = [_norm_symbol(m.group(1)) for m in _BACKTICK.finditer(text)]
        if not files and not functions and not ticked:
            return []
        commit = self.repo.head()
        anchors: dict[tuple[str, str], Anchor] = {}
        paths: list[str] = []
        for name in files:
            rel, _ = self.find_file(name)
            if rel is None or rel in paths:
                continue
            a = self.file_anchor(rel, commit=commit, origin="auto")
            if a is not None:
                anchors[(rel, "")] = a
                paths.append(rel)
        for name in dict.fromkeys(functions + ticked):
            if not name or not _IDENT.match(name) or any(name == p or p.endswith(name) for p in paths):
                continue
            found = [a for rel in paths for a in self.symbol_in(rel, name, commit=commit, origin="auto")]
            if not found and name in functions:
                found = self.search(name, commit=commit, origin="auto", exclude=paths, max_files=_AUTO_SEARCH_FILES)
            if len(found) == 1:  # a name with several definitions is not anchored
                anchors.setdefault((found[0].path, found[0].symbol), found[0])
            if len(anchors) >= _AUTO_LIMIT:
                break
        return list(anchors.values())[:_AUTO_LIMIT]

    def explicit(self, refs: Sequence[str]) -> list[Anchor]:
        """Anchors for `path`, `path::Symbol` or `Symbol` items. Raises AnchorError."""
        commit = self.repo.head()
        out: dict[tuple[str, str], Anchor] = {}
        for i, ref in enumerate(refs):
            where = f"anchors[{i}] {ref!r}"
            path, symbol = parse_ref(ref)
            if not path and not symbol:
                raise AnchorError(f"{where}: give a path, path::symbol or a symbol name")
            rel = None
            if path:
                rel, candidates = self.find_file(path)
                looks_like_file = "/" in path or os.path.splitext(path)[1][1:].lower() in _FILE_SUFFIXES
                if rel is None and not symbol and _IDENT.match(path) and not candidates and not looks_like_file:
                    symbol = _norm_symbol(path)  # a bare name that is not a file: a symbol
                elif rel is None:
                    if candidates:
                        raise AnchorError(f"{where}: ambiguous, it matches {', '.join(candidates[:5])}; give the path")
                    raise AnchorError(f"{where}: no such file in the working tree of {self.repo.root}")
            if not symbol:
                a = self.file_anchor(rel, commit=commit, origin="explicit") if rel else None
                if a is None:
                    raise AnchorError(f"{where}: cannot read the file")
                out[(a.path, "")] = a
                continue
            if not _IDENT.match(symbol):
                raise AnchorError(f"{where}: {symbol!r} is not a symbol name (Name, Class.method)")
            if rel is not None:
                lang = language_of(rel)
                if lang is None:
                    raise AnchorError(f"{where}: {rel} is not a source file memoryd can read symbols from")
                if not parser_available(lang):
                    raise AnchorError(f"{where}: symbols in {lang} files need the code extra: pip install 'memoryd[code]'")
                found = self.symbol_in(rel, symbol, commit=commit, origin="explicit")
                if not found:
                    raise AnchorError(f"{where}: {rel} defines no {symbol}")
            else:
                found = self.search(symbol, commit=commit, origin="explicit")
                if not found:
                    raise AnchorError(f"{where}: no definition of {symbol} in the repository")
            if len(found) > 1:
                raise AnchorError(f"{where}: ambiguous, it matches {', '.join(a.ref for a in found[:5])}")
            out[(found[0].path, found[0].symbol)] = found[0]
        return list(out.values())
