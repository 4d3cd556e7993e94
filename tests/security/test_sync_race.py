"""Vault sync never races the engine: while another process tombstones, updates and deletes memories,
repeated syncs record no deletion and no edit for an atom the engine changed during their scan."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

from ..conftest import make_repo

CHANGER = """
import random, sys
from pathlib import Path
from memoryd.shared.config import Settings
from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
home, repo, db, seed = sys.argv[1], sys.argv[2], sys.argv[3] or None, int(sys.argv[4])
rng = random.Random(seed)
with Engine.open(Settings(home=Path(home), db=db), cwd=repo, embedder=HashEmbedder()) as e:
    ids = [a.id for a in e.store.list_atoms(scope_hashes=[e.scope.scope_hash], statuses=["active"], limit=-1)
           if a.content.startswith(f"Race test memory {seed}-")]
    rng.shuffle(ids)
    print("ready", flush=True)
    for n, atom_id in enumerate(ids):
        kind = n % 4
        if kind == 0:
            e.govern(atom_id, "tombstone", "race test")
        elif kind == 1:
            e.update(atom_id, content=f"Race test memory {n} was updated by the engine, not on disk")
        elif kind == 2:
            e.update(atom_id, tags=["raced", str(n)])
        else:
            e.delete(atom_id)
        print(f"{kind} {atom_id}", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("rounds", [3])
def test_sync_records_nothing_for_atoms_the_engine_changes(settings: Settings, tmp_path: Path, rounds: int,
                                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    repo = make_repo(tmp_path / "widgets")
    total_changed = syncs = 0
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder(), authority="operator") as syncer:
        for r in range(rounds):
            for i in range(80):
                syncer.memorize(f"Race test memory {r}-{i}: service {i} listens on port {9000 + i}", source="user",
                                gate="trusted")  # fmt: skip
            proc = subprocess.Popen([sys.executable, "-c", CHANGER, str(settings.home), str(repo), settings.db or "",
                                     str(r)], stdout=subprocess.PIPE, text=True)  # fmt: skip
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            while proc.poll() is None:  # sync as fast as possible while the other process writes
                report = syncer.vault_sync()
                syncs += 1
                assert not report["deleted"] and not report["edited"] and not report["retagged"], report
                assert not report["imported"] and not report["broken"], report
            done = [line.split() for line in proc.stdout.read().splitlines()]
            assert proc.returncode == 0 and len(done) == 80
            total_changed += len(done)
            report = syncer.vault_sync()
            assert not any(report[k] for k in ("deleted", "edited", "retagged", "imported", "broken")), report
            states = syncer.store.vault_digests()
            for kind, atom_id in done:
                want = {"0": "tombstoned", "1": "active", "2": "active", "3": None}[kind]
                assert (states.get(atom_id) or (None,))[0] == want, (kind, atom_id, states.get(atom_id))
        vault_events = [ev for ev in syncer.store.events() if ev.actor == "vault"]
        assert vault_events == [], [(ev.action, ev.reason) for ev in vault_events]
        assert syncer.verify_chain().ok
    with capsys.disabled():
        print(f"\nsync race: {syncs} syncs during {total_changed} engine changes, 0 events recorded by sync")
