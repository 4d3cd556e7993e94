"""Storage backends behind the `Store` protocol; `open_store` opens the one the settings name."""

from __future__ import annotations

from ..config import Settings
from .base import Store, StoreTx

__all__ = ["Store", "StoreTx", "open_store"]


def open_store(settings: Settings) -> Store:
    """PostgreSQL when `settings.db` is a postgresql:// URL, else the SQLite file in the data root."""
    if settings.db:
        from .postgres import PostgresStore  # psycopg loads only when PostgreSQL is used

        return PostgresStore(settings.db, busy_timeout_ms=settings.busy_timeout_ms)
    from .sqlite import SqliteStore

    return SqliteStore(settings.db_path, busy_timeout_ms=settings.busy_timeout_ms, ann_min=settings.ann_min)
