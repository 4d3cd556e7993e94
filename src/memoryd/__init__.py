"""memoryd: local-first long-term memory for AI coding agents.

The SDK is the engine itself::

    from memoryd import Engine
    with Engine.open() as engine:
        engine.memorize("本專案用 PostgreSQL 16 做主資料庫", source="user")
        hits = engine.recall("PostgreSQL 連線池").hits
"""

from __future__ import annotations

# Not `from typing import …`: a hook process imports this package first, and `typing` costs it ~5 ms.
TYPE_CHECKING = False

__version__ = "0.1.0"

__all__ = [
    "AuthorizationRequired",
    "Conflict",
    "Engine",
    "Forbidden",
    "IntegrityError",
    "InvalidInput",
    "MemorydError",
    "MissingExtra",
    "NotFound",
    "Rejected",
    "Scope",
    "Settings",
    "StorageBusy",
    "StorageError",
    "TooManyAttempts",
    "Unauthorized",
    "__version__",
    "infer_scope",
]

if TYPE_CHECKING:
    from typing import Any

    from .engine import Engine
    from .shared.config import Settings
    from .shared.errors import (
        AuthorizationRequired,
        Conflict,
        Forbidden,
        IntegrityError,
        InvalidInput,
        MemorydError,
        MissingExtra,
        NotFound,
        Rejected,
        StorageBusy,
        StorageError,
        TooManyAttempts,
        Unauthorized,
    )
    from .shared.models import Scope
    from .shared.scope import infer_scope

_LAZY = {
    "Engine": "engine", "Settings": "shared.config", "Scope": "shared.models", "infer_scope": "shared.scope",
    **{name: "shared.errors" for name in (
        "AuthorizationRequired", "Conflict", "Forbidden", "IntegrityError", "InvalidInput", "MemorydError", "MissingExtra",
        "NotFound", "Rejected", "StorageBusy", "StorageError", "TooManyAttempts", "Unauthorized",
    )},
}  # fmt: skip


def __getattr__(name: str) -> Any:
    # Lazy so that `memoryd-mcp` starts without importing the engine's heavier dependencies.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memoryd' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
