"""Ad hoc: over sqlite-utils' first-parent history (commit -> commit+h, h in 1/10/50/100/300), the deleted .py
files git's rename detection left unpaired: the truth (difflib line ratio >= 0.5, best among added files, as
bench/drift.py) vs the name rule (anchors.renames)."""
import difflib, subprocess
from pathlib import Path
from memoryd.anchors.git import GitRepo
from memoryd.anchors.renames import pair_by_names
repo_path = Path("/tmp/anchors2/su")
def git(*a): return subprocess.run(["git", "-C", str(repo_path), *a], capture_output=True, text=True, check=True).stdout
def show(c, p): return subprocess.run(["git", "-C", str(repo_path), "show", f"{c}:{p}"], capture_output=True, text=True).stdout.splitlines()
commits = list(reversed(git("log", "--first-parent", "--format=%H").split()))
tp = fp = fn = 0; seen = set(); cases = 0
for h in (1, 10, 50, 100, 300):
    for i in range(0, len(commits) - h, 1 if h == 1 else 10):
        a, b = commits[i], commits[i + h]
        out = git("diff", "--find-renames", "--name-status", a, b, "--", "*.py")
        d = [l.split("\t")[1] for l in out.splitlines() if l.startswith("D\t")]
        ad = [l.split("\t")[1] for l in out.splitlines() if l.startswith("A\t")]
        if not d or not ad:
            continue
        git("checkout", "-q", "--detach", "-f", b)
        pairs = pair_by_names(GitRepo.find(repo_path), a, "python")
        for old in d:
            x = show(a, old); best, ratio = None, 0.5
            for new in ad:
                m = difflib.SequenceMatcher(None, x, show(b, new), autojunk=False)
                if m.quick_ratio() >= ratio and (r := m.ratio()) >= ratio:
                    best, ratio = new, r
            key = (old, best, pairs.get(old))
            cases += 1
            if key in seen: continue
            seen.add(key)
            got = pairs.get(old)
            if got and got == best: tp += 1
            elif got: fp += 1; print("wrong/extra:", h, a[:7], old, "->", got, "truth:", best)
            elif best: fn += 1; print("missed:", h, a[:7], old, "->", best, round(ratio, 2))
print(f"{cases} unpaired deletions checked ({len(seen)} distinct); name rule: {tp} right, {fp} wrong, {fn} truth renames missed")
