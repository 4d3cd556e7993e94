"""What one definition says, as short hashes ("forms"), read from its syntax tree without copying it.

- `fp`: the fingerprint anchors store, unchanged since round 1 so that stored anchors stay comparable:
  Python `ast.dump` of the definition, tree-sitter its tokens without comments; a class (interface,
  struct, trait) its header and the sorted names of its direct members;
- `body`: the definition without its own name (the same body under a new name is a rename);
- `bare`, `nodoc`, `bare_nodoc`: without type annotations, without docstrings, without both (Python;
  tree-sitter has neither, so they equal `fp`);
- `sig`, `sig_bare`: the signature (decorators, parameters, return annotation; tree-sitter: the
  tokens before the body) with and without annotations;
- `attrs`, `attrs_bare` (Python classes): the annotated attributes' names and types; a class's
  interface is these plus its methods' `sig` (`SymbolTable.interface`).

The Python forms other than `fp` come from one walk over the tree that leaves out what a form
ignores as it goes (round 2 deep-copied the tree and stripped it: most of a drift check's time).
Every form is computed once per (file version, definition) and kept with the file's symbol table.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from typing import Any

__all__ = ["CONTAINERS", "FUNCTIONS", "FULL", "SIGNATURE", "py_fp", "py_forms", "sha", "text", "ts_forms",
           "ts_fp", "ts_name", "walk"]  # fmt: skip

FULL = ("body", "bare", "nodoc", "bare_nodoc")  # forms that read the whole definition
SIGNATURE = ("sig", "sig_bare", "attrs", "attrs_bare")  # forms that read its signature only

FUNCTIONS = {
    "function_declaration", "generator_function_declaration", "method_definition", "function_item",
    "method_declaration", "constructor_declaration", "function_signature_item",
}  # fmt: skip
CONTAINERS = {
    "class_declaration", "abstract_class_declaration", "interface_declaration", "enum_declaration",
    "struct_item", "enum_item", "trait_item", "impl_item", "type_spec", "type_alias_declaration",
    "record_declaration", "class",
}  # fmt: skip
_FIELD_KINDS = ("field_declaration", "public_field_definition", "property_signature")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def sha(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# -- Python ----------------------------------------------------------------------------------------

_DOC_OWNERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_PASS = ast.Pass()


def _is_doc(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _canon(node: Any, *, ann: bool = True, doc: bool = True, rename: bool = False) -> str:
    """A canonical text of `node` (positions left out), without annotations (`ann=False`: `x: T = v`
    reads `x = v`, a bare `x: T` nothing), docstrings (`doc=False`) or its own name (`rename`)."""
    out: list[str] = []
    add = out.append

    def visit(n: Any) -> None:
        if not isinstance(n, ast.AST):
            add(repr(n))
            return
        if not ann and isinstance(n, ast.AnnAssign):  # read as the plain assignment it annotates
            if n.value is None:  # a bare `x: T` is nothing (lists leave it out before it gets here)
                return
            n = ast.Assign(targets=[n.target], value=n.value, type_comment=None)
        add(type(n).__name__)
        add("(")
        for field in n._fields:
            value = getattr(n, field, None)
            if not ann and field in ("annotation", "returns"):
                value = None
            elif field == "name" and rename and n is node:
                value = "_"
            elif field == "body" and not doc and isinstance(n, _DOC_OWNERS) and value and _is_doc(value[0]):
                value = value[1:] or [_PASS]
            if isinstance(value, list):
                add("[")
                for item in value:
                    if not ann and isinstance(item, ast.AnnAssign) and item.value is None:
                        continue
                    visit(item)
                    add(",")
                add("]")
            else:
                visit(value)
            add(",")
        add(")")

    visit(node)
    return "".join(out)


def py_fp(node: ast.AST) -> str:
    """The stored fingerprint (round 1's definition, kept)."""
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
        return sha(json.dumps(["class", node.name, header, sorted(members)]))
    return sha(ast.dump(node))


def _py_signature(node: Any, ann: bool) -> str:
    if isinstance(node, ast.ClassDef):
        parts = [_canon(x, ann=ann) for x in (*node.bases, *node.keywords, *node.decorator_list)]
    else:
        parts = [type(node).__name__, _canon(node.args, ann=ann), *(_canon(d, ann=ann) for d in node.decorator_list)]
        if ann and node.returns is not None:
            parts.append(_canon(node.returns))
    return sha("\x1f".join(parts))


def _py_attrs(node: Any, ann: bool) -> str:
    if not isinstance(node, ast.ClassDef):
        return ""
    attrs = sorted(
        f"{c.target.id}:{_canon(c.annotation) if ann else ''}"
        for c in node.body
        if isinstance(c, ast.AnnAssign) and isinstance(c.target, ast.Name)
    )
    return sha("\x1f".join(attrs))


_FULL_OPTIONS = {"body": {"rename": True}, "bare": {"ann": False}, "nodoc": {"doc": False},
                 "bare_nodoc": {"ann": False, "doc": False}}  # fmt: skip


def py_forms(node: Any, kind: str) -> dict[str, str]:
    """Form `kind` of one Python definition: alone when it reads the whole definition (`FULL`), else
    with the other signature forms."""
    if kind in FULL:
        return {kind: sha(_canon(node, **_FULL_OPTIONS[kind]))}
    return {"sig": _py_signature(node, True), "sig_bare": _py_signature(node, False),
            "attrs": _py_attrs(node, True), "attrs_bare": _py_attrs(node, False)}  # fmt: skip


def py_body_tokens(node: Any, source: bytes) -> list[str]:
    """The tokens of a definition's statements after its signature (for how alike two versions are)."""
    body = [s for s in getattr(node, "body", []) if not _is_doc(s)]
    if not body:
        return []
    lines = source.splitlines()[body[0].lineno - 1 : (node.end_lineno or body[-1].lineno)]
    return _TOKEN.findall(b"\n".join(lines).decode("utf-8", "replace"))


# -- tree-sitter -----------------------------------------------------------------------------------


def text(node: Any, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def walk(node: Any) -> Any:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def ts_name(node: Any, source: bytes) -> str | None:
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        return text(target, source).split("<", 1)[0].strip() if target is not None else None
    if node.type == "method_declaration" and node.child_by_field_name("receiver") is not None:  # Go method
        receiver = node.child_by_field_name("receiver")
        kinds = [n for n in walk(receiver) if n.type == "type_identifier"]
        name = node.child_by_field_name("name")
        if kinds and name is not None:
            return f"{text(kinds[-1], source)}.{text(name, source)}"
    name = node.child_by_field_name("name")
    return text(name, source) if name is not None else None


def _ts_header(node: Any, source: bytes) -> list[str]:
    body = node.child_by_field_name("body")
    out = []
    for n in walk(node):
        if body is not None and n.start_byte >= body.start_byte:
            break
        if n.child_count == 0 and "comment" not in n.type:
            out.append(text(n, source))
    return out


def ts_fp(node: Any, source: bytes) -> str:
    """The stored fingerprint (round 1's definition, kept)."""
    if node.type in CONTAINERS:
        body = node.child_by_field_name("body")
        members: set[str] = set()
        if body is not None:
            for child in body.named_children:
                name = ts_name(child, source) if (child.type in FUNCTIONS or child.type in CONTAINERS) else None
                if name is None and child.type in _FIELD_KINDS:
                    own = child.child_by_field_name("name") or child.child_by_field_name("property")
                    name = text(own, source) if own is not None else None
                if name:
                    members.add(name)
        return sha(json.dumps(["class", _ts_header(node, source), sorted(members)]))
    return sha("\x1f".join(text(n, source) for n in walk(node) if n.child_count == 0 and "comment" not in n.type))


def ts_forms(node: Any, source: bytes, kind: str, fp: str) -> dict[str, str]:
    """Form `kind` of one tree-sitter definition, with the others of its group (`FULL` or `SIGNATURE`)."""
    if kind in FULL:
        own = node.child_by_field_name("name")
        skip = (own.start_byte, own.end_byte) if own is not None else None
        tokens = [text(n, source) for n in walk(node) if n.child_count == 0 and "comment" not in n.type
                  and (n.start_byte, n.end_byte) != skip]  # fmt: skip
        return {"body": sha("\x1f".join([node.type, *tokens])), "bare": fp, "nodoc": fp, "bare_nodoc": fp}
    sig = sha("\x1f".join(_ts_header(node, source)))
    return {"sig": sig, "sig_bare": sig, "attrs": "", "attrs_bare": ""}


def ts_body_tokens(node: Any, source: bytes) -> list[str]:
    body = node.child_by_field_name("body")
    return _TOKEN.findall(text(body, source)) if body is not None else []
