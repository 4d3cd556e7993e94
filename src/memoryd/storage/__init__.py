"""Storage backends behind the narrow `Store` protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Store, StoreTx

__all__ = ["Store", "StoreTx"]


def __getattr__(name: str) -> Any:
    # Lazy: the file hook imports storage.light and must not pay for numpy and the models.
    if name in __all__:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module 'memoryd.storage' has no attribute {name!r}")
