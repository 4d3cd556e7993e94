#!/usr/bin/env python3
"""CPU per `mem_search` of a team-server replica and of its PostgreSQL backends, two checkouts side by side on one
database (issue 27).

Over `bench/team_load.py`'s fill (its cache, or made now), copied into a throwaway PostgreSQL (`_pg.bulk_fill`,
this tree's schema), with tokens and teams made by this tree's operator CLI: one `memoryd-mcp --team` replica of
`--before DIR` (another checkout, e.g. `git archive <rev> | tar -x -C DIR`) and one of this tree, on loopback.
One client sends plain `tools/call mem_search` POSTs (the load bench's queries) to both in turn, alternating
which goes first, as a team member (a shared repository) and a person alone (a private one), one call at a
time. Per round: each replica's CPU ms per call (its process, from /proc), the CPU ms per call of the
PostgreSQL backends serving its connections (found by their client ports), and the ratios. Both replicas see
the same machine at the same moment, so the ratio holds where the shared machine's speed does not (the load
runs of this bench family moved 15% between runs).

    .venv/bin/python bench/replica_cpu.py --before /tmp/before         # 100k, 200 calls x 4 rounds
    .venv/bin/python bench/replica_cpu.py --before /tmp/before --size 2000 --calls 50 --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import _common as C  # noqa: E402
import team_load  # noqa: E402
from latency import gen_queries  # noqa: E402


def _ports(pid: int) -> set[int]:
    """The local TCP ports of a process and its children (their connections to PostgreSQL among them)."""
    pids = [pid, *team_load.children(pid)]
    inodes = set()
    for p in pids:
        try:
            fds = list(Path(f"/proc/{p}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[9] in inodes:
                ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return ports


def backends_cpu_s(conn: Any, replica: Any) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving this replica's connections (by client port)."""
    rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE client_port = ANY(%s)",
                        (sorted(_ports(replica.proc.pid)),)).fetchall()  # fmt: skip
    out = {}
    for (pid,) in rows:
        f = team_load._stat(pid)
        if f is not None:
            out[pid] = team_load.cpu_s(f)
    return out


def _since(now: dict[int, float], before: dict[int, float]) -> float:
    return sum(v - before.get(pid, 0.0) for pid, v in now.items())  # a backend opened meanwhile counts whole


def _call(http: Any, replica: Any, person: Any, query: str, rid: int) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {person.token}", "Memoryd-Scope": person.scope_header,
               "MCP-Protocol-Version": team_load.Caller.PROTOCOL}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "mem_search", "arguments": {"query": query, "top_k": 10}}}  # fmt: skip
    r = http.post(replica.url, json=body, headers=headers)
    if r.status_code != 200 or "result" not in r.json() or r.json()["result"].get("isError"):
        raise SystemExit(f"{replica.name}: HTTP {r.status_code}: {r.text[:300]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    ap.add_argument("--before", required=True, metavar="DIR", help="the other checkout (its src/ is imported)")
    ap.add_argument("--calls", type=int, default=200, help="calls per replica per round (default 200)")
    ap.add_argument("--rounds", type=int, default=4, help="rounds (default 4)")
    ap.add_argument("--shared-buffers", metavar="SIZE", default="2GB", help="the server's shared_buffers (2GB)")
    ap.add_argument("--json", metavar="PATH", help="write everything as JSON")
    args = ap.parse_args()
    before = Path(args.before).resolve()
    if not (before / "src" / "memoryd").is_dir():
        raise SystemExit(f"--before {before}: no src/memoryd there (a checkout of this repository?)")
    import httpx2
    import psycopg

    machine = C.machine()
    C.print_machine(machine)
    crew = team_load.people(args.clients, args.teams)
    out: dict[str, Any] = {"machine": machine, "args": vars(args), "rounds": []}
    with tempfile.TemporaryDirectory(prefix="memoryd-replica-cpu-") as tmp:
        work = Path(tmp)
        with team_load.postgres_copy(args, crew, work, shared_buffers=args.shared_buffers) as (fill, dsn):
            home = work / "home"
            team_load.link_vault(fill, home)
            base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
            env = {**base, "MEMORYD_DB": dsn, "MEMORYD_HOME": str(home)}
            cwd = work / "cwd"  # not a git repository, as in the load bench
            cwd.mkdir()
            people = [crew[0], crew[1]]  # a team member, a person alone
            team_load.make_people(crew, env, cwd)
            replicas = []
            this_server = team_load.SERVER
            for name, src in (("before", before), ("after", None)):
                side = {**env, **({"PYTHONPATH": str(src / "src")} if src else {})}
                (work / name).mkdir()
                # the other checkout's own entry point (this venv's script may name a module it lacks)
                team_load.SERVER = team_load.src_server(str(src), work / name) if src else this_server
                r = team_load.start_replicas(1, side, cwd, work / name, team=True, profile="memoryd")[0]
                r.name = name
                replicas.append(r)
            team_load.SERVER = this_server
            try:
                team_load.wait_listening(replicas, 180)
                with httpx2.Client(timeout=120) as http, psycopg.connect(dsn, autocommit=True) as admin:
                    for rnd in range(args.rounds):
                        queries = gen_queries(args.calls + 10, seed=100 + rnd)
                        for i, q in enumerate(queries[:10]):  # warm: models, caches, prepared statements
                            for r in replicas:
                                _call(http, r, people[i % 2], q, i)
                        cpu0 = [r.cpu_s() for r in replicas]
                        pg0 = [backends_cpu_s(admin, r) for r in replicas]
                        for i, q in enumerate(queries[10:]):
                            for r in replicas if i % 2 == 0 else replicas[::-1]:
                                _call(http, r, people[i % 2], q, i)
                        cpu1 = [r.cpu_s() for r in replicas]
                        pg = [1000 * _since(backends_cpu_s(admin, r), b) / args.calls
                              for r, b in zip(replicas, pg0, strict=True)]  # fmt: skip
                        ms = [1000 * (b - a) / args.calls for a, b in zip(cpu0, cpu1, strict=True)]
                        out["rounds"].append({"before_ms": ms[0], "after_ms": ms[1], "ratio": ms[1] / ms[0],
                                              "pg_before_ms": pg[0], "pg_after_ms": pg[1], "pg_ratio": pg[1] / pg[0]})  # fmt: skip
                        print(f"round {rnd + 1}: replica before {ms[0]:.2f} ms, after {ms[1]:.2f} ms per call "
                              f"(after/before {ms[1] / ms[0]:.3f}); PostgreSQL before {pg[0]:.2f} ms, after "
                              f"{pg[1]:.2f} ms (after/before {pg[1] / pg[0]:.3f})", flush=True)  # fmt: skip
            finally:
                for r in replicas:
                    r.stop()
    rounds = out["rounds"]
    summary = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    out["median"] = summary
    print(C.table([f"CPU per mem_search, median of {len(rounds)} rounds x {args.calls} calls", "before ms",
                   "after ms", "after / before"],
                  [["the replica", f"{summary['before_ms']:.2f}", f"{summary['after_ms']:.2f}", f"{summary['ratio']:.3f}"],
                   ["its PostgreSQL backends", f"{summary['pg_before_ms']:.2f}", f"{summary['pg_after_ms']:.2f}",
                    f"{summary['pg_ratio']:.3f}"]]))  # fmt: skip
    C.write_json(args.json, out)


if __name__ == "__main__":
    main()
