"""Health, schema and whole-store copies."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..base import (
    Row,
)
from ..migrations import MIGRATIONS
from .core import COPY_TABLES, C, SqlCore, _adapt


class MaintenanceSql(SqlCore[C]):
    """Health, schema and whole-store copies."""

    def dangling_edges(self) -> int:
        return int(self._one("SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM atoms)"
                             " OR (dst LIKE 'entity:%' AND dst NOT IN (SELECT id FROM entities))"
                             " OR (dst NOT LIKE 'entity:%' AND dst NOT IN (SELECT id FROM atoms))")[0])  # fmt: skip

    def applied_migrations(self) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._rows("SELECT version, name FROM schema_migrations ORDER BY 1")]

    def latest_migration(self) -> int:
        return MIGRATIONS[-1].version

    def table_counts(self) -> dict[str, int]:
        return {table: int(self._one(f"SELECT count(*) FROM {table}")[0]) for table, _ in COPY_TABLES}

    def export_rows(self, batch: int = 500) -> Iterator[tuple[str, int, list[Row]]]:
        d = self.dialect
        for table, columns in COPY_TABLES:
            total = int(self._one(f"SELECT count(*) FROM {table}")[0])
            exprs = [d.vector_sql if c == "embedding" else f"a.{c}" for c in columns]
            terms = (f", {d.terms_sql}", d.terms_join) if table == "atoms" else ("", "")
            with self._reader() as conn, self.translating():
                cur = self.run(conn, f"SELECT {', '.join(exprs)}{terms[0]} FROM {table} a {terms[1]}"
                                     f" ORDER BY {self._copy_order(table)}")  # fmt: skip
                while rows := cur.fetchmany(batch):
                    yield table, total, [_adapt(table, columns, r, d.read_time, d.read_json, d.read_vector, d.read_terms)
                                         for r in rows]  # fmt: skip

    def import_rows(self, snapshot_version: int, batches: Iterable[tuple[str, list[Row]]]) -> None:
        d, tables = self.dialect, dict(COPY_TABLES)
        with self.transaction() as tx:
            tx._begin_import()
            for table, rows in batches:
                columns = tables[table]
                tx.load_rows(table, columns, [_adapt(table, columns, r, d.time, d.json, d.vector, list) for r in rows])
            tx._end_import(snapshot_version)
