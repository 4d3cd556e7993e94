"""The team server for real (issue 16): PostgreSQL, two `memoryd-mcp --team` replicas of the memoryd profile
and one of the HMG profile on loopback, real MCP clients over streamable HTTP, tokens from the operator.

People: alice and bob are in team `core`, which shares `acme/api`; carol is in no team. The isolation
matrix tries every tool on every memory that is not the caller's (each attacker names the target's
repository in its Memoryd-Scope header, the strongest thing a client can do) and must be refused every
time; the same tools on the shared repository by a teammate must work every time; every change must name
the person's token in the audit chain; and the chain verifies at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memoryd.engine import Engine, HashEmbedder
from memoryd.shared.config import Settings

from ..mcp.clients import HEADERS, INIT, SERVER, http_server, server_env

pytestmark = pytest.mark.anyio
CLI = str(Path(sys.executable).with_name("memoryd"))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Team:
    dsn: str
    home: Path
    tokens: dict[str, str]  # person (or person-variant) -> token
    token_ids: dict[str, str]
    ports: dict[str, int]  # "a", "b" (memoryd profile), "h" (hmg profile)
    found: dict[str, list[str]] = field(default_factory=dict)

    def operator(self) -> Engine:
        return Engine.open(Settings(home=self.home, db=self.dsn), embedder=HashEmbedder(), authority="operator",
                           cwd=self.home)  # fmt: skip

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLI, *args], env=server_env(self.home, MEMORYD_DB=self.dsn), cwd=self.home,
                              capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def team(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    dsn = pg_server.fresh_database()
    home = tmp_path_factory.mktemp("team") / "home"
    tokens, ids = {}, {}
    with Engine.open(Settings(home=home, db=dsn), embedder=HashEmbedder(), authority="operator", cwd=home) as op:
        for name, tenant, kw in [("alice", "alice", {}), ("bob", "bob", {}), ("carol", "carol", {}),
                                 ("alice-ro", "alice", {"read_only": True}),
                                 ("alice-api", "alice", {"scopes": ["acme/api"]}),
                                 ("dave", "dave", {})]:  # fmt: skip
            t = op.create_token(tenant, label=name, **kw)
            tokens[name], ids[name] = t.token, t.id
        op.create_team("core")
        op.add_members("core", ["alice", "bob"])
        op.share_scope("acme/api", "core")
    with ExitStack() as stack:
        ports = {}
        for key, profile in (("a", "memoryd"), ("b", "memoryd"), ("h", "hmg")):
            ports[key] = stack.enter_context(http_server(home, home, "--team", "--profile", profile, MEMORYD_DB=dsn))
        yield Team(dsn, home, tokens, ids, ports)
    pg_server.drop_database(dsn)


def scope_header(repo: str) -> str:
    workspace, repository = repo.rsplit("/", 1)
    return json.dumps({"workspace": workspace, "repository": repository, "branch": "main"})


@asynccontextmanager
async def session(team: Team, who: str, repo: str = "acme/api", replica: str = "a") -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {team.tokens[who]}", "Memoryd-Scope": scope_header(repo)}
    client = httpx2.AsyncClient(headers=headers, timeout=120)
    url = f"http://127.0.0.1:{team.ports[replica]}/mcp"
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        yield s


async def call(s: ClientSession, tool: str, args: dict[str, Any] | None = None) -> tuple[bool, dict[str, Any], str]:
    """(is_error, structured content, text) of one tool call."""
    r = await s.call_tool(tool, args or {})
    text = " ".join(getattr(c, "text", "") for c in r.content)
    return bool(r.is_error), r.structured_content or {}, text


async def ok(s: ClientSession, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    is_error, data, text = await call(s, tool, args)
    assert not is_error, (tool, text)
    return data


async def raw(team: Team, headers: dict[str, str], replica: str = "a") -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=60) as client:
        return await client.post(
            f"http://127.0.0.1:{team.ports[replica]}/mcp", json=INIT, headers={**HEADERS, **headers}
        )


# -- the isolation matrix ------------------------------------------------------------------------


async def test_isolation_matrix(team: Team) -> None:
    grey = "we use tabs"  # a save the DURA gate holds for review (pending)
    async with session(team, "alice", "acme/api") as s:
        shared = (await ok(s, "mem_save", {"content": "The api deploys with blue-green releases on Fridays",
                                           "type": "decision"}))["memory_id"]  # fmt: skip
        shared2 = (await ok(s, "mem_save", {"content": "The api rate limiter allows 300 requests per minute"}))[
            "memory_id"
        ]
        shared_del = (await ok(s, "mem_save", {"content": "The api staging database is refreshed every Monday"}))[
            "memory_id"
        ]
        shared_pending = await ok(s, "mem_save", {"content": grey})
        assert shared_pending["status"] == "pending"
    async with session(team, "alice", "acme/web") as s:
        private = (await ok(s, "mem_save", {"content": "The web frontend secret roadmap ships the redesign in May"}))[
            "memory_id"
        ]
        global_ = (await ok(s, "mem_save", {"content": "Alice prefers terse commit messages in the imperative",
                                            "type": "preference", "scope": "global"}))["memory_id"]  # fmt: skip
        private_pending = await ok(s, "mem_save", {"content": "Right now the build is red"})
        assert private_pending["status"] == "pending"
        session_id = (await ok(s, "mem_session_start", {"title": "web redesign"}))["session_id"]
    async with session(team, "carol", "acme/api") as s:
        carols = (await ok(s, "mem_save", {"content": "Carol's api notes: the billing exporter runs hourly"}))[
            "memory_id"
        ]

    texts = {shared: "blue-green releases Fridays", private: "secret roadmap redesign May",
             global_: "terse commit messages imperative", carols: "billing exporter runs hourly"}  # fmt: skip
    # (attacker, the target's repository named in the attacker's header, target memory, its pending promotion)
    attempts = [
        ("bob", "acme/web", private, private_pending["promotion_id"]),
        ("bob", "acme/web", global_, None),
        ("carol", "acme/api", shared, shared_pending["promotion_id"]),
        ("carol", "acme/web", private, private_pending["promotion_id"]),
        ("carol", "acme/web", global_, None),
        ("dave", "acme/api", shared, shared_pending["promotion_id"]),
        ("alice", "acme/api", carols, None),
        ("bob", "acme/api", carols, None),
    ]
    refused: list[str] = []
    leaked: list[str] = []

    def check(label: str, is_refused: bool) -> None:
        (refused if is_refused else leaked).append(label)

    for who, repo, target, promotion in attempts:
        tag = f"{who}->{target[-6:]}"
        async with session(team, who, repo, replica="b") as s:
            for tool, args in [("mem_get", {"memory_id": target}), ("mem_context", {"memory_id": target}),
                               ("mem_update", {"memory_id": target, "content": "overwritten by someone else"}),
                               ("mem_delete", {"memory_id": target}),
                               ("mem_judge", {"new_text": "something new", "old_memory_id": target}),
                               ("mem_compare", {"memory_id_a": target, "memory_id_b": target})]:  # fmt: skip
                is_error, _, text = await call(s, tool, args)
                check(f"{tag} {tool}", is_error and text.startswith("not_found:"))
            for tool, args in [
                ("mem_session_summary", {"session_id": session_id}),
                ("mem_session_end", {"session_id": session_id, "summary": "ended by someone else"}),
            ]:
                is_error, _, text = await call(s, tool, args)
                check(f"{tag} {tool}", is_error and text.startswith("not_found:"))
            try:
                await s.read_resource(f"memory://{target}")
                check(f"{tag} resources/read", False)
            except MCPError as exc:
                check(f"{tag} resources/read", "not_found" in str(exc))
            listed = {str(r.uri) for r in (await s.list_resources()).resources}
            check(f"{tag} resources/list", f"memory://{target}" not in listed)
            found = await ok(s, "mem_search", {"query": texts[target], "top_k": 50})
            check(f"{tag} mem_search", target not in {r["memory_id"] for r in found["results"]})
            timeline = await ok(s, "mem_timeline", {"limit": 1000})
            check(f"{tag} mem_timeline", target not in {m["memory_id"] for m in timeline["memories"]})
            pending = await ok(s, "mem_review_pending", {"limit": 100})
            if promotion is not None:
                check(f"{tag} mem_review_pending", promotion not in {p["promotion_id"] for p in pending["pending"]})
                promoted = await ok(s, "mem_promote", {"promotion_ids": [promotion]})
                check(f"{tag} mem_promote", promoted["promoted"] == [] and len(promoted["skipped"]) == 1)
                rejected = await ok(s, "mem_reject", {"promotion_ids": [promotion], "reason": "not yours"})
                check(f"{tag} mem_reject", rejected.get("rejected", []) == [])
            check(f"{tag} mem_review_pending contents", all(p["memory_id"] != target for p in pending["pending"]))
        async with session(team, who, repo, replica="h") as s:
            recall = await ok(s, "memory_recall", {"query": texts[target], "max_results": 100,
                                                   "scope": {"tenant_id": "alice", "workspace": "acme",
                                                             "repository": repo.split("/")[1]}})  # fmt: skip
            check(f"{tag} memory_recall", target not in {a["atom_id"] for a in recall["atoms"]})
            for tool, args in [("memory_correct", {"target_atom": target, "action": "negate", "reason": "x"}),
                               ("memory_correct", {"target_atom": target, "action": "replace", "reason": "x",
                                                   "new_content": "The api deploys on Mondays"}),
                               ("memory_govern", {"target_atom": target, "action": "tombstone", "reason": "x"}),
                               ("memory_govern", {"target_atom": target, "action": "seal", "reason": "x"})]:  # fmt: skip
                out = await ok(s, tool, args)
                check(
                    f"{tag} {tool} {args['action']}", out["effect"] == "rejected" and "no atom" in (out["reason"] or "")
                )
            stats = await ok(s, "memory_stats")
            mine = await _own_counts(team, who, repo)
            check(f"{tag} memory_stats", stats["atoms"] == mine)

    # Nothing the attackers tried changed anything: every target is as its owner left it.
    with team.operator() as op:
        started = op.store.get_session(session_id)
        assert started is not None and started.ended_at is None
        for target in (shared, private, global_, carols):
            atom = op.get(target)
            assert atom.status == "active" and "overwritten" not in atom.content
    assert not leaked, leaked
    print(f"\nteam isolation: cross-tenant attempts refused {len(refused)}/{len(refused) + len(leaked)}")

    # -- the same tools by a teammate on the shared repository: all allowed, through both replicas --
    allowed: list[str] = []
    failed: list[str] = []

    def works(label: str, passed: bool) -> None:
        (allowed if passed else failed).append(label)

    async with session(team, "bob", "acme/api", replica="b") as s:
        for tool, args in [("mem_get", {"memory_id": shared}), ("mem_context", {"memory_id": shared}),
                           ("mem_judge", {"new_text": "The api deploys on Thursdays", "old_memory_id": shared}),
                           ("mem_compare", {"memory_id_a": shared, "memory_id_b": shared2})]:  # fmt: skip
            works(f"bob {tool}", not (await call(s, tool, args))[0])
        found = await ok(s, "mem_search", {"query": texts[shared]})
        works("bob mem_search", shared in {r["memory_id"] for r in found["results"]})
        timeline = await ok(s, "mem_timeline", {"limit": 1000})
        works("bob mem_timeline", shared in {m["memory_id"] for m in timeline["memories"]})
        pending = await ok(s, "mem_review_pending", {"limit": 100})
        works(
            "bob mem_review_pending", shared_pending["promotion_id"] in {p["promotion_id"] for p in pending["pending"]}
        )
        promoted = await ok(s, "mem_promote", {"promotion_ids": [shared_pending["promotion_id"]]})
        works("bob mem_promote", promoted["promoted"] == [shared_pending["promotion_id"]])
        updated = await ok(s, "mem_update", {"memory_id": shared2, "tags": ["limits"]})
        works("bob mem_update", updated["status"] == "updated")
        works("bob mem_delete", (await ok(s, "mem_delete", {"memory_id": shared_del}))["deleted"] is True)
        bobs = (await ok(s, "mem_save", {"content": "The api health check lives at /healthz"}))["memory_id"]
    async with session(team, "bob", "acme/api", replica="h") as s:
        recall = await ok(s, "memory_recall", {"query": texts[shared]})
        works("bob memory_recall", shared in {a["atom_id"] for a in recall["atoms"]})
        out = await ok(s, "memory_correct", {"target_atom": shared, "action": "confirm_actual", "reason": "still true"})
        works("bob memory_correct", out["effect"] == "applied")
        out = await ok(s, "memory_govern", {"target_atom": shared2, "action": "quarantine", "reason": "check it"})
        works("bob memory_govern", out["effect"] == "applied")
        stats = await ok(s, "memory_stats")
        works("bob memory_stats", stats["atoms"] == await _own_counts(team, "bob", "acme/api"))
    async with session(team, "alice", "acme/api", replica="a") as s:  # and alice sees bob's work on the other replica
        found = await ok(s, "mem_search", {"query": "health check healthz"})
        works("alice sees bob's memory", bobs in {r["memory_id"] for r in found["results"]})
        # a person's global preferences stay theirs, also inside the shared repository
        found = await ok(s, "mem_search", {"query": texts[global_]})
        works("alice sees her global", global_ in {r["memory_id"] for r in found["results"]})
    assert not failed, failed
    print(f"team isolation: shared-scope operations allowed {len(allowed)}/{len(allowed) + len(failed)}")

    # -- every change is attributed to the person's token -------------------------------------------
    with team.operator() as op:
        events = [e for e in op.store.events() if e.atom_id and not e.atom_id.startswith(("import:", "observe:"))]
        people = {f"{who}#{team.token_ids[who]}" for who in ("alice", "bob", "carol", "dave")}
        unattributed = [(e.action, e.actor) for e in events if e.actor.split("@", 1)[-1] not in people]
        assert not unattributed, unattributed
        by_bob = {e.action for e in events if e.actor.endswith(f"@bob#{team.token_ids['bob']}")}
        assert {"create", "promote", "update", "delete", "confirm_actual", "quarantine"} <= by_bob, by_bob
        assert op.verify_chain().ok
    print(f"team isolation: changes attributed {len(events)}/{len(events)}; chain verified")


async def _own_counts(team: Team, who: str, repo: str) -> int:
    """What `memory_stats` may count for `who` in `repo`: the memories in their reach, counted by the operator."""
    with team.operator() as op:
        principal = op.authenticate(team.tokens[who])
        view = op.for_request(principal, scope_header(repo))
        scopes = view._core.reachable_scopes()
        assert scopes is not None
        return sum(1 for a in op.store.list_atoms(scope_hashes=scopes, limit=-1))


# -- tokens over HTTP ----------------------------------------------------------------------------


async def test_one_memory_per_fact_across_teammates_and_never_across_scopes(team: Team) -> None:
    """Issue 35 on the team server: a teammate's restatement merges into the shared memory, their change
    supersedes it, each link names the person's token; another person's store is never linked to it."""
    old = "The api's nightly export job writes CSV files to `s3://acme-exports/api/` at 02:00 UTC."
    async with session(team, "alice", "acme/api") as s:
        first = await ok(s, "mem_save", {"content": old, "written_at": "2025-03-01"})
    async with session(team, "bob", "acme/api", replica="b") as s:
        merged = await ok(s, "mem_save", {"content": "The api's nightly export job writes CSV files to "
                                                     "`s3://acme-exports/api/`, at 02:00 UTC."})  # fmt: skip
        assert (merged["status"], merged["memory_id"]) == ("merged", first["memory_id"])
        changed = await ok(s, "mem_save", {"content": "The api's nightly export job was moved to Parquet files in "
                                                      "`s3://acme-exports/api/` at 02:00 UTC; CSV is no longer written."})  # fmt: skip
        assert changed["supersedes"] == first["memory_id"]
    async with session(team, "carol", "acme/api") as s:  # carol's own acme/api: another store of memories
        mine = await ok(s, "mem_save", {"content": old})
        assert mine["status"] == "saved" and mine["memory_id"] != first["memory_id"]
        is_error, _, text = await call(s, "mem_save", {"content": "Exports are Parquet now.",
                                                       "replaces": first["memory_id"]})  # fmt: skip
        assert is_error and text == f"not_found: no atom with id '{first['memory_id']}' in this scope"
    with team.operator() as op:
        assert op.get(first["memory_id"]).status == "superseded" and op.get(mine["memory_id"]).status == "active"
        events = {e.action: e for e in op.history(first["memory_id"])}
        assert events["merge"].actor.endswith(f"@bob#{team.token_ids['bob']}")
        assert events["superseded"].actor.endswith(f"@bob#{team.token_ids['bob']}")
        assert op.verify_chain().ok


async def test_requests_without_a_valid_token_are_refused(team: Team) -> None:
    scope = {"Memoryd-Scope": scope_header("acme/api")}
    r = await raw(team, scope)
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="memoryd"'
    assert r.json() == {"error": "unauthorized", "message": "no token: send `Authorization: Bearer <token>` "
                        "(`memoryd token create` on the server)"}  # fmt: skip
    r = await raw(team, {**scope, "Authorization": "Bearer not-a-token"})
    assert r.status_code == 401 and "not a memoryd token" in r.json()["message"]
    alice = team.tokens["alice"]
    wrong = alice[:-4] + ("AAAA" if not alice.endswith("AAAA") else "BBBB")
    r = await raw(team, {**scope, "Authorization": f"Bearer {wrong}"})
    assert r.status_code == 401 and r.json()["message"] == "unknown token, or its secret does not match"
    assert wrong not in r.text and alice not in r.text
    r = await raw(team, {**scope, "Authorization": f"bEaReR {alice}"})  # the scheme in any case
    assert r.status_code == 200


async def test_scope_header_is_required_and_checked(team: Team) -> None:
    auth = {"Authorization": f"Bearer {team.tokens['alice']}"}
    cases = [
        ({}, 400, "the Memoryd-Scope header is missing"),
        ({"Memoryd-Scope": "{nope"}, 400, "the Memoryd-Scope header is not JSON"),
        ({"Memoryd-Scope": "[1]"}, 400, "must be a JSON object with workspace and repository"),
        ({"Memoryd-Scope": '{"workspace": "acme", "repository": "api", "tenant_id": "bob"}'}, 400,
         "unknown keys ['tenant_id']"),
        ({"Memoryd-Scope": '{"workspace": "acme"}'}, 400, "Memoryd-Scope repository is required"),
        ({"Memoryd-Scope": '{"workspace": "acme", "repository": "*"}'}, 400, "needs a non-empty workspace and repository"),
        ({"Memoryd-Scope": json.dumps({"workspace": "acme", "repository": "x" * 300})}, 400,
         "Memoryd-Scope repository is 300 characters; the limit is 256"),
        ({"Memoryd-Scope": "x" * 9000}, 400, "the Memoryd-Scope header is 9000 characters; the limit is 8192"),
    ]  # fmt: skip
    for extra, status, message in cases:
        r = await raw(team, {**auth, **extra})
        assert r.status_code == status, (extra, r.text)
        assert r.json()["error"] == "invalid_input" and message in r.json()["message"], (extra, r.text)


async def test_token_rights_read_only_and_repositories(team: Team) -> None:
    async with session(team, "alice-ro", "acme/api") as s:
        assert (await ok(s, "mem_search", {"query": "deploys"}))["results"] is not None
        is_error, _, text = await call(s, "mem_save", {"content": "Read-only tokens must not write anything"})
        assert is_error and text.startswith("forbidden: this token is read-only")
        anything = (await ok(s, "mem_timeline", {}))["memories"]
        if anything:
            is_error, _, text = await call(s, "mem_delete", {"memory_id": anything[0]["memory_id"]})
            assert is_error and text.startswith("forbidden:")
    async with session(team, "alice-ro", "acme/api", replica="h") as s:
        is_error, _, text = await call(s, "memory_memorize", {"content": "Read-only tokens must not write via HMG"})
        assert is_error and text.startswith("forbidden: this token is read-only")
    r = await raw(
        team, {"Authorization": f"Bearer {team.tokens['alice-api']}", "Memoryd-Scope": scope_header("acme/web")}
    )
    assert r.status_code == 403 and r.json() == {"error": "forbidden",
                                                 "message": "this token may act in acme/api, not in acme/web"}  # fmt: skip
    async with session(team, "alice-api", "acme/api") as s:
        assert (await ok(s, "mem_save", {"content": "Scoped tokens work in their own repository"}))["status"] == "saved"


async def test_revocation_reaches_every_replica_on_the_next_request(team: Team) -> None:
    t = team.cli("token", "create", "--tenant", "erin", "--label", "to revoke")
    assert t.returncode == 0, t.stderr
    token = t.stdout.strip()
    assert token.startswith("mdt_") and token not in t.stderr and "shown once" in t.stderr
    token_id = token.split("_")[1]
    headers = {"Authorization": f"Bearer {token}", "Memoryd-Scope": scope_header("acme/api")}
    for replica in ("a", "b", "h"):
        assert (await raw(team, headers, replica)).status_code == 200
    r = team.cli("token", "revoke", token_id)
    assert r.returncode == 0 and f"token {token_id} of erin is revoked" in r.stdout
    for replica in ("a", "b", "h"):
        r2 = await raw(team, headers, replica)
        assert r2.status_code == 401 and r2.json()["message"].startswith(f"token {token_id} was revoked at ")
    listed = json.loads(team.cli("token", "list", "--json").stdout)
    assert {t["id"]: t["state"] for t in listed}[token_id] == "revoked"
    assert all("token" not in t and "digest" not in t and "salt" not in t for t in listed)


async def test_expired_token_is_refused(team: Team) -> None:
    t = team.cli("token", "create", "--tenant", "frank", "--expires", "1h", "--json")
    issued = json.loads(t.stdout)
    headers = {"Authorization": f"Bearer {issued['token']}", "Memoryd-Scope": scope_header("acme/api")}
    assert (await raw(team, headers)).status_code == 200
    with psycopg.connect(team.dsn, autocommit=True) as conn:  # the clock moves on: expire it in the database
        conn.execute("UPDATE tokens SET expires_at = now() - interval '1 minute' WHERE id = %s", (issued["id"],))
    for replica in ("a", "b"):
        r = await raw(team, headers, replica)
        assert r.status_code == 401 and f"token {issued['id']} expired at" in r.json()["message"]


def test_only_digests_are_stored(team: Team) -> None:
    with psycopg.connect(team.dsn) as conn:
        dump = "\n".join(str(row) for row in conn.execute("SELECT * FROM tokens").fetchall())
        events = "\n".join(str(row) for row in conn.execute("SELECT reason FROM events").fetchall())
    for token in team.tokens.values():
        secret = token.split("_", 2)[2]
        assert secret not in dump and secret not in events
    assert len(team.tokens) <= dump.count("mdt_") + len(team.tokens)  # ids only: no token text


def test_team_flag_refuses_what_would_cross_tenants(tmp_path: Path) -> None:
    cases = [
        (["--team"], {}, "--team needs --transport http"),
        (["--team", "--transport", "http", "--ui"], {}, "--team serves agents only"),
        (["--team", "--transport", "http", "--admin"], {}, "--team serves agents only"),
        (["--team", "--transport", "http"], {"MEMORYD_TOKEN": "x" * 40}, "unset MEMORYD_TOKEN"),
    ]
    for args, env, message in cases:
        r = subprocess.run([SERVER, *args], env=server_env(tmp_path, **env), capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and message in r.stderr, (args, r.stderr)


async def test_a_store_that_fails_answers_503_with_its_code(pg_server: Any, tmp_path: Path) -> None:
    """The database goes away under a running replica: every request is answered (503, storage_error), none hangs."""
    dsn = pg_server.fresh_database()
    home = tmp_path / "home"
    with Engine.open(Settings(home=home, db=dsn), embedder=HashEmbedder(), authority="operator", cwd=home) as op:
        token = op.create_token("alice").token
    with http_server(home, home, "--team", MEMORYD_DB=dsn) as port:
        team = Team(dsn, home, {"alice": token}, {}, {"a": port})
        headers = {"Authorization": f"Bearer {token}", "Memoryd-Scope": scope_header("acme/api")}
        assert (await raw(team, headers)).status_code == 200
        with pg_server.admin() as conn:  # now, not in the background: the replica's connections go with it
            conn.execute(f"DROP DATABASE {dsn.rsplit('/', 1)[-1]} WITH (FORCE)")
        r = await raw(team, headers)
        assert r.status_code == 503 and r.json()["error"] in ("storage_error", "storage_busy"), r.text
        assert r.json()["message"] == "the team server's store is unavailable; try again (another replica)"
        # nothing of the database (host, port, name, user) reaches a caller nobody has authenticated
        from psycopg.conninfo import conninfo_to_dict

        for part in conninfo_to_dict(dsn).values():
            if part and len(str(part)) > 3:
                assert str(part) not in r.text, part


async def test_http_edge_cases_are_refused_cleanly(team: Team) -> None:
    """Issue 23 (smaller): a resumed event stream, doubled identity headers and paths on the replica's disk."""
    base = {"Authorization": f"Bearer {team.tokens['alice']}", "Memoryd-Scope": scope_header("acme/api")}
    url = f"http://127.0.0.1:{team.ports['a']}/mcp"
    async with httpx2.AsyncClient(timeout=60) as client:
        # a stateless server has no event stream to resume: 405 with Allow, never a 500
        r = await client.get(url, headers={**base, "Accept": "text/event-stream", "Last-Event-ID": "abc-1"})
        assert r.status_code == 405 and r.headers["allow"] == "POST", r.text
        assert r.json()["error"] == "method_not_allowed" and "stateless" in r.json()["message"]
        # two Authorization (or Memoryd-Scope) headers: refused, whichever would have won
        for name, second in (("Authorization", f"Bearer {team.tokens['carol']}"),
                             ("Memoryd-Scope", scope_header("acme/web"))):  # fmt: skip
            headers = [*base.items(), (name, second), *HEADERS.items()]
            r = await client.post(url, json=INIT, headers=headers)
            assert r.status_code == 400, r.text
            assert r.json() == {
                "error": "invalid_input",
                "message": f"the request has 2 {name.lower()} headers; send exactly one",
            }
    async with session(team, "alice") as s:
        saved = await ok(s, "mem_save", {"content": "The api's health check lives at /healthz", "type": "fact"})
        assert saved.get("path") is None and str(team.home) not in json.dumps(saved)
        got = await ok(s, "mem_get", {"memory_id": saved["memory_id"]})
        assert str(team.home) not in json.dumps(got)


def _response(s: Any) -> bytes:
    """One whole HTTP/1.1 response (headers, then a Content-Length body) read from socket `s`; b"" if closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


async def test_a_wrong_secret_flood_backs_off_and_half_sent_requests_are_cut(pg_server: Any, tmp_path: Path) -> None:
    """Issue 23, pre-authentication cost over HTTP (a server of its own: the flood puts this address in backoff)."""
    import socket
    import time

    dsn = pg_server.fresh_database()
    home = tmp_path / "home"
    with Engine.open(Settings(home=home, db=dsn), embedder=HashEmbedder(), authority="operator", cwd=home) as op:
        token = op.create_token("alice").token
    wrong = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with http_server(home, home, "--team", MEMORYD_DB=dsn) as port:
        team = Team(dsn, home, {"alice": token}, {}, {"a": port})
        # a kept-alive connection idle between two requests longer than the header deadline stays open
        # (the deadline is the headers', not the connection's: it closed such connections under clients)
        get = (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer "
               + token.encode() + b"\r\nMemoryd-Scope: " + scope_header("acme/api").encode() + b"\r\n\r\n")  # fmt: skip
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            for _ in range(2):
                s.sendall(get)
                answer = _response(s)
                assert answer.startswith(b"HTTP/1.1 405"), answer[:200]
                time.sleep(11)  # past the 10 s header deadline, well within the 75 s keep-alive
        headers = {"Authorization": f"Bearer {wrong}", "Memoryd-Scope": scope_header("acme/api")}
        statuses = [(await raw(team, headers)).status_code for _ in range(12)]
        assert statuses[:5] == [401] * 5 and 429 in statuses, statuses
        r = await raw(team, headers)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert r.json()["error"] == "too_many_attempts" and "retry in" in r.json()["message"]
        # slowloris: headers that never finish are cut off after the header deadline, not held open
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            start = time.monotonic()
            assert s.recv(100) == b""  # closed by the server
            assert time.monotonic() - start < 14
        # a body that never finishes: 408
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token.encode() +
                      b"\r\nMemoryd-Scope: " + scope_header("acme/api").encode() +
                      b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")  # fmt: skip
            answer = s.recv(4096)
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    pg_server.drop_database(dsn)
