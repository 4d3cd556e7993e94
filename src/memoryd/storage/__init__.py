"""Storage backends behind the `Store` protocol; `open_store` opens the one the settings name.

Lazy: the file hook imports `storage.light` and must not pay for numpy and the models, so nothing
here is imported until it is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..shared.config import Settings
    from .base import Store, StoreTx

__all__ = ["Store", "StoreTx", "open_store"]


def open_store(settings: Settings) -> Store:
    """PostgreSQL when `settings.db` is a postgresql:// URL (reads on the hot standbys of `settings.db_read`),
    else the SQLite file in the data root."""
    from ..shared.errors import StorageError

    if settings.db and settings.db.startswith(("postgresql://", "postgres://")):
        from ..shared.extras import require

        require("postgres", "MEMORYD_DB=postgresql://…")
        from .postgres import PostgresStore  # psycopg loads only when PostgreSQL is used

        return PostgresStore(
            settings.db,
            busy_timeout_ms=settings.busy_timeout_ms,
            read_dsns=[settings.db_read] if settings.db_read else (),
            read_wait_ms=settings.read_wait_ms,
            read_max_lag_ms=settings.read_max_lag_ms,
        )
    if settings.db_read:
        raise StorageError(
            "MEMORYD_DB_READ (--db-read) names PostgreSQL hot standbys: it needs a PostgreSQL "
            "primary in MEMORYD_DB (--db postgresql://…)"
        )
    from .sqlite import SqliteStore

    return SqliteStore(settings.db_path, busy_timeout_ms=settings.busy_timeout_ms, ann_min=settings.ann_min)


def __getattr__(name: str) -> Any:
    if name in ("Store", "StoreTx"):
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module 'memoryd.storage' has no attribute {name!r}")
