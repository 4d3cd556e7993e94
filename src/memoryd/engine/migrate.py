"""Moving a whole store from SQLite to PostgreSQL: `migrate_store` copies every row between two stores
and checks the copy; `migrate` (the `memoryd migrate` command) opens both, copies, then compares recalls
through an engine on each side. An operation over stores, not a part of one engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..shared.config import Settings
from ..shared.errors import InvalidInput, StorageError
from ..storage import Store, open_store
from ..storage.base import Row
from .reads import verify_chain

__all__ = ["Progress", "migrate", "migrate_store"]

Progress = Callable[[str, int, int], None]  # (table, rows done, rows in all)


def migrate_store(src: Store, dst: Store, progress: Progress | None = None, *, batch: int = 500) -> dict[str, int]:
    """Copy every row of `src` into the empty store `dst`, in one transaction, then check the copy.

    Copies atoms with their vectors and keyword terms, the event chain with its payloads, entities,
    edges, sessions, promotions, sensitive scopes, grants, access requests, code anchors and the recall log
    (not the vault outbox: it names the source's files); then checks row
    counts on both sides and re-verifies the copied hash chain. `progress(table, done, total)` is
    called per batch. Returns the rows copied per table. Raises StorageError (and copies nothing)
    when the target already holds memories, or when a check fails.
    """
    held = dst.table_counts()
    if held["atoms"] or held["events"]:
        raise StorageError(f"the target database {dst.where} is not empty; migrate into a new database")
    copied = dict.fromkeys(held, 0)

    def batches() -> Iterator[tuple[str, list[Row]]]:
        for table, total, rows in src.export_rows(batch):
            yield table, rows
            copied[table] += len(rows)  # loaded
            if progress is not None:
                progress(table, copied[table], total)

    dst.import_rows(src.snapshot_version(), batches())
    want, have = src.table_counts(), dst.table_counts()
    for table, n in copied.items():
        if not want[table] == have[table] == n:
            raise StorageError(f"copy check failed for {table}: {want[table]} rows in the source, {have[table]} copied")
    report = verify_chain(dst, dst)
    if not report.ok:
        raise StorageError(f"copied event chain does not verify at seq {report.first_bad_seq}: {report.problem}")
    return copied


def migrate(src: str, dst: str, *, settings: Settings, cwd: Path | None = None, progress: Progress | None = None,
            samples: int = 5) -> dict[str, Any]:  # fmt: skip
    """Move a whole SQLite store into an empty PostgreSQL database, then check it.

    The copy verifies row counts and the hash chain itself; afterwards up to `samples` memories
    are recalled on both stores by their own first words, and the top results must agree.
    Raises InvalidInput for a bad source or target, StorageError when a check fails.
    """
    from ..shared.extras import require
    from . import Engine

    require("postgres", "memoryd migrate (PostgreSQL)")

    src_path = Path(src.removeprefix("sqlite://"))
    if src_path.is_dir():
        src_path = src_path / "memoryd.db"
    if src_path.name != "memoryd.db":
        raise InvalidInput(f"--from must name a memoryd data root or its memoryd.db, got {src!r}")
    if not dst.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(f"--to must be a postgresql:// URL, got {dst!r}")
    if not src_path.exists():
        raise StorageError(f"no SQLite store at {src_path}")
    lite_settings = settings.model_copy(update={"home": src_path.parent, "db": None})
    pg_settings = settings.model_copy(update={"db": dst})
    source, target = open_store(lite_settings), open_store(pg_settings)
    try:
        copied = migrate_store(source, target, progress)
    finally:
        source.close()
        target.close()
    checked = 0
    with (
        Engine.open(lite_settings, cwd=cwd, authority="operator") as lite,
        Engine.open(pg_settings, cwd=cwd, embedder=lite.embedder, authority="operator") as pg,
    ):
        for atom in lite.store.list_atoms(statuses=["active"], limit=samples):
            query = " ".join(atom.content.split()[:8])[:80]
            want = [h.atom.id for h in lite.recall(query, max_results=3, scope=atom.scope).hits]
            got = [h.atom.id for h in pg.recall(query, max_results=3, scope=atom.scope).hits]
            if want[:1] != got[:1]:
                raise StorageError(f"recall differs after migration for {query!r}: {want[:1]} vs {got[:1]}")
            checked += 1
        report = pg.verify_chain()
        if not report.ok:
            raise StorageError(f"the migrated chain does not verify: {report.problem}")
    return {"copied": copied, "recalls_checked": checked, "chain_events": report.events}
