"""Layering and public API are checked, not hoped for.

Surfaces (every way in: MCP tools, CLI, hooks and their PreToolUse dispatch, the file hook, the web
console, `memoryd install`, the Claude Code plugin) talk to the engine's public names and to the
shared leaf modules only. They never import storage, search, write-path, lifecycle or anchor
internals, never import a private (`_name`) engine name, and never touch `.store`, an engine part
(`.core`, `.writer`, `.reader`) or a private attribute of an engine. The exceptions are recorded
below with their reasons; the list is exact (a fixed exception must leave it), so a new reach fails
and an old one cannot hide.
"""

from __future__ import annotations

import ast
import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import memoryd
from memoryd.agents.hooks import EVENTS
from memoryd.anchors.symbols import parse_python

SRC = Path(memoryd.__file__).parent
ROOT = Path(__file__).resolve().parents[1]

# Top-level modules / packages of src/memoryd that are surfaces.
SURFACES = {
    "_launch",  # the `memoryd` command's entry (hook fast path, else the CLI)
    "cli",  # the CLI, `memoryd import` / `export` (the importers' surface) included
    "mcp",  # the MCP server: entry (app), tool handlers per profile, server class, checked transports
    "ui",  # the web console
    # what agent hosts run: hooks and the PreToolUse dispatch, the file hook (runs without the engine),
    # `memoryd install` / `uninstall` per host, `memoryd connect` (stdio MCP forwarded to a team server)
    "agents",
    "daemon",  # the resident memoryd (its local API, hooks and MCP over a Unix socket) and its thin clients
}
# The surfaces in order, top to bottom: each imports only the surfaces after it (lazy and annotation-only imports
# included), so no arrow points back up. `_launch` picks the hook client or the CLI; the CLI drives everything
# below it (installs and hooks of `agents`, the daemon, the console); the hook client (`agents`) asks the daemon;
# the daemon hosts both MCP profiles and the console; `mcp` serves the console beside HTTP MCP; `ui` is the console.
SURFACE_ORDER = ["_launch", "cli", "agents", "daemon", "mcp", "ui"]
# Below the engine, what every layer may share: the package root's re-exports and `shared/` (data types,
# settings, errors, limits, scope, and surface-neutral helpers that hold no business logic).
SHARED = {"memoryd", "shared"}
# Internals: what only the engine (and the layers below it) may import. `formats/` holds memoryd's own
# vault format and the other tools' formats; `text/` the text policies and the optional LLM.
INTERNALS = {"storage", "search", "text", "anchors", "formats"}

# Reaches that are part of the design.
RECORDED: set[tuple[str, str]] = {
    # The file hook answers in ~100 ms, so it cannot import the engine (~0.5 s): it reads the store
    # read-only through storage/light.py and composes with the standard-library-only anchors modules
    # the engine uses too (docs/DECISIONS.md, Code anchors; `Engine.memories_for_path` is its twin).
    ("agents/filehook.py", "memoryd.storage.light"),
    ("agents/filehook.py", "memoryd.anchors.drift"),
    ("agents/filehook.py", "memoryd.anchors.filectx"),
    ("agents/filehook.py", "memoryd.anchors.git"),
    # The team server binds each request's engine before a handler runs (MemorydServer._bind); the SDK's
    # public handlers get the HTTP request in their context, its two listings get none, so their SDK
    # handlers are wrapped (mcp SDK internals, not the engine's).
    ("mcp/server.py", "._handle_list_prompts on super()"),
    ("mcp/server.py", "._handle_list_resources on super()"),
}


def _imports(path: Path) -> set[str]:
    return {m for m, _ in _import_sites(path)}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _walk(node: ast.AST, *, skip_type_checking: bool) -> Iterator[ast.AST]:
    """ast.walk, optionally leaving out `if TYPE_CHECKING:` bodies (annotations reach nothing at run time)."""
    for child in ast.iter_child_nodes(node):
        if skip_type_checking and _type_checking(child):
            for stmt in child.orelse:  # type: ignore[attr-defined]
                yield stmt
                yield from _walk(stmt, skip_type_checking=True)
            continue
        yield child
        yield from _walk(child, skip_type_checking=skip_type_checking)


def _import_sites(path: Path, *, runtime_only: bool = False, text: str | None = None) -> set[tuple[str, str | None]]:
    """(module, imported name or None) for every import in `path`, lazy ones inside functions included."""
    tree = parse_python(path.read_text() if text is None else text)
    out: set[tuple[str, str | None]] = set()
    for node in _walk(tree, skip_type_checking=runtime_only):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package
                base = path.relative_to(SRC).parts[: -node.level]
                module = ".".join(("memoryd", *base, *(node.module.split(".") if node.module else ())))
            else:
                module = node.module or ""
            out.update((module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            out.update((a.name, None) for a in node.names)
    return out


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _top(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def _surface_files() -> list[Path]:
    return [p for p in _modules() if _top(p) in SURFACES]


def _reaches(path: Path, text: str | None = None) -> set[str]:
    """What a surface module reaches beyond the engine's public names and the shared modules."""
    text = path.read_text() if text is None else text
    found: set[str] = set()
    for module, name in _import_sites(path, runtime_only=True, text=text):
        parts = module.split(".")
        if parts[0] != "memoryd":
            continue
        if len(parts) == 1:  # `from memoryd import x` / `from .. import x`: x is a module or a package name
            target = name or ""
            if target in INTERNALS:
                found.add(f"memoryd.{target}")
            continue
        top = parts[1]
        if top in SURFACES or top in SHARED:
            continue  # another surface (cli → ui, hooks → filehook), or a shared leaf module
        if top == "engine":
            if name and name.startswith("_") and not name.startswith("__"):
                found.add(f"{module}.{name}")  # a private engine name
            continue  # the engine's public names, from the package or its parts
        # internals (or a module not classified yet)
        found.add(module if len(parts) >= 3 else f"{module}.{name}")
    tree = parse_python(text)
    foreign = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names if not a.name.startswith("memoryd")}  # fmt: skip  # os._exit is not ours
    own = {"self", "cls"} | foreign
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value.id if isinstance(node.value, ast.Name) else None
            if node.attr in {"store", "core", "writer", "reader"}:  # the engine's store and parts
                found.add(f".{node.attr}")
            elif node.attr.startswith("_") and not node.attr.startswith("__") and base not in own:
                found.add(f".{node.attr} on {base or ast.unparse(node.value)}")
    return found


def _surface_reaches() -> set[tuple[str, str]]:
    return {(str(p.relative_to(SRC)), r) for p in _surface_files() for r in _reaches(p)}


def test_every_module_is_classified() -> None:
    """A new top-level module must be put in one of the layers here before the other checks mean anything."""
    layers = SURFACES | SHARED | INTERNALS | {"engine", "__init__"}
    unknown = sorted({_top(p) for p in _modules()} - layers)
    assert not unknown, f"classify {unknown} in tests/test_architecture.py (surface, shared or internal)"
    assert {"ui", "agents", "mcp", "daemon", "cli"} <= SURFACES


def test_surfaces_reach_only_the_engine() -> None:
    reaches = _surface_reaches()
    new = sorted(reaches - RECORDED)
    assert not new, f"a surface reaches past the engine's public names: {new}"
    gone = sorted(RECORDED - reaches)
    assert not gone, f"no longer reached; take them out of RECORDED: {gone}"


def test_the_check_catches_a_violation() -> None:
    """The checker itself: a surface importing storage or search, a private engine name, or touching
    `.store` or an engine's private attribute is reported (the test above cannot pass by seeing nothing)."""
    app = SRC / "ui" / "app.py"
    clean = app.read_text()
    bad = clean + (
        "\n\ndef _bad(e):\n"
        "    from ..storage.sqlite import SqliteStore\n"
        "    from ..engine.core import _now\n"
        "    from ..search import rank\n"
        "    return e.store, e._reach, SqliteStore, _now, rank\n"
    )
    assert _reaches(app, bad) - _reaches(app, clean) == {
        "memoryd.storage.sqlite", "memoryd.engine.core._now", "memoryd.search.rank", ".store", "._reach on e",
    }  # fmt: skip


def test_the_plugin_is_configuration_only() -> None:
    """The Claude Code plugin holds no code: its hooks run `memoryd hook <event>` (hooks.py's dispatch)
    and its server is `memoryd-mcp`."""
    plugin = ROOT / "plugin"
    assert not [p for p in plugin.rglob("*") if p.is_file() and p.suffix not in {".json"}]
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text("utf-8"))["hooks"]
    for groups in hooks.values():
        for group in groups:
            for hook in group["hooks"]:
                argv = shlex.split(hook["command"])
                assert argv[:2] == ["memoryd", "hook"] and argv[2] in EVENTS and len(argv) == 3, hook
    servers = json.loads((plugin / ".mcp.json").read_text("utf-8"))["mcpServers"]
    assert {s["command"] for s in servers.values()} == {"memoryd-mcp"}


def test_only_the_mcp_adapter_imports_the_sdk() -> None:
    for path in _modules():
        uses_sdk = any(m == "mcp" or m.startswith("mcp.") for m in _imports(path))
        assert not uses_sdk or _top(path) == "mcp", path


def test_nothing_below_the_surfaces_imports_them() -> None:
    for path in _modules():
        if _top(path) in SURFACES:
            continue
        for m in _imports(path):
            parts = m.split(".")
            assert not (parts[0] == "memoryd" and len(parts) > 1 and parts[1] in SURFACES), (path, m)


def test_importers_formats_are_parsers_the_engine_calls() -> None:
    """Other tools' formats (formats/) read files into import records; the engine's importer stores
    them through the write path. The parsers touch neither the engine nor storage."""
    files = sorted((SRC / "formats").glob("*.py"))
    assert len(files) >= 4
    reached = {m.split(".")[1] for f in files for m in _imports(f) if m.startswith("memoryd.")} - {"formats"}
    assert reached <= SHARED, reached


# Concrete storage: only `storage.open_store` chooses one.
BACKENDS = {"memoryd.storage.sqlite", "memoryd.storage.postgres", "memoryd.storage.sql",
            "memoryd.storage.migrations", "sqlite3", "psycopg", "psycopg_pool"}  # fmt: skip


def test_the_engine_imports_no_concrete_backend() -> None:
    for path in _modules():
        if _top(path) in SURFACES or _top(path) == "storage":
            continue
        sites = _import_sites(path)
        reached = {m for m, _ in sites} | {f"{m}.{n}" for m, n in sites if n}  # `from .storage import sqlite`
        concrete = {m for m in reached if m in BACKENDS or m.startswith("memoryd.storage.sql.")}
        assert not concrete, (path, concrete)


def test_sql_lives_in_storage_only() -> None:
    for path in _modules():
        if _top(path) == "storage":
            continue
        text = path.read_text()
        assert "import sqlite3" not in text and "import psycopg" not in text, path


def test_public_api_matches_all() -> None:
    for name in memoryd.__all__:
        assert getattr(memoryd, name) is not None, name
    assert memoryd.Engine.__name__ == "Engine"


def test_every_store_write_passes_the_one_rights_check() -> None:
    """Issue 23: read-only is enforced once, where a write transaction opens (`Core.write`, `Core.untracked`,
    both through `Core.check_write`), not per tool. Enumerates every write path: a call of `.transaction(`
    anywhere outside storage/ and those two methods is a write that could skip the check."""
    sites = []
    for path in _modules():
        if _top(path) == "storage":
            continue
        tree = parse_python(path.read_text(), str(path))
        owners = {id(n): fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transaction":
                sites.append((str(path.relative_to(SRC)), owners.get(id(node))))
    assert sorted(sites) == [("engine/core.py", "untracked"), ("engine/core.py", "write")]


def test_error_statuses_and_exit_codes_live_on_the_error_classes() -> None:
    """Issue 22: an error's HTTP status and CLI exit code are set once, on its class (`memoryd.shared.errors`);
    no surface keeps a table of its own (the console's missed three codes)."""
    import re

    from memoryd.shared import errors

    table = re.compile(r"""["'](invalid_input|not_found|conflict|forbidden|unauthorized|storage_error)["']\s*:\s*\d""")
    offenders = [str(p.relative_to(SRC)) for p in _modules() if table.search(p.read_text())]
    assert offenders == []
    for cls in (errors.InvalidInput, errors.NotFound, errors.Conflict, errors.AuthorizationRequired,
                errors.Unauthorized, errors.TooManyAttempts, errors.Forbidden, errors.MissingExtra,
                errors.StorageError, errors.StorageBusy, errors.IntegrityError):  # fmt: skip
        assert errors.HTTP_STATUS[cls.code] == cls.status and errors.EXIT_CODES[cls.code] == cls.exit_code
        assert 400 <= cls.status <= 599 and 2 <= cls.exit_code <= 11
    assert errors.status_of("no_such_code") == 500


def test_no_import_cycle_between_shared_modules() -> None:
    """Issue 22: `models` and `scope` imported each other (a lazy import hid it); the shared modules import
    one another in one direction only, lazy and annotation-only imports included."""
    files = {p.stem: p for p in (SRC / "shared").glob("*.py") if p.stem != "__init__"}
    graph = {m: {i.split(".")[2] for i in _imports(path) if i.startswith("memoryd.shared.")} - {m}
             for m, path in files.items()}  # fmt: skip
    assert {"models", "scope", "errors", "config"} <= set(graph)
    cycles = sorted((a, b) for a in graph for b in graph[a] if a in graph.get(b, set()))
    assert cycles == []


def _targets(path: Path, text: str | None = None) -> set[str]:
    """The top-level modules of memoryd that `path` imports (every import: lazy and annotation-only ones too)."""
    tops = {_top(p) for p in _modules()}
    out = set()
    for module, name in _import_sites(path, text=text):
        parts = module.split(".")
        if parts[0] != "memoryd":
            continue
        target = parts[1] if len(parts) > 1 else name
        if target in tops and target != _top(path):
            out.add(target)
    return out


def _arrows_up(path: Path, text: str | None = None) -> set[str]:
    rank = {s: i for i, s in enumerate(SURFACE_ORDER)}
    mine = rank.get(_top(path))
    return {t for t in _targets(path, text) if mine is not None and t in rank and rank[t] < mine}


def test_surfaces_import_only_the_surfaces_below_them() -> None:
    assert set(SURFACE_ORDER) == SURFACES
    up = sorted((str(p.relative_to(SRC)), t) for p in _surface_files() for t in _arrows_up(p))
    assert up == [], f"an arrow back up (SURFACE_ORDER: {' > '.join(SURFACE_ORDER)}): {up}"


def test_the_order_check_catches_an_arrow_back_up() -> None:
    console = SRC / "ui" / "server.py"
    clean = console.read_text()
    bad = (
        clean
        + "\n\ndef _bad():\n    from ..daemon.client import connect\n    from .. import agents\n    return connect, agents\n"
    )
    assert _arrows_up(console, bad) - _arrows_up(console, clean) == {"daemon", "agents"}


def test_no_import_cycle_between_folders() -> None:
    """The top-level folders (and modules) of memoryd import one another without a circle."""
    graph: dict[str, set[str]] = {}
    for path in _modules():
        graph.setdefault(_top(path), set()).update(_targets(path))
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []
