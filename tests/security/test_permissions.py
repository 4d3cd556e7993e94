"""Another local user cannot read memories: the data root is 0700, the database and every file 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.sqlite_only("the PostgreSQL server owns its files")
def test_data_root_database_and_files_are_private(settings: Settings, repo: Path) -> None:
    os.umask(0o022)  # a usual umask: files would be world-readable without memoryd's own modes
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder(), authority="operator") as e:
        m = e.memorize("The release checklist lives in docs/release.md and is run by the on-call lead",
                       source="user", gate="trusted")  # fmt: skip
        prompt = e.save_prompt("checklist", "Review {text} against the release checklist")
        path = e.path_of(e.get(m.atom_id))
        assert path is not None
        assert _mode(settings.home) == 0o700
        for f in (settings.home / "memoryd.db", path, prompt):
            assert _mode(f) & 0o077 == 0, (f, oct(_mode(f)))
        wal = settings.home / "memoryd.db-wal"
        assert not wal.exists() or _mode(wal) & 0o077 == 0


@pytest.mark.sqlite_only("the PostgreSQL server owns its files")
def test_an_existing_world_readable_data_root_is_tightened(settings: Settings, repo: Path) -> None:
    settings.home.mkdir(parents=True)
    os.chmod(settings.home, 0o755)
    (settings.home / "memoryd.db").touch()
    os.chmod(settings.home / "memoryd.db", 0o644)
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder()):
        assert _mode(settings.home) == 0o700 and _mode(settings.home / "memoryd.db") == 0o600
