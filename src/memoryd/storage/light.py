"""Read-only queries for the file hook, which must answer in ~100 ms and so cannot import the engine.

`SqliteStore`/`PostgresStore` pull in numpy and the vector index; this module uses only `sqlite3`
(or psycopg for a PostgreSQL store) and returns plain tuples and `Anchor`s. It never migrates or
writes: a store that is missing or older than the anchors table gives no rows. The queries mirror
`anchored_atoms`/`anchors_of` of the full stores (block "code anchors").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..anchors.model import Anchor

__all__ = ["AnchorReader", "open_reader"]

_ANCHOR_COLUMNS = "atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin"


class AnchorReader:
    """A read-only connection answering the file hook's three questions."""

    def __init__(self, conn: Any, paramstyle: str) -> None:
        self._conn = conn
        self._q = "?" if paramstyle == "qmark" else "%s"

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        try:
            cur = self._conn.cursor()
            cur.execute(sql.replace("?", self._q), tuple(params))
            return list(cur.fetchall())
        except Exception:  # noqa: BLE001 - an old schema or a locked store: no context rather than an error
            return []

    def locked(self, scope_hash: str) -> bool:
        """A sensitive scope without a running grant (its memories must not be shown)."""
        if not self._rows("SELECT 1 FROM sensitive_scopes WHERE scope_hash = ?", (scope_hash,)):
            return False
        from datetime import UTC, datetime  # only for sensitive scopes: the hook's start-up counts

        now = datetime.now(UTC)
        for (expires,) in self._rows("SELECT expires_at FROM grants WHERE scope_hash = ?", (scope_hash,)):
            when = (
                expires
                if isinstance(expires, datetime)
                else datetime.fromisoformat(str(expires).replace("Z", "+00:00"))
            )
            if when > now:
                return False
        return True

    def anchored(self, scope_hashes: Sequence[str], path: str, limit: int = 50) -> list[tuple[str, str, str]]:
        """(id, type, content) of active atoms of these scopes anchored to `path`, newest first."""
        marks = ",".join("?" * len(scope_hashes))
        plus = "+" if self._q == "?" else ""  # SQLite: unary + keeps the planner on id lookups
        return [
            (r[0], r[1], r[2])
            for r in self._rows(
                # Driven by the anchors' path index: cost follows the anchors of this file, not the store's size.
                f"SELECT a.id, a.type, a.content FROM atoms a WHERE a.id IN (SELECT atom_id FROM anchors WHERE path = ?)"
                f" AND {plus}a.scope_hash IN ({marks}) AND {plus}a.status = 'active' ORDER BY a.seq DESC LIMIT ?",
                (path, *scope_hashes, limit),
            )
        ]

    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]:
        if not atom_ids:
            return {}
        marks = ",".join("?" * len(atom_ids))
        out: dict[str, list[Anchor]] = {}
        for r in self._rows(
            f"SELECT {_ANCHOR_COLUMNS} FROM anchors WHERE atom_id IN ({marks}) ORDER BY atom_id, kind, path, symbol",
            atom_ids,
        ):
            out.setdefault(r[0], []).append(
                Anchor(
                    path=r[1],
                    symbol=r[2],
                    kind=r[3],
                    lang=r[4],
                    commit=r[5],
                    blob=r[6],
                    fingerprint=r[7],
                    line=r[8],
                    origin=r[9],
                )  # fmt: skip
            )
        return out

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001, S110 - closing a read-only connection
            pass


def open_reader(home: Path, db_url: str | None) -> AnchorReader | None:
    """A reader over the configured store, or None when there is none yet (nothing was ever saved)."""
    if db_url and db_url.startswith(("postgresql://", "postgres://")):
        import psycopg

        try:
            pg = psycopg.connect(db_url, autocommit=True, connect_timeout=3, application_name="memoryd-hook")
        except psycopg.Error:
            return None
        return AnchorReader(pg, "format")
    path = home / "memoryd.db"
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    return AnchorReader(conn, "qmark")
