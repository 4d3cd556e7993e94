"""The console's and the stats' read models."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...shared.models import Atom, Scope, Session
from ..base import (
    AtomFilter,
    GroupCounts,
    StoreCounts,
)
from .core import _SCOPE_NAME, C, SqlCore


class ReportsSql(SqlCore[C]):
    """The console's and the stats' read models."""

    def counts(self, scope_hashes: Sequence[str] | None = None) -> StoreCounts:
        where, params = self._filters(("scope_hash", scope_hashes))
        by_status = {r[0]: int(r[1]) for r in self._rows(f"SELECT status, count(*) FROM atoms WHERE 1 = 1{where}"
                                                         " GROUP BY status", params)}  # fmt: skip
        live = f"status <> 'tombstoned'{where}"
        if scope_hashes is None:
            edges, indexed = "SELECT count(*) FROM edges", self.dialect.indexed_sql
        else:  # of these scopes' atoms
            edges = f"SELECT count(*) FROM edges WHERE src IN (SELECT id FROM atoms WHERE 1 = 1{where})"
            indexed = self.dialect.indexed_in_sql.format(where=where)
        row = self._one(
            f"SELECT ({edges}), (SELECT count(*) FROM atoms WHERE embedding IS NOT NULL AND {live}),"
            f" ({indexed}), (SELECT count(*) FROM atoms WHERE created_at IS NOT NULL AND {live}),"
            f" (SELECT count(*) FROM atoms WHERE type IS NOT NULL AND {live})",
            params * 5,  # each subquery's scope filter (none: no parameters)
        )
        return StoreCounts(atoms=sum(by_status.values()), by_status=by_status, edges=int(row[0]), semantic=int(row[1]),
                           keyword=int(row[2]), temporal=int(row[3]), categorical=int(row[4]))  # fmt: skip

    def group_counts(self, scope_hashes: Sequence[str] | None) -> GroupCounts:
        where, params = self._filters(("scope_hash", scope_hashes))
        live = f"WHERE status <> 'tombstoned'{where}"
        by_type = {r[0]: int(r[1]) for r in self._rows(f"SELECT type, count(*) FROM atoms {live} GROUP BY 1", params)}
        by_scope = {r[0]: {"name": r[1], "count": int(r[2])} for r in self._rows(
            f"SELECT scope_hash, {_SCOPE_NAME}, count(*) FROM atoms {live} GROUP BY 1, 2", params)}  # fmt: skip
        where, params = self._filters(("a.scope_hash", scope_hashes))
        top = self._rows("SELECT e.dst, count(*) FROM edges e JOIN atoms a ON a.id = e.src WHERE e.kind = 'mentions'"
                         f" AND a.status <> 'tombstoned'{where} GROUP BY 1 ORDER BY 2 DESC, e.dst{self.dialect.binary}"
                         " LIMIT 10", params)  # fmt: skip
        return GroupCounts(by_type=by_type, by_scope=by_scope,  # type: ignore[typeddict-item]
                           top_entities=[{"id": r[0], "count": int(r[1])} for r in top])  # fmt: skip

    def _filter_sql(self, f: AtomFilter) -> tuple[str, list[object]]:
        d = self.dialect
        where: list[str] = []
        params: list[object] = []

        def add(cond: str, *values: object) -> None:
            where.append(cond)
            params.extend(values)

        for column, values in (("a.scope_hash", f.scope_hashes), ("a.status", f.statuses), ("a.type", f.types)):
            if values is not None:
                cond, more = d.any_of(column, values)
                add(cond, *more)
        if f.exclude_scopes:
            cond, more = d.any_of("a.scope_hash", f.exclude_scopes)
            add(f"NOT {cond}", *more)
        if f.source is not None:
            add("a.source = ?", f.source)
        if f.tag is not None:
            cond, more = d.has_tag(f.tag, f.tag_terms)
            add(cond, *more)
        if f.entity is not None:
            add("EXISTS (SELECT 1 FROM edges e WHERE e.src = a.id AND e.dst = ? AND e.kind = 'mentions')", f.entity)
        if f.created_from is not None:
            add("a.created_at >= ?", d.time(f.created_from))
        if f.created_to is not None:
            add("a.created_at < ?", d.time(f.created_to))
        if f.last_used is not None:
            last = f"{d.greatest}(a.updated_at, coalesce(a.last_accessed_at, a.updated_at))"
            arms = []
            for w in f.last_used:
                cond, more = d.any_of("a.type", w.types)
                arm = [cond]
                params.extend(more)
                if w.since is not None:
                    arm.append(f"{last} >= ?")
                    params.append(d.time(w.since))
                if w.before is not None:
                    arm.append(f"{last} < ?")
                    params.append(d.time(w.before))
                if w.necessary is not None:
                    arm.append("a.epistemic = 'necessary'" if w.necessary else "a.epistemic <> 'necessary'")
                arms.append("(" + " AND ".join(arm) + ")")
            where.append("(" + (" OR ".join(arms) or "1 = 0") + ")")
        return (" AND ".join(where) or "1 = 1"), params

    def browse_atoms(self, f: AtomFilter) -> list[Atom]:
        where, params = self._filter_sql(f)
        if f.before is not None:
            where += " AND a.seq < coalesce((SELECT b.seq FROM atoms b WHERE b.id = ?), 0)"
            params.append(f.before)
        return self._atoms(where, (*params, f.limit), "ORDER BY a.seq DESC LIMIT ?")

    def count_atoms(self, f: AtomFilter, *, cap: int | None = None) -> int:
        where, params = self._filter_sql(f)
        if cap is None:
            return int(self._one(f"SELECT count(*) FROM atoms a WHERE {where}", params)[0])
        return int(
            self._one(f"SELECT count(*) FROM (SELECT 1 FROM atoms a WHERE {where} LIMIT ?) c", [*params, cap])[0]
        )

    def list_sessions(self, *, before: str | None, limit: int, exclude_scopes: Sequence[str] = ()) -> list[Session]:
        d = self.dialect
        sql = (
            "SELECT s.id, s.source, s.title, s.started_at, s.ended_at, s.summary, a.scope_hash"
            f" FROM sessions s {d.ordered_join} atoms a ON a.id = s.id WHERE 1 = 1"
        )  # sessions drive, newest first
        params: list[object] = []
        if before is not None:
            sql += f" AND s.id{d.binary} < ?"
            params.append(before)
        if exclude_scopes:  # correlated: a plain NOT IN on the join makes SQLite Bloom-filter every atom
            cond, more = d.any_of("b.scope_hash", exclude_scopes)
            sql += f" AND NOT EXISTS (SELECT 1 FROM atoms b WHERE b.id = s.id AND {cond})"
            params += more
        return [Session(id=r[0], source=r[1], title=r[2], started_at=d.read_time(r[3]), ended_at=self._time(r[4]),
                        summary=r[5], scope_hash=r[6])
                for r in self._rows(f"{sql} ORDER BY s.id{d.binary} DESC LIMIT ?", (*params, limit))]  # fmt: skip

    def atom_links(self, atom_id: str) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in self._rows(
            "SELECT src, dst, kind FROM edges WHERE src = ? AND dst NOT LIKE 'entity:%'"
            " UNION SELECT src, dst, kind FROM edges WHERE dst = ?", (atom_id, atom_id))]  # fmt: skip

    def top_entities(self, *, limit: int) -> list[tuple[str, int]]:
        return [(r[0], int(r[1])) for r in self._rows(
            "SELECT dst, count(*) FROM edges WHERE kind = 'mentions' GROUP BY dst"
            f" ORDER BY 2 DESC, dst{self.dialect.binary} LIMIT ?", (limit,))]  # fmt: skip

    def console_counts(self, parts: Sequence[str] = ("by_status", "by_type", "by_scope", "edges")) -> dict[str, Any]:
        columns = {"by_status": "status", "by_type": "type", "by_scope": "scope_hash"}
        out: dict[str, Any] = {}
        for part in parts:
            if part == "edges":
                out[part] = int(self._one("SELECT count(*) FROM edges")[0])
            else:
                out[part] = {
                    r[0]: int(r[1]) for r in self._rows(f"SELECT {columns[part]}, count(*) FROM atoms GROUP BY 1")
                }
        return out

    def scope_names(self, scope_hashes: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._reading() as conn, self.translating():
            for h in dict.fromkeys(scope_hashes):
                rows = self.run(conn, "SELECT tenant_id, workspace, repository FROM atoms WHERE scope_hash = ? LIMIT 1",
                                (h,)).fetchall()  # fmt: skip
                if rows:
                    r = rows[0]
                    out[h] = Scope.model_construct(tenant_id=r[0], workspace=r[1], repository=r[2]).name
        return out

    def growth(self, since: datetime) -> list[tuple[str, int]]:
        day = self.dialect.day("created_at")
        return [(r[0], int(r[1])) for r in self._rows(
            f"SELECT {day}, count(*) FROM atoms WHERE created_at >= ? GROUP BY 1 ORDER BY 1",
            (self.dialect.time(since),))]  # fmt: skip

    def recalls(self, *, scope_hashes: Sequence[str], since: datetime, until: datetime | None,
                limit: int) -> list[dict[str, Any]]:  # fmt: skip
        d = self.dialect
        cond, params = d.any_of("scope_hash", scope_hashes)
        sql = f"SELECT at, scope_hash, hits FROM recalls WHERE {cond} AND at >= ?"
        params.append(d.time(since))
        if until is not None:
            sql += " AND at <= ?"
            params.append(d.time(until))
        return [{"at": d.read_time(r[0]), "scope_hash": r[1], "hits": d.read_json(r[2])}
                for r in self._rows(sql + " ORDER BY at DESC, id DESC LIMIT ?", (*params, limit))]  # fmt: skip
