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
