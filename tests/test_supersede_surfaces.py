"""One memory per fact through the real surfaces, on both backends: both MCP profiles over stdio, the CLI, the
resident daemon's local API (what the OpenClaw plugin's store and capture call). The team server's case is in
tests/team/test_team_server.py; the engine's rules in tests/test_supersede.py."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.daemon.client import Client, DaemonError
from memoryd.engine import Engine, HashEmbedder
from memoryd.shared.config import Settings

from .conftest import make_repo
from .mcp.clients import SERVER, err, ok, server_env
from .test_supersede import CAP, CAP_AGAIN, KAMAL, KAMAL_MAYBE

FAST = {"MEMORYD_EMBEDDER": "hash", "MEMORYD_TERM_EMBEDDER": "none"}  # the rule is the model's either way


def _env(settings: Settings) -> dict[str, str]:
    return {**FAST, **({"MEMORYD_DB": settings.db} if settings.db else {})}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def mcp(settings: Settings, repo: Path, profile: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=SERVER, args=["--profile", profile], cwd=str(repo),
                                   env=server_env(settings.home, **_env(settings)))  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


def operator(settings: Settings, repo: Path) -> Engine:
    return Engine.open(settings, cwd=repo, embedder=HashEmbedder(), authority="operator")


@pytest.mark.anyio
async def test_both_tool_profiles_merge_supersede_and_take_replaces(settings: Settings, repo: Path) -> None:
    async with mcp(settings, repo, "hmg") as s:
        cap = (await ok(s, "memory_memorize", {"content": CAP, "source": "user"}))["atom_id"]
        # the HMG seed's effects are applied / no_op / rejected: a restatement is a no_op naming what it merged into
        merged = await ok(s, "memory_memorize", {"content": CAP_AGAIN})
        assert (merged["effect"], merged["atom_id"], merged["deduped_with"]) == ("no_op", cap, cap)
        assert merged["reason"].startswith(f"merged: restates {cap}:")
        kamal = await ok(s, "memory_memorize", {"content": KAMAL, "source": "user"})
        assert (kamal["effect"], kamal["supersedes"]) == ("applied", cap)
        found = await ok(s, "memory_recall", {"query": "deploy production", "include_superseded": True})
        ids = [a["atom_id"] for a in found["atoms"]]
        assert ids.index(kamal["atom_id"]) < ids.index(cap)
        assert next(a for a in found["atoms"] if a["atom_id"] == cap)["superseded_by"] == kamal["atom_id"]
        assert cap not in [
            a["atom_id"] for a in (await ok(s, "memory_recall", {"query": "deploy production"}))["atoms"]
        ]
        # explicit: what it replaces; an unknown id or one already superseded is an error with its code
        ports = (await ok(s, "memory_memorize", {"content": "The API listens on port 8080 in production."}))["atom_id"]
        r = await ok(s, "memory_memorize", {"content": "Production API port: 9443.", "replaces": ports})
        assert r["supersedes"] == ports
        assert f"conflict: memory {ports} is already superseded by {r['atom_id']}" in await err(
            s, "memory_memorize", {"content": "Production API port: 9444.", "replaces": ports})  # fmt: skip
        assert "not_found: no atom with id '01JZZZZZZZZZZZZZZZZZZZZZZZ' in this scope" in await err(
            s, "memory_memorize", {"content": "Production API port: 9444.", "replaces": "01JZZZZZZZZZZZZZZZZZZZZZZZ"})  # fmt: skip
    async with mcp(settings, repo, "memoryd") as s:
        backups = await ok(s, "mem_save", {"content": "Nightly database backups go to `s3://acme-backups/db/`, kept "
                                                      "30 days.", "written_at": "2025-02-01"})  # fmt: skip
        again = await ok(s, "mem_save", {"content": "Nightly database backups go to `s3://acme-backups/db/` and are "
                                                    "kept 30 days."})  # fmt: skip
        assert (again["status"], again["memory_id"]) == ("merged", backups["memory_id"]) and again["restatement_id"]
        passive = await ok(s, "mem_capture_passive", {"content": "Nightly database backups go to "
                                                      "`s3://acme-backups/db/`, kept for 30 days.", "source": "openclaw"})  # fmt: skip
        assert (passive["status"], passive["memory_id"]) == ("merged", backups["memory_id"])
        assert "an older memory cannot replace a newer one" in await err(s, "mem_save", {
            "content": "Database backups are written to `s3://acme-old/db/`.", "written_at": "2024-01-01",
            "replaces": backups["memory_id"]})  # fmt: skip
        moved = await ok(s, "mem_save", {"content": "Nightly database backups go to `s3://acme-vault/db/` now.",
                                         "replaces": backups["memory_id"]})  # fmt: skip
        assert moved["supersedes"] == backups["memory_id"]
        assert moved["link_reason"] == f"supersedes {backups['memory_id']}: named as the memory it replaces"
        assert "written_at 'soon' is not an ISO 8601 date or time" in await err(
            s, "mem_save", {"content": "Backups are encrypted with KMS.", "written_at": "soon"})  # fmt: skip
        found = await ok(s, "mem_search", {"query": "database backups s3", "include_superseded": True})
        superseded = {r["memory_id"]: r["superseded_by"] for r in found["results"] if r.get("superseded_by")}
        assert superseded[backups["memory_id"]] == moved["memory_id"]
        assert superseded[again["restatement_id"]] == backups["memory_id"]
        got = await ok(s, "mem_get", {"memory_id": backups["memory_id"]})
        assert got["frontmatter"]["written"] == "2025-02-01T00:00:00.000000Z"
    with operator(settings, repo) as e:
        assert e.get(cap).status == "superseded" and e.get(ports).status == "superseded"
        assert e.verify_chain().ok


@pytest.fixture
def cli(settings: Settings, repo: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for k, v in {"MEMORYD_HOME": str(settings.home), "MEMORYD_DAEMON": "off", **_env(settings)}.items():
        monkeypatch.setenv(k, v)
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        r = runner.invoke(app, [*args, "--cwd", str(repo)])
        assert r.exit_code == code, (r.exit_code, r.output)
        return r.output

    return run


def test_the_cli_merges_supersedes_lists_suggestions_and_undoes(cli) -> None:  # type: ignore[no-untyped-def]
    cap = json.loads(cli("memorize", CAP, "--written-at", "2025-01-20", "--json"))["atom_id"]
    out = cli("memorize", CAP_AGAIN)
    assert out.startswith(f"merged: {cap}  (restates {cap}:") and "the new wording kept as: " in out
    kamal = json.loads(cli("memorize", KAMAL, "--json"))
    assert kamal["supersedes"] == cap
    shown = cli("show", cap)
    assert f"superseded by: {kamal['atom_id']}" in shown and "written: 2025-01-20T00:00:00" in shown
    assert cap not in cli("recall", "deploy production")
    assert f"[superseded by {kamal['atom_id']}]" in cli("recall", "deploy production", "--include-superseded")
    assert "applied" in cli("govern", cap, "restore", "--reason", "staging still uses it")
    assert json.loads(cli("show", cap, "--json"))["memory"]["status"] == "active"
    # a suggestion for review, accepted by a person; another dismissed
    maybe = json.loads(cli("memorize", KAMAL_MAYBE, "--json"))
    assert maybe["review"] in (cap, kamal["atom_id"])
    listed = json.loads(cli("review", "--links", "--json"))
    assert [(x["memory_id"], x["may_supersede"]) for x in listed] == [(maybe["atom_id"], maybe["review"])]
    assert "now supersedes" in cli("supersede", maybe["atom_id"], maybe["review"], "-r", "moved to Kamal")
    assert cli("review", "--links") == "no suggested supersession\n"
    assert f"error [conflict]: memory {maybe['review']} is superseded; only active memories can be linked" in cli(
        "supersede", maybe["atom_id"], maybe["review"], "-r", "again", code=4)  # fmt: skip
    # explicit and bad input: the stable codes and their exit codes
    assert "error [not_found]: no atom with id '01JZZZZZZZZZZZZZZZZZZZZZZZ' in this scope" in cli(
        "memorize", "Deploys use Kamal 2.", "--replaces", "01JZZZZZZZZZZZZZZZZZZZZZZZ", code=3)  # fmt: skip
    assert "error [invalid_input]: written_at '2025-02-30' is not an ISO 8601 date or time" in cli(
        "memorize", "Deploys use Kamal 2.", "--written-at", "2025-02-30", code=2)  # fmt: skip
    assert "error [conflict]" in cli("memorize", "Deploys use Kamal 2.", "--replaces", kamal["atom_id"],
                                     "--written-at", "2024-01-01", code=4)  # fmt: skip


def test_the_local_api_merges_supersedes_and_checks_its_fields(settings: Settings, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The OpenClaw plugin's memory_store and auto-capture send exactly these requests (`/v1/memorize`)."""
    env = {"MEMORYD_HOME": str(settings.home), "MEMORYD_DAEMON": "on", **_env(settings)}
    for k in [k for k in os.environ if k.startswith("MEMORYD_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    repo = make_repo(tmp_path / "shop")
    c = Client(settings.home, client={"host": "openclaw", "agent": "main", "session": "s-1"})
    scope = {"cwd": str(repo)}
    try:
        first = c.call("/v1/memorize", {"content": CAP, "written_at": "2025-01-20"}, scope=scope)
        assert first["effect"] == "created"
        again = c.call("/v1/memorize", {"content": CAP_AGAIN}, scope=scope)
        assert (again["effect"], again["id"], again["status"]) == ("merged", first["id"], "active")
        assert again["restatement_id"] and again["reason"].startswith(f"restates {first['id']}")
        new = c.call("/v1/memorize", {"content": KAMAL}, scope=scope)
        assert (new["effect"], new["supersedes"]) == ("created", first["id"])
        items = c.call("/v1/recall", {"query": "deploy production", "include_superseded": True, "limit": 10},
                       scope=scope)["items"]  # fmt: skip
        old = next(i for i in items if i["id"] == first["id"])
        assert (old["status"], old["superseded_by"], old["written_at"]) == ("superseded", new["id"],
                                                                            "2025-01-20T00:00:00+00:00")  # fmt: skip
        assert first["id"] not in [
            i["id"] for i in c.call("/v1/recall", {"query": "deploy production"}, scope=scope)["items"]
        ]
        ports = c.call("/v1/memorize", {"content": "The API listens on port 8080 in production."}, scope=scope)["id"]
        assert c.call("/v1/memorize", {"content": "Production API port: 9443.", "replaces": ports},
                      scope=scope)["supersedes"] == ports  # fmt: skip
        for body, code, message in [
            ({"content": "Production API port: 9444.", "replaces": ports}, "conflict", "is already superseded"),
            ({"content": "Production API port: 9444.", "replaces": "01JZZZZZZZZZZZZZZZZZZZZZZZ"}, "not_found", "in this scope"),
            ({"content": "Production API port: 9444.", "written_at": "2999-01-01"}, "invalid_input", "out of bounds"),
            ({"content": "Production API port: 9444.", "written_at": 5}, "invalid_input", "written_at must be a string"),
            ({"query": "x", "include_superseded": "yes"}, "invalid_input", "include_superseded must be true or false"),
        ]:  # fmt: skip
            path = "/v1/recall" if "query" in body else "/v1/memorize"
            with pytest.raises(DaemonError) as info:
                c.call(path, body, scope=scope)
            assert info.value.code == code and message in info.value.message, (body, info.value)
    finally:
        Client(settings.home, autostart=False).stop()
