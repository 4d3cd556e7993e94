"""Memory rows: atoms, sessions, promotions, code anchors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from ...anchors.model import Anchor
from ...shared.models import Atom, Promotion, Session
from .core import _PROMOTIONS, C, SqlCore


class MemoriesSql(SqlCore[C]):
    """Memory rows: atoms, sessions, promotions, code anchors."""

    def get_atoms(self, atom_ids: Iterable[str]) -> dict[str, Atom]:
        ids = list(dict.fromkeys(atom_ids))
        return {a.id: a for a in self._atoms(*self.dialect.any_of("a.id", ids))} if ids else {}

    def find_duplicate(self, scope_hash: str, norm_hash: str) -> Atom | None:
        found = self._atoms("a.scope_hash = ? AND a.norm_hash = ? AND a.status IN ('active', 'pending')",
                            (scope_hash, norm_hash), "ORDER BY a.seq LIMIT 1")  # fmt: skip
        return found[0] if found else None

    def list_atoms(self, *, scope_hashes: Sequence[str] | None = None, statuses: Sequence[str] | None = None,
                   types: Sequence[str] | None = None, epistemic: str | None = None, limit: int = 100,
                   newest_first: bool = True) -> list[Atom]:  # fmt: skip
        where, params = self._filters(("a.scope_hash", scope_hashes), ("a.status", statuses), ("a.type", types),
                                      ("a.epistemic", None if epistemic is None else [epistemic]))  # fmt: skip
        params.append(limit if limit >= 0 else self.dialect.limit_all)
        return self._atoms(f"1 = 1{where}", params, f"ORDER BY a.seq {'DESC' if newest_first else 'ASC'} LIMIT ?")

    def atom_edges(self, kind: str, *, scope_hashes: Sequence[str] | None, limit: int) -> list[tuple[str, str]]:
        where, params = self._filters(("scope_hash", scope_hashes))
        return [(r[0], r[1]) for r in self._rows(
            f"SELECT src, dst FROM edges WHERE kind = ? AND kind <> 'mentions'{where} ORDER BY created_at DESC LIMIT ?",
            (kind, *params, limit))]  # fmt: skip

    def neighbors(self, atom_id: str, *, scope_hash: str, n: int) -> tuple[list[Atom], list[Atom]]:
        row = self._one("SELECT seq FROM atoms WHERE id = ?", (atom_id,))
        if row is None:
            return [], []
        base = "a.scope_hash = ? AND a.status = 'active' AND "
        before = self._atoms(base + "a.seq < ?", (scope_hash, row[0], n), "ORDER BY a.seq DESC LIMIT ?")
        after = self._atoms(base + "a.seq > ?", (scope_hash, row[0], n), "ORDER BY a.seq ASC LIMIT ?")
        return list(reversed(before)), after

    def atoms_since(self, *, scope_hashes: Sequence[str], since: datetime, types: Sequence[str] | None,
                    limit: int) -> list[Atom]:  # fmt: skip
        where, params = self._filters(("a.scope_hash", scope_hashes), ("a.type", types or None))
        return self._atoms(f"a.status = 'active' AND a.created_at >= ?{where}",
                           (self.dialect.time(since), *params, limit), "ORDER BY a.seq DESC LIMIT ?")  # fmt: skip

    def get_session(self, session_id: str) -> Session | None:
        r = self._one("SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
                      " FROM sessions s JOIN atoms a ON a.id = s.id WHERE s.id = ?", (session_id,))  # fmt: skip
        return None if r is None else Session(id=r[0], source=r[1], title=r[2], started_at=self.dialect.read_time(r[3]),
                                              ended_at=self._time(r[4]), summary=r[5], scope_hash=r[6])  # fmt: skip

    def _promotions(self, sql: str, params: Sequence[object]) -> list[Promotion]:
        return [Promotion(id=r[0], atom_id=r[1], scope_hash=r[2], origin=r[3], durability=r[4], utility=r[5],
                          relevance=r[6], accuracy=r[7], average=r[8], reasoning=r[9], status=r[10],
                          created_at=self.dialect.read_time(r[11]), decided_at=self._time(r[12]))
                for r in self._rows(_PROMOTIONS + sql, params)]  # fmt: skip

    def list_promotions(self, *, scope_hashes: Sequence[str] | None, status: str = "pending", min_score: float = 0.0,
                        max_score: float = 1.0, types: Sequence[str] | None = None,
                        limit: int = 10) -> list[Promotion]:  # fmt: skip
        where, params = self._filters(("p.scope_hash", scope_hashes), ("a.type", types or None))
        return self._promotions(
            f" JOIN atoms a ON a.id = p.atom_id WHERE p.status = ? AND p.average >= ? AND p.average <= ?{where}"
            " ORDER BY p.average ASC, p.id ASC LIMIT ?",
            (status, min_score, max_score, *params, limit if limit >= 0 else self.dialect.limit_all),
        )

    def get_promotions(self, ids: Sequence[int]) -> dict[int, Promotion]:
        cond, params = self.dialect.any_of("p.id", [int(i) for i in ids], "bigint")
        return {p.id: p for p in self._promotions(f" WHERE {cond}", params)} if ids else {}

    def anchors_of(self, atom_ids: Sequence[str]) -> dict[str, list[Anchor]]:
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids:
            return {}
        cond, params = d.any_of("atom_id", ids)
        out: dict[str, list[Anchor]] = {}
        for r in self._rows("SELECT atom_id, path, symbol, kind, lang, commit_sha, blob, fingerprint, line, origin"
                            f" FROM anchors WHERE {cond} ORDER BY atom_id, kind, path{d.binary}, symbol{d.binary}",
                            params):  # fmt: skip
            out.setdefault(r[0], []).append(Anchor(path=r[1], symbol=r[2], kind=r[3], lang=r[4], commit=r[5], blob=r[6],
                                                   fingerprint=r[7], line=r[8], origin=r[9]))  # fmt: skip
        return out

    def anchored_atoms(self, *, scope_hashes: Sequence[str], statuses: Sequence[str], path: str | None = None,
                       symbol: str | None = None, limit: int = 1000) -> list[str]:  # fmt: skip
        d = self.dialect
        where: list[str] = []
        params: list[object] = []
        if path:
            prefix = path.rstrip("/") + "/"
            where.append("(n.path = ? OR substr(n.path, 1, ?) = ?)")
            params += [path.rstrip("/"), len(prefix), prefix]
        if symbol:
            where.append(f"(n.symbol = ? OR {d.ends_with.format('n.symbol')} = ?)")
            params += [symbol, len(symbol) + 1, "." + symbol]
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        in_scope, p1 = d.any_of("a.scope_hash", scope_hashes)
        in_status, p2 = d.any_of("a.status", statuses)
        return [r[0] for r in self._rows(  # driven by the anchors (path index): cost follows them, not the store size
            f"SELECT a.id FROM atoms a WHERE a.id IN (SELECT n.atom_id FROM anchors n{clause})"
            f" AND {d.no_index}{in_scope} AND {d.no_index}{in_status} ORDER BY a.seq DESC LIMIT ?",
            (*params, *p1, *p2, limit))]  # fmt: skip
