"""The definitions in a source file, each with a fingerprint of what it says.

Python is read with `ast` (always available); JavaScript, TypeScript/TSX, Go, Rust and Java with
tree-sitter and the official grammar wheels (the `memoryd[code]` extra; without it those files get
file anchors only). Qualified names join containers with dots: `Table.insert_all`, `Server.Start`
(Go receiver), `Parser.parse` (Rust impl).

Fingerprints ignore layout and comments (`anchors.forms` says what each form reads):
- a function or method: its syntax tree, so moving it in the file or re-indenting it changes
  nothing, while a changed body, signature, decorator or docstring does;
- a class (interface, struct, trait, impl): its header (bases, decorators) and the sorted names of
  its direct members; its interface adds its members' signatures (`SymbolTable.interface`), so a
  class is "changed" when what callers see changes, not when the body of one method does (anchor
  the method for that).

A table is made once per file version (blob id) and each form once per (blob, definition), when
first asked; both are kept in memory and as JSON under `cache_dir` when one is given, so whatever
process asks next reads them instead of parsing (`save_dirty` writes what was computed since).
"""

from __future__ import annotations

import ast
import json
import os
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .forms import (
    CONTAINERS,
    FUNCTIONS,
    py_body_tokens,
    py_forms,
    py_fp,
    sha,
    text,
    ts_body_tokens,
    ts_forms,
    ts_fp,
    ts_name,
)

__all__ = [
    "CACHE_VERSION", "LANGUAGES", "SymbolTable", "cached_table", "definition_names", "file_table", "language_of", "parse_python",
    "parser_available", "save", "save_dirty", "stored_table", "symbol_table",
]  # fmt: skip

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
}  # fmt: skip
# tree-sitter grammar wheels: language -> (module, function returning the language pointer)
_GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}
MAX_PARSE_BYTES = 2_000_000  # bigger files (generated, vendored) get file anchors only
# `ast.dump` differs between Python versions: a table cached by another one is read again.
CACHE_VERSION = f"3-py{sys.version_info[0]}.{sys.version_info[1]}"
_MEMORY_TABLES = 1024  # tables kept in memory (names, fingerprints, forms and the source)
_MEMORY_TREES = 16  # of which this many keep their parsed tree
_ASSIGNED_FUNCTIONS = {"arrow_function", "function_expression", "function", "generator_function"}


def language_of(path: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


class SymbolTable:
    """The definitions of one file version: qualified name -> (kind, first line, last line).

    A plain class, not a dataclass: the file hook loads it, and its start-up counts. `fps` and
    `forms` fill in as they are asked for; the tree is parsed again (from `_source`, or `_read()`)
    only when a table read from the cache is asked for a form it does not hold.
    """

    __slots__ = ("_dirty", "_lines", "_nodes", "_read", "_source", "_tree", "blob", "cache_dir", "defs", "forms", "fps",
                 "lang")  # fmt: skip

    def __init__(self, lang: str, defs: dict[str, tuple[str, int, int]], fps: dict[str, str] | None = None,
                 _tree: Any = None, _source: bytes = b"") -> None:  # fmt: skip
        self.lang = lang
        self.defs = defs
        self.fps: dict[str, str] = fps if fps is not None else {}
        self.forms: dict[str, dict[str, str]] = {}
        self._tree = _tree  # the parsed tree while in memory
        self._nodes: dict[str, Any] = {}
        self._source = _source
        self._read: Callable[[], bytes | None] | None = None
        self._lines: list[bytes] | None = None  # the source's lines, while the tree is kept
        self._dirty = False
        self.blob: str | None = None
        self.cache_dir: Path | None = None

    def fingerprint(self, name: str) -> str | None:
        if name not in self.defs:
            return None
        fp = self.fps.get(name)
        if fp is None:
            node = self.node(name)
            if node is None:
                return None
            fp = py_fp(node) if self.lang == "python" else ts_fp(node, self._source)
            self.fps[name] = fp
            self._touch()
        return fp

    def known(self, name: str, kind: str) -> str | None:
        """Form `kind` of `name` if it was computed already (here or by the process that saved the table)."""
        return self.forms.get(name, {}).get(kind)

    def text(self, name: str) -> str | None:
        """A hash of the definition's source lines (dedented, trailing blanks dropped): equal texts are equal
        definitions, so most drift checks of a changed file need no syntax tree of the definition."""
        known = self.known(name, "text")
        if known is not None or name not in self.defs:
            return known
        if not self._source and self._read is not None:
            self._source = self._read() or b""
        if not self._source:
            return None
        if self._lines is None:
            self._lines = self._source.splitlines()
        _, first, last = self.defs[name]
        lines = self._lines[first - 1 : last]
        indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        body = b"\n".join((x[indent:] if not x[:indent].strip() else x).rstrip() for x in lines)
        made = sha(body.decode("utf-8", "surrogateescape"))
        self.forms.setdefault(name, {})["text"] = made
        self._touch()
        return made

    def form(self, name: str, kind: str) -> str | None:
        """One form of definition `name` (`anchors.forms`: body, bare, nodoc, bare_nodoc, sig, sig_bare,
        attrs, attrs_bare), computed the first time it is asked (the signature forms together: they are cheap)."""
        known = self.forms.get(name)
        if known is not None and kind in known:
            return known[kind]
        node = self.node(name)
        if node is None:
            return None
        if self.lang == "python":
            made = py_forms(node, kind)
        else:
            made = ts_forms(node, self._source, kind, self.fingerprint(name) or "")
        self.forms.setdefault(name, {}).update(made)
        self._touch()
        return made.get(kind)

    def interface(self, name: str, *, bare: bool = False) -> str | None:
        """What callers of class `name` see beyond its fingerprint: its annotated attributes and its
        direct members' signatures (`bare`: without type annotations). Method bodies are not in it."""
        if name not in self.defs:
            return None
        kind = "iface_bare" if bare else "iface"
        known = self.known(name, kind)
        if known is not None:
            return known
        prefix = name + "."
        members = sorted(f"{q[len(prefix) :]}:{self.form(q, 'sig_bare' if bare else 'sig')}"
                         for q in self.defs if q.startswith(prefix) and "." not in q[len(prefix) :])  # fmt: skip
        made = sha("\x1f".join([self.form(name, "attrs_bare" if bare else "attrs") or "", *members]))
        self.forms.setdefault(name, {})[kind] = made
        self._touch()
        return made

    def prime(self, name: str) -> None:
        """Compute now, while the tree is in memory, what a drift check asks of the version an anchor is
        taken at (its text, fingerprint, the forms an aspect compares; a class's interface), so that
        the check reads them from the cache instead of parsing this version again."""
        self.text(name)
        self.fingerprint(name)
        if self.defs.get(name, ("",))[0] == "class":  # compared by fingerprint and interface, not by walks
            self.interface(name)
            self.interface(name, bare=True)
            return
        for kind in ("bare_nodoc", "nodoc", "body", "sig"):
            self.form(name, kind)

    def _reparse(self) -> None:
        source = self._source
        if not source and self._read is not None:
            source = self._read() or b""
        fresh = _parse(self.lang, source) if source else None
        if fresh is not None:
            self._nodes, self._tree, self._source = fresh._nodes, fresh._tree, source
            _keep_tree(self)

    def node(self, name: str) -> Any:
        """The parsed definition of `name` (parsing the source again if the table came from the cache)."""
        if name not in self.defs:
            return None
        if not self._nodes:
            self._reparse()
        return self._nodes.get(name)

    def _touch(self) -> None:
        """Something new was learnt: the table is saved at the next `save_dirty`."""
        self._dirty = True
        if self.cache_dir is not None:
            _dirty[id(self)] = self

    def drop_tree(self) -> None:
        self._nodes, self._tree, self._lines = {}, None, None

    def aspect(self, name: str, other: SymbolTable, other_name: str | None = None) -> str:
        """How definition `name` here differs from `other_name` (default: the same name) in `other`:
        "same", "annotation_only" (type hints only), "docstring_only", "signature" (a class: its header
        or its members' names) or "body"."""
        o = other_name or name
        if name not in self.defs or o not in other.defs or self.lang != other.lang:
            return "body"
        if self.defs[name][0] == "class":
            return "same" if self.fingerprint(name) == other.fingerprint(o) else "signature"
        if self.form(name, "sig_bare") != other.form(o, "sig_bare"):  # parameters or decorators: no walk needed
            return "signature"
        # Without annotations and docstrings next: most changes differ there already (one walk each side).
        if self.form(name, "bare_nodoc") != other.form(o, "bare_nodoc"):
            return "signature" if self.form(name, "sig") != other.form(o, "sig") else "body"
        if self.fingerprint(name) == other.fingerprint(o):
            return "same"
        return "docstring_only" if self.form(name, "nodoc") == other.form(o, "nodoc") else "annotation_only"

    def interface_change(self, name: str, other: SymbolTable) -> str | None:
        """None when class `name` offers `other` (a later version) the same interface; "annotation_only"
        when only its type annotations differ; "members" when a member's signature does."""
        if self.interface(name) == other.interface(name):
            return None
        return "annotation_only" if self.interface(name, bare=True) == other.interface(name, bare=True) else "members"

    def body_tokens(self, name: str) -> list[str]:
        """The tokens of a definition's body (for how alike two versions of it are)."""
        node = self.node(name)
        if node is None:
            return []
        return py_body_tokens(node, self._source) if self.lang == "python" else ts_body_tokens(node, self._source)

    def find(self, name: str) -> list[str]:
        """Names this table defines that `name` refers to: itself, or those it is a dotted suffix of."""
        if name in self.defs:
            return [name]
        tail = "." + name
        return [q for q in self.defs if q.endswith(tail)]


# -- Python ------------------------------------------------------------------------------------


# CPython 3.11 keeps the depth counter of its AST conversion in the interpreter, not the thread: while one
# thread's `ast.parse` builds its tree, another's resets the counter, and the first then fails with
# "SystemError: AST constructor recursion depth mismatch" (seen in CI; python/cpython#106905 is the same
# message). memoryd's own parses take turns, and one that another library's parse disturbed is run again.
_PARSE_LOCK = threading.Lock()
_PARSE_TRIES = 3


def parse_python(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, safe to call from several threads at once (see `_PARSE_LOCK`)."""
    attempt = 1
    while True:
        try:
            with _PARSE_LOCK:
                return ast.parse(source, filename)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt >= _PARSE_TRIES:
                raise
            attempt += 1


def _python_defs(source: bytes) -> SymbolTable | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old code are not our business
            tree = parse_python(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    table = SymbolTable(lang="python", defs={}, _tree=tree, _source=source)

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                if name not in table.defs:  # the first of two conditional definitions wins
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    kind = "class" if isinstance(node, ast.ClassDef) else "function"
                    table.defs[name] = (kind, first, node.end_lineno or node.lineno)
                    table._nodes[name] = node
                visit(node.body, name + ".")
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.AsyncWith)):
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(node, part, []) or [], prefix)
                for handler in getattr(node, "handlers", []) or []:
                    visit(handler.body, prefix)

    visit(tree.body, "")
    return table


# -- tree-sitter ---------------------------------------------------------------------------------

_parsers: dict[str, Any] = {}


def parser_available(lang: str) -> bool:
    return lang == "python" or _ts_parser(lang) is not None


def _ts_parser(lang: str) -> Any:
    if lang in _parsers:
        return _parsers[lang]
    parser = None
    spec = _GRAMMARS.get(lang)
    if spec is not None:
        try:
            import importlib

            import tree_sitter

            grammar = importlib.import_module(spec[0])
            parser = tree_sitter.Parser(tree_sitter.Language(getattr(grammar, spec[1])()))
        except (ImportError, AttributeError, ValueError, TypeError):
            parser = None  # the memoryd[code] extra is not installed, or a grammar ABI mismatch
    _parsers[lang] = parser
    return parser


def _ts_defs(lang: str, source: bytes) -> SymbolTable | None:
    parser = _ts_parser(lang)
    if parser is None:
        return None
    tree = parser.parse(source)
    table = SymbolTable(lang=lang, defs={}, _tree=tree, _source=source)
    flat = lang == "go"

    def add(name: str, kind: str, node: Any) -> None:
        if name not in table.defs:
            table.defs[name] = (kind, node.start_point[0] + 1, node.end_point[0] + 1)
            table._nodes[name] = node

    def visit(node: Any, prefix: str) -> None:
        for child in node.named_children:
            t = child.type
            if t in FUNCTIONS or t in CONTAINERS:
                own = ts_name(child, source)
                if own is None:
                    visit(child, prefix)
                    continue
                # Go methods already carry their receiver; impl blocks name the type they extend.
                name = own if (t == "method_declaration" and "." in own) else prefix + own
                if t != "impl_item":
                    add(name, "function" if t in FUNCTIONS else "class", child)
                if not (flat and t in FUNCTIONS):  # a Go function's body declares nothing named
                    visit(child, name + ".")
            elif t == "variable_declarator":  # const handler = () => {…}
                value = child.child_by_field_name("value")
                own = child.child_by_field_name("name")
                if value is not None and own is not None and value.type in _ASSIGNED_FUNCTIONS:
                    add(prefix + text(own, source), "function", child)
                    visit(value, prefix + text(own, source) + ".")
                else:
                    visit(child, prefix)
            else:
                visit(child, prefix)

    visit(tree.root_node, "")
    return table


# -- tables, cached --------------------------------------------------------------------------------

_tables: OrderedDict[str, SymbolTable] = OrderedDict()
_trees: OrderedDict[int, SymbolTable] = OrderedDict()  # the tables whose parsed tree is kept, by id
_dirty: dict[int, SymbolTable] = {}  # tables with something to save, by id
_LOCK = threading.RLock()  # the caches above are shared by the threads of a daemon


def _keep_tree(table: SymbolTable) -> None:
    with _LOCK:
        _trees[id(table)] = table
        _trees.move_to_end(id(table))
        while len(_trees) > _MEMORY_TREES:
            _trees.popitem(last=False)[1].drop_tree()


def _parse(lang: str, source: bytes) -> SymbolTable | None:
    if len(source) > MAX_PARSE_BYTES:
        return None
    if lang == "python":
        return _python_defs(source)
    return _ts_defs(lang, source)


def _disk_path(cache_dir: Path, blob: str) -> Path:
    return cache_dir / blob[:2] / f"{blob}.json"


def _load(cache_dir: Path | None, blob: str, lang: str, source: bytes) -> SymbolTable | None:
    if cache_dir is None:
        return None
    try:
        data = json.loads(_disk_path(cache_dir, blob).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("v") != CACHE_VERSION or data.get("lang") != lang:
        return None
    try:
        defs = {str(k): (str(v[0]), int(v[1]), int(v[2])) for k, v in data.get("defs", {}).items()}
        table = SymbolTable(lang=lang, defs=defs, fps=dict(data.get("fps", {})), _source=source)
        table.forms = {str(k): dict(v) for k, v in data.get("forms", {}).items()}
    except (TypeError, ValueError, IndexError, AttributeError):
        return None  # a damaged cache file: parse again
    return table


def save(table: SymbolTable, blob: str, cache_dir: Path | None) -> None:
    """Write a table's names and the fingerprints and forms computed so far (atomic; errors are ignored)."""
    if cache_dir is None or not table._dirty:
        return
    import tempfile  # here: the file hook loads tables far more often than it saves one

    path = _disk_path(cache_dir, blob)
    data = {"v": CACHE_VERSION, "lang": table.lang, "defs": table.defs, "fps": table.fps, "forms": table.forms}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"))
        os.replace(tmp, path)
        table._dirty = False
        _dirty.pop(id(table), None)
    except OSError:
        pass  # a cache: the next process parses again


def save_dirty() -> None:
    """Save every table that learnt something since it was read or saved (once per check)."""
    with _LOCK:
        dirty = list(_dirty.values())
        _dirty.clear()
    for table in dirty:
        if table._dirty and table.cache_dir is not None and table.blob:
            save(table, table.blob, table.cache_dir)


_names: OrderedDict[str, frozenset[str]] = OrderedDict()  # blob -> qualified names: cheap, kept for many files
_MEMORY_NAMES = 4096


def definition_names(path: str, blob: str, read: Any, cache_dir: Path | None = None) -> frozenset[str] | None:
    """The qualified names a file version defines (no fingerprints); `read()` gives its bytes if needed."""
    key = f"{language_of(path)}:{blob}"
    with _LOCK:
        hit = _names.get(key)
        if hit is not None:
            _names.move_to_end(key)
            return hit
    table = stored_table(path, blob, cache_dir, read)
    if table is None:
        return None
    names = frozenset(table.defs)
    with _LOCK:
        _names[key] = names
        while len(_names) > _MEMORY_NAMES:
            _names.popitem(last=False)
    return names


def cached_table(path: str, blob: str, cache_dir: Path | None = None) -> SymbolTable | None:
    """The in-memory table of this file version, if this process read or parsed it recently (for the data
    home whose cache is `cache_dir`: each saves into its own)."""
    lang = language_of(path)
    if lang is None:
        return None
    key = _key(lang, blob, cache_dir)
    with _LOCK:
        table = _tables.get(key)
        if table is not None:
            _tables.move_to_end(key)
    return table


def _key(lang: str, blob: str, cache_dir: Path | None) -> str:
    return f"{lang}:{blob}:{cache_dir or ''}"


def file_table(repo: Any, rel: str, cache_dir: Path | None = None) -> tuple[SymbolTable | None, str | None]:
    """(symbol table of the working-tree file `rel` of `repo` (a `GitRepo`), its blob id); (None, blob or
    None) when unreadable or not parsed."""
    blob = repo.blob(rel)
    if blob is None:
        return None, None
    return stored_table(rel, blob, cache_dir, lambda: repo.read(rel)), blob


def stored_table(path: str, blob: str, cache_dir: Path | None, read: Callable[[], bytes | None], *,
                 parse: bool = True) -> SymbolTable | None:  # fmt: skip
    """The table of file version `blob` (named `path`, for its language): from memory, else the cache
    directory, else (unless `parse` is False) parsed from `read()`; the bytes are read only when a
    table has to be parsed."""
    table = cached_table(path, blob, cache_dir)
    if table is not None:
        return table
    lang = language_of(path)
    if lang is None or not parser_available(lang):
        return None
    table = _load(cache_dir, blob, lang, b"")
    if table is None:
        if not parse:
            return None
        data = read()
        if data is None:
            return None
        return symbol_table(path, data, blob, cache_dir)
    table._read = read
    return _remember(_key(lang, blob, cache_dir), table, blob, cache_dir)


def _remember(key: str, table: SymbolTable, blob: str, cache_dir: Path | None) -> SymbolTable:
    table.blob, table.cache_dir = blob, cache_dir
    if table._dirty:
        table._touch()
    with _LOCK:
        known = _tables.get(key)
        if known is not None:
            return known
        _tables[key] = table
        while len(_tables) > _MEMORY_TABLES:
            old = _tables.popitem(last=False)[1]
            _trees.pop(id(old), None)
    return table


def symbol_table(path: str, source: bytes, blob: str, cache_dir: Path | None = None) -> SymbolTable | None:
    """The definitions of this file version, or None (language without a parser, syntax error, too big)."""
    lang = language_of(path)
    if lang is None or not parser_available(lang):
        return None
    key = _key(lang, blob, cache_dir)
    table = cached_table(path, blob, cache_dir)
    if table is not None:
        return table
    table = _load(cache_dir, blob, lang, source)
    if table is None:
        table = _parse(lang, source)
        if table is None:
            return None
        table._touch()
        _keep_tree(table)
    return _remember(key, table, blob, cache_dir)
