"""Server time of every console page at 10k and 100k memories (target: p50 ≤ 300 ms per page).

    .venv/bin/python bench/ui_pages.py                       # 10k and 100k, SQLite, USE embeddings
    .venv/bin/python bench/ui_pages.py --sizes 10000 --reps 20 --json bench/results/ui_pages.json

Each size gets a fresh store filled through the engine's bulk import (`import_jsonl`: the write
path, real USE vectors, vault files), then spread over 400 days of history by rewriting the
created/updated/last-read times in SQLite (so growth, date filters and decay states have
something to show), plus corrections, governance, held promotions, sessions with handoffs and
recalls, and one locked sensitive scope, all through the engine. Pages are requested in-process
through the guarded ASGI app (httpx2.ASGITransport, bearer token), so the time is the server's:
routing, guard, engine calls, template rendering; no network, no browser. Each page type is
requested --reps times with varying arguments; the chain verification and doctor fragments (run
on demand from the Health page, never on page load) are reported apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _common as C
from latency import gen_queries, gen_texts

TARGET_MS = 300.0
TYPES = ["fact", "decision", "preference", "playbook", "warning", "fact", "fact", "decision"]
TAGS = ["db", "frontend", "ci", "infra", "security", "perf", "docs", "api"]
SOURCES = ["user", "agent", "agent", "importer", "openclaw"]


def _iso(d: datetime) -> str:
    return d.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _repo(path: Path, remote: str) -> Path:
    path.mkdir(parents=True)
    for cmd in (["init", "-q", "-b", "main"], ["remote", "add", "origin", remote]):
        subprocess.run(["git", "-C", str(path), *cmd], check=True, capture_output=True)
    return path


def fill(n: int, root: Path, embedder: Any) -> dict[str, Any]:
    from memoryd import Engine
    from memoryd.shared.config import Settings

    info: dict[str, Any] = {}
    repo = _repo(root / "widgets", "git@github.com:acme/widgets.git")
    other = _repo(root / "payroll", "git@github.com:acme/payroll.git")
    rng = random.Random(5)
    texts = gen_texts(n)
    lines = root / "fill.jsonl"
    with lines.open("w") as fh:
        for i, text in enumerate(texts):
            row = {"content": text, "type": TYPES[i % len(TYPES)], "tags": rng.sample(TAGS, rng.randint(0, 2)),
                   "source": rng.choice(SOURCES), **({"scope": "global"} if i % 10 == 0 else {})}  # fmt: skip
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    settings = Settings(home=root / "home")
    t = time.perf_counter()
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        report = e.import_jsonl(lines, batch_size=512)
        info["import_s"] = round(time.perf_counter() - t, 1)
        info["imported"] = report.imported
    # 400 days of history: bench-only surgery on times (the write path stamps "now").
    now = datetime.now(UTC)
    with sqlite3.connect(settings.db_path) as db:
        ids = [r[0] for r in db.execute("SELECT id FROM atoms")]
        rows = []
        for atom_id in ids:
            created = now - timedelta(days=rng.uniform(0, 400))
            updated = created + timedelta(days=rng.uniform(0, 5))
            read = (updated + timedelta(days=rng.uniform(0, 60))) if rng.random() < 0.3 else None
            rows.append((_iso(created), _iso(min(updated, now)), _iso(min(read, now)) if read else None, atom_id))
        db.executemany("UPDATE atoms SET created_at = ?, updated_at = ?, last_accessed_at = ? WHERE id = ?", rows)
    t = time.perf_counter()
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        sample = rng.sample(ids, 400)
        for atom_id in sample[:150]:
            e.correct(atom_id, "replace", "bench: newer fact", e.get(atom_id).content + " (revised)")
        for atom_id in sample[150:200]:
            e.correct(atom_id, "negate", "bench: wrong")
        for atom_id in sample[200:250]:
            e.govern(atom_id, "quarantine", "bench: check")
        held = [e.memorize(f"maybe {text}", gate="hold") for text in gen_texts(300, seed=99)]
        info["pending"] = sum(1 for r in held if r.promotion_id)
        for i, q in enumerate(gen_queries(100)):
            s = e.session_start(source="claude-code", title=f"bench session {i}")
            e.recall(q)
            e.handoff(f"bench handoff {i}: {q}; next: verify")
            e.session_end(s.id, f"done with {q}")
    with Engine.open(settings, cwd=other, embedder=embedder) as o:
        o.memorize("Payroll runs on the 25th through the bank's SFTP drop", source="user")
        o.mark_sensitive(True)
    info["extras_s"] = round(time.perf_counter() - t, 1)
    info["sample"] = sample
    info["repo"] = repo
    info["settings"] = settings
    return info


async def measure(info: dict[str, Any], embedder: Any, reps: int) -> dict[str, dict[str, float]]:
    import httpx2

    from memoryd import Engine
    from memoryd.engine.console import BrowseQuery
    from memoryd.shared.http_security import new_token
    from memoryd.ui import create_app
    from memoryd.ui.security import allowed_hosts

    rng = random.Random(9)
    token = new_token()
    engine = Engine.open(info["settings"], cwd=info["repo"], embedder=embedder, authority="operator",
                         enforce_sensitive=True)  # fmt: skip
    engine.store.warm()  # as `memoryd ui` does at start; then wait for the HNSW graph (big stores),
    graph = getattr(engine.store, "_vectors", None)  # so the pages are timed in the steady state
    if graph is not None:
        graph.wait_ready(900)
    app = create_app(engine, token=token, hosts=allowed_hosts("127.0.0.1", 8767))
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8767",
                                headers={"Authorization": f"Bearer {token}"}, timeout=600)  # fmt: skip
    sample, queries = info["sample"], gen_queries(reps * 2, seed=21)
    scope = engine.scope.scope_hash
    first = (await client.get("/memories?limit=50")).text
    cursor = None
    for _ in range(40):  # a cursor 40 pages (2000 memories) deep
        cursor = engine.browse(BrowseQuery(before=cursor, limit=50)).next_before
    sessions = [r.session.id for r in engine.sessions_page(limit=100)[0]]
    graph = engine.entity_graph()
    entities = [n["id"] for n in graph.nodes if n["kind"] == "entity"]
    chained = sample[:150]
    pages: dict[str, Any] = {
        "memories (newest 50)": lambda i: "/memories",
        "memories page 41 (keyset)": lambda i: f"/memories?before={cursor}",
        "memories type+status": lambda i: f"/memories?type={TYPES[i % 5]}&status=any",
        "memories tag": lambda i: f"/memories?tag={TAGS[i % len(TAGS)]}",
        "memories source+scope": lambda i: f"/memories?source={SOURCES[i % 4]}&scope={scope}",
        "memories stale": lambda i: "/memories?decay=stale",
        "memories date range": lambda i: f"/memories?from={(datetime.now(UTC) - timedelta(days=30 + i)).date()}"
                                         f"&to={(datetime.now(UTC) - timedelta(days=i)).date()}",
        "search (hybrid)": lambda i: f"/memories?q={queries[i]}",
        "memory": lambda i: f"/memories/{rng.choice(sample[250:])}",
        "memory with chain": lambda i: f"/memories/{chained[i % len(chained)]}",
        "review": lambda i: "/review",
        "sessions": lambda i: "/sessions",
        "session": lambda i: f"/sessions/{sessions[i % len(sessions)]}",
        "entities": lambda i: "/entities",
        "entities graph.json": lambda i: "/entities/graph.json",
        "entity": lambda i: f"/entities/{entities[i % len(entities)]}",
        "health": lambda i: "/health",
    }  # fmt: skip
    assert "memories match" in first
    out: dict[str, dict[str, float]] = {}
    for name, make in pages.items():
        times = []
        for i in range(reps):
            t = time.perf_counter()
            r = await client.get(make(i))
            times.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, (name, r.status_code, r.text[:300])
        out[name] = {"p50": C.med(times), "p95": C.pct(times, 95), "max": max(times), "n": reps}
    for name, path, n in (("health: verify chain (on demand)", "/health/chain", 3),
                          ("health: doctor (on demand)", "/health/doctor", 3)):  # fmt: skip
        times = []
        for _ in range(n):
            t = time.perf_counter()
            r = await client.get(path, headers={"HX-Request": "true"})
            times.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200
        out[name] = {"p50": C.med(times), "p95": C.pct(times, 95), "max": max(times), "n": n}
    await client.aclose()
    engine.close()
    return out


def _table(title: str, pages: dict[str, dict[str, float]]) -> None:
    print(f"\n## {title}")
    print(f"{'page':<36} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  target p50 ≤ {TARGET_MS:.0f}")
    for name, r in pages.items():
        flag = "" if "on demand" in name else ("ok" if r["p50"] <= TARGET_MS else "OVER")
        print(f"{name:<36} {r['p50']:>8.1f} {r['p95']:>8.1f} {r['max']:>8.1f}  {flag}")
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json")
    ap.add_argument(
        "--embedder",
        default="use",
        choices=("use", "hash"),
        help="hash: no model (quick runs; search then has no semantic signal)",
    )
    ap.add_argument("--keep", help="fill into this folder and keep it (one size); reused if already filled")
    args = ap.parse_args()
    from memoryd.search.embed import make_embedder
    from memoryd.shared.config import Settings

    m = C.machine()
    C.print_machine(m)
    embedder = make_embedder(args.embedder)
    results: dict[str, Any] = {"machine": m, "embedder": args.embedder, "sizes": {}}
    if args.keep:
        root = Path(args.keep)
        saved = root / "info.json"
        if not saved.exists():
            root.mkdir(parents=True, exist_ok=True)
            info = fill(int(args.sizes.split(",")[0]), root, embedder)
            kept = {k: v for k, v in info.items() if k not in ("repo", "settings")}
            saved.write_text(json.dumps({**kept, "repo": str(info["repo"]), "home": str(info["settings"].home)}))
        info = json.loads(saved.read_text())
        info.update(repo=Path(info["repo"]), settings=Settings(home=Path(info["home"])))
        load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
        pages = asyncio.run(measure(info, embedder, args.reps))
        _table(f"{root} ({args.embedder} embedder); {load}", pages)
        results["sizes"][str(root)] = {"uptime": load, "pages": pages}
        C.write_json(args.json, results)
        return
    for n in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory(prefix="memoryd-ui-bench-") as tmp:
            info = fill(n, Path(tmp), embedder)
            load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
            pages = asyncio.run(measure(info, embedder, args.reps))
            kept = {k: v for k, v in info.items() if k not in ("sample", "repo", "settings")}
            results["sizes"][n] = {"fill": kept, "uptime": load, "pages": pages}
            _table(f"{n} memories (import {info['import_s']} s, extras {info['extras_s']} s); {load}", pages)
            print("(removing the store…)", flush=True)
    C.write_json(args.json, results)


if __name__ == "__main__":
    main()
