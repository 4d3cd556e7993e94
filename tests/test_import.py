"""Bulk import (`Engine.import_jsonl`, `memoryd import`): write path, batches, resume, bad lines, round trip."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.engine import Engine
from memoryd.engine.importer import MARKER_PREFIX
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

runner = CliRunner()


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows))
    return path


def active(engine: Engine) -> list[Any]:
    return engine.store.list_atoms(statuses=["active"], limit=-1, newest_first=False)


def test_import_uses_the_write_path_in_batches(engine: Engine, tmp_path: Path) -> None:
    rows = [
        {"content": "Never push directly to main; open a pull request", "type": "warning", "tags": ["git"],
         "triggers": ["push"], "title": "no direct pushes"},
        {"content": "我们用 PostgreSQL 16 做主数据库", "scope": "global", "source": "wiki"},
        {"content": "The staging DB is postgres://app:hunter2@db.internal:5432/app, reset nightly"},
        {"content": "Never push directly to main;   open a pull request"},  # same after normalisation
        {"content": "Deploys go through Argo CD only, never kubectl apply by hand", "type": "decision"},
    ]  # fmt: skip
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    before = engine.store.snapshot_version()
    seen: list[tuple[int, int]] = []
    r = engine.import_jsonl(src, batch_size=2, progress=lambda done, total: seen.append((done, total)))
    assert (r.imported, r.duplicates, r.rejected, r.bad, r.skipped, r.batches) == (4, 1, 0, 0, 0, 3)
    assert seen == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert engine.store.snapshot_version() == before + 3  # one transaction per batch
    atoms = {a.content: a for a in active(engine)}
    assert len(atoms) == 4
    warning = atoms["Never push directly to main; open a pull request"]
    assert (warning.type, warning.tags, warning.triggers, warning.title, warning.source) == (
        "warning", ["git"], ["push"], "no direct pushes", "import")  # fmt: skip
    pg = atoms["我们用 PostgreSQL 16 做主数据库"]
    assert pg.scope.is_global and pg.source == "wiki"
    assert not any("hunter2" in c for c in atoms)  # redacted before storage
    assert all(engine.path_of(a) and engine.path_of(a).exists() for a in atoms.values())  # type: ignore[union-attr]
    assert engine.stats().indexes.semantic == 4  # every memory has its vector
    assert engine.recall("Argo CD deploys").hits[0].atom.type == "decision"
    assert [e.action for e in engine.history(warning.id)] == ["create"]
    state = engine.import_state(r.sha256)
    assert state is not None and state["line"] == 5 and state["imported"] == 4
    assert engine.verify_chain().ok


def test_bad_and_rejected_lines_are_reported_with_line_numbers(engine: Engine, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    lines = [
        json.dumps({"content": "Backups run nightly at 02:00 UTC to the object store"}),
        "{not json",
        json.dumps({"title": "no content"}),
        json.dumps(["a", "list"]),
        json.dumps({"content": 42}),
        json.dumps({"content": "Tags are strings", "tags": "ops"}),
        json.dumps({"content": "Scope is global or omitted", "scope": "acme/other"}),
        json.dumps({"content": "   "}),
        json.dumps({"content": "Release notes live in docs/releases", "type": "note"}),
        "",
        json.dumps({"kind": "event", "action": "create"}),
        json.dumps({"kind": "snapshot", "content": "x"}),
    ]
    src.write_bytes(("\n".join(lines) + "\n").encode() + b'{"content": "caf\xe9"}\n')
    r = engine.import_jsonl(src, batch_size=4)
    problems = {p["line"]: (p["kind"], p["reason"]) for p in r.problems}
    assert problems == {
        2: ("bad", "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        3: ("bad", 'missing "content"'),
        4: ("bad", "expected a JSON object, got list"),
        5: ("bad", '"content" must be a string'),
        6: ("bad", "tags must be a list of strings"),
        7: ("bad", "scope must be \"global\" or omitted, got 'acme/other'"),
        8: ("rejected", "content is empty"),
        9: ("rejected", "unknown type 'note'; expected one of session, decision, preference, fact, playbook, "
                        "warning, handoff, lesson"),
        12: ("bad", "unknown kind 'snapshot'; expected \"atom\" (an export line) or none"),
        13: ("bad", "not UTF-8 (invalid byte at position 17)"),
    }  # fmt: skip
    assert (r.imported, r.rejected, r.bad, r.ignored, r.lines) == (1, 2, 8, 2, 13)
    assert r.summary().startswith(
        "imported 1, duplicates 0, rejected 2, bad 8, skipped 0 (already imported), ignored 2; 13 lines in"
    )


def test_gates_admit_and_review(engine: Engine, tmp_path: Path) -> None:
    rows = [{"content": "thanks!"}, {"content": "The CI cache key includes the lockfile hash, so bumps rebuild"}]
    r = engine.import_jsonl(write_jsonl(tmp_path / "a.jsonl", rows), gate="admit")
    assert (r.imported, r.rejected) == (1, 1)
    assert r.problems == [{"line": 1, "kind": "rejected", "reason": "not worth keeping: durability=0.10, utility=0.05, "
                           "relevance=0.10, accuracy=0.20, average=0.11; chit-chat or acknowledgement, nothing to "
                           "remember"}]  # fmt: skip
    r = engine.import_jsonl(write_jsonl(tmp_path / "b.jsonl", [{"content": "I am now looking at the file"}]),
                            gate="review")  # fmt: skip
    assert (r.imported, r.pending) == (0, 1)
    held = engine.store.list_promotions(scope_hashes=None)
    assert len(held) == 1 and engine.get(held[0].atom_id).vault_path is None  # held for review, no file
    with pytest.raises(Exception, match="unknown gate 'hold'; expected one of trusted, admit, review"):
        engine.import_jsonl(tmp_path / "a.jsonl", gate="hold")
    with pytest.raises(Exception, match="batch_size must be a positive integer, got 0"):
        engine.import_jsonl(tmp_path / "a.jsonl", batch_size=0)
    with pytest.raises(Exception, match="no file at"):
        engine.import_jsonl(tmp_path / "missing.jsonl")


def test_failed_batch_rolls_back_and_the_rerun_resumes(engine: Engine, tmp_path: Path) -> None:
    """A real failure between batches: the vault directory for warnings is blocked by a file."""
    rows = [{"content": f"Service {i} listens on port {8000 + i} behind the gateway", "type": "fact"}
            for i in range(4)]  # fmt: skip
    rows += [{"content": "Rotating the signing key needs both on-call leads", "type": "fact"},
             {"content": "Never run migrations during the Friday freeze", "type": "warning"},
             {"content": "Feature flags expire after 90 days", "type": "fact"}]  # fmt: skip
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    blocker = engine.vault_root / engine.scope.scope_hash / "warning"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory\n")
    with pytest.raises(OSError):
        engine.import_jsonl(src, batch_size=2)
    atoms = active(engine)
    assert len(atoms) == 4  # batches 1-2 committed, batch 3 (lines 5-6) rolled back
    files = sorted(p.stem for p in engine.vault_root.rglob("*.md"))
    assert files == sorted(a.id for a in atoms)  # no file left for the rolled-back line 5
    state = engine.import_state(hashlib.sha256(src.read_bytes()).hexdigest())
    assert state is not None and state["line"] == 4
    blocker.unlink()
    r = engine.import_jsonl(src, batch_size=2)
    assert (r.skipped, r.imported, r.duplicates, r.batches) == (4, 3, 0, 2)
    contents = [a.content for a in active(engine)]
    assert sorted(contents) == sorted(row["content"] for row in rows)  # each line exactly once
    again = engine.import_jsonl(src, batch_size=2)
    assert (again.skipped, again.imported, again.batches) == (7, 0, 0)
    assert engine.verify_chain().ok


def test_export_import_round_trip(engine: Engine, settings: Settings, tmp_path: Path, repo: Path,
                                  request: pytest.FixtureRequest) -> None:  # fmt: skip
    keep = [
        engine.memorize("决定从 React 切到 Solid，理由是性能+体积", type="decision", tags=["frontend"],
                        triggers=["solid"], title="前端切换决策", source="user"),
        engine.memorize("Prefer short commit subjects under 60 characters", type="preference",
                        scope=engine.scope.global_scope(), source="user"),
        engine.memorize("The payments service retries webhooks three times with backoff", source="agent"),
    ]  # fmt: skip
    hidden = engine.memorize("The old VPN endpoint is vpn1.internal", source="user")
    engine.govern(hidden.atom_id or "", "quarantine", "check")
    gone = engine.memorize("Tokens used to live in config/secrets.yaml", source="user")
    engine.govern(gone.atom_id or "", "tombstone", "wrong")
    held = engine.memorize("I am now looking at the file", gate="review")
    assert held.status == "pending" and all(k.effect == "applied" for k in keep)
    dump = tmp_path / "dump.jsonl"
    with dump.open("w") as fh:
        n = engine.export(fh)

    def shape(e: Engine) -> set[tuple[Any, ...]]:
        return {(a.content, a.type, a.title, tuple(a.tags), tuple(a.triggers), a.source, a.scope_hash)
                for a in active(e)}  # fmt: skip

    if settings.db:
        other = Settings(home=tmp_path / "fresh", db=request.getfixturevalue("pg_server").fresh_database())
    else:
        other = Settings(home=tmp_path / "fresh", db=None)
    with Engine.open(other, cwd=repo, embedder=engine.embedder) as fresh:
        r = fresh.import_jsonl(dump)
        assert (r.imported, r.bad, r.rejected, r.ignored) == (
            3,
            0,
            0,
            n - 3,
        )  # events, quarantined, tombstoned, pending
        assert shape(fresh) == shape(engine)
        assert not {a.id for a in active(fresh)} & {k.atom_id for k in keep}  # new ids
        assert all(len(fresh.history(a.id)) == 1 for a in active(fresh))  # new create events only
        assert fresh.recall("Solid 切换").hits[0].atom.title == "前端切换决策"
        assert fresh.import_jsonl(dump).skipped == n
    # Into the store it came from: everything is already there.
    r = engine.import_jsonl(dump)
    assert (r.imported, r.duplicates) == (0, 3)


def test_cli_import_progress_summary_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .conftest import make_repo

    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_EMBEDDER", "hash")
    repo = make_repo(tmp_path / "widgets")
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"content": "Lint runs with ruff and mypy --strict in CI"},
            "oops",
            {"content": "Releases are tagged vX.Y.Z from main", "type": "fact"},
        ],
    )

    def cli(*args: str, code: int = 0) -> Any:
        r = runner.invoke(app, [*args, "--cwd", str(repo)])
        assert r.exit_code == code, (r.exit_code, r.output)
        return r

    out = cli("import", str(src), "--batch-size", "2").output
    assert "line 2: bad: invalid JSON: Expecting value (column 1)" in out
    assert "imported 2, duplicates 0, rejected 0, bad 1, skipped 0 (already imported), ignored 0; 3 lines in" in out
    assert "import: 100%" in out  # the progress bar (stderr, mixed into the runner's output)
    again = json.loads(cli("import", str(src), "--json").stdout)
    assert (again["skipped"], again["imported"], again["batches"]) == (3, 0, 0)
    assert "error [invalid_input]: no file or folder at" in cli("import", str(tmp_path / "nope.jsonl"), code=2).output
    assert "error [invalid_input]: batch_size must be a positive integer, got 0" in cli(
        "import", str(src), "--batch-size", "0", code=2).output  # fmt: skip
    assert "unknown gate 'hold'" in cli("import", str(src), "--gate", "hold", code=2).output
    assert 'Only "content" is required' in runner.invoke(app, ["import", "--help"]).output.replace("only", "Only")
    blocked = write_jsonl(tmp_path / "b.jsonl", [{"content": "The API gateway times out after 30 s", "type": "fact"},
                                                 {"content": "Never deploy on Fridays", "type": "warning"}])  # fmt: skip
    with Engine.open(Settings(), cwd=repo, embedder=HashEmbedder()) as e:
        blocker = e.vault_root / e.scope.scope_hash / "warning"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("x")
    err = cli("import", str(blocked), "--batch-size", "1", code=6).output.splitlines()[-1]
    assert err.startswith("error [storage_error]: [Errno ") and str(blocker) in err
    assert err.endswith("; lines 1-1 are committed; run the same command again to continue")
    blocker.unlink()
    out = cli("import", str(blocked), "--batch-size", "1").output
    assert "imported 1, duplicates 0, rejected 0, bad 0, skipped 1 (already imported)" in out


def _wait_for(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_kill_9_mid_import_then_resume(settings: Settings, repo: Path, tmp_path: Path) -> None:
    n = 1200
    rows = [{"content": f"Job {i} of the nightly pipeline writes to bucket reports-{i % 37} (shard {i})"}
            for i in range(n)]  # fmt: skip
    src = write_jsonl(tmp_path / "big.jsonl", rows)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    env = {**os.environ, "MEMORYD_HOME": str(settings.home), "MEMORYD_EMBEDDER": "hash"}
    if settings.db:
        env["MEMORYD_DB"] = settings.db
    cmd = [str(Path(sys.executable).with_name("memoryd")), "import", str(src), "--batch-size", "25", "--cwd",
           str(repo), "--json"]  # fmt: skip
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder()) as watcher:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_for(lambda: (watcher.import_state(sha) or {}).get("line", 0) >= 100, timeout=120)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        line = (watcher.import_state(sha) or {})["line"]
        assert 100 <= line < n and line % 25 == 0, line  # killed mid-import, on a batch boundary
        assert len(active(watcher)) == line
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        r = json.loads(done.stdout)
        assert (r["skipped"], r["imported"], r["duplicates"], r["bad"]) == (line, n - line, 0, 0)
        contents = sorted(a.content for a in active(watcher))
        assert contents == sorted(row["content"] for row in rows)  # nothing lost, nothing twice
        assert len(watcher.store.events(MARKER_PREFIX + sha)) == n // 25
        assert watcher.verify_chain().ok


def test_ctrl_c_stops_after_a_committed_batch_and_says_how_to_resume(tmp_path: Path) -> None:
    from .conftest import make_repo

    repo = make_repo(tmp_path / "widgets")
    n = 6000  # long enough that the import cannot finish before the signal lands
    src = write_jsonl(tmp_path / "big.jsonl", [{"content": f"Queue {i} drains into topic events-{i % 11} (part {i})"}
                                               for i in range(n)])  # fmt: skip
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    settings = Settings(home=tmp_path / "home", db=None)
    env = {**os.environ, "MEMORYD_HOME": str(settings.home), "MEMORYD_EMBEDDER": "hash"}
    cmd = [str(Path(sys.executable).with_name("memoryd")), "import", str(src), "--batch-size", "25", "--cwd",
           str(repo)]  # fmt: skip
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder()) as watcher:
        # SIGINT back to its default in the child: a test run started in the background (`cmd &`)
        # inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
        try:
            _wait_for(lambda: (watcher.import_state(sha) or {}).get("line", 0) >= 50, timeout=120)
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        line = (watcher.import_state(sha) or {})["line"]
        assert line < n and err.splitlines()[-1] == (
            f"interrupted: lines 1-{line} are committed; run the same command again to continue")  # fmt: skip
        assert len(active(watcher)) == line
        done = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert (json.loads(done.stdout)["skipped"], len(active(watcher))) == (line, n)
