"""Storage backends behind the narrow `Store` protocol."""

from .base import Store, StoreTx

__all__ = ["Store", "StoreTx"]
