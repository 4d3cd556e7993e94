#!/usr/bin/env python3
"""Coding-agent recall (issue 35): which memories reach the agent, in recall and through the real prompt hook.

Data: `../shared/data/coding-dev/` (200 memories in four repositories, 300 prompts with gold ids; its README
and check.py) plus this benchmark's own cases in `bench/data/coding_extra.jsonl` (same schema; `--no-extra`
leaves them out). Each repository is a git checkout with its own `origin`, so its memories are one scope.

1. Store: every memory, oldest first (`created_at`), through the agent write path
   (`engine.memorize(text, source="agent", gate="admit")`, what `memory_memorize` does), in its repository's
   scope; the source time is passed when the engine takes one. Effects are counted (applied, merged, no-op,
   pending, rejected).
2. Recall, in process: `engine.recall(prompt, max_results=10, record=False)` per prompt. Per category:
   R@1/5/10 and MRR (any gold id), task also the share of gold in the top 10; update: the newer above the
   stale one; apart: the asked one above its look-alike; none: the top score. `bm25` (bm25s, English
   stemmer, per repository over the same texts) beside it. Then the hook's decision
   (`memoryd.search.relevance`, or the score floor of a tree without it) applied to the same hits.
3. The real hook: `memoryd daemon start`, then per prompt `memoryd hook user-prompt-submit` spawned with the
   Claude Code JSON payload (a fresh session each) in the repository's checkout: gold injected, anything
   injected, a superseded memory injected, tokens injected (`memoryd.shared.injected.estimate_tokens`).
4. Final status of every memory once everything is stored: counts by status, merged into another,
   superseded, and whether any apart pair (look-alikes that must stay two) was merged or superseded.

    .venv/bin/python bench/coding_recall.py [--quick] [--json PATH] [--before REV] [--no-hook]

`--before REV` runs this script on another commit (a temporary `git worktree` of REV, its `src` first on the
path of every process) and then on this tree, one after the other, and prints both tables side by side.
`--json PATH` also writes every prompt's top hits with their signals. The constants are fitted by
`bench/coding_fit.py`.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "coding-dev"
EXTRA = HERE / "data" / "coding_extra.jsonl"
CATS = ("paraphrase", "keyword", "update", "task", "apart", "none")
_HIT = re.compile(r"^- \((\w+), ([0-9A-HJKMNP-TV-Z]{26})\)", re.M)


def load(data: Path, extra: Path | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    mems = [json.loads(x) for x in (data / "memories.jsonl").read_text().splitlines() if x.strip()]
    qs = [json.loads(x) for x in (data / "questions.jsonl").read_text().splitlines() if x.strip()]
    if extra is not None and extra.is_file():
        for line in extra.read_text().splitlines():
            if line.strip():
                o = json.loads(line)
                (mems if o.pop("type") == "memory" else qs).append(o)
    return mems, qs


def checkout(root: Path, repo: str) -> Path:
    """A git checkout whose `origin` names the repository, so the engine infers its scope from it."""
    path = root / repo.replace("/", "__")
    path.mkdir(parents=True, exist_ok=True)
    if not (path / ".git").exists():
        for cmd in (["git", "init", "-q"], ["git", "remote", "add", "origin", f"git@example.com:{repo}.git"]):
            subprocess.run(cmd, cwd=path, check=True, capture_output=True)
    return path


def source_time_param(engine: Any) -> str | None:
    """The `memorize` parameter that takes the time a memory was written at its source, if this engine has one."""
    params = inspect.signature(engine.memorize).parameters
    return next((p for p in ("written_at", "source_created_at", "created_at") if p in params), None)


# --------------------------------------------------------------------------- store


def store(home: Path, root: Path, mems: list[dict[str, Any]], embedder: Any) -> dict[str, Any]:
    from memoryd import Engine
    from memoryd.shared.config import Settings
    from memoryd.shared.errors import Rejected

    engines: dict[str, Any] = {}
    atom_of: dict[str, str | None] = {}  # memory id -> the atom that holds it (None: rejected)
    effects: Counter[str] = Counter()
    written = None
    t0 = time.perf_counter()
    for m in sorted(mems, key=lambda m: (m["created_at"], m["id"])):
        if m["repo"] not in engines:
            engines[m["repo"]] = Engine.open(Settings(home=home), cwd=checkout(root, m["repo"]), embedder=embedder)
            written = source_time_param(engines[m["repo"]])
        extra = {written: m["created_at"]} if written else {}
        try:
            r = engines[m["repo"]].memorize(m["text"], source="agent", gate="admit", **extra)
        except Rejected:
            effects["rejected"] += 1
            atom_of[m["id"]] = None
            continue
        effects[r.effect if r.status != "pending" else "pending"] += 1
        atom_of[m["id"]] = r.atom_id
    return {"engines": engines, "atom_of": atom_of, "effects": dict(effects), "source_time": written,
            "store_s": round(time.perf_counter() - t0, 1)}  # fmt: skip


def final_status(engines: dict[str, Any], mems: list[dict[str, Any]], atom_of: dict[str, str | None]) -> dict[str, Any]:
    ids = [a for a in atom_of.values() if a]
    atoms: dict[str, Any] = {}
    for e in engines.values():
        atoms.update(e.store.get_atoms(ids))
    by_status = Counter(atoms[a].status for a in set(ids) if a in atoms)
    holders = Counter(a for a in atom_of.values() if a)
    merged = sum(n - 1 for n in holders.values() if n > 1)
    by_id = {m["id"]: m for m in mems}
    wrong = []
    for m in mems:
        other = m.get("apart")
        if not other or m["id"] > other:
            continue
        a, b = atom_of.get(m["id"]), atom_of.get(other)
        sa, sb = (atoms[a].status if a in atoms else None), (atoms[b].status if b in atoms else None)
        if a is None or b is None or a == b or sa != "active" or sb != "active":
            wrong.append({"pair": [m["id"], other], "atoms": [a, b], "status": [sa, sb]})
    stale_active = [m["supersedes"] for m in mems if m.get("supersedes") and atom_of.get(m["supersedes"]) in atoms
                    and atoms[atom_of[m["supersedes"]]].status == "active"]  # fmt: skip
    return {"by_status": dict(by_status), "merged_into_another": merged, "apart_pairs": sum(
        1 for m in mems if m.get("apart") and m["id"] < m["apart"]), "apart_wrongly_joined": wrong,
        "update_pairs": sum(1 for m in mems if m.get("supersedes")),
        "stale_still_active": len(stale_active), "_by_id": len(by_id)}  # fmt: skip


# --------------------------------------------------------------------------- recall


def decider() -> tuple[str, Any]:
    """The hook's relevance decision of this tree: `memoryd.search.relevance.inject`, else the score floor."""
    try:
        from memoryd.search import relevance  # type: ignore[attr-defined]
    except ImportError:
        from memoryd.shared.config import Settings

        floor = Settings().prompt_min_score
        return f"score >= {floor}", lambda query, hits: [h for h in hits if h.score >= floor]
    return "relevance.inject", lambda query, hits: relevance.inject(hits)


def recall_all(st: dict[str, Any], qs: list[dict[str, Any]], mems: list[dict[str, Any]]) -> dict[str, Any]:
    engines, atom_of = st["engines"], st["atom_of"]
    held: dict[str, list[str]] = defaultdict(list)
    for mid, a in atom_of.items():
        if a:
            held[a].append(mid)
    texts = {m["id"]: m["text"] for m in mems}
    by_repo: dict[str, list[str]] = defaultdict(list)
    for m in mems:
        by_repo[m["repo"]].append(m["id"])
    bm = {r: C.BM25([texts[i] for i in ids], "bm25s-en-stem") for r, ids in by_repo.items()}
    name, inject = decider()
    rows = []
    ms = []
    for q in qs:
        t = time.perf_counter()
        hits = engines[q["repo"]].recall(q["question"], max_results=10, record=False).hits
        ms.append((time.perf_counter() - t) * 1000)
        ranked = [mid for h in hits for mid in held.get(h.atom.id, [h.atom.id])]
        chosen = [mid for h in inject(q["question"], hits) for mid in held.get(h.atom.id, [h.atom.id])]
        b = bm[q["repo"]].search(q["question"], 10)
        rows.append({"qid": q["qid"], "repo": q["repo"], "cat": q["cat"], "ranked": ranked,
                     "bm25": [by_repo[q["repo"]][i] for i, _ in b], "chosen": chosen,
                     "top": [{"ids": held.get(h.atom.id, [h.atom.id]), "score": h.score, "signals": h.signals,
                              "status": h.atom.status} for h in hits]})  # fmt: skip
    return {"rows": rows, "decider": name, "recall_ms_p50": C.med(ms), "recall_ms_p95": C.pct(ms, 95)}


def first(ranked: list[str], ids: set[str]) -> int | None:
    return next((i for i, r in enumerate(ranked) if r in ids), None)


def score_rows(rows: list[dict[str, Any]], qs: dict[str, dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    """Per category: R@1/5/10 and MRR (any gold), task gold share in the top 10, update/apart order, none top score."""
    out: dict[str, dict[str, float]] = {}
    for cat in CATS:
        mine = [r for r in rows if r["cat"] == cat]
        if not mine:
            continue
        agg: dict[str, list[float]] = defaultdict(list)
        for r in mine:
            q = qs[r["qid"]]
            gold = set(q["gold"])
            ranked = r[key]
            if cat == "none":
                agg["anything@10"].append(float(bool(ranked)))
                if key == "ranked":
                    agg["top_score"].append(r["top"][0]["score"] if r["top"] else 0.0)
                continue
            m = C.rank_metrics(ranked, gold)
            for k in ("any@1", "any@5", "any@10", "mrr"):
                agg[k].append(m[k])
            if cat == "task":
                agg["gold_share@10"].append(len(gold & set(ranked[:10])) / len(gold))
            if cat in ("update", "apart"):
                other = set(q.get("stale") or [q.get("other")])
                g, o = first(ranked, gold), first(ranked, other)
                agg["gold_above"].append(float(g is not None and (o is None or g < o)))
        out[cat] = {k: sum(v) / len(v) for k, v in agg.items()} | {"n": len(mine)}
    return out


def decision_rows(rows: list[dict[str, Any]], qs: dict[str, dict[str, Any]], key: str = "chosen") -> dict[str, Any]:
    """Per category: gold injected (any), anything injected, stale / other injected, injected per prompt."""
    out: dict[str, Any] = {}
    for cat in CATS:
        mine = [r for r in rows if r["cat"] == cat and key in r]
        if not mine:
            continue
        agg: dict[str, list[float]] = defaultdict(list)
        for r in mine:
            q = qs[r["qid"]]
            got = set(r[key])
            agg["anything"].append(float(bool(got)))
            agg["injected"].append(len(got))
            if q["gold"]:
                agg["gold"].append(float(bool(got & set(q["gold"]))))
            if q.get("stale"):
                agg["stale"].append(float(bool(got & set(q["stale"]))))
                agg["stale_alone"].append(float(bool(got & set(q["stale"])) and not got & set(q["gold"])))
            if "tokens" in r:
                agg["tokens"].append(r["tokens"])
        out[cat] = {k: sum(v) / len(v) for k, v in agg.items()} | {"n": len(mine)}
    return out


# --------------------------------------------------------------------------- the real hook


def hook_env(home: Path, src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_") and k != "ANTHROPIC_API_KEY"}
    env.update({"MEMORYD_HOME": str(home), "MEMORYD_DAEMON": "on", "MEMORYD_DAEMON_IDLE": "0"})
    if src:
        env["PYTHONPATH"] = str(Path(src) / "src")
    return env


def launcher(src: str | None, work: Path) -> list[str]:
    """The `memoryd` command of this tree, or of the other checkout."""
    return [C.src_launcher(src, work, "memoryd")] if src else [str(Path(sys.executable).parent / "memoryd")]


def run_hooks(home: Path, root: Path, rows: list[dict[str, Any]], qs: dict[str, dict[str, Any]],
              held: dict[str, list[str]], src: str | None) -> dict[str, Any]:  # fmt: skip
    from memoryd.shared.injected import estimate_tokens

    env = hook_env(home, src)
    cmd = launcher(src, root)
    subprocess.run([*cmd, "daemon", "start"], env=env, check=True, capture_output=True, timeout=120)
    ms = []
    try:
        warm = {"session_id": f"warm-{os.getpid()}", "transcript_path": "", "cwd": str(checkout(root, rows[0]["repo"])),
                "hook_event_name": "UserPromptSubmit", "prompt": "warm up the models"}  # fmt: skip
        subprocess.run([*cmd, "hook", "user-prompt-submit"], input=json.dumps(warm), env=env, cwd=warm["cwd"],
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        for n, r in enumerate(rows):
            q = qs[r["qid"]]
            cwd = checkout(root, q["repo"])
            payload = {"session_id": f"coding-recall-{os.getpid()}-{n}", "transcript_path": "", "cwd": str(cwd),
                       "hook_event_name": "UserPromptSubmit", "prompt": q["question"]}  # fmt: skip
            t = time.perf_counter()
            p = subprocess.run([*cmd, "hook", "user-prompt-submit"], input=json.dumps(payload), env=env, cwd=cwd,
                               capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
            ms.append((time.perf_counter() - t) * 1000)
            context = ""
            if p.stdout.strip():
                context = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
            r["hook"] = [mid for _, a in _HIT.findall(context) for mid in held.get(a, [a])]
            r["tokens"] = estimate_tokens(context) if context else 0
    finally:
        subprocess.run([*cmd, "daemon", "stop"], env=env, capture_output=True, timeout=60, check=False)
    return {"hook_ms_p50": C.med(ms), "hook_ms_p95": C.pct(ms, 95)}


# --------------------------------------------------------------------------- report


def report(res: dict[str, Any]) -> None:
    print(f"\nstore: {res['store']['effects']}  (source time passed as: {res['store']['source_time']}; "
          f"{res['store']['store_s']} s)  recall p50 {res['recall_ms_p50']:.1f} ms")  # fmt: skip
    for key in ("memoryd", "bm25"):
        rows = []
        for cat, m in res["recall"][key].items():
            extra = (f"gold share {m['gold_share@10']:.2f}" if "gold_share@10" in m else
                     f"gold above {'stale' if cat == 'update' else 'other'} {m['gold_above']:.2f}" if "gold_above" in m
                     else f"top score p50 {m['top_score']:.2f}" if "top_score" in m else "")  # fmt: skip
            if cat == "none":
                rows.append([cat, m["n"], "-", "-", "-", "-", f"anything@10 {m['anything@10']:.2f}", extra])
            else:
                rows.append([cat, m["n"], C.fmt(m["any@1"], 2), C.fmt(m["any@5"], 2), C.fmt(m["any@10"], 2),
                             C.fmt(m["mrr"], 2), extra, ""])  # fmt: skip
        print(f"\n## recall: {key}")
        print(C.table(["category", "n", "R@1", "R@5", "R@10", "MRR", "", ""], rows))
    for key, title in (
        ("decision", f"the hook's decision on the recall's hits ({res['decider']})"),
        ("hook", f"the real hook through the daemon (p50 {C.fmt(res.get('hook_ms_p50'), 0)} ms)"),
    ):
        if key not in res:
            continue
        rows = [[cat, m["n"], C.fmt(m.get("gold"), 2), C.fmt(m["anything"], 2), C.fmt(m.get("stale"), 2),
                 C.fmt(m.get("stale_alone"), 2), C.fmt(m["injected"], 2), C.fmt(m.get("tokens"), 0)]
                for cat, m in res[key].items()]  # fmt: skip
        print(f"\n## {title}")
        print(C.table(["category", "n", "gold injected", "anything injected", "stale injected", "stale alone",
                       "memories / prompt", "tokens / prompt"], rows))  # fmt: skip
    f = res["final"]
    print(f"\n## final status: {f['by_status']}; merged into another {f['merged_into_another']}; "
          f"stale still active {f['stale_still_active']} of {f['update_pairs']} update pairs; "
          f"apart pairs merged or superseded {len(f['apart_wrongly_joined'])} of {f['apart_pairs']}")  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    mems, qs = load(Path(args.data), None if args.no_extra else EXTRA)
    if args.quick:
        qs = [q for i, q in enumerate(qs) if i % 3 == 0]
    qmap = {q["qid"]: q for q in qs}
    from memoryd.search.embed import make_embedder

    emb = make_embedder("use")
    wait = getattr(emb, "wait", None)
    if wait is not None:
        wait()
    with tempfile.TemporaryDirectory(prefix="memoryd-coding-") as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "repos"
        home.mkdir()
        st = store(home, root, mems, emb)
        rec = recall_all(st, qs, mems)
        res: dict[str, Any] = {"machine": C.machine(), "store": {k: v for k, v in st.items() if k != "engines"},
                               "decider": rec["decider"], "recall_ms_p50": rec["recall_ms_p50"],
                               "recall_ms_p95": rec["recall_ms_p95"]}  # fmt: skip
        res["recall"] = {
            "memoryd": score_rows(rec["rows"], qmap, "ranked"),
            "bm25": score_rows(rec["rows"], qmap, "bm25"),
        }
        res["decision"] = decision_rows(rec["rows"], qmap)
        res["final"] = final_status(st["engines"], mems, st["atom_of"])
        for e in st["engines"].values():
            e.close()
        if not args.no_hook:
            held: dict[str, list[str]] = defaultdict(list)
            for mid, a in st["atom_of"].items():
                if a:
                    held[a].append(mid)
            res.update(run_hooks(home, root, rec["rows"], qmap, held, args.src))
            res["hook"] = decision_rows(rec["rows"], qmap, "hook")
        res["rows"] = rec["rows"]
    return res


def before_and_after(args: argparse.Namespace, argv: list[str]) -> int:
    """--before REV: this script on a temporary worktree of REV (its src on the path), then on this tree."""
    rest = C.argv_without(argv, "--before", "--json")  # each side writes its own JSON
    sides: dict[str, Any] = {}
    codes = []
    with tempfile.TemporaryDirectory(prefix="memoryd-coding-sides-") as tmp:
        tree = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(tree), args.before],
                       check=True, capture_output=True)  # fmt: skip
        try:
            for side, extra, env in (("before", ["--src", str(tree)], {"PYTHONPATH": str(tree / "src")}),
                                     ("after", [], {})):  # fmt: skip
                path = Path(tmp) / f"{side}.json"
                print(f"\n# ===== {side}: {args.before if extra else 'this tree'}", flush=True)
                codes.append(subprocess.run([sys.executable, __file__, *rest, *extra, "--json", str(path)],
                                            env={**os.environ, **env}, check=False).returncode)  # fmt: skip
                sides[side] = json.loads(path.read_text()) if path.is_file() else None
        finally:
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(tree)],
                           capture_output=True, check=False)  # fmt: skip
    print(f"\n## before ({args.before}) and after (this tree)")
    rows = []
    for cat in CATS:
        for side in ("before", "after"):
            s = sides.get(side) or {}
            m = (s.get("recall") or {}).get("memoryd", {}).get(cat)
            h = (s.get("hook") or s.get("decision") or {}).get(cat)
            if not m:
                continue
            rows.append([cat, side, C.fmt(m.get("any@1"), 2), C.fmt(m.get("any@5"), 2), C.fmt(m.get("any@10"), 2),
                         C.fmt(m.get("gold_above"), 2), C.fmt((h or {}).get("gold"), 2),
                         C.fmt((h or {}).get("anything"), 2), C.fmt((h or {}).get("stale"), 2),
                         C.fmt((h or {}).get("tokens"), 0)])  # fmt: skip
    print(C.table(["category", "side", "R@1", "R@5", "R@10", "newer/asked above", "gold injected", "anything injected",
                   "stale injected", "tokens"], rows))  # fmt: skip
    C.write_json(args.json, {"before": sides.get("before"), "after": sides.get("after"), "rev_before": args.before})
    return max(codes)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA), help="the coding-dev folder (default ../shared/data/coding-dev)")
    ap.add_argument("--no-extra", action="store_true", help="leave out bench/data/coding_extra.jsonl")
    ap.add_argument("--quick", action="store_true", help="every 3rd prompt (all memories)")
    ap.add_argument("--no-hook", action="store_true", help="skip the real hook through the daemon")
    ap.add_argument("--before", help="a git revision to run first, in a temporary worktree, for before/after")
    ap.add_argument("--src", help=argparse.SUPPRESS)  # the other checkout (set by --before)
    ap.add_argument("--json", help="write the results (every prompt's hits too) as JSON")
    args = ap.parse_args(argv)
    if args.before:
        return before_and_after(args, argv)
    m = C.machine()
    C.print_machine(m)
    if not Path(args.data).is_dir():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    res = run(args)
    report(res)
    C.write_json(args.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
