#!/usr/bin/env python3
"""Team server under load (issue 16): 2 replicas on one PostgreSQL, many MCP HTTP clients, kill -9 one.

What runs, all on 127.0.0.1:

* a throwaway PostgreSQL 18 + pgvector (tests/pg.py via bench/_pg.py), with autovacuum switched
  back on (recall's touches update rows all run long) and the test server's durability settings kept
  (fsync off: what is killed is a replica, never the database);
* the store: --size memories (default 100 000) in the scopes the clients use: generated zh/en
  project memories (bench/latency.py's templates), written through the engine's bulk import
  (`Engine.import_jsonl`: the real write path with the real USE model, batched, a vault file
  each) into SQLite, then copied with memoryd's `migrate_store` (`_pg.bulk_fill`; HNSW built
  after the copy). The filled SQLite store is cached per size and client layout (--cache), so a
  re-run skips the fill. The replicas' shared MEMORYD_HOME gets the fill's vault (hard links): a
  server whose vault lacks the recorded files would take them as deleted by hand at start-up;
* people and teams made with the operator CLI (`memoryd token create --tenant …`, `memoryd team
  create/add`, `memoryd scope share`): client i is person pNN with its own token; even clients
  work in a repository shared with their team (tenant `team:teamK`), odd ones in a private one;
* --replicas (2) `memoryd-mcp --transport http --team` processes on one database and one home;
* --clients (32) asyncio clients on one httpx2 connection pool (the load generator stays light so
  the cores go to the servers), each a person with its token and `Memoryd-Scope` header, client i
  starting on replica i mod R, calling `mem_search` (80%) or `mem_save` (20%, --write-share) back
  to back for --duration seconds. Requests are plain JSON-RPC `tools/call` POSTs to /mcp; the
  client initializes once per replica and keeps an Mcp-Session-Id when the server gives one (the
  single-token server is stateful; the team server is stateless);
* with --standby: a hot standby made from the primary with `pg_basebackup -R` (tests/pg_standby.py)
  that the replicas read from (`MEMORYD_DB_READ`, what `--db-read` sets), and --ryw (on with it): each
  save's writer searches for it next by a word only it holds, and must find it;
* phase "steady", then (with --kill, the default) phase "kill": the same load, and in its middle
  replica 0 gets SIGKILL; with --standby a third phase "standby-kill": the standby gets SIGKILL (its
  whole process group, as a crash) half-way, is restarted after the phase, and must serve reads again. A request that fails on a connection error is sent again to the next
  replica (and the client stays there); a retried `mem_save` may answer `duplicate` with the id of
  the first attempt's memory, which counts as the same write.

Reported per phase: throughput (calls/s), p50/p95/p99 per tool (ms, the client's view, retries
included), errors (target 0) split into retried-and-succeeded and failed (connection errors from a
replica that was not killed are counted apart), acknowledged writes lost
(every memory id a `mem_save` answered saved / pending / duplicate must be in `atoms` afterwards,
checked by SQL; target 0), and `memoryd verify --json` on the database after the phase (the audit
chain). Plus the fill's timings, the replicas' CPU seconds, `machine()` and `uptime`. Exit status 1
when a target is missed.

    .venv/bin/python bench/team_load.py                       # 100k, 32 clients, 180 s + 180 s with kill -9
    .venv/bin/python bench/team_load.py --quick --json out.json   # CI: 2000 memories, 8 clients, 2 x 22 s
    .venv/bin/python bench/team_load.py --size 10000 --duration 60 --no-kill
    .venv/bin/python bench/team_load.py --size 5000 --clients 8 --duration 30 --standby   # reads on a standby
    .venv/bin/python bench/team_load.py --standby --no-kill --duration 60 --pg-stats --shared-buffers 2GB
                                                               # where the servers' time goes, with room for the indexes
    .venv/bin/python bench/team_load.py --single-token ...    # today's one-token server (no --team): exercises
                                                               # the client only; scopes come from the server's cwd
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common as C  # noqa: E402

BIN = Path(sys.executable).parent
SERVER = str(BIN / "memoryd-mcp")
CLI = str(BIN / "memoryd")
WORKSPACE = "acme"
TYPES = ("fact", "decision", "warning", "preference", "playbook")
FILL_VERSION = 1  # bump when the fill's layout or texts change (the cache key)
HTTP_TIMEOUT = 120.0
KEEPALIVE_S = 2.0  # below uvicorn's timeout_keep_alive (5 s)
ACKED = ("saved", "pending", "duplicate")


# --------------------------------------------------------------------------- who works where


@dataclass
class Person:
    """One load client: a person (tenant) with a token, working in one repository."""

    index: int
    tenant: str
    team: str | None
    repository: str
    token: str = ""

    @property
    def scope_tenant(self) -> str:
        """The tenant its repository's memories belong to (`team:NAME` when shared)."""
        return f"team:{self.team}" if self.team else self.tenant

    @property
    def scope_header(self) -> str:
        return json.dumps({"workspace": WORKSPACE, "repository": self.repository, "branch": "main"}, ensure_ascii=True)


def people(clients: int, teams: int) -> list[Person]:
    """Even clients share their team's repository (team i/2 mod teams), odd ones work alone."""
    out = []
    for i in range(clients):
        tenant = f"p{i:02d}"
        if i % 2 == 0 and teams:
            team = f"team{(i // 2) % teams}"
            out.append(Person(i, tenant, team, f"shared-{team}"))
        else:
            out.append(Person(i, tenant, None, f"private-{tenant}"))
    return out


# --------------------------------------------------------------------------- the store


def fill_sqlite(size: int, crew: list[Person], home: Path) -> dict[str, Any]:
    """`size` memories spread over the people's scopes, through the engine's bulk import (real USE vectors)."""
    from latency import gen_texts

    from memoryd import Engine
    from memoryd.shared.config import Settings

    home.mkdir(parents=True, exist_ok=True)
    work = home.parent / "fill-cwd"
    work.mkdir(exist_ok=True)
    lines = home.parent / f"{home.name}.jsonl"  # per size: two fills at once must not share it
    t = time.perf_counter()
    texts = gen_texts(size)
    with lines.open("w") as fh:
        for i, text in enumerate(texts):
            p = crew[i % len(crew)]
            scope = {"tenant_id": p.scope_tenant, "workspace": WORKSPACE, "repository": p.repository, "branch": "main",
                     "root": ""}  # fmt: skip
            fh.write(json.dumps({"content": text, "type": TYPES[i % len(TYPES)], "scope": scope}, ensure_ascii=False))
            fh.write("\n")
    out: dict[str, Any] = {"texts_s": time.perf_counter() - t}
    # No SQLite HNSW graph: the store is read by PostgreSQL, which builds its own index.
    settings = Settings(home=home, db=None, ann_min=10**9)
    t = time.perf_counter()
    with Engine.open(settings, cwd=work, authority="operator") as engine:  # operator: any scope
        out["model_load_s"] = time.perf_counter() - t
        t = time.perf_counter()
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if time.monotonic() - last[0] > 30:
                last[0] = time.monotonic()
                print(f"  fill: {done}/{total} lines, {time.perf_counter() - t:.0f} s", flush=True)

        report = engine.import_jsonl(lines, batch_size=256, source="agent", progress=progress)
    out["import_s"] = time.perf_counter() - t
    out["imported"] = report.imported
    if report.imported != size:
        raise SystemExit(f"fill: imported {report.imported} of {size}: {report.summary()}")
    lines.unlink()
    return out


def fill_args(ap: argparse.ArgumentParser) -> None:
    """The options of a bench that reads this bench's fill (`cached_fill`): its size, layout and cache."""
    ap.add_argument("--size", type=int, default=100_000, help="memories in the store (default 100000)")
    ap.add_argument("--clients", type=int, default=32, help="the load bench's layout: people (default 32)")
    ap.add_argument("--teams", type=int, default=2, help="the load bench's layout: teams (default 2)")
    ap.add_argument(
        "--cache",
        default=str(Path(tempfile.gettempdir()) / "memoryd-team-load"),
        help="the load bench's fill cache (default: $TMPDIR/memoryd-team-load)",
    )


def replay_args(ap: argparse.ArgumentParser, calls: str, *, shared_buffers: str) -> None:
    """The options of a bench that replays a store method's calls from recalls over the fill, both ways in turn."""
    ap.add_argument("--queries", type=int, default=60, help=f"recalls whose {calls} calls are replayed (default 60)")
    ap.add_argument("--rounds", type=int, default=3, help="times each call is run each way (default 3)")
    ap.add_argument("--shared-buffers", metavar="SIZE", default=shared_buffers,
                    help=f"the server's shared_buffers ({shared_buffers})")  # fmt: skip
    ap.add_argument("--json", metavar="PATH", help="write everything as JSON")


@contextmanager
def person_views(settings: Any, crew: list[Person], cwd: str) -> Iterator[list[tuple[str, Any]]]:
    """On the fill's store: its teams made and their repositories shared (as the operator), then the engine's
    request views of a team member (crew[0], a shared repository) and of a person alone (crew[1])."""
    from memoryd.engine import Engine, Principal

    with Engine.open(settings, cwd=cwd, authority="operator") as op:
        for team in sorted({p.team for p in crew if p.team}):
            op.create_team(team)
            op.add_members(team, [p.tenant for p in crew if p.team == team])
            op.share_scope(f"{WORKSPACE}/shared-{team}", team)
    with Engine.open(settings, cwd=cwd) as base:
        yield [(kind, base.for_request(Principal(token_id="bench", tenant_id=person.tenant, read_only=False,
                                                 scopes=()), person.scope_header))
               for kind, person in (("team", crew[0]), ("private", crew[1]))]  # fmt: skip


def cached_fill(args: argparse.Namespace, crew: list[Person], work: Path) -> tuple[Path, dict[str, Any]]:
    """A filled SQLite home (memoryd.db + vault) for this size and layout: from the cache or made now."""
    teams = len({p.team for p in crew if p.team})
    key = f"fill-v{FILL_VERSION}-{args.size}-c{args.clients}-t{teams}"
    if args.cache:
        home = Path(args.cache) / key
        if (home / "DONE").is_file():
            info = json.loads((home / "DONE").read_text())
            print(f"fill: cached {home} (made in {info['import_s']:.0f} s)", flush=True)
            return home, {**info, "cached": True}
        shutil.rmtree(home, ignore_errors=True)
    else:
        home = work / key
    print(f"fill: {args.size} memories through the engine's bulk import into SQLite ...", flush=True)
    info = fill_sqlite(args.size, crew, home)
    print(f"fill: {info['import_s']:.1f} s ({args.size / info['import_s']:.0f} memories/s)", flush=True)
    if args.cache:
        (home / "DONE").write_text(json.dumps(info))
    return home, {**info, "cached": False}


@contextmanager
def postgres_copy(args: argparse.Namespace, crew: list[Person], work: Path, *,
                  shared_buffers: str | None) -> Iterator[tuple[Path, str]]:  # fmt: skip
    """The fill (`cached_fill`) copied into a throwaway PostgreSQL (`_pg.bulk_fill`, this tree's schema): the
    fill's home and the database's URL. The server stops on exit."""
    import _pg

    fill, _ = cached_fill(args, crew, work)
    server = _pg.start_server(settings={"shared_buffers": shared_buffers} if shared_buffers else None)
    try:
        dsn = server.fresh_database(template=None)
        _pg.bulk_fill(fill / "memoryd.db", dsn)
        yield fill, dsn
    finally:
        server.stop()


def link_vault(src_home: Path, dst_home: Path) -> float:
    """The fill's vault in the servers' home, as hard links (the engine replaces files by rename, never in place)."""
    t = time.perf_counter()
    dst_home.mkdir(parents=True, exist_ok=True)
    dst_home.chmod(0o700)
    src, dst = str(src_home / "vault"), str(dst_home / "vault")
    if subprocess.run(["cp", "-al", src, dst], capture_output=True).returncode != 0:  # another file system
        shutil.rmtree(dst, ignore_errors=True)
        subprocess.run(["cp", "-a", src, dst], check=True)
    return time.perf_counter() - t


# --------------------------------------------------------------------------- operator CLI and replicas


def operator(env: dict[str, str], cwd: Path, *argv: str) -> str:
    r = subprocess.run([CLI, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"`memoryd {' '.join(argv)}` failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout


def make_people(crew: list[Person], env: dict[str, str], cwd: Path) -> float:
    """Tokens for everyone, teams and their shared repositories, through the operator CLI."""
    t = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        tokens = list(pool.map(lambda p: operator(env, cwd, "token", "create", "--tenant", p.tenant, "--label",
                                                  f"team_load client {p.index}").strip(), crew))  # fmt: skip
    for p, token in zip(crew, tokens, strict=True):
        if not token.startswith("mdt_") or "\n" in token:
            raise SystemExit(f"`memoryd token create` printed {token!r}, not one mdt_… token")
        p.token = token
    teams: dict[str, list[Person]] = {}
    for p in crew:
        if p.team:
            teams.setdefault(p.team, []).append(p)
    for team, members in sorted(teams.items()):
        operator(env, cwd, "team", "create", team)
        operator(env, cwd, "team", "add", team, *(m.tenant for m in members))
        operator(env, cwd, "scope", "share", f"{WORKSPACE}/{members[0].repository}", "--team", team)
    return time.perf_counter() - t


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children(pid: int) -> dict[int, list[str]]:
    """The live children of a process: each one's pid and /proc stat fields."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat(int(stat.parent.name))
        if fields is not None and fields[1] == str(pid):
            out[int(stat.parent.name)] = fields
    return out


def cpu_s(fields: list[str]) -> float:
    """A process's own CPU seconds (utime + stime) from its stat fields."""
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds of a process and its children, live ones and those it reaped (PostgreSQL's backends)."""
    roles = tree_cpu_roles(pid)
    return sum(roles.values()) if roles else None


_ROLES = ("startup", "walreceiver", "walsender", "checkpointer", "background writer", "walwriter", "autovacuum")


def tree_cpu_roles(pid: int) -> dict[str, float]:
    """`tree_cpu_s` by PostgreSQL process role (from each child's title): `backends` serve statements,
    `startup` replays WAL on a standby, `postmaster and exited` is the process itself and the children it
    reaped (utime stime cutime cstime). Empty when the process is gone."""
    own = _stat(pid)
    if own is None:
        return {}
    out = {"postmaster and exited": sum(int(x) for x in own[11:15]) / os.sysconf("SC_CLK_TCK")}
    for child, fields in children(pid).items():
        try:
            title = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            title = ""
        role = next((r for r in _ROLES if f": {r}" in title), "backends" if "(" in title else "other")
        out[role] = out.get(role, 0.0) + cpu_s(fields)
    return out


def roles_since(now: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {role: round(v - before.get(role, 0.0), 2) for role, v in now.items()}


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / hz, sum(values) / hz


@dataclass
class Replica:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    killed_at: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def cpu_s(self) -> float | None:
        """User + system CPU seconds of the process so far (None once it is gone)."""
        fields = _stat(self.proc.pid)
        return None if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_replicas(n: int, env: dict[str, str], cwd: Path, logs: Path, *, team: bool, profile: str) -> list[Replica]:
    out = []
    for i in range(n):
        port = free_port()
        log = logs / f"replica{i}.log"
        argv = [SERVER, "--transport", "http", *(["--team"] if team else []), "--profile", profile,
                "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
        with log.open("ab") as fh:
            proc = subprocess.Popen(
                argv, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        out.append(Replica(f"replica{i}", port, proc, log))
    return out


def wait_listening(replicas: list[Replica], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for r in replicas:
        while True:
            if r.proc.poll() is not None:
                raise SystemExit(f"{r.name} exited ({r.proc.returncode}):\n{r.log.read_text(errors='replace')[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", r.port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{r.name} is not listening after {timeout:.0f} s") from None
                time.sleep(0.1)


# --------------------------------------------------------------------------- the client


class Retryable(Exception):
    """The replica could not be reached or dropped the connection: try another one."""


class CallFailed(Exception):
    """The replica answered, but not with a tool result (HTTP status, JSON-RPC error, tool error)."""


def _sse_json(text: str) -> dict[str, Any]:
    """The last JSON-RPC message of a text/event-stream body."""
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    for chunk in reversed(data):
        if chunk:
            return json.loads(chunk)  # type: ignore[no-any-return]
    raise CallFailed("empty event stream")


class Caller:
    """JSON-RPC over streamable HTTP for one person: initialize once per replica, keep a session id if given."""

    PROTOCOL = "2025-06-18"

    def __init__(self, http: Any, person: Person, replicas: list[Replica], *, token: str) -> None:
        self.http, self.person, self.replicas = http, person, replicas
        self.current = person.index % len(replicas)
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "Authorization": f"Bearer {token}", "Memoryd-Scope": person.scope_header}  # fmt: skip
        self.sessions: dict[int, dict[str, str]] = {}  # replica -> extra headers (session id, protocol version)
        self._ids = 0

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def _post(self, replica: int, message: dict[str, Any], extra: dict[str, str]) -> Any:
        import httpx2

        try:
            resp = await self.http.post(self.replicas[replica].url, json=message, headers={**self.headers, **extra})
        except (httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
            raise Retryable(f"{type(exc).__name__}: {exc}") from exc
        except httpx2.TimeoutException as exc:
            raise CallFailed(f"timeout after {HTTP_TIMEOUT:.0f} s ({type(exc).__name__})") from exc
        return resp

    async def _session(self, replica: int) -> dict[str, str]:
        if replica in self.sessions:
            return self.sessions[replica]
        init = {"jsonrpc": "2.0", "id": self._next_id(), "method": "initialize",
                "params": {"protocolVersion": self.PROTOCOL, "capabilities": {},
                           "clientInfo": {"name": "team_load", "version": "1"}}}  # fmt: skip
        resp = await self._post(replica, init, {})
        if resp.status_code != 200:
            raise CallFailed(f"initialize: HTTP {resp.status_code}: {resp.text[:300]}")
        body = self._body(resp)
        if "error" in body:
            raise CallFailed(f"initialize: JSON-RPC error {body['error']}")
        extra = {"MCP-Protocol-Version": body["result"].get("protocolVersion", self.PROTOCOL)}
        sid = resp.headers.get("mcp-session-id")
        if sid:  # a stateful server: the session is this replica's, and it wants the initialized notice
            extra["Mcp-Session-Id"] = sid
            note = await self._post(replica, {"jsonrpc": "2.0", "method": "notifications/initialized"}, extra)
            if note.status_code not in (200, 202):
                raise CallFailed(f"notifications/initialized: HTTP {note.status_code}: {note.text[:300]}")
        self.sessions[replica] = extra
        return extra

    @staticmethod
    def _body(resp: Any) -> dict[str, Any]:
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            return _sse_json(resp.text)
        return resp.json()  # type: ignore[no-any-return]

    async def call_once(self, replica: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        extra = await self._session(replica)
        message = {"jsonrpc": "2.0", "id": self._next_id(), "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}}  # fmt: skip
        resp = await self._post(replica, message, extra)
        if resp.status_code == 404 and "Mcp-Session-Id" in extra:  # the replica lost its sessions
            self.sessions.pop(replica, None)
            raise CallFailed(f"HTTP 404 (session gone): {resp.text[:200]}")
        if resp.status_code != 200:
            raise CallFailed(f"HTTP {resp.status_code}: {resp.text[:300]}")
        body = self._body(resp)
        if "error" in body:
            raise CallFailed(f"JSON-RPC error {body['error']}")
        result = body["result"]
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            raise CallFailed(f"tool error: {text[:300]}")
        return result.get("structuredContent") or {}

    async def call(self, tool: str, arguments: dict[str, Any], stats: Stats) -> tuple[dict[str, Any], int]:
        """The tool's structured result and how many replicas refused the connection first.

        On a connection error the same request goes to the next replica, and this client stays there.
        """
        tried = 0
        while True:
            try:
                return await self.call_once(self.current, tool, arguments), tried
            except Retryable as exc:
                tried += 1
                dead = self.replicas[self.current].killed_at is not None
                stats.connection_errors.append(
                    f"{self.replicas[self.current].name}{' (killed)' if dead else ''}: {exc}"
                )
                stats.unprovoked += not dead
                if tried >= 2 * len(self.replicas):
                    raise CallFailed(f"no replica answered after {tried} connection errors; last: {exc}") from exc
                self.current = (self.current + 1) % len(self.replicas)
                self.sessions.pop(self.current, None)  # a fresh session on the replica we move to
                await asyncio.sleep(0.05 * tried)


# --------------------------------------------------------------------------- one phase


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"mem_search": [], "mem_save": []})
    retried_ok: int = 0
    failed: list[str] = field(default_factory=list)
    connection_errors: list[str] = field(default_factory=list)
    saves: dict[str, int] = field(default_factory=dict)  # status -> count
    acked: dict[str, str] = field(default_factory=dict)  # memory id -> "client:seq" of its first ack
    retried_duplicates: int = 0
    unprovoked: int = 0  # connection errors from a replica that was not killed
    empty_searches: int = 0
    ryw_checked: int = 0  # --ryw: saves whose writer searched for them next
    ryw_missed: list[str] = field(default_factory=list)  # ... and did not find them


async def check_own_write(caller: Caller, stats: Stats, memory_id: str, marker: str) -> None:
    """--ryw: the writer's next call searches for the memory it just saved (by a word only it holds)."""
    t = time.perf_counter()
    try:
        result, _ = await caller.call("mem_search", {"query": marker, "top_k": 3}, stats)
    except CallFailed as exc:
        stats.failed.append(f"{caller.person.tenant} mem_search (own write): {exc}")
        return
    stats.latencies.setdefault("ryw_search", []).append((time.perf_counter() - t) * 1000)
    stats.ryw_checked += 1
    if memory_id not in [r.get("memory_id") for r in result.get("results", [])]:
        stats.ryw_missed.append(f"{caller.person.tenant}: {memory_id} ({marker}) not found by its writer")


async def client_loop(caller: Caller, deadline: float, stats: Stats, *, write_share: float, seed: int,
                      label: str, ryw: bool = False) -> None:  # fmt: skip
    from latency import gen_queries, gen_texts

    rng = random.Random(seed)
    queries = gen_queries(500, seed=seed)
    texts = gen_texts(2000, seed=seed + 100_000)
    n = 0
    while time.monotonic() < deadline:
        n += 1
        if rng.random() < write_share:
            tool = "mem_save"
            marker = (
                f"ryw{seed}{''.join(ch for ch in label if ch.isalnum())}x{n}q"  # --ryw: a word only this save holds
            )
            arguments: dict[str, Any] = {"content": f"{texts[n % len(texts)]} (load {label}, {caller.person.tenant} #{n}"
                                                    f"{', ' + marker if ryw else ''})",
                                         "type": rng.choice(TYPES)}  # fmt: skip
        else:
            tool = "mem_search"
            arguments = {"query": rng.choice(queries), "top_k": 10}
        t = time.perf_counter()
        try:
            result, tried = await caller.call(tool, arguments, stats)
        except CallFailed as exc:
            stats.failed.append(f"{caller.person.tenant} {tool}: {exc}")
            continue
        stats.latencies[tool].append((time.perf_counter() - t) * 1000)
        if tried:
            stats.retried_ok += 1
        if tool == "mem_search":
            stats.empty_searches += not result.get("results")
            continue
        status = result.get("status", "?")
        stats.saves[status] = stats.saves.get(status, 0) + 1
        if status in ACKED and result.get("memory_id"):
            if tried and status == "duplicate":
                stats.retried_duplicates += 1
            stats.acked.setdefault(result["memory_id"], f"{caller.person.tenant}#{n}")
            if ryw and status == "saved":
                await check_own_write(caller, stats, result["memory_id"], marker)


async def warm_up(callers: list[Caller]) -> None:
    """Every client initializes on every replica and searches once there (not timed)."""

    async def one(c: Caller) -> None:
        for r in range(len(c.replicas)):
            await c.call_once(r, "mem_search", {"query": "warm-up", "top_k": 3})

    for c in callers:  # one at a time: each token's first check is a scrypt, and a replica runs one at a time
        await one(c)  # (issue 23's bound): 32 clients at once on a loaded machine waited past its 5 s, 503


async def run_phase(name: str, callers: list[Caller], replicas: list[Replica], args: argparse.Namespace,
                    *, kill_after: float | None, pg_pid: int | None) -> dict[str, Any]:  # fmt: skip
    stats = Stats()
    cpu0 = {r.name: r.cpu_s() for r in replicas}
    roles0 = tree_cpu_roles(pg_pid) if pg_pid else {}
    pg0 = sum(roles0.values()) if roles0 else None
    busy0, total0 = machine_busy()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    deadline = t0 + args.duration
    killed: dict[str, Any] = {}

    async def killer() -> None:
        assert kill_after is not None
        await asyncio.sleep(kill_after)
        victim = replicas[0]
        killed["cpu_s"] = victim.cpu_s()
        victim.killed_at = time.monotonic()  # first: a request failing from now on is the kill's
        os.kill(victim.proc.pid, signal.SIGKILL)
        killed.update(replica=victim.name, pid=victim.proc.pid, at_s=victim.killed_at - t0,
                      calls_before=sum(len(v) for v in stats.latencies.values()))  # fmt: skip
        print(f"  {name}: kill -9 {victim.name} (pid {victim.proc.pid}) at {killed['at_s']:.1f} s", flush=True)

    tasks = [client_loop(c, deadline, stats, write_share=args.write_share, seed=args.seed * 1000 + c.person.index,
                         label=f"{name}-{args.seed}", ryw=args.ryw) for c in callers]  # fmt: skip
    if kill_after is not None:
        tasks.append(killer())
    await asyncio.gather(*tasks)
    wall = time.monotonic() - t0
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    busy1, total1 = machine_busy()
    roles1 = tree_cpu_roles(pg_pid) if pg_pid else {}
    pg1 = sum(roles1.values()) if roles1 else None
    roles = roles_since(roles1, roles0)
    cpu = {}
    for r in replicas:
        end = r.cpu_s() if r.killed_at is None else killed.get("cpu_s")
        cpu[r.name] = (end - cpu0[r.name]) if end is not None and cpu0[r.name] is not None else None
    calls = sum(len(v) for v in stats.latencies.values())
    tools = {tool: {"calls": len(ms), "p50_ms": C.pct(ms, 50), "p95_ms": C.pct(ms, 95), "p99_ms": C.pct(ms, 99),
                    "max_ms": max(ms) if ms else None} for tool, ms in stats.latencies.items()}  # fmt: skip
    return {
        "name": name, "wall_s": wall, "calls": calls, "throughput": calls / wall, "tools": tools,
        "errors": {"retried_ok": stats.retried_ok, "failed": len(stats.failed), "failed_samples": stats.failed[:20],
                   "connection_errors": len(stats.connection_errors), "connection_errors_unprovoked": stats.unprovoked,
                   "connection_samples": stats.connection_errors[:10]},
        "saves": stats.saves, "acked": len(stats.acked), "retried_duplicates": stats.retried_duplicates,
        "empty_searches": stats.empty_searches, "killed": killed or None,
        "ryw": {"checked": stats.ryw_checked, "missed": len(stats.ryw_missed), "samples": stats.ryw_missed[:10]},
        "cpu_s": {"replicas": cpu, "postgres": None if pg0 is None or pg1 is None else pg1 - pg0, "postgres_roles": roles,
                  "load_generator": (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime),
                  "machine_busy": busy1 - busy0, "machine_total": total1 - total0},
        "_acked_ids": list(stats.acked),
    }  # fmt: skip


# --------------------------------------------------------------------------- checks after a phase


def lost_writes(dsn: str, ids: list[str]) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT id, status FROM atoms WHERE id = ANY(%s)", (ids,)).fetchall()
    found = {r[0]: r[1] for r in rows}
    missing = [i for i in ids if i not in found]
    statuses: dict[str, int] = {}
    for s in found.values():
        statuses[s] = statuses.get(s, 0) + 1
    return {
        "acked": len(ids),
        "found": len(found),
        "lost": len(missing),
        "lost_ids": missing[:20],
        "statuses": statuses,
    }


def verify_chain(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    t = time.perf_counter()
    r = subprocess.run([CLI, "verify", "--json"], env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    try:
        report = json.loads(r.stdout)
    except ValueError:
        report = {"ok": False, "problem": f"exit {r.returncode}: {r.stdout[-500:]} {r.stderr[-1000:]}"}
    report["exit"] = r.returncode
    report["s"] = time.perf_counter() - t
    return report


# --------------------------------------------------------------------------- --standby: reads on a hot standby


def primary_settings() -> dict[str, str]:
    from tests.pg_standby import PRIMARY_SETTINGS

    return dict(PRIMARY_SETTINGS)


def make_standby(server: Any, dsn: str, extra: dict[str, str] | None = None) -> tuple[Any, str, float]:
    """A hot standby of the bench's primary, as a user makes one (pg_basebackup -R), and the URL of the
    bench's database on it."""
    from tests.pg_standby import Standby

    t = time.perf_counter()
    standby = Standby(server, extra=extra)
    standby.wait_replayed()
    return standby, f"{standby.dsn()[: standby.dsn().rindex('/')]}/{dsn.rsplit('/', 1)[1]}", time.perf_counter() - t


def xacts(dsn: str) -> int | None:
    """Transactions of this database on one server (every read statement outside a write is one)."""
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
            row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname ="
                               " current_database()").fetchone()  # fmt: skip
    except psycopg.Error:
        return None
    return None if row is None else int(row[0])


class StandbyWatch:
    """One phase's view of the standby: its CPU, the statements it and the primary ran, its kill -9 (the
    `standby-kill` phase) and, after the phase, its restart and return to the replicas' read rotation."""

    def __init__(self, standby: Any, primary_dsn: str, standby_dsn: str) -> None:
        self.standby, self.primary_dsn, self.standby_dsn = standby, primary_dsn, standby_dsn
        self.roles0 = tree_cpu_roles(standby.proc.pid)
        self.cpu0 = sum(self.roles0.values()) if self.roles0 else None
        self.x0, self.p0 = xacts(standby_dsn), xacts(primary_dsn)
        self.killed: dict[str, Any] = {}

    async def kill_after(self, seconds: float, t0: float) -> None:
        await asyncio.sleep(seconds)
        self.killed["cpu_s"] = tree_cpu_s(self.standby.proc.pid)
        self.killed["xacts"] = xacts(self.standby_dsn)
        self.killed["at_s"] = time.monotonic() - t0
        await asyncio.to_thread(self.standby.kill)
        print(f"  kill -9 of the standby (pid {self.standby.proc.pid}) at {self.killed['at_s']:.1f} s", flush=True)

    async def finish(self, callers: list[Caller]) -> dict[str, Any]:
        roles1 = {} if self.killed else tree_cpu_roles(self.standby.proc.pid)
        cpu = self.killed.get("cpu_s") if self.killed else (sum(roles1.values()) if roles1 else None)
        x1 = self.killed.get("xacts") if self.killed else xacts(self.standby_dsn)
        out: dict[str, Any] = {
            "cpu_s": None if cpu is None or self.cpu0 is None else cpu - self.cpu0,
            "standby_xacts": None if x1 is None or self.x0 is None else x1 - self.x0,
            "primary_xacts": None if self.p0 is None else (xacts(self.primary_dsn) or 0) - self.p0,
            "killed_at_s": self.killed.get("at_s"),
            "cpu_roles_s": None if self.killed else roles_since(roles1, self.roles0),
        }  # fmt: skip
        if self.killed:  # restart it; the replicas' monitors bring it back within about a second
            t = time.monotonic()
            await asyncio.to_thread(self.standby.start)
            x_restart = xacts(self.standby_dsn) or 0
            back = None
            while time.monotonic() - t < 30:
                for c in callers:  # a few reads: served there once it is back in rotation
                    await c.call("mem_search", {"query": "back in rotation?", "top_k": 3}, Stats())
                if (xacts(self.standby_dsn) or 0) > x_restart + len(callers):
                    back = time.monotonic() - t
                    break
                await asyncio.sleep(0.5)
            out["back_in_rotation_s"] = back
        return out


STATS_SETTINGS = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all",
                  "pg_stat_statements.track_planning": "on"}  # fmt: skip


def reset_statements(dsns: list[str]) -> None:
    import psycopg

    for d in dsns:
        with psycopg.connect(d, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")


def top_statements(dsn: str, calls: int, n: int = 12) -> list[dict[str, Any]]:
    """--pg-stats: the statements that took the server's time in a phase, per call of the load (ms)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
        rows = conn.execute(
            "SELECT calls, total_exec_time, total_plan_time, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 160)"
            " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY total_exec_time + total_plan_time DESC LIMIT %s", (n,)).fetchall()  # fmt: skip
    return [{"calls": r[0], "exec_ms_per_call": r[1] / max(1, calls), "plan_ms_per_call": r[2] / max(1, calls),
             "exec_ms_each": r[1] / max(1, r[0]), "rows": r[3], "query": r[4]} for r in rows]  # fmt: skip


def maintenance(dsn: str) -> dict[str, list[float]]:
    """--pg-stats: per table, autovacuum and autoanalyze runs so far and their ms (PostgreSQL 18 counts them)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
        rows = conn.execute("SELECT relname, autovacuum_count, total_autovacuum_time, autoanalyze_count,"
                            " total_autoanalyze_time FROM pg_stat_user_tables").fetchall()  # fmt: skip
    return {r[0]: [float(x) for x in r[1:]] for r in rows}


def maintenance_since(dsn: str, before: dict[str, list[float]]) -> dict[str, Any]:
    """The autovacuum and autoanalyze runs of each table since `before` (`maintenance`): runs and ms of each;
    and the share of atoms' pages the visibility map marks all-visible now (a scope's vectors are read from its
    index alone only on those: migration 13)."""
    import psycopg

    out: dict[str, Any] = {"tables": {}}
    for table, now in maintenance(dsn).items():
        d = [a - b for a, b in zip(now, before.get(table, [0.0] * 4), strict=True)]
        if d[0] or d[2]:
            out["tables"][table] = {"autovacuums": d[0], "autovacuum_ms": d[1], "autoanalyzes": d[2],
                                    "autoanalyze_ms": d[3]}  # fmt: skip
    with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
        row = conn.execute("SELECT all_visible, pg_relation_size('atoms') / current_setting('block_size')::int"
                           " FROM pg_visibility_map_summary('atoms')").fetchone()  # fmt: skip
    out["atoms_all_visible"] = row[0] / max(1, row[1]) if row else None
    return out


def print_statements(where: str, stmts: list[dict[str, Any]]) -> None:
    print(C.table([f"{where}: exec ms / load call", "plan ms / load call", "exec ms each", "calls", "statement"],
                  [[f"{s['exec_ms_per_call']:.2f}", f"{s['plan_ms_per_call']:.2f}", f"{s['exec_ms_each']:.2f}",
                    str(s["calls"]), s["query"][:110]] for s in stmts]))  # fmt: skip


def standby_row(s: dict[str, Any]) -> str:
    back = ""
    if s.get("killed_at_s") is not None:
        b = s.get("back_in_rotation_s")
        back = f"; killed at {s['killed_at_s']:.1f} s, restarted and reading again after {C.fmt(b, 1)} s" \
            if b is not None else "; killed, NOT back in rotation within 30 s"  # fmt: skip
    return (
        f"{C.fmt(s['cpu_s'], 1)} / {s['standby_xacts']} statements on the standby, {s['primary_xacts']} on the "
        f"primary{back}"
    )


# --------------------------------------------------------------------------- report


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _roles_row(roles: dict[str, float]) -> str:
    return ", ".join(f"{role} {v:.1f}" for role, v in sorted(roles.items(), key=lambda kv: -kv[1]) if v >= 0.05)


def print_phase(p: dict[str, Any]) -> None:
    e = p["errors"]
    print(f"\n## phase {p['name']}: {p['calls']} calls in {p['wall_s']:.1f} s = {p['throughput']:.1f} calls/s"
          + (f"; kill -9 {p['killed']['replica']} at {p['killed']['at_s']:.1f} s" if p["killed"] else ""))  # fmt: skip
    rows = [[tool, t["calls"], C.fmt(t["p50_ms"], 1), C.fmt(t["p95_ms"], 1), C.fmt(t["p99_ms"], 1), C.fmt(t["max_ms"], 1)]
            for tool, t in p["tools"].items()]  # fmt: skip
    print(C.table(["tool", "calls", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows))
    lost = p["lost"]
    chain = p["chain"]
    c = p["cpu_s"]
    cpu = ", ".join(f"{k} {C.fmt(v, 1)}" for k, v in c["replicas"].items())
    ours = sum(v or 0 for v in c["replicas"].values()) + (c["postgres"] or 0) + c["load_generator"]
    share = f"{100 * c['machine_busy'] / c['machine_total']:.0f}% busy, this run {100 * ours / c['machine_total']:.0f}%"
    print(C.table(["check", "value"], [
        ["errors failed (target 0)", e["failed"]],
        ["errors retried and succeeded", e["retried_ok"]],
        ["connection errors seen (each retried) / from a live replica",
         f"{e['connection_errors']} / {e['connection_errors_unprovoked']}"],
        ["mem_save answers", json.dumps(p["saves"])],
        ["acknowledged writes / lost (target 0)", f"{lost['acked']} / {lost['lost']}"],
        ["retried saves answered duplicate", p["retried_duplicates"]],
        ["chain verified", f"{chain.get('ok')} ({chain.get('events', chain.get('checked', '?'))} events, {chain['s']:.1f} s)"],
        ["searches with no result", p["empty_searches"]],
        *([["read-your-writes: saves searched by their writer / not found (target 0)",
            f"{p['ryw']['checked']} / {p['ryw']['missed']}"]] if p["ryw"]["checked"] else []),
        *([["standby: CPU s / statements run (standby, primary)", standby_row(p["standby"])]]
          if p.get("standby") else []),
        ["CPU s: replicas / PostgreSQL / load generator",
         f"{cpu} / {C.fmt(c['postgres'], 1)} / {C.fmt(c['load_generator'], 1)}"],
        ["machine CPU (all cores)", share],
        *([["CPU s by PostgreSQL process: primary", _roles_row(c["postgres_roles"])]] if c.get("postgres_roles") else []),
        *([["CPU s by PostgreSQL process: standby", _roles_row(p["standby"]["cpu_roles_s"])]]
          if (p.get("standby") or {}).get("cpu_roles_s") else []),
    ]))  # fmt: skip
    for s in e["failed_samples"][:5]:
        print(f"  failed: {s}")


# --------------------------------------------------------------------------- before and after


def copy_into_pg(sqlite_path: Path, dsn: str, src: str | None) -> dict[str, Any]:
    """`_pg.bulk_fill`, by this tree's code or (--src) by the other checkout's, in a child process: an older
    tree's schema is its own (a newer one may have dropped tables it reads)."""
    import _pg

    if not src:
        return _pg.bulk_fill(sqlite_path, dsn)
    code = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import _pg; "
            "print(json.dumps(_pg.bulk_fill(Path(sys.argv[2]), sys.argv[3])))")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve() / "src")}
    r = subprocess.run([sys.executable, "-c", code, str(HERE), str(sqlite_path), dsn], env=env, capture_output=True,
                       text=True, check=False)  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"the PostgreSQL copy with --src {src} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def src_server(src: str, work: Path) -> str:
    """A launcher of the other checkout's `memoryd-mcp`."""
    return C.src_launcher(src, work, "memoryd-mcp")


def per_call(p: dict[str, Any]) -> dict[str, float | None]:
    """CPU milliseconds per call of a phase: PostgreSQL (its whole process tree, and the standby's with --standby)
    and the replicas together."""
    c, n = p["cpu_s"], max(1, p["calls"])
    replicas = [v for v in c["replicas"].values() if v is not None]
    standby = (p.get("standby") or {}).get("cpu_s") or 0.0  # a standby's own process tree (--standby)
    return {"postgres_ms": None if c["postgres"] is None else 1000 * (c["postgres"] + standby) / n,
            "replicas_ms": 1000 * sum(replicas) / n if replicas else None,
            "machine_ms": 1000 * c["machine_busy"] / n}  # fmt: skip


def before_and_after(args: argparse.Namespace, argv: list[str]) -> int:
    """--before DIR: this bench with --src DIR in a child process, then this tree's, one after the other."""
    rest = C.argv_without(argv, "--before", "--json")  # each side writes its own JSON
    sides: dict[str, Any] = {}
    codes = []
    with tempfile.TemporaryDirectory(prefix="memoryd-team-load-sides-") as tmp:
        for side, extra in (("before", ["--src", args.before]), ("after", [])):
            path = Path(tmp) / f"{side}.json"
            print(f"\n# ===== {side}: {' '.join(extra) or 'this tree'}", flush=True)
            codes.append(
                subprocess.run([sys.executable, __file__, *rest, *extra, "--json", str(path)], check=False).returncode
            )
            sides[side] = json.loads(path.read_text()) if path.is_file() else None
    rows = []
    for side, data in sides.items():
        for name, p in ((data or {}).get("phases") or {}).items():
            pc = per_call(p)
            rows.append([side, name, f"{p['throughput']:.1f}", C.fmt(pc["postgres_ms"], 1), C.fmt(pc["replicas_ms"], 1),
                         C.fmt(pc["machine_ms"], 1), p["errors"]["failed"], f"{p['lost']['acked']} / {p['lost']['lost']}",
                         p["chain"].get("ok"), p.get("uptime_end", "")])  # fmt: skip
    print("\n## before and after (CPU ms per call: PostgreSQL / replicas / the whole machine)")
    print(C.table(["side", "phase", "calls/s", "PostgreSQL ms", "replicas ms", "machine ms", "failed",
                   "acked / lost", "chain", "load average at the end"], rows))  # fmt: skip
    C.write_json(args.json, {"before": sides["before"], "after": sides["after"], "src_before": args.before})
    return max(codes)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=100_000, help="memories in the store (default 100000)")
    ap.add_argument("--clients", type=int, default=32, help="concurrent MCP HTTP clients (default 32)")
    ap.add_argument("--replicas", type=int, default=2, help="memoryd-mcp processes (default 2)")
    ap.add_argument("--teams", type=int, default=2, help="teams the even clients belong to (default 2)")
    ap.add_argument("--duration", type=float, default=180.0, help="seconds per phase (default 180)")
    ap.add_argument("--write-share", type=float, default=0.2, help="share of mem_save calls (default 0.2)")
    ap.add_argument(
        "--kill",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the second phase, kill -9 of replica 0 half-way (default on)",
    )
    ap.add_argument("--quick", action="store_true", help="CI: --size 2000 --clients 8 --duration 22, no cache")
    ap.add_argument(
        "--cache",
        default=str(Path(tempfile.gettempdir()) / "memoryd-team-load"),
        help="where filled SQLite stores are kept per size and layout (default: %(default)s)",
    )
    ap.add_argument("--no-cache", dest="cache", action="store_const", const=None, help="fill afresh, keep nothing")
    ap.add_argument("--profile", default="memoryd", choices=("memoryd",), help="tool profile (mem_search / mem_save)")
    ap.add_argument("--single-token", action="store_true",
                    help="today's one-token HTTP server (MEMORYD_TOKEN, no --team, stateful sessions): exercises the "
                         "client; every request lands in the server's own scope")  # fmt: skip
    ap.add_argument(
        "--standby",
        action="store_true",
        help="add a hot standby (pg_basebackup -R from the bench's primary) that the replicas read from "
        "(--db-read), and a phase `standby-kill`: kill -9 of the standby half-way, then its restart",
    )
    ap.add_argument(
        "--ryw",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after each save, its writer searches for it and must find it (default: on with --standby)",
    )
    ap.add_argument("--shared-buffers", metavar="SIZE",
                    help="shared_buffers of the PostgreSQL servers, e.g. 2GB (default: the test server's 128MB)")  # fmt: skip
    ap.add_argument("--pg-stats", action="store_true",
                    help="load pg_stat_statements on the servers and print, per phase, the statements that took "
                         "their time (per call of the load), and the primary's autovacuum and autoanalyze runs")  # fmt: skip
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (databases die with the server)")
    ap.add_argument("--json", metavar="PATH", help="write everything as JSON")
    ap.add_argument("--src", metavar="DIR", help="run the servers, the operator CLI and the PostgreSQL copy from this "
                    "checkout's src/ (a 'before' tree; its own database, made by its own code)")  # fmt: skip
    ap.add_argument("--before", metavar="DIR", help="first the same run with --src DIR (in a child process: its own "
                    "PostgreSQL), then this tree's; prints both and CPU per call side by side")  # fmt: skip
    args = ap.parse_args(argv)
    if args.quick:
        args.size, args.clients, args.duration, args.cache = 2000, 8, 22.0, None
    if args.ryw is None:
        args.ryw = args.standby
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.before:
        return before_and_after(args, sys.argv[1:] if argv is None else argv)
    import _pg

    machine = C.machine()
    C.print_machine(machine)
    up0 = uptime()
    print(f"# uptime: {up0}", flush=True)
    out: dict[str, Any] = {"machine": machine, "uptime_before": up0, "args": {k: v for k, v in vars(args).items()},
                           "src": args.src or "this tree"}  # fmt: skip
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="memoryd-team-load-"))
    work.mkdir(parents=True, exist_ok=True)
    crew = people(args.clients, 0 if args.single_token else args.teams)
    server = None
    standby = None
    read_dsn = ""
    replicas: list[Replica] = []
    try:
        t_all = time.perf_counter()
        fill_home, fill = cached_fill(args, crew, work)
        t = time.perf_counter()
        # what both servers get (the standby also gets the replication settings, from tests/pg_standby.py)
        # tests/pg.py runs without autovacuum; a team server would not (recall's touches and the saves change
        # pages, which VACUUM makes all-visible again). On the command line: it outranks ALTER SYSTEM, which is
        # how this bench set it until 2026-12-05, to no effect (SHOW autovacuum said off, source command line).
        both = {**(STATS_SETTINGS if args.pg_stats else {}), "autovacuum": "on",
                **({"shared_buffers": args.shared_buffers} if args.shared_buffers else {})}  # fmt: skip
        server = _pg.start_server(settings={**(primary_settings() if args.standby else {}), **both})
        fill["pg_start_s"] = time.perf_counter() - t
        with server.admin() as conn:
            assert conn.execute("SHOW autovacuum").fetchone() == ("on",)
        dsn = _pg.create_database(server.dsn(), "team_load")
        print("fill: copying into PostgreSQL (migrate_store, HNSW after) ...", flush=True)
        fill["pg"] = copy_into_pg(fill_home / "memoryd.db", dsn, args.src)
        if args.pg_stats:
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_visibility")  # atoms' all-visible pages per phase
        home = work / "server-home"
        shutil.rmtree(home, ignore_errors=True)
        fill["vault_link_s"] = link_vault(fill_home, home)
        fill["total_s"] = time.perf_counter() - t_all
        out["fill"] = fill
        if args.standby:
            standby, read_dsn, fill["standby_s"] = make_standby(server, dsn, both)
            print(f"standby: pg_basebackup -R and start in {fill['standby_s']:.1f} s", flush=True)
        print(f"fill: PostgreSQL copy {fill['pg']['copy_s']:.1f} s, HNSW {fill['pg']['index_s']:.1f} s, "
              f"analyze {fill['pg']['analyze_s']:.1f} s; store ready after {fill['total_s']:.1f} s", flush=True)  # fmt: skip

        cwd = work / "cwd"  # not a git repository: the operator CLI and servers need no project
        cwd.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_") and k != "ANTHROPIC_API_KEY"}
        env.update(MEMORYD_DB=dsn, MEMORYD_HOME=str(home))
        if standby is not None:
            env["MEMORYD_DB_READ"] = read_dsn  # what `memoryd-mcp --team --db-read URL` sets
        if args.src:
            global SERVER
            env["PYTHONPATH"] = str(Path(args.src).resolve() / "src")
            SERVER = src_server(args.src, work)
        if args.single_token:
            shared = "team-load-single-token-0123456789abcdef"
            env["MEMORYD_TOKEN"] = shared
            for p in crew:
                p.token = shared
        else:
            out["people_s"] = make_people(crew, env, cwd)
            print(f"people: {len(crew)} tokens, {args.teams} teams in {out['people_s']:.1f} s", flush=True)

        t = time.perf_counter()
        replicas = start_replicas(args.replicas, env, cwd, work, team=not args.single_token, profile=args.profile)
        wait_listening(replicas, 600)
        out["phases"] = {}

        async def drive() -> None:
            import httpx2

            # Idle connections expire before uvicorn's 5 s keep-alive timeout: a request sent on a connection
            # the server is closing fails with ReadError (seen 4 times in 180 s at httpx's default of 5 s).
            limits = httpx2.Limits(max_connections=4 * args.clients, max_keepalive_connections=4 * args.clients,
                                   keepalive_expiry=KEEPALIVE_S)  # fmt: skip
            async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT, limits=limits) as http:
                callers = [Caller(http, p, replicas, token=p.token) for p in crew]
                await warm_up(callers)
                out["replicas_ready_s"] = time.perf_counter() - t
                print(f"replicas: {len(replicas)} answering after {out['replicas_ready_s']:.1f} s "
                      f"(start-up vault sync and warm-up included)", flush=True)  # fmt: skip
                phases: list[tuple[str, float | None]] = [("steady", None)]
                phases += [("standby-kill", args.duration / 2)] if standby is not None else []  # all replicas up
                phases += [("kill", args.duration / 2)] if args.kill else []
                for name, kill_after in phases:
                    for c in callers:  # each phase starts on the client's own replica
                        c.current = c.person.index % len(replicas)
                    print(f"{name}: {args.clients} clients x {args.duration:.0f} s ...", flush=True)
                    watch = StandbyWatch(standby, dsn, read_dsn) if standby is not None else None
                    if args.pg_stats:
                        reset_statements([dsn, *([read_dsn] if standby is not None else [])])
                        vacuumed = maintenance(dsn)
                    on_standby = name == "standby-kill" and watch is not None
                    run = run_phase(name, callers, replicas, args, kill_after=None if on_standby else kill_after,
                                    pg_pid=server.proc.pid if server.proc else None)  # fmt: skip
                    if on_standby:
                        assert watch is not None and kill_after is not None
                        p, _ = await asyncio.gather(run, watch.kill_after(kill_after, time.monotonic()))
                    else:
                        p = await run
                    if watch is not None:
                        p["standby"] = await watch.finish(callers)
                    p["uptime_end"] = uptime().split("load average:")[-1].strip()
                    ids = p.pop("_acked_ids")
                    if args.pg_stats:
                        p["statements"] = {"primary": top_statements(dsn, p["calls"])}
                        if standby is not None and name != "standby-kill":
                            p["statements"]["standby"] = top_statements(read_dsn, p["calls"])
                        for where, stmts in p["statements"].items():
                            print_statements(where, stmts)
                        p["maintenance"] = m = maintenance_since(dsn, vacuumed)
                        print("primary: autovacuum / autoanalyze in this phase (runs, ms): " + (", ".join(
                            f"{t} {v['autovacuums']:.0f} / {v['autoanalyzes']:.0f} ({v['autovacuum_ms']:.0f} / "
                            f"{v['autoanalyze_ms']:.0f} ms)" for t, v in m["tables"].items()) or "none")
                            + f"; atoms' pages all-visible at the end: {C.fmt(m['atoms_all_visible'], 3)}")  # fmt: skip
                    p["lost"] = lost_writes(dsn, ids)
                    p["chain"] = verify_chain(env, cwd)
                    out["phases"][name] = p
                    print_phase(p)

        asyncio.run(drive())
    finally:
        for r in replicas:
            r.stop()
        if standby is not None:
            standby.stop()
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    phases = out["phases"].values()
    out["errors"] = sum(p["errors"]["failed"] for p in phases)
    out["retried_ok"] = sum(p["errors"]["retried_ok"] for p in phases)
    out["acked_lost"] = sum(p["lost"]["lost"] for p in phases)
    out["chain_ok"] = all(p["chain"].get("ok") is True for p in phases)
    out["ryw_missed"] = sum(p["ryw"]["missed"] for p in phases)
    out["uptime_after"] = uptime()
    print(f"\n# uptime: {out['uptime_after']}")
    print(f"# summary: errors {out['errors']} (retried and succeeded {out['retried_ok']}), "
          f"acknowledged writes lost {out['acked_lost']}, chain verified {out['chain_ok']}"
          + (f", own writes not found by their writer {out['ryw_missed']}" if args.ryw else ""))  # fmt: skip
    C.write_json(args.json, out)
    return 0 if out["errors"] == 0 and out["acked_lost"] == 0 and out["chain_ok"] and not out["ryw_missed"] else 1


if __name__ == "__main__":
    sys.exit(main())
