"""Driver errors become memoryd errors in one place, on every statement; SQLite reads never wait for a write.

The mapping tables follow httpx's HTTPCORE_EXC_MAP: every exception class a driver module exposes
has its own entry, so a new driver version that adds one fails here, not in production.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import psycopg_pool
import pytest
from ulid import ULID

from memoryd.shared.config import Settings
from memoryd.shared.errors import StorageBusy, StorageError
from memoryd.shared.models import Atom, Scope
from memoryd.storage import open_store
from memoryd.storage.postgres import PSYCOPG_EXC_MAP, PostgresDialect
from memoryd.storage.sqlite import SQLITE_EXC_MAP, SqliteDialect, SqliteStore

SCOPE = Scope(tenant_id="t", workspace="acme", repository="w", branch="main", root="/w")


def _exceptions(module: Any) -> set[type[BaseException]]:
    """The exception classes a driver module defines (not the ones it merely imports)."""
    return {v for v in vars(module).values() if isinstance(v, type) and issubclass(v, BaseException)
            and v.__module__.split(".")[0] == module.__name__.split(".")[0]}  # fmt: skip


def test_every_sqlite3_exception_is_mapped() -> None:
    assert {e for e in _exceptions(sqlite3) if e not in SQLITE_EXC_MAP} == set()


def test_every_psycopg_exception_is_mapped() -> None:
    not_errors = {psycopg.Rollback}  # raised by our own code to leave a transaction block, never by the driver
    exposed = _exceptions(psycopg) | _exceptions(psycopg_pool)
    assert {e for e in exposed - not_errors if e not in PSYCOPG_EXC_MAP} == set()
    sqlstate = _exceptions(psycopg.errors)  # ~270 SQLSTATE classes: each through its nearest listed base
    assert all(any(issubclass(e, k) for k in PSYCOPG_EXC_MAP) for e in sqlstate - not_errors)


def _pg(exc: Exception) -> StorageError:
    return PostgresDialect(5.0).translate_error(exc, "db:5432/x")


def test_psycopg_errors_keep_their_meaning() -> None:
    assert type(_pg(psycopg.errors.LockNotAvailable("lock timeout"))) is StorageBusy
    assert type(_pg(psycopg.errors.DeadlockDetected("deadlock"))) is StorageBusy
    assert type(_pg(psycopg.errors.SerializationFailure("conflict"))) is StorageBusy
    lost = _pg(psycopg.OperationalError("server closed the connection unexpectedly\nmore"))
    assert lost.message == ("lost the PostgreSQL connection to db:5432/x: server closed the connection unexpectedly; "
                            "check that the server is running")  # fmt: skip
    assert _pg(psycopg.errors.QueryCanceled("canceling statement")).message == "database error: canceling statement"
    assert "within 5s" in _pg(psycopg_pool.PoolTimeout("x")).message
    assert _pg(psycopg_pool.PoolClosed("x")).message == "the store is closed"
    assert type(_pg(psycopg.errors.UniqueViolation("dup"))) is StorageError


def test_sqlite_busy_is_recognised_by_its_result_code_not_its_text() -> None:
    d = SqliteDialect()
    busy = sqlite3.OperationalError("any text at all")
    busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    assert type(d.translate_error(busy, "x")) is StorageBusy
    snapshot = sqlite3.OperationalError("any text")
    snapshot.sqlite_errorcode = 517  # SQLITE_BUSY_SNAPSHOT, an extended code of SQLITE_BUSY # type: ignore[attr-defined]
    assert type(d.translate_error(snapshot, "x")) is StorageBusy
    wording = sqlite3.OperationalError("database table is locked")  # the text alone decides nothing
    wording.sqlite_errorcode = sqlite3.SQLITE_ERROR  # type: ignore[attr-defined]
    assert type(d.translate_error(wording, "x")) is StorageError


def _atom(i: int) -> Atom:
    now = datetime.now(UTC)
    return Atom(id=str(ULID()), content=f"memory {i}", type="fact", source="t", scope=SCOPE, scope_hash=SCOPE.scope_hash,
                epistemic="actual", polarity="affirmative", status="active", created_at=now, updated_at=now)  # fmt: skip


def test_a_write_lock_held_elsewhere_is_storage_busy(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", busy_timeout_ms=200)
    other = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process mid-write
        started = time.monotonic()
        with pytest.raises(StorageBusy, match="locked by another writer"), store.transaction() as tx:
            tx.append_event(atom_id=None, actor="t", action="noop", reason=None, content=None)
        assert time.monotonic() - started < 3
        assert store.events() == []  # reads go on meanwhile
        other.execute("COMMIT")
        with store.transaction() as tx:
            tx.append_event(atom_id=None, actor="t", action="noop", reason=None, content=None)
        assert [e.seq for e in store.events()] == [1]
    finally:
        other.close()
        store.close()


# Opens the store at argv[1] at the moment argv[2] (time.time()): several of these create one file together.
OPEN_AT = """
import sys, time
from pathlib import Path
from memoryd.storage.sqlite import SqliteStore
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
SqliteStore(Path(sys.argv[1])).close()
"""


def test_processes_creating_the_store_together_all_open_it(tmp_path: Path) -> None:
    """Switching a new file to WAL answered SQLITE_BUSY without waiting while another process switched it
    (four processes at once: about one in seven failed); every opening now waits like any other write."""
    failed = []
    for round_ in range(6):
        path, start = tmp_path / str(round_) / "m.db", time.time() + 2.0
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, str(path), str(start)], stderr=subprocess.PIPE,
                                  text=True) for _ in range(5)]  # fmt: skip
        failed += [p.communicate(timeout=60)[1][-1500:] for p in procs if p.wait(timeout=60)]
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert failed == []


def test_a_lock_taken_while_the_store_opens_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection is set up with the usual wait: the access-time connection, which never waits later,
    failed at once on `PRAGMA synchronous` (it reads the schema) when another process held the file then."""
    switch = SqliteStore._wal

    def switch_then_lock(self: SqliteStore, conn: sqlite3.Connection) -> None:
        switch(self, conn)
        other = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        other.execute("PRAGMA locking_mode = EXCLUSIVE")  # holds the file until closed, 0.3 s from now
        other.execute("BEGIN IMMEDIATE")
        other.execute("COMMIT")
        threading.Timer(0.3, other.close).start()

    monkeypatch.setattr(SqliteStore, "_wal", switch_then_lock)
    started = time.monotonic()
    store = SqliteStore(tmp_path / "m.db")
    try:
        assert time.monotonic() - started >= 0.3
        assert store._toucher.execute("PRAGMA busy_timeout").fetchone() == (0,)  # and then it never waits
    finally:
        store.close()


def test_a_new_file_locked_past_the_timeout_is_storage_busy(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN EXCLUSIVE")  # another process holds the new file (not yet in WAL mode)
        started = time.monotonic()
        with pytest.raises(StorageBusy, match="^database is locked by another writer: database is locked$"):
            SqliteStore(path, busy_timeout_ms=300)
        assert 0.3 <= time.monotonic() - started < 5
        other.execute("COMMIT")
    finally:
        other.close()
    store = SqliteStore(path, busy_timeout_ms=300)
    store.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_read_statements_are_translated_too(settings: Settings) -> None:
    store = open_store(settings)
    try:
        with store.transaction() as tx:
            tx.insert_atom(_atom(1), norm_hash="a", terms=["memory"], vector=None)
        if settings.db:
            with psycopg.connect(settings.db, autocommit=True) as conn:
                conn.execute("ALTER TABLE edges RENAME TO edges_gone")
        else:
            with sqlite3.connect(settings.db_path) as conn:
                conn.execute("ALTER TABLE edges RENAME TO edges_gone")
        with pytest.raises(StorageError, match=r"^database error: .*edges"):
            store.list_atoms()
        with pytest.raises(StorageError, match="edges"):
            store.dangling_edges()
    finally:
        store.close()


def test_sqlite_reads_do_not_wait_for_a_write(tmp_path: Path) -> None:
    """A read on another thread finishes while a write transaction (and its vault fsync) is open, and sees
    only committed rows; access times never wait either."""
    store = SqliteStore(tmp_path / "m.db")
    first = _atom(1)
    with store.transaction() as tx:
        tx.insert_atom(first, norm_hash="a", terms=["memory"], vector=np.ones(4, dtype=np.float32) / 2)
    inside, release = threading.Event(), threading.Event()
    second = _atom(2)

    def writer() -> None:
        with store.transaction() as tx:
            tx.insert_atom(second, norm_hash="b", terms=["memory"], vector=np.ones(4, dtype=np.float32) / 2)
            assert set(store.get_atoms([first.id, second.id])) == {first.id, second.id}  # its own writes show
            inside.set()
            release.wait(10)  # e.g. the fsync of a markdown file

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert inside.wait(10)
        started = time.monotonic()
        assert set(store.get_atoms([first.id, second.id])) == {first.id}  # committed rows only
        assert store.keyword_candidates(["memory"], scope_hashes=[SCOPE.scope_hash], statuses=["active"], limit=5) \
            == [first.id]  # fmt: skip
        query = np.ones(4, dtype=np.float32) / 2
        assert [i for i, _ in store.vector_candidates(query, scope_hashes=[SCOPE.scope_hash], k=5)] == [first.id]
        store.touch([first.id])
        assert time.monotonic() - started < 2
    finally:
        release.set()
        t.join(10)
    assert {i for i, _ in store.vector_candidates(query, scope_hashes=[SCOPE.scope_hash], k=5)} == {first.id, second.id}
    store.touch([second.id])
    store.close()  # writes the access times still pending
    store = SqliteStore(tmp_path / "m.db")
    assert all(a.last_accessed_at is not None for a in store.get_atoms([first.id, second.id]).values())
    store.close()


def test_a_rolled_back_vector_never_enters_the_index(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    gone = _atom(1)
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.insert_atom(gone, norm_hash="a", terms=[], vector=np.ones(4, dtype=np.float32) / 2)
        store.warm()  # a search from the writing thread mid-transaction
        raise RuntimeError("the write fails")
    kept = _atom(2)
    with store.transaction() as tx:
        tx.insert_atom(kept, norm_hash="b", terms=[], vector=np.ones(4, dtype=np.float32) / 2)
    found = store.vector_candidates(np.ones(4, dtype=np.float32) / 2, scope_hashes=[SCOPE.scope_hash], k=5)
    assert [i for i, _ in found] == [kept.id]
    store.close()
