"""The definitions in a source file, each with a fingerprint of what it says.

Python is read with `ast` (always available); JavaScript, TypeScript/TSX, Go, Rust and Java with
tree-sitter and the official grammar wheels (the `memoryd[code]` extra; without it those files get
file anchors only). Qualified names join containers with dots: `Table.insert_all`, `Server.Start`
(Go receiver), `Parser.parse` (Rust impl).

Fingerprints ignore layout and comments:
- a function or method: its syntax tree (Python: `ast.dump` without positions; tree-sitter: the
  sequence of its tokens, comments left out), so moving it in the file or re-indenting it changes
  nothing, while a changed body, signature, decorator or docstring does;
- a class (interface, struct, trait, impl): its header (bases, decorators) and the sorted names of
  its direct members, so a class is "changed" when its interface changes, not when the body of
  one method does (anchor the method for that).

Tables are cached per blob id: in memory, and as JSON under `cache_dir` when one is given, so a
file version is parsed once whatever process asks.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

__all__ = [
    "LANGUAGES", "SymbolTable", "cached_table", "definition_names", "file_table", "language_of", "parse_python",
    "parser_available", "save", "symbol_table",
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
_CACHE_VERSION = 1
_MEMORY_TABLES = 16

_FUNCTIONS = {
    "function_declaration", "generator_function_declaration", "method_definition", "function_item",
    "method_declaration", "constructor_declaration", "function_signature_item",
}  # fmt: skip
_CONTAINERS = {
    "class_declaration", "abstract_class_declaration", "interface_declaration", "enum_declaration",
    "struct_item", "enum_item", "trait_item", "impl_item", "type_spec", "type_alias_declaration",
    "record_declaration", "class",
}  # fmt: skip
_ASSIGNED_FUNCTIONS = {"arrow_function", "function_expression", "function", "generator_function"}


def language_of(path: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SymbolTable:
    """The definitions of one file version: qualified name -> (kind, first line, last line).

    A plain class, not a dataclass: the file hook loads it, and its start-up counts.
    """

    __slots__ = ("_dirty", "_nodes", "_source", "_tree", "defs", "fps", "lang")

    def __init__(self, lang: str, defs: dict[str, tuple[str, int, int]], fps: dict[str, str] | None = None,
                 _tree: Any = None, _source: bytes = b"") -> None:  # fmt: skip
        self.lang = lang
        self.defs = defs
        self.fps: dict[str, str] = fps if fps is not None else {}
        self._tree = _tree  # the parsed tree while in memory (fingerprints are computed on demand)
        self._nodes: dict[str, Any] = {}
        self._source = _source
        self._dirty = False

    def fingerprint(self, name: str) -> str | None:
        if name not in self.defs:
            return None
        fp = self.fps.get(name)
        if fp is None:
            if not self._nodes:
                self._reparse()
            node = self._nodes.get(name)
            if node is None:
                return None
            fp = _python_fp(node) if self.lang == "python" else _ts_fp(node, self._source)
            self.fps[name] = fp
            self._dirty = True
        return fp

    def _reparse(self) -> None:
        fresh = _parse(self.lang, self._source)
        if fresh is not None:
            self._nodes = fresh._nodes
            self._tree = fresh._tree

    def node(self, name: str) -> Any:
        """The parsed definition of `name` (parsing the source again if the table came from the cache)."""
        if name not in self.defs:
            return None
        if not self._nodes:
            self._reparse()
        return self._nodes.get(name)

    def body_fingerprint(self, name: str) -> str | None:
        """A fingerprint of the definition that leaves out its own name: the same body under another
        name (a rename) has the same one. Not cached: only drift checks of vanished symbols ask."""
        node = self.node(name)
        if node is None:
            return None
        if self.lang == "python":
            return _sha(_py_dump(node, rename=True))
        own = node.child_by_field_name("name")
        skip = (own.start_byte, own.end_byte) if own is not None else None
        tokens = [_text(n, self._source) for n in _walk(node) if n.child_count == 0 and "comment" not in n.type
                  and (n.start_byte, n.end_byte) != skip]  # fmt: skip
        return _sha("\x1f".join([node.type, *tokens]))

    def aspect(self, name: str, other: SymbolTable, other_name: str | None = None) -> str:
        """How definition `name` here differs from `other_name` (default: the same name) in `other`:
        "annotation_only" (type hints only), "docstring_only", "signature", "body" or "same"."""
        a, b = self.node(name), other.node(other_name or name)
        if a is None or b is None or self.lang != other.lang:
            return "body"
        if self.lang == "python":
            if _py_dump(a) == _py_dump(b):
                return "same"
            if _py_dump(a, annotations=False) == _py_dump(b, annotations=False):
                return "annotation_only"
            if _py_dump(a, docstring=False) == _py_dump(b, docstring=False):
                return "docstring_only"
            if _py_dump(a, annotations=False, docstring=False) == _py_dump(b, annotations=False, docstring=False):
                return "annotation_only"
            if isinstance(a, ast.ClassDef) or _py_signature(a) != _py_signature(b):
                return "signature"
            return "body"
        ha, hb = _ts_header(a, self._source), _ts_header(b, other._source)
        return "signature" if ha != hb else "body"

    def members(self, name: str) -> dict[str, str]:
        """Fingerprints of the definitions nested in `name` (a class's methods), by their qualified names."""
        prefix = name + "."
        return {q: fp for q in self.defs if q.startswith(prefix) and (fp := self.fingerprint(q)) is not None}

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


def _python_fp(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        members: set[str] = set()
        for child in node.body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                members.add(child.name)
            elif isinstance(child, ast.Assign):
                members.update(t.id for t in child.targets if isinstance(t, ast.Name))
            elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                members.add(child.target.id)
        header = [ast.dump(x) for x in (*node.bases, *node.keywords, *node.decorator_list)]
        return _sha(json.dumps(["class", node.name, header, sorted(members)]))
    return _sha(ast.dump(node))


class _Strip(ast.NodeTransformer):
    def __init__(self, annotations: bool, docstring: bool) -> None:
        self.annotations, self.docstring = annotations, docstring

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if not self.annotations:
            node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if self.annotations:
            return node
        if node.value is None:
            return None
        return ast.Assign(targets=[node.target], value=node.value, lineno=0)

    def _body(self, node: Any) -> Any:
        if not self.annotations and hasattr(node, "returns"):
            node.returns = None
        body = node.body
        if (not self.docstring and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):  # fmt: skip
            node.body = body[1:] or [ast.Pass()]
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _body


def _py_dump(node: ast.AST, *, annotations: bool = True, docstring: bool = True, rename: bool = False) -> str:
    import copy

    if annotations and docstring and not rename:
        return ast.dump(node)
    tree = copy.deepcopy(node)
    if rename and hasattr(tree, "name"):
        tree.name = "_"
    if not (annotations and docstring):
        tree = _Strip(annotations, docstring).visit(tree)
    return ast.dump(tree)


def _py_signature(node: Any) -> str:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    return "\x1f".join(ast.dump(x) for x in (node.args, *node.decorator_list))


def _ts_header(node: Any, source: bytes) -> list[str]:
    body = node.child_by_field_name("body")
    out = []
    for n in _walk(node):
        if body is not None and n.start_byte >= body.start_byte:
            break
        if n.child_count == 0 and "comment" not in n.type:
            out.append(_text(n, source))
    return out


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


def _text(node: Any, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _ts_name(node: Any, source: bytes) -> str | None:
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        return _text(target, source).split("<", 1)[0].strip() if target is not None else None
    if node.type == "method_declaration" and node.child_by_field_name("receiver") is not None:  # Go method
        receiver = node.child_by_field_name("receiver")
        kinds = [n for n in _walk(receiver) if n.type == "type_identifier"]
        name = node.child_by_field_name("name")
        if kinds and name is not None:
            return f"{_text(kinds[-1], source)}.{_text(name, source)}"
    name = node.child_by_field_name("name")
    return _text(name, source) if name is not None else None


def _walk(node: Any) -> Any:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _ts_defs(lang: str, source: bytes) -> SymbolTable | None:
    parser = _ts_parser(lang)
    if parser is None:
        return None
    tree = parser.parse(source)
    table = SymbolTable(lang=lang, defs={}, _tree=tree, _source=source)

    def add(name: str, kind: str, node: Any) -> None:
        if name not in table.defs:
            table.defs[name] = (kind, node.start_point[0] + 1, node.end_point[0] + 1)
            table._nodes[name] = node

    def visit(node: Any, prefix: str) -> None:
        for child in node.named_children:
            t = child.type
            if t in _FUNCTIONS or t in _CONTAINERS:
                own = _ts_name(child, source)
                if own is None:
                    visit(child, prefix)
                    continue
                # Go methods already carry their receiver; impl blocks name the type they extend.
                name = own if (t == "method_declaration" and "." in own) else prefix + own
                if t != "impl_item":
                    add(name, "function" if t in _FUNCTIONS else "class", child)
                visit(child, name + ".")
            elif t == "variable_declarator":  # const handler = () => {…}
                value = child.child_by_field_name("value")
                own = child.child_by_field_name("name")
                if value is not None and own is not None and value.type in _ASSIGNED_FUNCTIONS:
                    add(prefix + _text(own, source), "function", child)
                    visit(value, prefix + _text(own, source) + ".")
                else:
                    visit(child, prefix)
            else:
                visit(child, prefix)

    visit(tree.root_node, "")
    return table


def _ts_fp(node: Any, source: bytes) -> str:
    if node.type in _CONTAINERS:
        body = node.child_by_field_name("body")
        header: list[str] = []
        for n in _walk(node):
            if body is not None and n.start_byte >= body.start_byte:
                break
            if n.child_count == 0 and "comment" not in n.type:
                header.append(_text(n, source))
        members: set[str] = set()
        if body is not None:
            for child in body.named_children:
                name = _ts_name(child, source) if (child.type in _FUNCTIONS or child.type in _CONTAINERS) else None
                if name is None and child.type in (
                    "field_declaration",
                    "public_field_definition",
                    "property_signature",
                ):
                    own = child.child_by_field_name("name") or child.child_by_field_name("property")
                    name = _text(own, source) if own is not None else None
                if name:
                    members.add(name)
        return _sha(json.dumps(["class", header, sorted(members)]))
    tokens = [_text(n, source) for n in _walk(node) if n.child_count == 0 and "comment" not in n.type]
    return _sha("\x1f".join(tokens))


# -- tables, cached --------------------------------------------------------------------------------

_tables: OrderedDict[str, SymbolTable] = OrderedDict()


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
    if not isinstance(data, dict) or data.get("v") != _CACHE_VERSION or data.get("lang") != lang:
        return None
    defs = {str(k): (str(v[0]), int(v[1]), int(v[2])) for k, v in data.get("defs", {}).items()}
    return SymbolTable(lang=lang, defs=defs, fps=dict(data.get("fps", {})), _source=source)


def save(table: SymbolTable, blob: str, cache_dir: Path | None) -> None:
    """Write a table's names and the fingerprints computed so far (atomic; errors are ignored)."""
    if cache_dir is None or not table._dirty:
        return
    if table._nodes:  # a saved table is complete: no process ever parses this version again
        for name in table.defs:
            table.fingerprint(name)
    import tempfile  # here: the file hook loads tables far more often than it saves one

    path = _disk_path(cache_dir, blob)
    data = {"v": _CACHE_VERSION, "lang": table.lang, "defs": table.defs, "fps": table.fps}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
        table._dirty = False
    except OSError:
        pass  # a cache: the next process parses again


_names: OrderedDict[str, frozenset[str]] = OrderedDict()  # blob -> qualified names: cheap, kept for many files
_MEMORY_NAMES = 4096


def definition_names(path: str, blob: str, read: Any, cache_dir: Path | None = None) -> frozenset[str] | None:
    """The qualified names a file version defines (no fingerprints); `read()` gives its bytes if needed."""
    key = f"{language_of(path)}:{blob}"
    hit = _names.get(key)
    if hit is not None:
        _names.move_to_end(key)
        return hit
    table = cached_table(path, blob)
    if table is None:
        data = read()
        table = symbol_table(path, data, blob, cache_dir) if data is not None else None
        if table is None:
            return None
        save(table, blob, cache_dir)
    names = frozenset(table.defs)
    _names[key] = names
    while len(_names) > _MEMORY_NAMES:
        _names.popitem(last=False)
    return names


def cached_table(path: str, blob: str) -> SymbolTable | None:
    """The in-memory table of this file version, if it was parsed by this process recently."""
    lang = language_of(path)
    table = _tables.get(f"{lang}:{blob}") if lang else None
    if table is not None and not table._source and not table._nodes:
        return None
    return table


def file_table(repo: Any, rel: str, cache_dir: Path | None = None) -> tuple[SymbolTable | None, str | None]:
    """(symbol table of the working-tree file `rel` of `repo` (a `GitRepo`), its blob id); (None, blob or
    None) when unreadable or not parsed."""
    blob = repo.blob(rel)
    if blob is None:
        return None, None
    cached = cached_table(rel, blob)  # no read when this version was parsed already
    if cached is not None:
        return cached, blob
    data = repo.read(rel)
    if data is None:
        return None, None
    return symbol_table(rel, data, blob, cache_dir), blob


def symbol_table(path: str, source: bytes, blob: str, cache_dir: Path | None = None) -> SymbolTable | None:
    """The definitions of this file version, or None (language without a parser, syntax error, too big)."""
    lang = language_of(path)
    if lang is None or not parser_available(lang):
        return None
    key = f"{lang}:{blob}"
    table = _tables.get(key)
    if table is None:
        table = _load(cache_dir, blob, lang, source)
        if table is None:
            table = _parse(lang, source)
            if table is None:
                return None
            table._dirty = True
        _tables[key] = table
        while len(_tables) > _MEMORY_TABLES:
            _tables.popitem(last=False)
    else:
        _tables.move_to_end(key)
    return table
