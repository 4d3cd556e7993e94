"""Scope arguments naming another repository are answered with a warning; the person at the CLI reaches any scope."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.shared.config import Settings

from ..conftest import make_repo
from ._util import answer, person, session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_foreign_scope_argument_gets_a_warning_saying_where_it_went(settings: Settings, repo: Path) -> None:
    async with session(settings, repo) as s:
        for tool, args in (
            ("mem_save", {"content": "Deploys run nightly from main with Argo CD", "scope": "acme/other"}),
            (
                "mem_capture_passive",
                {"content": "Mirrors sync hourly", "source": "mirror", "scope": "0123abcd0123abcd"},
            ),
            ("mem_search", {"query": "deploys", "scope": "acme/other"}),
            ("mem_timeline", {"scope": "evil/repo"}),
            ("mem_session_start", {"title": "x", "scope": "evil/repo"}),
            ("mem_request_sensitive_read", {"reason": "need it", "scope": "evil/repo"}),
        ):
            kind, got = await answer(s, tool, args)
            assert kind == "ok" and got is not None, (tool, got)
            assert "names another scope" in got["warning"] and "acme/widgets" in got["warning"], (tool, got)
        kind, got = await answer(s, "mem_save", {"content": "Releases are cut on Mondays", "scope": "auto"})
        assert kind == "ok" and got is not None and "warning" not in got  # never for this repository
    with person(settings, repo) as e:
        saved = [a.content for a in e.store.list_atoms(scope_hashes=[e.scope.scope_hash], limit=-1)]
        assert "Deploys run nightly from main with Argo CD" in saved  # it went where the warning said


def test_the_cli_reaches_any_scope_by_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_EMBEDDER", "hash")
    alpha = make_repo(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    beta = make_repo(tmp_path / "beta", "git@github.com:acme/beta.git")
    runner = CliRunner()
    r = runner.invoke(app, ["memorize", "Alpha uses PostgreSQL 16 in production", "--source", "user", "--json",
                            "--cwd", str(alpha)])  # fmt: skip
    atom = json.loads(r.output)["atom_id"]
    shown = runner.invoke(app, ["show", atom, "--json", "--cwd", str(beta)])
    assert shown.exit_code == 0 and "PostgreSQL 16" in shown.output
    governed = runner.invoke(app, ["govern", atom, "quarantine", "--reason", "person from beta", "--cwd", str(beta)])
    assert governed.exit_code == 0, governed.output
