"""The vault's bookkeeping: each atom's file, and changes not published yet."""

from __future__ import annotations

from collections.abc import Sequence

from ..base import (
    OutboxEntry,
    VaultRecord,
)
from .core import C, SqlCore


class OutboxSql(SqlCore[C]):
    """The vault's bookkeeping: each atom's file, and changes not published yet."""

    def vault_digests(self) -> dict[str, VaultRecord]:
        return {r[0]: VaultRecord(*r[1:]) for r in self._rows("SELECT id, status, vault_path, vault_digest FROM atoms")}

    def vault_state(self, atom_ids: Sequence[str]) -> dict[str, VaultRecord]:
        if not atom_ids:
            return {}
        cond, params = self.dialect.any_of("id", list(dict.fromkeys(atom_ids)))
        return {
            r[0]: VaultRecord(*r[1:])
            for r in self._rows(f"SELECT id, status, vault_path, vault_digest FROM atoms WHERE {cond}", params)
        }

    def outbox(self) -> list[OutboxEntry]:
        return [(r[0], r[1], r[2]) for r in self._rows("SELECT atom_id, token, remove_path FROM vault_outbox")]

    def clear_outbox(self, entries: Sequence[tuple[str, str]]) -> None:
        if entries:
            with self._bookkeeping() as conn:
                self.run_many(
                    conn, "DELETE FROM vault_outbox WHERE atom_id = ? AND token = ?", [tuple(e) for e in entries]
                )
