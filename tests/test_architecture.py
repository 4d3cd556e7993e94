"""Layering and public API are checked, not hoped for."""

from __future__ import annotations

import ast
from pathlib import Path

import memoryd

SRC = Path(memoryd.__file__).parent
SURFACES = {"cli", "mcp_server", "mcp_tools", "_launch", "ui"}  # _launch: the `memoryd` command's entry; ui: the web console


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package
                base = path.relative_to(SRC).parts[: -node.level]
                out.add(".".join(("memoryd", *base, *(node.module.split(".") if node.module else ()))))
            elif node.module:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_only_the_mcp_adapter_imports_the_sdk() -> None:
    for path in _modules():
        top = path.relative_to(SRC).parts[0].removesuffix(".py")
        uses_sdk = any(m == "mcp" or m.startswith("mcp.") for m in _imports(path))
        assert not uses_sdk or top in {"mcp_server", "mcp_tools"}, path


def test_nothing_below_the_surfaces_imports_them() -> None:
    for path in _modules():
        top = path.relative_to(SRC).parts[0].removesuffix(".py")
        if top in SURFACES:
            continue
        for m in _imports(path):
            parts = m.split(".")
            assert not (parts[0] == "memoryd" and len(parts) > 1 and parts[1] in SURFACES), (path, m)


def test_sql_lives_in_storage_only() -> None:
    for path in _modules():
        if path.relative_to(SRC).parts[0] == "storage":
            continue
        assert "import sqlite3" not in path.read_text(), path


def test_public_api_matches_all() -> None:
    for name in memoryd.__all__:
        assert getattr(memoryd, name) is not None, name
    assert memoryd.Engine.__name__ == "Engine"
