#!/usr/bin/env python3
"""Code-anchor drift on real history: does memoryd notice when the code a memory names moves on?

History mode (default): clone `sqlite-utils.bundle` (the whole history of a real Python project),
walk its first-parent history, and at --samples evenly spaced commits write --per-commit memories
about real files and symbols of that commit (generated from its code: "`Table.insert_all` in
sqlite_utils/db.py: Insert multiple rows…"), through `Engine.memorize` (automatic anchoring, as an
agent's save). Then check out later commits (--horizons commits ahead) and compare memoryd's
verdict on every anchor with the truth, computed independently:

- memoryd: `DriftChecker` (blob ids, `ast.dump` fingerprints, `git diff --find-renames` and, for
  the deletions and additions git leaves unpaired, the definition names they share; `git grep`);
- truth: file contents read from git objects; renames by content similarity of the old file with
  files that did not exist at the anchor commit (difflib line ratio ≥ 0.5, the best one), not by
  git's rename detection; definitions found with the `tokenize` module (blocks by INDENT/DEDENT,
  qualified names by nesting) and compared as normalised token streams (comments and layout
  dropped, string literals by value, magic trailing commas dropped), not with `ast`; a class by its
  header and the sorted names of its members, as memoryd defines a class change.

Reports precision and recall per kind (file deleted, renamed, changed; symbol changed, removed,
moved), renames followed to the right path (the history has only 5 renames, so every one of them is
checked, plus renames made here: `git mv` with 0–50% of the lines edited), the share of memories that drift per 100 commits, and
the drift-check cost per recall on this store (anchors on vs off, same store and queries).

Synthetic mode (--synthetic N): a repository of N Python files, 1000 anchored memories, then 10%
of the files edited, some renamed and deleted; recall p50 with anchors on vs off (the drift check's
cost at that size) and memorize p50 with and without anchoring of memories naming files and symbols.

    .venv/bin/python bench/drift.py                         # sqlite-utils history
    .venv/bin/python bench/drift.py --samples 6 --json out.json
    .venv/bin/python bench/drift.py --synthetic 10000
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

BUNDLE = Path(__file__).resolve().parents[1].parent.parent / "shared" / "data" / "repos" / "sqlite-utils.bundle"
KINDS = ["file_deleted", "file_renamed", "file_changed", "symbol_changed", "symbol_removed", "symbol_moved"]


def git(repo: Path, *args: str, text: bool = True) -> Any:
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return out.stdout.decode("utf-8", "replace") if text else out.stdout


def machine() -> dict[str, Any]:
    mem = next((int(line.split()[1]) // 1024 for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    return {"nproc": os.cpu_count(), "ram_mb": mem, "load": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M")}


# -- the truth: tokenize-based definitions ------------------------------------------------------------

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
         tokenize.ENDMARKER}  # fmt: skip


def _norm(tokens: list[tokenize.TokenInfo]) -> list[str]:
    sig = [t for t in tokens if t.type not in _SKIP]
    out: list[str] = []
    for i, t in enumerate(sig):
        if t.type == tokenize.OP and t.string == "," and i + 1 < len(sig) and sig[i + 1].string in ")]}":
            continue  # a magic trailing comma is layout
        if t.type == tokenize.STRING:
            try:
                out.append(repr(ast.literal_eval(t.string)))
                continue
            except (ValueError, SyntaxError):
                pass
        out.append(t.string)
    return out


def truth_defs(source: bytes) -> dict[str, str] | None:
    """qualified name -> normalised definition (functions: all tokens; classes: header + member names)."""
    try:
        toks = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    defs: dict[str, str] = {}
    stack: list[dict[str, Any]] = []  # open blocks: name, qual, kind, depth, start, body_started, members
    depth = 0
    line_start = True
    deco_start: int | None = None
    i = 0

    def close(block: dict[str, Any], end: int) -> None:
        body = toks[block["start"] : end]
        if block["kind"] == "def":
            value = "\x1f".join(_norm(body))
        else:
            header_end = block["header_end"]
            value = json.dumps([_norm(toks[block["start"] : header_end]), sorted(block["members"])])
        defs.setdefault(block["qual"], value)

    while i < len(toks):
        t = toks[i]
        if t.type == tokenize.INDENT:
            depth += 1
            line_start = True
        elif t.type == tokenize.DEDENT:
            depth -= 1
            while stack and stack[-1]["body_depth"] is not None and depth < stack[-1]["body_depth"]:
                close(stack.pop(), i)
            line_start = True
        elif t.type in (tokenize.NEWLINE, tokenize.NL):
            if t.type == tokenize.NEWLINE and stack and stack[-1]["header_end"] is None:
                stack[-1]["header_end"] = i
                nxt = next((x for x in toks[i + 1 :] if x.type not in (tokenize.NL, tokenize.COMMENT)), None)
                if nxt is None or nxt.type != tokenize.INDENT:  # a one-line definition
                    close(stack.pop(), i + 1)
                else:
                    stack[-1]["body_depth"] = depth + 1
            line_start = True
        elif t.type == tokenize.COMMENT:
            pass
        else:
            if line_start and t.type == tokenize.OP and t.string == "@":
                if deco_start is None:
                    deco_start = i
            elif line_start and t.type == tokenize.NAME and t.string in ("def", "class", "async"):
                j = i + 1 if t.string != "async" else i + 2
                kind = "class" if toks[j - 1].string == "class" else "def"
                if t.string == "async" and toks[i + 1].string != "def":
                    line_start = False
                    i += 1
                    continue
                name = toks[j].string
                parent = next((b for b in reversed(stack) if b["body_depth"] is not None), None)
                if parent is not None and parent["kind"] == "class" and depth == parent["body_depth"]:
                    parent["members"].add(name)
                qual = f"{parent['qual']}.{name}" if parent is not None else name
                stack.append({"qual": qual, "kind": kind, "start": deco_start if deco_start is not None else i,
                              "header_end": None, "body_depth": None, "members": set()})  # fmt: skip
                deco_start = None
            elif line_start and t.type == tokenize.NAME:
                parent = stack[-1] if stack and stack[-1]["body_depth"] == depth and stack[-1]["kind"] == "class" else None
                nxt = toks[i + 1] if i + 1 < len(toks) else None
                if parent is not None and nxt is not None and nxt.type == tokenize.OP and nxt.string in ("=", ":"):
                    parent["members"].add(t.string)
                deco_start = None if t.string not in ("def", "class") else deco_start
            line_start = False
        i += 1
    while stack:
        close(stack.pop(), len(toks))
    return defs


class Truth:
    """What really happened to an anchor between its commit and the checked-out one."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._defs: dict[str, dict[str, str] | None] = {}

    def show(self, commit: str, path: str) -> bytes | None:
        try:
            return git(self.repo, "show", f"{commit}:{path}", text=False)
        except subprocess.CalledProcessError:
            return None

    def files(self, commit: str) -> set[str]:
        return set(git(self.repo, "ls-tree", "-r", "--name-only", commit).splitlines())

    def defs(self, key: str, data: bytes) -> dict[str, str] | None:
        if key not in self._defs:
            self._defs[key] = truth_defs(data)
        return self._defs[key]

    def renamed(self, commit: str, later: str, path: str, old_files: set[str], new_files: set[str]) -> str | None:
        old = self.show(commit, path)
        if old is None:
            return None
        a = old.decode("utf-8", "replace").splitlines()
        best, best_ratio = None, 0.5
        for cand in sorted(new_files - old_files):
            if os.path.splitext(cand)[1] != os.path.splitext(path)[1]:
                continue
            data = self.show(later, cand)
            if data is None:
                continue
            m = difflib.SequenceMatcher(None, a, data.decode("utf-8", "replace").splitlines(), autojunk=False)
            if m.quick_ratio() < best_ratio:
                continue
            r = m.ratio()
            if r >= best_ratio:
                best, best_ratio = cand, r
        return best

    def symbol_where(self, later: str, symbol: str, files: set[str], skip: str) -> str | None:
        for f in sorted(files):
            if not f.endswith(".py") or f == skip:
                continue
            data = self.show(later, f)
            d = self.defs(f"{later}:{f}", data) if data is not None else None
            if d and symbol in d:
                return f
        return None


def truth_label(t: Truth, a: Any, commit: str, later: str, file_paths: set[str], symbol_paths: set[str],
                cache: dict[Any, Any]) -> tuple[str, str | None]:  # fmt: skip
    """(label, new path) for one anchor: "current" or one of KINDS."""
    key = (commit, later)
    if key not in cache:
        cache[key] = (t.files(commit), t.files(later))
    old_files, new_files = cache[key]
    path = a.path
    to = None
    if path not in new_files:
        rkey = (commit, later, path)
        if rkey not in cache:
            cache[rkey] = t.renamed(commit, later, path, old_files, new_files)
        to = cache[rkey]
    if a.kind == "file":
        if path not in new_files:
            return ("file_renamed", to) if to else ("file_deleted", None)
        if path not in symbol_paths and t.show(commit, path) != t.show(later, path):
            return "file_changed", None
        return "current", None
    old = t.show(commit, path)
    old_defs = t.defs(f"{commit}:{path}", old) if old is not None else None
    where = to if path not in new_files else path
    if where is not None:
        new = t.show(later, where)
        new_defs = t.defs(f"{later}:{where}", new) if new is not None else None
        if new_defs is not None and old_defs is not None and a.symbol in new_defs:
            if new_defs[a.symbol] != old_defs.get(a.symbol):
                return "symbol_changed", where
            if where != path and path not in file_paths:
                return "symbol_moved", where
            return "current", None
    elsewhere = t.symbol_where(later, a.symbol, new_files, skip=where or path)
    return ("symbol_moved", elsewhere) if elsewhere else ("symbol_removed", None)


# -- memories generated from the code --------------------------------------------------------------------


def _doc(node: ast.AST) -> str:
    doc = ast.get_docstring(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
    first = (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""
    return first[:120]


def generate(repo: Path, rng: random.Random, n: int) -> list[tuple[str, str, str]]:
    """(text, expected path, expected symbol or "") for n memories about this checkout's code."""
    symbols: list[tuple[str, str, ast.AST]] = []
    files = [p for p in git(repo, "ls-files", "*.py").splitlines() if not p.startswith(("docs/",))]
    for path in files:
        try:
            tree = ast.parse((repo / path).read_bytes())
        except (SyntaxError, ValueError):
            continue

        def visit(body: list[ast.stmt], prefix: str, path: str = path) -> None:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    symbols.append((path, prefix + node.name, node))
                    if isinstance(node, ast.ClassDef):
                        visit(node.body, prefix + node.name + ".")

        visit(tree.body, "")
    # Library code more than tests: that is what memories are mostly about.
    lib = [s for s in symbols if not s[0].startswith("tests/") and not s[1].split(".")[-1].startswith("_")]
    tests = [s for s in symbols if s[0].startswith("tests/")]
    pool = lib * 3 + tests
    out: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    while len(out) < n and pool:
        roll = rng.random()
        if roll < 0.15:  # a file only
            path = rng.choice(files)
            if (path, "") in seen:
                continue
            seen.add((path, ""))
            out.append((f"{path} holds the {Path(path).stem.replace('_', ' ')} code; read it before changing it.", path, ""))
            continue
        path, qual, node = rng.choice(pool)
        if (path, qual) in seen:
            continue
        seen.add((path, qual))
        doc = _doc(node) or f"implements {qual.split('.')[-1].replace('_', ' ')}"
        call = "" if isinstance(node, ast.ClassDef) else "()"
        if roll < 0.75:
            text = f"`{qual}{call}` in {path}: {doc}"
        else:  # the symbol alone: memoryd has to find its file
            text = f"`{qual}{call}`: {doc}"
        out.append((text, path, qual))
    return out


# -- history mode ---------------------------------------------------------------------------------------------


def history(args: argparse.Namespace) -> dict[str, Any]:
    from memoryd.anchors.drift import DriftChecker
    from memoryd.config import Settings
    from memoryd.engine import Engine
    from memoryd.search.embed import make_embedder

    work = Path(tempfile.mkdtemp(prefix="memoryd-drift-"))
    repo = work / "sqlite-utils"
    git(work, "clone", "-q", str(args.bundle), str(repo))
    git(repo, "config", "advice.detachedHead", "false")
    commits = git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    horizons = sorted(args.horizons)
    last_start = len(commits) - 1 - max(horizons)
    first = len(commits) // 20
    starts = sorted({first + (last_start - first) * k // max(1, args.samples - 1) for k in range(args.samples)})
    rng = random.Random(args.seed)
    truth = Truth(repo)
    labels: list[dict[str, Any]] = []
    memories_drift: dict[int, list[tuple[bool, bool]]] = defaultdict(list)
    anchored = Counter()
    cache: dict[Any, Any] = {}
    home = work / "home"
    settings = Settings(home=home, embedder="hash")
    emb = make_embedder("hash")
    written: list[tuple[str, int, list[Any]]] = []  # (atom id, start index, anchors)
    started = time.perf_counter()
    for si in starts:
        git(repo, "checkout", "-q", "--detach", "-f", commits[si])
        git(repo, "clean", "-q", "-fdx")
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            for text, path, symbol in generate(repo, rng, args.per_commit):
                r = engine.memorize(text, source="agent", gate="trusted")
                if r.effect != "applied":
                    continue
                anchors = engine.store.anchors_of([r.atom_id]).get(r.atom_id, [])
                refs = {(a.path, a.symbol) for a in anchors}
                anchored["expected"] += 1
                anchored["found"] += (path, symbol) in refs
                written.append((str(r.atom_id), si, anchors))
        for h in horizons:
            git(repo, "checkout", "-q", "--detach", "-f", commits[si + h])
            git(repo, "clean", "-q", "-fdx")
            with Engine.open(settings, cwd=repo, embedder=emb) as engine:
                checker: DriftChecker = engine.anchoring.checker()  # type: ignore[assignment]
                for _atom_id, start, anchors in written:
                    if start != si:
                        continue
                    fp = {a.path for a in anchors if a.kind == "file"}
                    sp = {a.path for a in anchors if a.kind == "symbol"}
                    sys_any = truth_any = False
                    for a in anchors:
                        change = checker.check_anchor(a, fp, sp)
                        got = change.kind if change else "current"
                        got_to = change.to if change else None
                        want, want_to = truth_label(truth, a, commits[si], commits[si + h], fp, sp, cache)
                        labels.append({"start": si, "h": h, "kind": a.kind, "system": got, "truth": want,
                                       "system_to": got_to, "truth_to": want_to, "ref": a.ref})  # fmt: skip
                        sys_any |= got != "current"
                        truth_any |= want != "current"
                    if anchors:
                        memories_drift[h].append((sys_any, truth_any))
        print(f"  commit {si}/{len(commits)}: {len(written)} memories so far, {len(labels)} verdicts, "
              f"{time.perf_counter() - started:.0f}s", file=sys.stderr)  # fmt: skip
    # Drift-check cost per recall, at the store's final size, on the last checkout.
    cost = recall_cost(settings, repo, emb, queries=[t for t, _, _ in generate(repo, random.Random(1), 60)])
    follow = rename_pass(repo, settings, emb, commits, rng)
    shutil.rmtree(work, ignore_errors=True)
    return {"machine": machine(), "commits": len(commits), "starts": starts, "horizons": horizons,
            "memories": len(written), "anchored": dict(anchored), "table": table(labels),
            "renames": renames(labels), "rename_pass": follow, "drift_share": drift_share(memories_drift), "recall_cost": cost,
            "seconds": round(time.perf_counter() - started)}  # fmt: skip


def table(labels: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in KINDS:
        tp = sum(1 for x in labels if x["system"] == k and x["truth"] == k)
        fp = sum(1 for x in labels if x["system"] == k and x["truth"] != k)
        fn = sum(1 for x in labels if x["truth"] == k and x["system"] != k)
        out[k] = {"truth": tp + fn, "system": tp + fp, "tp": tp,
                  "precision": round(tp / (tp + fp), 3) if tp + fp else None,
                  "recall": round(tp / (tp + fn), 3) if tp + fn else None}  # fmt: skip
    sym = {"symbol_changed", "symbol_removed", "symbol_moved"}
    s_lab = [x for x in labels if x["kind"] == "symbol"]
    tp = sum(1 for x in s_lab if x["system"] in sym and x["truth"] in sym)
    fp = sum(1 for x in s_lab if x["system"] in sym and x["truth"] not in sym)
    fn = sum(1 for x in s_lab if x["truth"] in sym and x["system"] not in sym)
    out["symbol-level (any)"] = {"truth": tp + fn, "system": tp + fp, "tp": tp,
                                 "precision": round(tp / (tp + fp), 3) if tp + fp else None,
                                 "recall": round(tp / (tp + fn), 3) if tp + fn else None}  # fmt: skip
    out["verdicts"] = len(labels)
    out["disagreements"] = Counter(f"{x['truth']}→{x['system']}" for x in labels if x["truth"] != x["system"]).most_common(12)
    return out


def renames(labels: list[dict[str, Any]]) -> dict[str, Any]:
    truth = [x for x in labels if x["truth"] == "file_renamed"]
    followed = sum(1 for x in truth if x["system"] == "file_renamed" and x["system_to"] == x["truth_to"])
    moved = [x for x in labels if x["truth"] == "symbol_moved"]
    to_right = sum(1 for x in moved if x["system"] == "symbol_moved" and x["system_to"] == x["truth_to"])
    return {"renames": len(truth), "followed": followed, "share": round(followed / len(truth), 3) if truth else None,
            "symbol_moves": len(moved), "moves_to_right_file": to_right}  # fmt: skip


def drift_share(memories: dict[int, list[tuple[bool, bool]]]) -> dict[str, Any]:
    out = {}
    for h, rows in sorted(memories.items()):
        out[str(h)] = {"memories": len(rows), "system": round(sum(s for s, _ in rows) / len(rows), 3),
                       "truth": round(sum(t for _, t in rows) / len(rows), 3)}  # fmt: skip
    return out


def recall_cost(settings: Any, repo: Path, emb: Any, queries: list[str], rounds: int = 3) -> dict[str, Any]:
    """Recall p50 with anchors on and off (same store, same queries, fresh engines, alternated), and the
    drift step itself timed inside recall: wall and CPU time, steady passes, and the cold first pass."""
    from memoryd.engine import Engine

    times: dict[str, list[float]] = {"on": [], "off": []}
    steady: list[tuple[float, float]] = []  # (wall ms, CPU ms) of the drift step in steady passes
    cold: list[tuple[float, float]] = []  # the first pass of the first engine: every changed version parsed once
    for n, flag in enumerate(("off", "on") * rounds):
        s = settings.model_copy(update={"anchors": flag == "on"})
        with Engine.open(s, cwd=repo, embedder=emb) as engine:
            rank = engine.anchoring.rank_with_drift
            spent: list[tuple[float, float]] = []

            def timed(*a: Any, _rank: Any = rank, _spent: list[tuple[float, float]] = spent) -> Any:
                t0, c0 = time.perf_counter(), time.process_time()
                try:
                    return _rank(*a)
                finally:
                    _spent.append(((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000))

            engine.anchoring.rank_with_drift = timed  # type: ignore[method-assign]
            for q in queries:  # first pass: loads, first parses, first diffs and searches
                engine.recall(q, max_results=10)
            if n == 1:
                cold.extend(spent)
            spent.clear()
            for q in queries:
                t = time.perf_counter()
                engine.recall(q, max_results=10)
                times[flag].append((time.perf_counter() - t) * 1000)
            if flag == "on":
                steady.extend(spent)

    def pct(xs: list[float], p: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(len(xs) * p))], 2)

    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    return {"recall_p50_on_ms": round(on, 2), "recall_p50_off_ms": round(off, 2),
            "difference_p50_ms": round(on - off, 2), "recalls": len(times["on"]),
            "drift_step_p50_ms": pct([w for w, _ in steady], 0.5), "drift_step_p95_ms": pct([w for w, _ in steady], 0.95),
            "drift_step_cpu_p50_ms": pct([c for _, c in steady], 0.5),
            "cold_first_pass": {"drift_step_p50_ms": pct([w for w, _ in cold], 0.5),
                                "drift_step_p95_ms": pct([w for w, _ in cold], 0.95),
                                "drift_step_cpu_total_s": round(sum(c for _, c in cold) / 1000, 2),
                                "recalls": len(cold)}}  # fmt: skip


# -- renames: every real one in the history, and constructed ones with edits ---------------------------------


def rename_pass(repo: Path, settings: Any, emb: Any, commits: list[str], rng: random.Random) -> dict[str, Any]:
    """Follow-rate of renames: the 5 real renames of the whole history (every branch), and renames made
    here (git mv + a share of the lines edited, committed) of files memories were written about."""
    from memoryd.engine import Engine

    log = git(repo, "log", "--all", "--diff-filter=R", "-M", "--name-status", "--format=C %H %P")
    real: list[tuple[str, str, str, str]] = []
    commit = parent = ""
    for line in log.splitlines():
        if line.startswith("C "):
            parts = line.split()
            commit, parent = parts[1], (parts[2] if len(parts) > 2 else "")
        elif line.startswith("R") and parent:
            _, old, new = line.split("\t")
            real.append((commit, parent, old, new))
    rows: list[dict[str, Any]] = []

    def evaluate(kind: str, before: str, after: str, old: str, new: str, edit: float) -> None:
        git(repo, "checkout", "-q", "--detach", "-f", before)
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            r = engine.memorize(f"{old} is where the {Path(old).stem.replace('_', ' ')} work lives ({kind} {edit})",
                                source="agent", gate="trusted", anchors=[old])  # fmt: skip
            anchors = engine.store.anchors_of([str(r.atom_id)])[str(r.atom_id)]
        git(repo, "checkout", "-q", "--detach", "-f", after)
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            change = engine.anchoring.checker().check_anchor(anchors[0])  # type: ignore[union-attr]
        rows.append({"kind": kind, "edit": edit, "old": old, "new": new, "system": change.kind if change else "current",
                     "to": change.to if change else None})  # fmt: skip

    for commit, parent, old, new in real:
        evaluate("real", parent, commit, old, new, -1)
    base = commits[len(commits) * 2 // 3]
    git(repo, "checkout", "-q", "--detach", "-f", base)
    files = [f for f in git(repo, "ls-files", "*.py").split() if len((repo / f).read_text().splitlines()) >= 20]
    for n, old in enumerate(rng.sample(files, min(len(files), 24))):
        edit = (0.0, 0.1, 0.3, 0.5)[n % 4]
        git(repo, "checkout", "-q", "--detach", "-f", base)
        new = old.replace(".py", "_moved.py") if n % 2 else f"renamed_{n}/{Path(old).name}"
        (repo / new).parent.mkdir(parents=True, exist_ok=True)
        git(repo, "mv", old, new)
        lines = (repo / new).read_text().splitlines()
        for i in rng.sample(range(len(lines)), int(len(lines) * edit)):
            lines[i] = lines[i] + "  # edited" if lines[i].strip() else "pass"
        (repo / new).write_text("\n".join(lines) + "\n")
        git(repo, "add", "-A")
        git(repo, "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "-m", f"rename {old}")
        after = git(repo, "rev-parse", "HEAD").strip()
        evaluate("made", base, after, old, new, edit)
    out: dict[str, Any] = {}
    for key in sorted({(r["kind"], r["edit"]) for r in rows}):
        sel = [r for r in rows if (r["kind"], r["edit"]) == key]
        followed = sum(1 for r in sel if r["system"] == "file_renamed" and r["to"] == r["new"])
        label = "real (history)" if key[0] == "real" else f"made, {int(key[1] * 100)}% of lines edited"
        out[label] = {"renames": len(sel), "followed": followed, "other": Counter(r["system"] for r in sel
                                                                                  if r["system"] != "file_renamed")}
    total = sum(v["renames"] for v in out.values())
    out["all"] = {"renames": total, "followed": sum(v["followed"] for v in out.values()),
                  "share": round(sum(v["followed"] for v in out.values()) / total, 3) if total else None}  # fmt: skip
    out["rows"] = rows  # each rename: kind, share of lines edited, old and new path, memoryd's verdict
    return out


# -- synthetic mode -----------------------------------------------------------------------------------------------


def synthetic(args: argparse.Namespace) -> dict[str, Any]:
    from memoryd.config import Settings
    from memoryd.engine import Engine
    from memoryd.search.embed import make_embedder

    n = args.synthetic
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="memoryd-drift-synth-"))
    repo = work / "big"
    started = time.perf_counter()
    for i in range(n):
        d = repo / f"pkg{i % 100:02d}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def handle_{i}_{k}(request, limit={k}):\n    \"\"\"Handle case {k}.\"\"\"\n"
                           f"    return request.get('v{k}', limit) + {i}" for k in range(8))  # fmt: skip
        (d / f"mod_{i}.py").write_text(f'"""Module {i}."""\n\n{body}\n\n\nclass Service{i}:\n    def run(self):\n        return {i}\n')
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"],
                ["-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "-m", "init"]):  # fmt: skip
        git(repo, *cmd)
    print(f"  {n} files committed in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    settings = Settings(home=work / "home", embedder="hash")
    emb = make_embedder("hash")
    texts = []
    for j in range(args.memories):
        i, k = rng.randrange(n), rng.randrange(8)
        path = f"pkg{i % 100:02d}/sub{i % 7}/mod_{i}.py"
        texts.append(f"`handle_{i}_{k}()` in {path} returns the v{k} value plus {i} (note {j})")
    timings: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    for flag in ("on", "off"):
        s = settings.model_copy(update={"anchors": flag == "on"})
        with Engine.open(s, cwd=repo, embedder=emb) as engine:
            for _j, text in enumerate(texts if flag == "on" else [t + " (again)" for t in texts[:200]]):
                t, c = time.perf_counter(), time.process_time()
                r = engine.memorize(text, source="agent", gate="trusted")
                timings[flag].append((time.perf_counter() - t) * 1000)
                cpu[flag].append((time.process_time() - c) * 1000)
                assert r.effect == "applied"
    # The code moves on: 10% of the files edited, 1% renamed, 1% deleted.
    files = git(repo, "ls-files").split()
    rng.shuffle(files)
    for f in files[: n // 10]:
        p = repo / f
        p.write_text(p.read_text().replace("return request.get('v3'", "return request.get('w3'"))
    for f in files[n // 10 : n // 10 + n // 100]:
        git(repo, "mv", f, f.replace(".py", "_renamed.py"))
    for f in files[n // 10 + n // 100 : n // 10 + 2 * (n // 100)]:
        git(repo, "rm", "-q", f)
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "-m", "move on")
    queries = [f"handle {rng.randrange(n)} value v{rng.randrange(8)}" for _ in range(60)]
    cost = recall_cost(settings, repo, emb, queries)
    with Engine.open(settings, cwd=repo, embedder=emb) as engine:
        t = time.perf_counter()
        stale = engine.stale(limit=5000)
        stale_s = time.perf_counter() - t
    shutil.rmtree(work, ignore_errors=True)
    return {"machine": machine(), "files": n, "memories": args.memories, "recall_cost": cost,
            "memorize_p50_ms": {k: round(statistics.median(v), 2) for k, v in timings.items()},
            "memorize_p95_ms": {k: round(sorted(v)[int(len(v) * 0.95) - 1], 2) for k, v in timings.items()},
            "memorize_cpu_p50_ms": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
            "stale": {"memories": len(stale), "seconds": round(stale_s, 2)}}  # fmt: skip


def show(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"machine: {m['nproc']} cpus, {m['ram_mb']} MB, load {tuple(round(x, 1) for x in m['load'])}, {m['date']}")
    if "table" in result:
        print(f"{result['commits']} commits; {result['memories']} memories at {len(result['starts'])} commits; "
              f"horizons {result['horizons']}; anchored as intended {result['anchored']}")  # fmt: skip
        print(f"{'kind':<20} {'truth':>6} {'memoryd':>8} {'precision':>10} {'recall':>8}")
        for k, v in result["table"].items():
            if isinstance(v, dict):
                print(f"{k:<20} {v['truth']:>6} {v['system']:>8} {v['precision']!s:>10} {v['recall']!s:>8}")
        print(f"verdicts: {result['table']['verdicts']}; disagreements (truth→memoryd): {result['table']['disagreements']}")
        print(f"renames among the verdicts: {result['renames']}")
        print("renames followed (real ones of the whole history, and made here with edits):")
        for k, v in result["rename_pass"].items():
            if k != "rows":
                print(f"  {k:<30} {v}")
        for r in result["rename_pass"].get("rows", []):
            if r["system"] != "file_renamed" or r["to"] != r["new"]:
                print(f"  not followed: {r['old']} -> {r['new']} ({r['kind']}, {r['edit']}): {r['system']} {r['to'] or ''}")
        print(f"memories drifted after h commits (memoryd / truth): {result['drift_share']}")
    else:
        print(f"{result['files']} files, {result['memories']} memories; memorize p50 {result['memorize_p50_ms']} "
              f"p95 {result['memorize_p95_ms']} cpu p50 {result['memorize_cpu_p50_ms']}; stale: {result['stale']}")  # fmt: skip
    print(f"recall cost: {result['recall_cost']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--samples", type=int, default=12, help="commits at which memories are written")
    ap.add_argument("--per-commit", type=int, default=40, help="memories written at each of them")
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 50, 100, 300])
    ap.add_argument("--synthetic", type=int, default=0, help="N: the synthetic N-file repository instead")
    ap.add_argument("--memories", type=int, default=1000, help="synthetic mode: memories written")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    result = synthetic(args) if args.synthetic else history(args)
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
