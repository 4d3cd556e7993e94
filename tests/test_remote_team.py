"""End to end through a team server: `memoryd token create` → `memoryd-mcp --transport http --team` on
PostgreSQL → `memoryd connect` started in a git checkout, driven by the real SDK stdio client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import MCPError

from .conftest import make_repo
from .mcp.clients import http_server, ok, server_env
from .test_remote import MEMORYD, VAR, connect, refused

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Team:
    def __init__(self, tmp_path: Path, dsn: str) -> None:
        self.home, self.dsn = tmp_path / "server-home", dsn
        self.env = server_env(self.home, MEMORYD_DB=dsn, MEMORYD_EMBEDDER="hash")
        self.cwd = make_repo(tmp_path / "server-cwd", remote="git@example.com:ops/server.git")

    def cli(self, *args: str) -> str:
        r = subprocess.run([MEMORYD, *args], env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    def token(self, tenant: str, *args: str) -> dict[str, str]:
        return json.loads(self.cli("token", "create", "--tenant", tenant, "--json", *args))


@pytest.fixture
def team(tmp_path: Path, pg_server: object) -> Iterator[tuple[Team, str]]:
    dsn = pg_server.fresh_database()  # type: ignore[attr-defined]
    t = Team(tmp_path, dsn)
    with http_server(t.home, t.cwd, "--team", MEMORYD_DB=dsn, MEMORYD_EMBEDDER="hash") as port:
        yield t, f"http://127.0.0.1:{port}/mcp"
    pg_server.drop_database(dsn)  # type: ignore[attr-defined]


async def test_a_memory_saved_through_connect_lands_in_the_laptops_repository(team: tuple[Team, str],
                                                                               tmp_path: Path) -> None:  # fmt: skip
    t, url = team
    alice = t.token("alice")
    widgets = make_repo(tmp_path / "laptop" / "widgets", remote="git@github.com:acme/widgets.git", branch="feature")
    gadgets = make_repo(tmp_path / "laptop" / "gadgets", remote="git@github.com:acme/gadgets.git")
    log = tmp_path / "connect.log"
    async with connect(widgets, url, errlog=log, token=alice["token"]) as s:
        saved = await ok(s, "mem_save", {"content": "Widgets use the v2 pricing table since March", "type": "fact"})
        assert saved["status"] == "saved"
        got = await ok(s, "mem_get", {"memory_id": saved["memory_id"]})
        scope = got["frontmatter"]["scope"]
        assert (scope["workspace"], scope["repository"], scope["branch"]) == ("acme", "widgets", "feature")
        found = await ok(s, "mem_search", {"query": "pricing table widgets"})
        assert [r["memory_id"] for r in found["results"]][:1] == [saved["memory_id"]]
    async with connect(gadgets, url, errlog=log, token=alice["token"]) as s:  # another repository: not there
        found = await ok(s, "mem_search", {"query": "pricing table widgets"})
        assert saved["memory_id"] not in [r["memory_id"] for r in found["results"]]
    shown = json.loads(t.cli("show", saved["memory_id"], "--json"))  # the operator, on the server
    assert [(e["action"], e["actor"]) for e in shown["history"]] == [("create", f"agent@alice#{alice['id']}")]
    assert json.loads(t.cli("verify", "--json"))["ok"] is True
    assert alice["token"] not in log.read_text()


async def test_the_tokens_rights_come_back_as_clear_errors(team: tuple[Team, str], tmp_path: Path) -> None:
    t, url = team
    widgets = make_repo(tmp_path / "laptop" / "widgets", remote="git@github.com:acme/widgets.git")
    log = tmp_path / "connect.log"
    only_gadgets = t.token("bob", "--scope", "acme/gadgets")
    msg = await refused(widgets, url, errlog=log, token=only_gadgets["token"])
    assert msg.startswith(f"memoryd connect: {url} answered HTTP 403: the token may not act on this repository")
    reader = t.token("carol", "--read-only")
    async with connect(widgets, url, errlog=log, token=reader["token"]) as s:
        r = await s.call_tool("mem_save", {"content": "Read-only tokens cannot write memories", "type": "fact"})
        assert r.is_error and r.content[0].text.startswith("forbidden:")  # type: ignore[union-attr]
    dave = t.token("dave")
    async with connect(widgets, url, errlog=log, token=dave["token"]) as s:
        await ok(s, "mem_search", {"query": "pricing"})
        t.cli("token", "revoke", dave["id"])
        with pytest.raises(MCPError) as exc:
            await s.call_tool("mem_search", {"query": "pricing"})
        assert f"answered HTTP 401: the server did not accept the token in ${VAR}" in str(exc.value)
    text = log.read_text()
    assert all(tok["token"] not in text for tok in (only_gadgets, reader, dave))
