#!/usr/bin/env python3
"""One memory per fact: update pairs detected, look-alikes and plain memories left alone (issue 35).

Data: ../shared/data/coding-dev/memories.jsonl (written for this project, free to use): 200 memories in four
repositories, 16 update pairs (`supersedes`: the newer replaces the older) and 12 apart pairs (`apart`: same
words, another environment, service, owner, queue or client; both current).

Each repository is a scope of one fresh store. Every memory goes through the engine's write path in
`created_at` order (or `--order reverse|shuffled`: older notes stored after newer ones, which the source
time must still order), with its `created_at` as `written_at`, by `--path memorize` (one `Engine.memorize`
per memory, `gate="trusted"` as an import: no memory refused for being terse) or `--path import` (one JSON-lines
import per repository). Then, from the stored statuses and links:

- update pairs detected: the older memory is `superseded` by the newer one (and the newer one is active);
- apart pairs touched: either member superseded, merged or linked to anything (must be 0);
- plain memories touched: a memory of no pair superseded, merged, or superseding something (must be 0);
- suggestions for review (`may_supersede`), by kind of pair;
- the time the write path spends linking (`Linker.find`), median and p95 per save, beside the whole save.

Leave-one-repository-out: the three same-subject constants of the judge (`text/judge.py`: SUPERSEDE_JACCARD,
SUPERSEDE_COVER, SUPERSEDE_SWAP_COVER) are chosen on three repositories (most pairs found, a wrong link
costing five) over the pairs the engine's own candidate search proposed, and scored on the fourth.

    .venv/bin/python bench/supersede.py                        # SQLite, memorize, created_at order
    .venv/bin/python bench/supersede.py --order reverse        # older notes stored last
    .venv/bin/python bench/supersede.py --path import --backend both --json out.json
    .venv/bin/python bench/supersede.py --no-loro --locomo 7       # + LoCoMo dev turns: nothing linked
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "coding-dev" / "memories.jsonl"
GRID = {
    "SUPERSEDE_JACCARD": (0.1, 0.15, 0.2, 0.25, 0.3),
    "SUPERSEDE_COVER": (0.25, 0.3, 0.35, 0.4, 0.5),
    "SUPERSEDE_SWAP_COVER": (0.1, 0.15, 0.2, 0.25, 0.3),
}
WRONG_COST = 5


def load(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(rows, key=lambda m: (m["created_at"], m["id"]))


def ordered(rows: list[dict[str, Any]], order: str, seed: int) -> list[dict[str, Any]]:
    if order == "reverse":
        return list(reversed(rows))
    if order == "shuffled":
        out = list(rows)
        random.Random(seed).shuffle(out)
        return out
    return rows


def _scope(repo: str, tenant: str) -> Any:
    from memoryd.shared.models import Scope

    owner, name = repo.split("/")
    return Scope(tenant_id=tenant, workspace=owner, repository=name)


class Timed:
    """Wraps `Linker.find` to time it and to record which candidates it judged (for the grid)."""

    def __init__(self, linker: Any) -> None:
        self.linker, self.times, self.pairs = linker, [], []
        self._find, self._cands = linker.find, linker._candidates
        linker.find, linker._candidates = self.find, self.candidates

    def find(self, atom: Any, vector: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return self._find(atom, vector, **kw)
        finally:
            self.times.append((time.perf_counter() - t) * 1000)

    def candidates(self, atom: Any, vector: Any, batch: Any) -> Any:
        out = self._cands(atom, vector, batch)
        self.pairs.append((atom, list(out)))
        return out


def run_store(rows: list[dict[str, Any]], *, path: str, backend: str, pg: Any, embedder: Any) -> dict[str, Any]:
    """Store every row; return each memory's final state, the links, the timings and the judged pairs."""
    from memoryd import Engine
    from memoryd.shared.config import Settings

    tmp = tempfile.TemporaryDirectory(prefix="memoryd-supersede-")
    root = Path(tmp.name)
    (root / "cwd").mkdir()
    dsn = pg.fresh_database() if backend == "postgres" else None
    engine = Engine.open(Settings(home=root / "home", db=dsn), cwd=root / "cwd", embedder=embedder,
                         authority="operator")  # fmt: skip
    timed = Timed(engine._linker)
    tenant = engine.scope.tenant_id
    ids: dict[str, str] = {}  # dataset id -> atom id
    results: dict[str, Any] = {}
    save_ms: list[float] = []
    try:
        if path == "memorize":
            for m in rows:
                t = time.perf_counter()
                r = engine.memorize(m["text"], source="user", gate="trusted", scope=_scope(m["repo"], tenant),
                                    written_at=m["created_at"])  # fmt: skip
                save_ms.append((time.perf_counter() - t) * 1000)
                ids[m["id"]] = r.restatement_id or r.atom_id
                results[m["id"]] = r
        else:
            by_text = {}
            for repo in dict.fromkeys(m["repo"] for m in rows):
                f = root / f"{repo.replace('/', '_')}.jsonl"
                lines = [m for m in rows if m["repo"] == repo]
                scope = _scope(repo, tenant).model_dump()
                f.write_text("".join(json.dumps({"content": m["text"], "written_at": m["created_at"], "source": "user",
                                                 "scope": scope}) + "\n" for m in lines))  # fmt: skip
                t = time.perf_counter()
                engine.import_jsonl(f, batch_size=64)
                save_ms.append((time.perf_counter() - t) * 1000 / len(lines))
                by_text.update({m["text"]: m["id"] for m in lines})
            from memoryd.search.tokenize import normalize

            norm = {normalize(t): i for t, i in by_text.items()}
            for a in engine.store.list_atoms(limit=-1):
                if (i := norm.get(normalize(a.content))) is not None:
                    ids[i] = a.id
        atoms = engine.store.get_atoms(list(ids.values()))
        back = {v: k for k, v in ids.items()}
        state = {}
        for i, aid in ids.items():
            a = atoms[aid]
            links = engine.store.atom_links(aid)
            state[i] = {"status": a.status, "superseded_by": back.get(a.superseded_by or "", a.superseded_by),
                        "links": [(back.get(s, s), back.get(d, d), k) for s, d, k in links]}  # fmt: skip
        pairs = [(back.get(a.id), [back.get(c.id) for c in cands]) for a, cands in timed.pairs]
        return {"state": state, "find_ms": timed.times, "save_ms": save_ms, "pairs": pairs}
    finally:
        engine.close()
        if dsn:
            pg.drop_database(dsn)
        tmp.cleanup()


def score(rows: list[dict[str, Any]], state: dict[str, Any]) -> dict[str, Any]:
    by_id = {m["id"]: m for m in rows}
    updates = [(m["id"], m["supersedes"]) for m in rows if "supersedes" in m]
    apart = sorted({tuple(sorted((m["id"], m["apart"]))) for m in rows if "apart" in m})
    in_pair = {i for p in updates for i in p} | {i for p in apart for i in p}
    detected = [p for p in updates if state[p[1]]["status"] == "superseded" and state[p[1]]["superseded_by"] == p[0]
                and state[p[0]]["status"] == "active"]  # fmt: skip
    missed = [p for p in updates if p not in detected]

    def applied(i: str) -> list[tuple[str, str, str]]:  # links that changed something (not suggestions)
        return [lk for lk in state[i]["links"] if lk[2] in ("supersedes", "restates")]

    apart_touched = [p for p in apart if any(state[i]["status"] != "active" or applied(i) for i in p)]
    plain_touched = [i for i in by_id if i not in in_pair and (state[i]["status"] != "active" or applied(i))]
    wrong_update_links = [p for p in updates
                          if any(set(lk[:2]) != set(p) for i in p for lk in applied(i))]  # fmt: skip
    suggestions = {(s, d) for i in by_id for s, d, k in state[i]["links"] if k == "may_supersede"}
    kinds = Counter(
        "update pair" if (s, d) in set(updates) else "apart pair" if tuple(sorted((s, d))) in apart else "other"
        for s, d in suggestions
    )
    return {
        "update_pairs": len(updates), "detected": len(detected), "missed": missed,
        "apart_pairs": len(apart), "apart_touched": apart_touched,
        "plain": len(by_id) - len(in_pair), "plain_touched": plain_touched,
        "update_pairs_linked_elsewhere": wrong_update_links,
        "suggestions": dict(kinds), "statuses": dict(Counter(s["status"] for s in state.values())),
    }  # fmt: skip


# --------------------------------------------------------------------------- leave one repository out


def _decisions(rows: list[dict[str, Any]], pairs: list[tuple[str, list[str]]]) -> dict[str, tuple[str, str, str]]:
    """What the engine's rule decides for each stored memory over the candidates it judged: (kind, new, old)."""
    from memoryd.text.judge import band, judge_heuristic

    by_id = {m["id"]: m for m in rows}
    out = {}
    for new, cands in pairs:
        best: tuple[int, float, str, str, str] | None = None
        for c in cands:
            if new is None or c is None:
                continue
            a, b = by_id[new], by_id[c]
            newer, older = (a, b) if (a["created_at"], a["id"]) >= (b["created_at"], b["id"]) else (b, a)
            j = judge_heuristic(newer["text"], older["text"])
            if band(j.confidence, j.type) != "auto" or j.type not in ("supersedes", "duplicates"):
                continue
            key = (2 if j.type == "duplicates" else 1, j.confidence, j.type, newer["id"], older["id"])
            best = max(best, key) if best else key
        if best is not None and new is not None:
            out[new] = (best[2], best[3], best[4])
    return out


def _fold_score(
    rows: list[dict[str, Any]], decisions: dict[str, tuple[str, str, str]], repos: set[str]
) -> tuple[int, int]:
    truth = {(m["id"], m["supersedes"]) for m in rows if "supersedes" in m and m["repo"] in repos}
    repo_of = {m["id"]: m["repo"] for m in rows}
    found = {(n, o) for _, (kind, n, o) in decisions.items() if repo_of[n] in repos and kind == "supersedes"}
    merged = {(n, o) for _, (kind, n, o) in decisions.items() if repo_of[n] in repos and kind == "duplicates"}
    return len(found & truth), len(found - truth) + len(merged)


def loro(rows: list[dict[str, Any]], pairs: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
    import memoryd.text.judge as J

    names = list(GRID)
    saved = {n: getattr(J, n) for n in names}
    table: dict[tuple[float, ...], dict[str, Any]] = {}
    try:
        for combo in itertools.product(*GRID.values()):
            for n, v in zip(names, combo, strict=True):
                setattr(J, n, v)
            table[combo] = _decisions(rows, pairs)
    finally:
        for n, v in saved.items():
            setattr(J, n, v)
    repos = sorted({m["repo"] for m in rows})
    folds = []
    for held in repos:
        train = set(repos) - {held}

        gain = {combo: (lambda tp, wrong: tp - WRONG_COST * wrong)(*_fold_score(rows, table[combo], train))
                for combo in table}  # fmt: skip
        top = max(gain.values())
        ties = [combo for combo, g in gain.items() if g == top]
        # among equally good constants, the middle of that plateau (the most room on every side)
        mid = [statistics.median(c[k] for c in ties) for k in range(len(names))]
        best = min(ties, key=lambda c: sum(abs(v - m) for v, m in zip(c, mid, strict=True)))
        tp, wrong = _fold_score(rows, table[best], {held})
        n = sum(1 for m in rows if "supersedes" in m and m["repo"] == held)
        folds.append({"held_out": held, "chosen": dict(zip(names, best, strict=True)), "detected": tp, "of": n,
                      "wrong": wrong})  # fmt: skip
    return folds


def locomo_links(n: int, embedder: Any) -> list[dict[str, Any]]:
    """Conversation turns must not be linked: each of the first `n` LoCoMo dev conversations stored turn by turn
    (as bench/locomo.py stores them); what the write path did to them."""
    import locomo

    data = json.loads(locomo.DATA.read_text(encoding="utf-8"))
    out = []
    for conv in data[:n]:
        te = C.fresh_engine(embedder)
        try:
            effects: Counter[str] = Counter()
            for _, text in locomo.turns_of(conv):
                r = te.engine.memorize(text, source="user", gate="trusted")
                effects[r.effect] += 1
                effects["supersedes"] += bool(r.supersedes or r.superseded_by)
                effects["review"] += bool(r.review)
            statuses = Counter(a.status for a in te.engine.store.list_atoms(limit=-1))
        finally:
            te.close()
        out.append({"conversation": conv["sample_id"], "turns": sum(effects[k] for k in ("applied", "merged", "no_op")),
                    "merged": effects["merged"], "superseding": effects["supersedes"], "suggested": effects["review"],
                    "superseded": statuses["superseded"]})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--path", choices=("memorize", "import"), default="memorize")
    ap.add_argument("--order", choices=("created", "reverse", "shuffled"), default="created")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="sqlite")
    ap.add_argument("--no-loro", action="store_true", help="skip the leave-one-repository-out grid")
    ap.add_argument("--locomo", type=int, default=0, metavar="N",
                    help="also store the first N LoCoMo dev conversations and count what was linked (must be 0)")  # fmt: skip
    ap.add_argument("--json", help="write the full results here")
    args = ap.parse_args()

    from memoryd.search.embed import make_embedder
    from memoryd.shared.config import Settings

    m = C.machine()
    C.print_machine(m)
    rows = load(args.data)
    embedder = make_embedder(Settings().embedder)
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    pg = None
    if "postgres" in backends:
        import _pg

        pg = _pg.start_server()
    out: dict[str, Any] = {"machine": m, "args": vars(args) | {"data": str(args.data)}, "runs": {}}
    try:
        for backend in backends:
            run = run_store(ordered(rows, args.order, args.seed), path=args.path, backend=backend, pg=pg,
                            embedder=embedder)  # fmt: skip
            s = score(rows, run["state"])
            s["find_ms_p50"], s["find_ms_p95"] = C.med(run["find_ms"]), C.pct(run["find_ms"], 95)
            s["save_ms_p50"] = C.med(run["save_ms"])
            out["runs"][backend] = {"score": s, "pairs": run["pairs"]}
            print(f"\n## {backend}, {args.path}, {args.order} order ({len(rows)} memories, embedder {embedder.name})\n")
            print(C.table(["measure", "value", "goal"], [
                ["update pairs detected (superseded by the newer)", f"{s['detected']} / {s['update_pairs']}", "16 / 16"],
                ["apart pairs merged or superseded", f"{len(s['apart_touched'])} / {s['apart_pairs']}", "0"],
                ["plain memories touched", f"{len(s['plain_touched'])} / {s['plain']}", "0"],
                ["update pairs linked to another memory", len(s["update_pairs_linked_elsewhere"]), "0"],
                ["suggestions for review", ", ".join(f"{k} {v}" for k, v in sorted(s["suggestions"].items())) or "0",
                 "-"],
                ["final statuses", ", ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items())), "-"],
                ["linking per save, p50 / p95 ms", f"{C.fmt(s['find_ms_p50'], 1)} / {C.fmt(s['find_ms_p95'], 1)}", "-"],
                ["whole save p50 ms", C.fmt(s["save_ms_p50"], 1), "-"],
            ]))  # fmt: skip
            for label in ("missed", "apart_touched", "plain_touched", "update_pairs_linked_elsewhere"):
                if s[label]:
                    print(f"  {label}: {s[label]}")
        if not args.no_loro:
            first = out["runs"][backends[0]]["pairs"]
            folds = loro(rows, first)
            out["loro"] = folds
            print(
                "\n## Leave one repository out: the judge's same-subject constants chosen on three, scored on the fourth\n"
            )
            print(C.table(["held out", "chosen (jaccard / cover / swap cover)", "detected", "wrong links"], [
                [f["held_out"], " / ".join(str(v) for v in f["chosen"].values()), f"{f['detected']} / {f['of']}",
                 f["wrong"]] for f in folds]))  # fmt: skip
            total = sum(f["detected"] for f in folds), sum(f["of"] for f in folds), sum(f["wrong"] for f in folds)
            print(f"\nheld-out total: {total[0]} / {total[1]} detected, {total[2]} wrong")
        if args.locomo:
            rows_l = locomo_links(args.locomo, embedder)
            out["locomo"] = rows_l
            print("\n## LoCoMo conversations stored turn by turn: nothing may be merged or superseded\n")
            print(C.table(["conversation", "turns", "merged", "superseding", "superseded", "suggested"], [
                [r["conversation"], r["turns"], r["merged"], r["superseding"], r["superseded"], r["suggested"]]
                for r in rows_l]))  # fmt: skip
    finally:
        if pg is not None:
            pg.stop()
    C.write_json(args.json, out)


if __name__ == "__main__":
    main()
