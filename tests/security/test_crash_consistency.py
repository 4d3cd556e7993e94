"""Crash consistency both ways: `kill -9` at random points never loses an acknowledged write and never
invents one; the start-up sync that follows records no event nobody caused; no temp file stays.

Each run starts a writer (`_crash_writer.py`: memorize / update / replace / tombstone / delete, with
every attempt and acknowledgement fsynced to a side file), kills it with SIGKILL at a random moment,
then opens the store as a restarted server does (start-up vault sync) and checks:
acknowledged ⊆ stored ⊆ attempted, files match the database, no `vault` events, the chain verifies.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

from ..conftest import make_repo

WRITER = Path(__file__).with_name("_crash_writer.py")
RUNS = int(os.environ.get("MEMORYD_CRASH_RUNS", "50"))


def _state(e: Engine) -> dict[str, tuple[str, str]]:
    atoms = e.store.list_atoms(scope_hashes=[e.scope.scope_hash], statuses=None, limit=-1)
    return {a.id: (a.status, a.content if a.status != "tombstoned" else "") for a in atoms}


def _text(token: str) -> str:
    """What the writer stored for a token `t<seed>x<n>` (see _crash_writer.py)."""
    n = token.rsplit("x", 1)[1]
    return f"Crash test memory {token}: the deploy pipeline step {n} runs after the integration suite"


def _apply(expected: dict[str, tuple[str, str] | None], op: str, target: str, new: str, token: str) -> None:
    if op == "memorize":
        expected[new] = ("active", _text(token))
    elif op == "update":
        expected[target] = ("active", _text(token))
    elif op == "replace":
        old = expected.get(target)
        expected[target] = ("superseded", old[1] if old else "")
        expected[new] = ("active", _text(token))
    elif op == "tombstone":
        expected[target] = ("tombstoned", "")
    elif op == "delete":
        expected[target] = None


class _Same:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __enter__(self) -> Engine:
        return self.engine

    def __exit__(self, *exc: object) -> None:
        return None


def _settled(dsn: str, timeout: float = 10.0) -> None:
    """Wait until the killed writer's server processes are done: PostgreSQL finishes a COMMIT the client sent
    before it died, so a check started at once could miss the outbox row that commit adds, then see its atom."""
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                               " AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'").fetchone()  # fmt: skip
            if row is not None and row[0] == 0:
                return
            time.sleep(0.02)


def _check_vault(e: Engine) -> list[str]:
    """Every active atom's file is there with the recorded digest; no other memory file; no temp file."""
    problems = []
    digests = e.store.vault_digests()
    on_disk = {p for p in e.vault_root.rglob("*.md") if not p.name.startswith(".")}
    for atom_id, (status, rel, digest) in digests.items():
        if status != "active":
            if rel:
                problems.append(f"{atom_id} is {status} but records file {rel}")
            continue
        path = e.vault_root / rel if rel else None
        if path is None or not path.is_file():
            problems.append(f"active {atom_id} has no file")
            continue
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"{rel} differs from its recorded digest")
        on_disk.discard(path)
    problems += [f"file without a memory: {p}" for p in on_disk]
    problems += [f"temp file left: {p}" for p in e.vault_root.rglob(".*.tmp")]
    return problems


@pytest.mark.slow
def test_kill_minus_9_never_loses_or_invents(settings: Settings, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    repo = make_repo(tmp_path / "widgets")
    rng = random.Random(10)
    side = tmp_path / "side.log"
    lost = invented = spurious = 0
    problems: list[Any] = []
    runs = RUNS if not settings.db else max(10, RUNS // 2)  # PostgreSQL: half the runs (slower writers)
    env = {**os.environ, "MEMORYD_HOME": str(settings.home)}
    # The checking engine stays open: its vault_sync after each kill is what a restarted server runs.
    checker = Engine.open(settings, cwd=repo, embedder=HashEmbedder(), authority="operator")
    checker.memorize("Crash test seed memory: the deploy pipeline runs nightly", source="user", gate="trusted")
    killed_after_ack = 0
    for run in range(runs):
        base = _state(checker)
        side.write_text("")
        args = [sys.executable, str(WRITER), str(settings.home), str(repo), str(side), str(run)]
        proc = subprocess.Popen(args + ([settings.db] if settings.db else []), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 60
        while "ready" not in side.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.4))
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "writer exited"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if settings.db:
            _settled(settings.db)
        if proc.stderr:
            proc.stderr.close()
        lines = [ln.split() for ln in side.read_text().splitlines() if ln and ln != "ready"]
        attempts = [ln for ln in lines if ln[0] == "attempt"]
        acks = [ln for ln in lines if ln[0] == "ack"]
        killed_after_ack += bool(lines) and lines[-1][0] == "ack"
        # restart: what a server does at start (recovery + vault sync), then look
        with (
            Engine.open(settings, cwd=repo, embedder=HashEmbedder(), authority="operator")
            if run % 10 == 9
            else _Same(checker) as e
        ):  # a fresh process's engine now and then, the same one otherwise
            report = e.vault_sync()
            actual = _state(e)
            expected: dict[str, tuple[str, str] | None] = dict(base)
            for _, op, target, new, token in acks:
                _apply(expected, op, target, new, token)
            inflight = attempts[-1] if len(attempts) > len(acks) else None
            for atom_id in set(expected) | set(actual):
                want, got = expected.get(atom_id), actual.get(atom_id)
                if want == got:
                    continue
                related = inflight is not None and (
                    atom_id == inflight[2] or (got is not None and inflight[3] in got[1])
                )
                if related:
                    continue  # the one operation in flight may or may not have committed
                history = [" ".join(ln) for ln in lines if atom_id in ln]
                if want is not None and (got is None or got != want):
                    lost += 1
                    problems.append(("lost", run, atom_id, want, got, history))
                else:
                    invented += 1
                    problems.append(("invented", run, atom_id, want, got, history))
            attempted_tokens = {a[3] for a in attempts}
            for atom_id, (status, content) in actual.items():
                if atom_id not in base and not any(t in content for t in attempted_tokens) and status != "tombstoned":
                    invented += 1
                    problems.append(("never attempted", run, atom_id, content[:60]))
            changes = {k: v for k, v in report.items() if v and k != "broken"}
            vault_events = [ev for ev in e.store.events() if ev.actor == "vault"]
            if changes or vault_events or report["broken"]:
                spurious += 1
                problems.append(("spurious", run, changes, [(ev.action, ev.reason) for ev in vault_events],
                                 report["broken"]))  # fmt: skip
            problems += [("vault", run, p) for p in _check_vault(e)]
            chain = e.verify_chain()
            if not chain.ok:
                problems.append(("chain", run, chain.problem))
    checker.close()
    with capsys.disabled():
        print(
            f"\nkill -9 runs: {runs} ({'postgresql' if settings.db else 'sqlite'}), lost {lost}, invented "
            f"{invented}, spurious sync events {spurious}, killed right after an ack {killed_after_ack}"
        )
    assert runs >= (50 if not settings.db else 10)
    assert not problems, problems[:10]
