"""Layering and public API are checked, not hoped for.

surfaces (cli, mcp_server, mcp_tools, hooks, install, _launch) → engine → storage / search / write /
vault / lifecycle → models / errors / config. Surfaces reach memories only through `Engine`;
the engine reaches the database only through the `Store` protocol (tests/test_store_protocol.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import memoryd

SRC = Path(memoryd.__file__).parent
SURFACES = {"cli", "mcp_server", "mcp_tools", "hooks", "install", "_launch", "ui", "filehook"}
# _launch: the `memoryd` command's entry; ui: the web console; filehook: the PreToolUse file hook
# What a surface may import from memoryd: the engine, the value types it takes and returns, and
# the other surfaces (the CLI runs the hooks and the installer).
SURFACE_MAY_IMPORT = {"engine", "models", "errors", "config", "scope", "__version__", "limits", "extras", "http_security",
                      "injected", *SURFACES}
# The file hook answers without the engine (no numpy, no pydantic): the anchors package (standard
# library only) and the storage's one read-only reader (docs/DECISIONS.md).
FILEHOOK_MAY_IMPORT = ("memoryd.anchors", "memoryd.storage.light")
# Concrete storage: only `storage.open_store` chooses one.
BACKENDS = {"memoryd.storage.sqlite", "memoryd.storage.postgres", "memoryd.storage.sql",
            "memoryd.storage.migrations", "sqlite3", "psycopg", "psycopg_pool"}  # fmt: skip


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package
                base = path.relative_to(SRC).parts[: -node.level]
                module = ".".join(("memoryd", *base, *(node.module.split(".") if node.module else ())))
                out.add(module)
                out.update(f"{module}.{a.name}" for a in node.names)  # `from . import vault` imports a module
            elif node.module:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _top(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def test_every_surface_is_known() -> None:
    entry_points = {"memoryd._launch", "memoryd.mcp_server"}  # pyproject [project.scripts]
    assert {m.split(".")[1] for m in entry_points} <= SURFACES
    assert {"cli", "hooks", "install", "mcp_tools"} <= {_top(p) for p in _modules()}


def test_only_the_mcp_adapter_imports_the_sdk() -> None:
    for path in _modules():
        uses_sdk = any(m == "mcp" or m.startswith("mcp.") for m in _imports(path))
        assert not uses_sdk or _top(path) in {"mcp_server", "mcp_tools"}, path


def test_nothing_below_the_surfaces_imports_them() -> None:
    for path in _modules():
        if _top(path) in SURFACES:
            continue
        for m in _imports(path):
            parts = m.split(".")
            assert not (parts[0] == "memoryd" and len(parts) > 1 and parts[1] in SURFACES), (path, m)


def test_surfaces_reach_memories_only_through_the_engine() -> None:
    for path in _modules():
        if _top(path) not in SURFACES:
            continue
        for m in _imports(path):
            parts = m.split(".")
            if _top(path) == "filehook" and m.startswith(FILEHOOK_MAY_IMPORT):
                continue
            if parts[0] == "memoryd" and len(parts) > 1:
                assert parts[1] in SURFACE_MAY_IMPORT, (str(path.relative_to(SRC)), m)
            assert m not in BACKENDS, (path, m)
        for node in ast.walk(ast.parse(path.read_text())):  # no engine internals either
            if isinstance(node, ast.Attribute) and node.attr in {"store", "core", "writer", "reader"}:
                raise AssertionError(f"{path.relative_to(SRC)}:{node.lineno} uses .{node.attr}")


def test_the_engine_imports_no_concrete_backend() -> None:
    for path in _modules():
        if _top(path) in SURFACES or _top(path) == "storage":
            continue
        assert not (_imports(path) & BACKENDS), (path, _imports(path) & BACKENDS)


def test_sql_lives_in_storage_only() -> None:
    for path in _modules():
        if _top(path) == "storage":
            continue
        assert "import sqlite3" not in path.read_text(), path


def test_public_api_matches_all() -> None:
    for name in memoryd.__all__:
        assert getattr(memoryd, name) is not None, name
    assert memoryd.Engine.__name__ == "Engine"
