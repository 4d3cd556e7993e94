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
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .git import GREP_MAX_FILES, GitRepo
from .mentions import FILE_SUFFIXES, Mention, mentions, norm_symbol
from .model import Anchor
from .symbols import LANGUAGES, SymbolTable, cached_table, file_table, language_of, parser_available, save

__all__ = ["AnchorError", "NameReport", "Resolver", "parse_ref"]

_AUTO_LIMIT = 12  # automatic anchors per memory (a long text naming many files keeps the first ones)
_AUTO_SEARCH_FILES = 15  # an automatic repository-wide lookup gives up on names in more files than this
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$")
_LOOKUP_FILES = 400  # files parsed for one repository-wide lookup (the definition grep narrows them first)
_GO_PACKAGE = re.compile(rb"^package[ \t]+([A-Za-z_]\w*)", re.M)
_GO_MODULE = re.compile(rb"^module[ \t]+(\S+)", re.M)
_PERIPHERAL = re.compile(r"(^|/)(tests?|testing|testdata|examples?|vendor|third_party|node_modules|docs?|benchmarks?)/"
                         r"|(^|/)(test_[^/]*|[^/]*_test\.\w+|conftest\.py)$")  # fmt: skip
# How well a qualifier names a definition's module: exactly (`sqlite_utils.db`, Go's package), or a package
# holding it (`sqlite_utils` for sqlite_utils/db.py, Go's module `cobra` for cobra/doc).
_EXACT, _WITHIN = 20, 10
_NAMED = re.compile(r"\b([A-Za-z_]\w*)\s+(?:objects?|instances?|class)\b", re.I)  # "a context object"
_MODULE_WORD = re.compile(r"\b([A-Za-z_]\w*)\s+(?:module|file|package)\b", re.I)  # "the utils module"


class NameReport(NamedTuple):
    """What anchoring did with one name a memory's text mentions."""

    name: str
    outcome: str  # "anchored" | "ambiguous" | "not_found" | "passing"
    candidates: list[str]

    def words(self) -> str:
        if self.outcome == "anchored":
            return f"{self.name} -> {self.candidates[0]}"
        if self.outcome == "passing":
            return f"{self.name}: mentioned in passing (the memory is not about it)"
        if self.outcome == "ambiguous":
            return f"{self.name}: ambiguous ({', '.join(self.candidates)}); name the file or anchor it explicitly"
        if "." in self.name and self.name.rsplit(".", 1)[-1].lower() in FILE_SUFFIXES:
            return f"{self.name}: no such file in the repository"
        return f"{self.name}: no definition found in the repository"


def _is_peripheral(path: str) -> bool:
    return _PERIPHERAL.search(path) is not None


def _by_context(found: list[Anchor], text: str) -> list[Anchor]:
    """The one of several definitions of a name the text's context picks: the one whose class the text
    names as written (`self.update()` on a NullProgressBar), else whose class it names in lower case
    before "object"/"instance"/"class" ("close() on a context object"), else whose file it names as
    a module ("in the utils module"); all of them when none is picked (narrowed when several are)."""
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    lower = {m.group(1).lower() for m in _NAMED.finditer(text)}
    modules = {m.group(1).lower() for m in _MODULE_WORD.finditer(text)}

    def owner(a: Anchor) -> str:
        return a.symbol.rsplit(".", 1)[0].rsplit(".", 1)[-1] if "." in a.symbol else ""

    for picked in ([a for a in found if owner(a) in words], [a for a in found if owner(a).lower() in lower],
                   [a for a in found if a.path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower() in modules]):  # fmt: skip
        if picked:
            return picked  # one: the context's pick; several: narrowed, still ambiguous
    return found


class AnchorError(ValueError):
    """An explicit anchor that does not resolve; the message says which and why."""


def parse_ref(ref: str) -> tuple[str, str]:
    """`path::Symbol` -> (path, symbol); `path` -> (path, ""); `::Symbol` -> ("", symbol)."""
    path, sep, symbol = ref.partition("::")
    return path.strip(), norm_symbol(symbol) if sep else ""


@dataclass
class Resolver:
    """Resolves names against one repository; `cache_dir` holds parsed symbol tables."""

    repo: GitRepo
    cache_dir: Path | None = None
    _modules: dict[tuple[str, str], tuple[str, str] | None] = field(default_factory=dict, repr=False)

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

    def table(self, rel: str) -> tuple[SymbolTable | None, str | None]:
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
        return found

    def prime(self, anchors: Iterable[Anchor]) -> None:
        """Keep with each anchored file version what drift checks will compare (`SymbolTable.prime`), on
        disk: the version is parsed now, and no check has to parse it again."""
        tables: dict[str, SymbolTable] = {}
        for a in anchors:
            table = cached_table(a.path, a.blob, self.cache_dir) if a.kind == "symbol" and a.blob else None
            if table is not None and a.blob:
                table.prime(a.symbol)
                tables[a.blob] = table
        for blob, table in tables.items():
            save(table, blob, self.cache_dir)

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

    def lookup(self, name: str, *, commit: str | None, origin: str, exclude: Iterable[str] = (),
               defs_only: bool = False) -> tuple[list[Anchor], list[Anchor]]:  # fmt: skip
        """(the definitions `name` means, all candidates seen) anywhere in the repository.

        `name` is a symbol (`insert_all`, `Table.insert_all`) or one qualified by its module
        (`sqlite_utils.db.Table.insert_all`, `pflag.FlagSet.GetInt`): a definition matches when its
        qualified name is the whole of `name` or a dotted suffix of it, and the rest names its module
        (the file's path, for Go its package or directory). The longest match wins; definitions in
        tests, examples or vendored code give way to one elsewhere.
        """
        parts = name.split(".")
        last = parts[-1]
        suffixes = tuple(sorted({ext for ext, lang in LANGUAGES.items() if parser_available(lang)}))
        skip = set(exclude)
        files = [f for f in self.repo.grep_defs(last, suffixes) if f not in skip]
        if not files and not defs_only:
            files = [f for f in self.repo.grep_files(last, suffixes) if f not in skip][:GREP_MAX_FILES]
        best: list[tuple[int, Anchor]] = []
        seen: list[Anchor] = []
        for rel in files[:_LOOKUP_FILES]:
            table, blob = self.table(rel)
            if table is None:
                continue
            for i in range(len(parts)):
                q, prefix = ".".join(parts[i:]), parts[:i]
                # every definition the name can mean here: `Parse` is both func Parse and FlagSet.Parse
                hits = [d for d in table.defs if d == q or (not prefix and d.endswith("." + q))]
                module = self._module_score(rel, prefix, table.lang) if hits and prefix else 0
                if not hits or (prefix and not module):
                    continue
                for h in hits:
                    kind, line, _ = table.defs[h]
                    a = Anchor(path=rel, symbol=h, kind="symbol", lang=table.lang, commit=commit, blob=blob,
                               fingerprint=table.fingerprint(h), line=line, origin=origin)  # fmt: skip
                    seen.append(a)
                    best.append((len(parts) - i + module, a))
                break
        if not best:
            return [], seen
        top = max(score for score, _ in best)
        found = [a for score, a in best if score == top]
        if len(found) > 1:
            main = [a for a in found if not _is_peripheral(a.path)]
            if main:
                found = main
        return found, seen

    def _module_score(self, rel: str, prefix: list[str], lang: str) -> int:
        """How well `prefix` (`sqlite_utils.db`, `pflag`, `cobra`) names the module of file `rel`: _EXACT (its
        module, or for Go its package or directory), _WITHIN (a package holding it: `sqlite_utils` for
        sqlite_utils/db.py; for Go the module of its go.mod, `cobra` for cobra's doc/ package), else 0."""
        stem = os.path.splitext(rel)[0]
        stem = stem.removesuffix("/__init__")
        dotted = stem.replace("/", ".")
        want = ".".join(prefix)
        if dotted == want or dotted.endswith("." + want):
            return _EXACT
        if lang != "go":
            return _WITHIN if ("." + dotted).find("." + want + ".") >= 0 else 0
        directory = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if directory and (
            directory == want or directory.endswith("/" + prefix[-1]) or directory.rsplit("/", 1)[-1] == prefix[-1]
        ):
            return _EXACT
        if prefix[-1] == self._go_package(rel):
            return _EXACT
        module = self._go_module(directory)
        if module is not None:
            path, root = module
            name = path.rsplit("/", 1)[-1]
            if re.fullmatch(r"v\d+", name) and "/" in path:  # github.com/x/y/v2 is module y
                name = path.rsplit("/", 2)[-2]
            inside = not root or rel.startswith(root + "/")
            if inside and (prefix[-1] == name or path.endswith("/" + "/".join(prefix)) or path == want):
                return _WITHIN
        return 0

    def _go_module(self, directory: str) -> tuple[str, str] | None:
        """(module path, its directory) of the go.mod nearest above `directory` in the repository."""
        key = ("gomod", directory)
        if key not in self._modules:
            found = None
            here = directory
            while True:
                data = self.repo.read(f"{here}/go.mod" if here else "go.mod")
                m = _GO_MODULE.search(data[:4000]) if data else None
                if m is not None:
                    found = (m.group(1).decode("utf-8", "replace").strip('"'), here)
                    break
                if not here:
                    break
                here = here.rsplit("/", 1)[0] if "/" in here else ""
            self._modules[key] = found
        return self._modules[key]

    def _go_package(self, rel: str) -> str | None:
        data = self.repo.read(rel)
        m = _GO_PACKAGE.search(data[:20000]) if data else None
        return m.group(1).decode() if m else None

    def auto(self, text: str, entity_ids: Sequence[str]) -> list[Anchor]:
        """The anchors a memory's text implies (unresolvable or ambiguous names are skipped)."""
        return self.resolve_text(text, entity_ids)[0]

    def resolve_text(self, text: str, entity_ids: Sequence[str]) -> tuple[list[Anchor], list[NameReport]]:
        """(the anchors a memory's text implies, what was done with each name it saw).

        Names are read as `anchors.mentions` reads them; only the memory's subjects are anchored (a
        name mentioned in passing, after a verb or in a description, is reported, not anchored). A
        name is looked up in the files the text names first, then in the whole repository; a bare
        method name several classes define is anchored only when the text names one of the classes
        (or one of the files) and listed as ambiguous otherwise.
        """
        files = [e.split(":", 2)[2] for e in entity_ids if e.startswith("entity:file:")]
        functions = [norm_symbol(e.split(":", 2)[2]) for e in entity_ids if e.startswith("entity:function:")]
        commit = self.repo.head()
        anchors: dict[tuple[str, str], Anchor] = {}
        reports: list[NameReport] = []
        paths: list[str] = []
        for name in files:
            rel, candidates = self.find_file(name)
            if rel is None and candidates:
                reports.append(NameReport(name, "ambiguous", candidates[:5]))
            elif rel is None:
                reports.append(NameReport(name, "not_found", []))
            if rel is None or rel in paths:
                continue
            a = self.file_anchor(rel, commit=commit, origin="auto")
            if a is not None:
                anchors[(rel, "")] = a
                paths.append(rel)
        resolved: dict[str, tuple[list[Anchor], list[Anchor]] | None] = {}

        def resolve(m: Mention) -> tuple[list[Anchor], list[Anchor]] | None:
            if m.name not in resolved:
                resolved[m.name] = self._resolve_name(m.name, not m.strong, paths, text, commit)
            return resolved[m.name]

        found_names = mentions(text, functions, is_name=lambda m: bool((resolve(m) or ([], []))[0]))
        weak_anchored: set[tuple[str, str]] = set()
        for m in found_names:
            if len(anchors) >= _AUTO_LIMIT:
                break
            if not m.subject:
                if m.strong:
                    reports.append(NameReport(m.name, "passing", []))
                continue
            got = resolve(m)
            if got is None:
                continue
            found, seen = got
            if len(found) == 1:
                anchors.setdefault((found[0].path, found[0].symbol), found[0])
                if not m.strong:
                    weak_anchored.add((found[0].path, found[0].symbol))
                reports.append(NameReport(m.name, "anchored", [found[0].ref]))
            elif len(found) > 1:
                reports.append(NameReport(m.name, "ambiguous", [a.ref for a in found[:5]]))
            elif m.strong:
                reports.append(NameReport(m.name, "not_found", [a.ref for a in seen[:5]]))
        # A class named only as the context of one of its methods (`self.update()` on a NullProgressBar)
        # is not a second subject of the memory.
        owners = {(a.path, a.symbol.rsplit(".", 1)[0]) for a in anchors.values() if "." in a.symbol}
        for key in weak_anchored & owners:
            anchors.pop(key, None)
        kept = list(anchors.values())[:_AUTO_LIMIT]
        self.prime(kept)
        return kept, reports

    def _resolve_name(self, name: str, weak: bool, paths: list[str], text: str,
                      commit: str | None) -> tuple[list[Anchor], list[Anchor]] | None:  # fmt: skip
        """(the definitions `name` means here, the candidates seen); None: not a name to look up."""
        if not name or not _IDENT.match(name) or any(name == p or p.endswith(name) for p in paths):
            return None
        if name.rsplit(".", 1)[-1].lower() in FILE_SUFFIXES and "." in name:
            return None  # a file name written without its directory
        found = [a for rel in paths for a in self.symbol_in(rel, name, commit=commit, origin="auto")]
        if not found and "." in name:  # `sqlite_utils.db.Table.insert` with db.py named
            found = [a for rel in paths for a in self.lookup_in(rel, name, commit=commit)]
        seen = found
        if not found:
            if weak and name in {p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in paths}:
                return None  # a plain word of the prose: not a name unless a named file defines it
            found, seen = self.lookup(name, commit=commit, origin="auto", exclude=paths, defs_only=weak)
        if len(found) > 1:
            found = _by_context(found, text)
        return found, seen

    def lookup_in(self, rel: str, name: str, *, commit: str | None) -> list[Anchor]:
        """`name` qualified by its module, looked up in file `rel` only."""
        table, blob = self.table(rel)
        if table is None:
            return []
        parts = name.split(".")
        for i in range(1, len(parts)):
            q = ".".join(parts[i:])
            if q in table.defs and self._module_score(rel, parts[:i], table.lang):
                kind, line, _ = table.defs[q]
                return [Anchor(path=rel, symbol=q, kind="symbol", lang=table.lang, commit=commit, blob=blob,
                               fingerprint=table.fingerprint(q), line=line, origin="auto")]  # fmt: skip
        return []

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
                looks_like_file = "/" in path or os.path.splitext(path)[1][1:].lower() in FILE_SUFFIXES
                if rel is None and not symbol and _IDENT.match(path) and not candidates and not looks_like_file:
                    symbol = norm_symbol(path)  # a bare name that is not a file: a symbol
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
                    raise AnchorError(
                        f"{where}: symbols in {lang} files need the code extra: pip install 'memoryd[code]'"
                    )
                found = self.symbol_in(rel, symbol, commit=commit, origin="explicit")
                if not found:
                    raise AnchorError(f"{where}: {rel} defines no {symbol}")
            else:
                found, _ = self.lookup(symbol, commit=commit, origin="explicit")
                if not found:
                    raise AnchorError(f"{where}: no definition of {symbol} in the repository")
            if len(found) > 1:
                raise AnchorError(f"{where}: ambiguous, it matches {', '.join(a.ref for a in found[:5])}")
            out[(found[0].path, found[0].symbol)] = found[0]
        self.prime(out.values())
        return list(out.values())
