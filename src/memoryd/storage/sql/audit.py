"""The audit chain."""

from __future__ import annotations

from collections.abc import Sequence

from ...shared.models import Event
from ...shared.stamps import parse_iso
from .core import _EVENTS, C, SqlCore


class AuditSql(SqlCore[C]):
    """The audit chain."""

    def events(self, atom_id: str | None = None) -> list[Event]:
        where, params = (" WHERE e.atom_id = ?", (atom_id,)) if atom_id is not None else ("", ())
        return [Event(seq=r[0], id=r[1], atom_id=r[2], actor=r[3], action=r[4], reason=r[5], at=parse_iso(r[6]),
                      content_hash=r[7], prev_hash=r[8], hash=r[9], content=r[10])
                for r in self._rows(_EVENTS + where + " ORDER BY e.seq", params)]  # fmt: skip

    def _scoped_version(self, scope_hashes: Sequence[str]) -> int:
        """A snapshot version of these scopes alone: the audit events on their memories (append-only, so it
        only grows while memories stay in them), blind to every write elsewhere."""
        if not scope_hashes:
            return 0
        cond, params = self.dialect.any_of("scope_hash", list(dict.fromkeys(scope_hashes)))
        return int(self._one(f"SELECT count(*) FROM events WHERE atom_id IN (SELECT id FROM atoms WHERE {cond})",
                             params)[0])  # fmt: skip
