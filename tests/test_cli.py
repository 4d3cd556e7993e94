"""The CLI as a person uses it: real store, human output, --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app

from .conftest import make_repo

runner = CliRunner()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "widgets")

    def run(*args: str, code: int = 0) -> str:
        r = runner.invoke(app, [*args, "--cwd", str(repo)])
        assert r.exit_code == code, (r.exit_code, r.output)
        return r.output

    return run


def test_memorize_recall_history_roundtrip(cli) -> None:  # type: ignore[no-untyped-def]
    out = json.loads(cli("memorize", "Never push directly to main; open a pull request", "--json"))
    assert out["effect"] == "applied"
    atom = out["atom_id"]
    assert atom in cli("recall", "push to main")
    hits = json.loads(cli("recall", "pull request", "--json"))
    assert hits[0]["atom_id"] == atom and 0 < hits[0]["score"] <= 1
    assert "applied" in cli("correct", atom, "confirm_necessary", "--reason", "team rule")
    history = json.loads(cli("history", atom, "--json"))
    assert [e["action"] for e in history] == ["create", "confirm_necessary"]
    assert "chain ok" in cli("verify")
    assert "Constraints" in cli("brief")
    assert "snapshot_version: 2" in cli("stats")


def test_rejections_and_errors_map_to_exit_codes(cli) -> None:  # type: ignore[no-untyped-def]
    assert "rejected" in cli("memorize", "   ", code=4)
    assert "no atom with id" in cli("correct", "01NOPE", "negate", "--reason", "x", code=4)
    assert "error [invalid_input]: query is empty" in cli("recall", " ", code=2)
    assert "error [not_found]" in cli("history", "01NOPE", code=3)


def test_govern_restore_and_export(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    atom = json.loads(cli("memorize", "Deploy keys live in the ops vault under /infra/deploy", "--json"))["atom_id"]
    assert "applied" in cli("govern", atom, "quarantine", "--reason", "check")
    assert "applied" in cli("govern", atom, "restore", "--reason", "fine")
    assert "applied" in cli("handoff", "Moved deploy keys to the vault; next: rotate them")
    out = tmp_path / "dump.jsonl"
    cli("export", str(out))
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert kinds.count("atom") == 2 and kinds.count("event") == 4


def test_vault_scope_review_timeline_show_doctor(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    atom = json.loads(cli("memorize", "Backups run nightly at 02:00 UTC to the object store", "--json"))["atom_id"]
    shown = json.loads(cli("show", atom, "--json"))
    path = Path(shown["path"])
    assert path.exists() and [h["action"] for h in shown["history"]] == ["create"]
    path.write_text(path.read_text().replace("02:00", "03:00"))
    assert json.loads(cli("vault", "check", "--json"))["edited"] == [str(path)]
    synced = json.loads(cli("vault", "sync", "--json"))
    assert synced["edited"][0]["memory_id"] == atom
    bad = path.parent / "broken.md"
    bad.write_text("no frontmatter here\n")
    assert "broken:" in cli("vault", "sync", code=4) and bad.read_text() == "no frontmatter here\n"
    assert "03:00" in cli("timeline", "--since", "1w")
    assert "since must look like" in cli("timeline", "--since", "soon", code=2)
    scope = json.loads(cli("scope", "show", "--json"))
    assert scope["scope_name"] == "acme/widgets" and scope["sensitive"] is False
    assert "not marked sensitive" in cli("scope", "grant", code=2)
    assert "is sensitive" in cli("scope", "mark-sensitive")
    assert "agents may read acme/widgets until" in cli("scope", "grant", "--minutes", "5")
    assert "minutes must be between 1 and 1440" in cli("scope", "grant", "--minutes", "0", code=2)
    assert "no requests" in cli("scope", "requests")
    assert "no longer sensitive" in cli("scope", "unmark")
    assert "nothing pending" in cli("review")
    assert "pass promotion_ids" in cli("promote", code=2)
    assert "skipped #7: no promotion with id 7" in cli("reject", "7")
    doc = json.loads(cli("doctor", "--json"))
    assert doc["index_db"].startswith("ok") and doc["sync"] == "warn: 1 broken (see `memoryd vault check`)"
