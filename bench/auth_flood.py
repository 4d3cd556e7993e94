"""What a flood of wrong secrets costs a team server (issue 23, pre-authentication cost).

A team server (`memoryd-mcp --transport http --team`) on a throwaway PostgreSQL; `--clients` threads
send `initialize` requests for `--seconds` with a real token id and a wrong secret (`same-id`), or with
a new real token id each time (`many-ids`), or an unknown id (`unknown`), or both alternately (`mixed`).
Every client is on 127.0.0.1, as people behind one NAT or proxy are. Reported per mode: attempts answered
per second, the server's CPU (cores busy, from /proc), its peak RSS, the answers by status, the p50
latency of a correct token's request during the flood (its person connected before), and the innocent
newcomers (issue 37): every 0.2 s a colleague on the same address presents a valid token never used
before; how many were served (200) and their p50. `--src DIR` runs the server from another checkout's
`src` (e.g. a worktree of the commit before), so before and after run alike.

    .venv/bin/python bench/auth_flood.py [--seconds 5] [--clients 8] [--src /tmp/before] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import _common as C  # noqa: E402

from memoryd.engine import Engine, HashEmbedder  # noqa: E402
from memoryd.shared.config import Settings  # noqa: E402
from tests.mcp.clients import HEADERS, INIT, http_server  # noqa: E402
from tests.pg import start_server  # noqa: E402

SCOPE = json.dumps({"workspace": "acme", "repository": "api", "branch": "main"})


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _server_pid(port: int) -> int:
    """The pid of the process listening on `port` (the memoryd-mcp the helper started)."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        if parts[1].endswith(f":{port:04X}") and parts[3] == "0A":
            inode = parts[9]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if any(os.readlink(fd) == f"socket:[{inode}]" for fd in (proc / "fd").iterdir()):
                    return int(proc.name)
            except OSError:
                continue
    raise RuntimeError(f"no process listens on {port}")


def flood(port: int, tokens: list[str], good: str, newcomers: list[str], seconds: float,
          clients: int) -> dict[str, Any]:  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    pid = _server_pid(port)
    statuses: Counter[int] = Counter()
    good_ms: list[float] = []
    newcomer_ms: list[float] = []
    newcomer_status: Counter[int] = Counter()
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def attacker(i: int) -> None:
        with httpx2.Client(timeout=30) as client:
            n = 0
            while time.monotonic() < stop:
                token = tokens[(i + n * clients) % len(tokens)]
                n += 1
                try:
                    r = client.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {token}",
                                                             "Memoryd-Scope": SCOPE})  # fmt: skip
                    with lock:
                        statuses[r.status_code] += 1
                except httpx2.HTTPError:
                    with lock:
                        statuses[0] += 1

    def person() -> None:
        with httpx2.Client(timeout=30) as client:
            while time.monotonic() < stop:
                t = time.perf_counter()
                client.post(
                    url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {good}", "Memoryd-Scope": SCOPE}
                )
                good_ms.append((time.perf_counter() - t) * 1000)
                time.sleep(0.1)

    def newcomer() -> None:
        with httpx2.Client(timeout=30) as client:
            time.sleep(0.5)  # once the flood runs
            for token in newcomers:
                if time.monotonic() >= stop:
                    break
                t = time.perf_counter()
                r = client.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {token}",
                                                         "Memoryd-Scope": SCOPE})  # fmt: skip
                newcomer_ms.append((time.perf_counter() - t) * 1000)
                newcomer_status[r.status_code] += 1
                time.sleep(0.2)

    with httpx2.Client(timeout=120) as client:  # warm: the engine opens on the first request
        client.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {good}", "Memoryd-Scope": SCOPE})
    stop = time.monotonic() + seconds
    cpu0, t0 = _cpu_s(pid), time.monotonic()
    threads = [threading.Thread(target=attacker, args=(i,)) for i in range(clients)]
    threads += [threading.Thread(target=person), threading.Thread(target=newcomer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    attempts = sum(statuses.values())
    return {
        "attempts_per_s": attempts / wall,
        "server_cores": (_cpu_s(pid) - cpu0) / wall,
        "peak_rss_mb": _rss_mb(pid),
        "statuses": dict(sorted(statuses.items())),
        "good_p50_ms": statistics.median(good_ms) if good_ms else None,
        "newcomers": dict(sorted(newcomer_status.items())),
        "newcomer_p50_ms": statistics.median(newcomer_ms) if newcomer_ms else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--src", help="run the server from this checkout's src/ (a 'before' tree)")
    ap.add_argument("--json")
    args = ap.parse_args()
    C.print_machine(C.machine())
    env = {"PYTHONPATH": str(Path(args.src).resolve() / "src")} if args.src else {}
    rows, out = [], {}
    server = start_server()
    with tempfile.TemporaryDirectory() as tmp:
        dsn = server.fresh_database()
        home = Path(tmp) / "home"
        with Engine.open(Settings(home=home, db=dsn), embedder=HashEmbedder(), authority="operator", cwd=home) as op:
            good = op.create_token("alice").token
            ids = [op.create_token(f"p{i}").token for i in range(200)]
            fresh = [op.create_token(f"n{i}").token for i in range(4 * int(5 * args.seconds) + 4)]
        wrong = [t[:-4] + ("AAAA" if not t.endswith("AAAA") else "BBBB") for t in ids]
        unknown = [f"mdt_{'0' * 25}{i % 10}_{'A' * 43}" for i in range(200)]
        mixed = [t for pair in zip(wrong, unknown, strict=True) for t in pair]
        modes = {"same-id": wrong[:1], "many-ids": wrong, "unknown": unknown, "mixed": mixed}
        for n, (mode, tokens) in enumerate(modes.items()):
            newcomers = fresh[n::4]  # never used by any server before
            with http_server(home, home, "--team", MEMORYD_DB=dsn, **env) as port:
                r = flood(port, tokens, good, newcomers, args.seconds, args.clients)
            out[mode] = r
            served = f"{r['newcomers'].get(200, 0)}/{sum(r['newcomers'].values())}"
            rows.append([mode, f"{r['attempts_per_s']:.0f}", f"{r['server_cores']:.2f}", f"{r['peak_rss_mb']:.0f}",
                         C.fmt(r["good_p50_ms"], 1), served, C.fmt(r["newcomer_p50_ms"], 1),
                         json.dumps(r["statuses"])])  # fmt: skip
    server.stop()
    print(C.table(["flood", "attempts/s", "server cores", "peak RSS MB", "good p50 ms", "newcomers served",
                   "newcomer p50 ms", "answers"], rows))  # fmt: skip
    C.write_json(args.json, {"machine": C.machine(), "src": args.src or "this tree", "results": out})


if __name__ == "__main__":
    main()
