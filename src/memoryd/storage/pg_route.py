"""Reads on PostgreSQL hot standbys: which standby serves a read, and when the primary must.

`PostgresStore(dsn, read_dsns=[…])` keeps its primary pool for every write, every read inside a write
transaction and the few reads that must be current (`PRIMARY_READS`), and hands every other read
statement to a `ReadRouter`:

- **Rotation.** A monitor thread checks each standby every `recheck_s` (a connection of its own):
  reachable, still in recovery, and its replay no more than `max_lag_s` behind the primary. Lag is
  measured against the primary's WAL insert position sampled at each check: the standby is as far
  behind as the oldest sample it has not replayed yet, which also catches a standby that stopped
  receiving WAL (a replay timestamp would look fine). A standby that fails a read (connection lost,
  refused) leaves rotation at once; the read goes on to the next standby, then the primary, so no
  request fails because a standby did. The monitor brings it back when it passes a check again.
- **Read-your-writes per person.** The store remembers, per reader key (`READER`, set by
  `PostgresStore.acting_for`: the team server's person), the primary's WAL insert position after their
  last write committed. Their reads go to a standby only once it has replayed that far: a standby
  known to be there serves at once; otherwise the read waits for it, polling `pg_last_wal_replay_lsn()`,
  up to `wait_s` (default 0.5 s) in all, then reads on the primary.
- **Stickiness.** A person's reads go to the same standby while it is in rotation (hash of the key),
  so their reads do not go back in time by hopping between standbys; reads without a key rotate.

The memory is per process: see docs/TEAM.md ("Hot standbys") for what covers a person whose next
request lands on another replica.
"""

from __future__ import annotations

import collections
import logging
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..shared.errors import StorageError

if TYPE_CHECKING:
    from .postgres import PostgresStore

__all__ = ["PRIMARY_ONLY", "READER", "ReadRouter", "read_targets"]

log = logging.getLogger("memoryd")

# Whose reads these are (a person on the team server): their writes are waited for. None: nobody's.
READER: ContextVar[str | None] = ContextVar("memoryd_store_reader", default=None)
# True inside `PostgresStore.on_primary()`: reads that must see every committed write.
PRIMARY_ONLY: ContextVar[bool] = ContextVar("memoryd_store_primary_only", default=False)
READERS_KEPT = 100_000  # people whose last write position a process remembers (oldest forgotten first)
_SCHEMES = re.compile(r",\s*(?=postgres(?:ql)?://)")
_UNKNOWN = 1 << 64  # a write whose position was not read back
_OWN_ATTRS = ("target_session_attrs", "load_balance_hosts")  # routing is ours on a read list


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def read_targets(values: Sequence[str]) -> list[str]:
    """The standbys named by `--db-read` values: each a URL or a comma list of URLs; a libpq multi-host
    URL (`postgresql://h1:5433,h2:5433/db`) names one standby per host. Raises StorageError on a bad one."""
    out: list[str] = []
    for value in values:
        for url in (u.strip() for u in _SCHEMES.split(value)):
            if not url:
                continue
            if not url.startswith(("postgresql://", "postgres://")):
                raise StorageError("--db-read: every URL must be a postgresql://… URL of a hot standby")
            try:
                d = conninfo_to_dict(url)
            except psycopg.ProgrammingError as exc:
                raise StorageError(f"--db-read is not a valid PostgreSQL URL: {exc}") from None
            for k in _OWN_ATTRS:
                d.pop(k, None)
            hosts = str(d.get("host") or "").split(",")
            ports = str(d.get("port") or "").split(",")
            if len(ports) == 1:
                ports = ports * len(hosts)
            if len(ports) != len(hosts):
                raise StorageError(f"--db-read {_where(d)}: {len(hosts)} hosts but {len(ports)} ports")
            for host, port in zip(hosts, ports, strict=True):
                one = {**d, "host": host or None, "port": port or None}
                out.append(make_conninfo("", **{k: v for k, v in one.items() if v is not None}))
    return list(dict.fromkeys(out))


def _where(d: dict[str, Any]) -> str:
    return f"{d.get('host') or 'localhost'}:{d.get('port') or 5432}/{d.get('dbname') or '(default database)'}"


def where(dsn: str) -> str:
    """host:port/dbname of a standby, for messages and status."""
    try:
        return _where(conninfo_to_dict(dsn))
    except psycopg.ProgrammingError:
        return "a --db-read server"


class _Standby:
    """One hot standby: its idle read connections, and whether it is in rotation."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.name = where(dsn)
        self.lock = threading.Lock()
        self.idle: list[psycopg.Connection[Any]] = []
        self.in_rotation = False
        self.reason = "not checked yet"
        self.replayed = 0  # the highest replay position seen (it only grows while the standby lives)
        self.lag_s = 0.0
        self.served = 0
        self.monitor: psycopg.Connection[Any] | None = None

    def drop_idle(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for conn in idle:
            conn.close()


class ReadRouter:
    """Chooses a standby for each read statement, or None (the primary). See the module docstring."""

    def __init__(self, store: PostgresStore, dsns: Sequence[str], *, wait_s: float = 0.5, max_lag_s: float = 5.0,
                 recheck_s: float = 1.0, connect_timeout_s: int = 2,
                 configure: Callable[[psycopg.Connection[Any]], None] | None = None) -> None:  # fmt: skip
        self.store = store
        self.wait_s = wait_s
        self.max_lag_s = max_lag_s
        self.recheck_s = recheck_s
        self.connect_timeout_s = connect_timeout_s
        self.configure = configure
        self.standbys = [_Standby(d) for d in dsns]
        self.primary_reads = 0  # reads that fell back to the primary (no standby in rotation or caught up)
        self.waits = 0  # reads that waited for a standby's replay
        self._written: collections.OrderedDict[str, tuple[int, float]] = collections.OrderedDict()  # key → (lsn, when)
        # key → the position a read of theirs already waited for in vain: their next reads do not wait again
        # (a recall is several statements) until the standby is seen there or they write again.
        self._gave_up: dict[str, int] = {}
        self._written_lock = threading.Lock()
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._page = 8192  # wal_block_size, read from the primary
        self._stop = threading.Event()
        self._rr = 0
        for s in self.standbys:
            self._check_first(s)
        self._thread = threading.Thread(target=self._monitor, name="memoryd-standbys", daemon=True)
        self._thread.start()

    # -- positions ---------------------------------------------------------------------------

    def _norm(self, lsn: int) -> int:
        """An insert position just past a WAL page header means the record before it ended at the page start
        (the standby reports that as replayed): count it as the page start."""
        off = lsn % self._page
        return lsn - off if off in (24, 40) else lsn

    def wrote(self, lsn_text: str | None) -> None:
        """After a commit: the primary's insert position, remembered for the current reader (None: not
        known, so their reads use the primary until any standby in rotation must have it: `max_lag_s`)."""
        key = READER.get()
        if key is None:
            return
        lsn = _UNKNOWN if lsn_text is None else self._norm(_lsn(lsn_text))
        with self._written_lock:
            before = self._written.get(key, (0, 0.0))[0]
            if before == _UNKNOWN and lsn != _UNKNOWN:
                before = 0  # a position read back now covers the one that was not
            self._written[key] = (max(lsn, before), time.monotonic())
            self._written.move_to_end(key)
            self._gave_up.pop(key, None)
            while len(self._written) > READERS_KEPT:
                self._written.popitem(last=False)

    # -- reads -------------------------------------------------------------------------------

    def _order(self, key: str | None) -> list[_Standby]:
        live = [s for s in self.standbys if s.in_rotation]
        if len(live) < 2:
            return live
        if key is None:
            self._rr = (self._rr + 1) % len(live)
            start = self._rr
        else:
            start = zlib.crc32(key.encode()) % len(live)
        return live[start:] + live[:start]

    def _connect(self, s: _Standby) -> psycopg.Connection[Any]:
        with s.lock:
            if s.idle:
                return s.idle.pop()
        conn = psycopg.connect(s.dsn, autocommit=True, connect_timeout=self.connect_timeout_s,
                               application_name="memoryd-read")  # fmt: skip
        try:
            if self.configure is not None:
                self.configure(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _release(self, s: _Standby, conn: psycopg.Connection[Any]) -> None:
        if conn.closed or not s.in_rotation:
            conn.close()
            return
        with s.lock:
            s.idle.append(conn)

    def _out(self, s: _Standby, reason: str) -> None:
        if s.in_rotation:
            log.warning("standby %s leaves the read rotation: %s", s.name, reason)
        s.in_rotation, s.reason = False, reason
        s.drop_idle()

    def _caught_up(self, conn: psycopg.Connection[Any], s: _Standby, need: int, deadline: float) -> bool:
        waited = False
        while True:
            row = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
            if row and row[0]:
                s.replayed = max(s.replayed, _lsn(row[0]))
            if s.replayed >= need:
                if waited:
                    self.waits += 1
                return True
            if time.monotonic() >= deadline:
                return False
            waited = True
            time.sleep(0.002)

    def rows(self, sql: str, params: Sequence[object]) -> list[Any] | None:
        """The statement's rows from a standby, or None: read it on the primary."""
        key = READER.get()
        need = 0
        if key is not None:
            with self._written_lock:
                need, at = self._written.get(key, (0, 0.0))
            if need == _UNKNOWN:
                if time.monotonic() - at < self.max_lag_s + self.recheck_s:
                    self.primary_reads += 1
                    return None
                need = 0
        waited_in_vain = key is not None and need > 0 and self._gave_up.get(key) == need
        deadline = time.monotonic() + (0.0 if waited_in_vain else self.wait_s)
        for s in self._order(key):
            try:
                conn = self._connect(s)
            except (psycopg.Error, StorageError) as exc:
                self._out(s, f"cannot connect: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}")
                continue
            try:
                if need and s.replayed < need and not self._caught_up(conn, s, need, deadline):
                    self._release(s, conn)
                    if key is not None:
                        with self._written_lock:
                            if len(self._gave_up) >= READERS_KEPT:
                                self._gave_up.clear()
                            self._gave_up[key] = need
                    continue  # not there yet: another standby, or the primary
                rows = self.store.run(conn, sql, params).fetchall()
            except (StorageError, psycopg.Error) as exc:
                cause = exc.__cause__ if isinstance(exc, StorageError) else exc
                if conn.closed or conn.broken or isinstance(cause, psycopg.OperationalError) and not \
                        isinstance(cause, psycopg.errors.QueryCanceled):  # fmt: skip
                    self._out(s, f"a read failed: {str(exc).strip().splitlines()[0]}")
                conn.close()
                continue  # e.g. canceled by a conflict with recovery: the next one, or the primary
            self._release(s, conn)
            s.served += 1
            return rows
        self.primary_reads += 1
        return None

    # -- the monitor -------------------------------------------------------------------------

    def _check_first(self, s: _Standby) -> None:
        """At start: a reachable server that is not a standby is refused; an unreachable one waits for the
        monitor (a standby may start after the replicas)."""
        try:
            recovering = self._probe(s)[0]
        except psycopg.Error as exc:
            log.warning("standby %s is not reachable yet (%s); reads use the primary until it is",
                        s.name, str(exc).strip().splitlines()[0] if str(exc).strip() else exc)  # fmt: skip
            s.reason = "unreachable"
            return
        if not recovering:
            self.close()
            raise StorageError(
                f"--db-read {s.name} is not a hot standby (pg_is_in_recovery() is false there: a primary?); "
                "give --db-read the standbys of the --db server (pg_basebackup -R … makes one)"
            )
        s.in_rotation, s.reason = True, "in rotation"

    def _probe(self, s: _Standby) -> tuple[bool, int]:
        if s.monitor is None or s.monitor.closed or s.monitor.broken:
            s.monitor = psycopg.connect(s.dsn, autocommit=True, connect_timeout=self.connect_timeout_s,
                                        application_name="memoryd-monitor")  # fmt: skip
        try:
            row = s.monitor.execute("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text").fetchone()
        except psycopg.Error:
            s.monitor.close()
            raise
        assert row is not None
        return bool(row[0]), _lsn(row[1]) if row[1] else 0

    def _sample_primary(self) -> None:
        try:
            with self.store.primary_connection() as conn:
                if not self._samples:
                    self._page = int(conn.execute("SHOW wal_block_size").fetchone()[0])  # type: ignore[index]
                row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        except (StorageError, psycopg.Error) as exc:
            log.debug("could not sample the primary's WAL position: %s", exc)
            return
        now = time.monotonic()
        self._samples.append((now, self._norm(_lsn(row[0]))))  # type: ignore[index]
        while len(self._samples) > 2 and self._samples[1][0] < now - 2 * self.max_lag_s - 2 * self.recheck_s:
            self._samples.popleft()

    def check(self) -> None:
        """One round of the monitor: sample the primary, then each standby in or out of rotation."""
        self._sample_primary()
        now = time.monotonic()
        for s in self.standbys:
            try:
                recovering, replayed = self._probe(s)
            except psycopg.Error as exc:
                self._out(s, f"unreachable: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}")
                continue
            if not recovering:
                self._out(s, "not in recovery any more (promoted?): it is not read as a standby")
                continue
            s.replayed = replayed  # may go back after a restart from an older base: take what it says
            behind = [t for t, lsn in self._samples if lsn > replayed]
            s.lag_s = now - behind[0] if behind else 0.0
            if s.lag_s > self.max_lag_s:
                self._out(s, f"replay is {s.lag_s:.1f} s behind the primary (bound {self.max_lag_s:g} s)")
            elif not s.in_rotation:
                log.warning("standby %s is back in the read rotation", s.name)
                s.in_rotation, s.reason = True, "in rotation"

    def _monitor(self) -> None:
        while not self._stop.wait(self.recheck_s):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - the monitor must outlive any one failure
                log.exception("the standby monitor failed a round")

    def status(self) -> list[dict[str, Any]]:
        """Each standby: name, in rotation, why not, replay lag, reads served (tests, benches, `--json`)."""
        return [{"standby": s.name, "in_rotation": s.in_rotation, "reason": s.reason, "lag_s": round(s.lag_s, 3),
                 "served": s.served} for s in self.standbys]  # fmt: skip

    def close(self) -> None:
        self._stop.set()
        thread = getattr(self, "_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
        for s in self.standbys:
            s.drop_idle()
            if s.monitor is not None:
                s.monitor.close()


@contextmanager
def reading_as(key: str | None) -> Iterator[None]:
    """Reads and writes inside are `key`'s (read-your-writes is kept per key)."""
    token = READER.set(key)
    try:
        yield
    finally:
        READER.reset(token)
