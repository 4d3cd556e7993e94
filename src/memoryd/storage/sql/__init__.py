"""The SQL both backends share: every statement of the `Store` protocol written once.

`SqlStore` holds the reads and `SqlTx` the writes, as SQL with `?` placeholders. A `Dialect` says
what differs between the databases in these statements: placeholders and arrays, time, JSON and
vector values, collation, "no limit", where an atom's keyword terms and entities are read from,
and the driver's exceptions with their mapping table. A backend (`sqlite.py`, `postgres.py`) is
its dialect plus what is genuinely its own: connections, transactions and locking, how a migration
script runs, keyword and vector search, how terms and vectors are written, access times, checkpoints.
The schema is written once too (`migrations.py`); `SqlStore._migrate` applies it.

Every statement passes `SqlStore.run`, which traces it and translates driver exceptions through
the dialect's table (`translate`): no driver exception reaches the engine.
"""

from __future__ import annotations

from .access import AccessSql
from .audit import AuditSql
from .core import (
    COPY_TABLES,
    DBAPI_ERRORS,
    C,
    Connection,
    Cursor,
    Dialect,
    ExcMap,
    SqlCore,
    dbapi_map,
    first_line,
    translate,
)
from .index import IndexSql
from .maintenance import MaintenanceSql
from .memories import MemoriesSql
from .outbox import OutboxSql
from .reports import ReportsSql
from .tx import SqlTx

__all__ = [
    "COPY_TABLES",
    "DBAPI_ERRORS",
    "Connection",
    "Cursor",
    "Dialect",
    "ExcMap",
    "SqlCore",
    "SqlStore",
    "SqlTx",
    "dbapi_map",
    "first_line",
    "translate",
]


class SqlStore(MemoriesSql[C], IndexSql[C], AuditSql[C], OutboxSql[C], AccessSql[C], ReportsSql[C], MaintenanceSql[C]):
    """Every read of the `Store` protocol, one role per module over the shared core (`core.SqlCore`)."""
