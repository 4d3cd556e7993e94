"""Several processes writing one store: every acknowledged write is there, the chain verifies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

WRITER = """
import json, sys
from memoryd.shared.config import Settings
from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
home, cwd, worker, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with Engine.open(Settings(home=home), cwd=cwd, embedder=HashEmbedder()) as e:
    for i in range(n):
        r = e.memorize(f"Worker {worker} records that service_{worker}_{i}.py listens on port {8000 + i}")
        print(json.dumps([r.effect, r.atom_id]), flush=True)
"""


def test_parallel_writers_lose_nothing(tmp_path: Path, repo: Path) -> None:
    home = tmp_path / "home"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home), str(repo), str(w), "40"], stdout=subprocess.PIPE, text=True
        )  # fmt: skip
        for w in range(4)
    ]
    acked: list[str] = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        for line in out.splitlines():
            effect, atom_id = json.loads(line)
            assert effect == "applied"
            acked.append(atom_id)
    assert len(acked) == 160
    with Engine.open(Settings(home=home), cwd=repo, embedder=HashEmbedder()) as e:
        assert set(e.store.get_atoms(acked)) == set(acked)
        assert e.verify_chain().ok
        assert e.stats().snapshot_version == 160
