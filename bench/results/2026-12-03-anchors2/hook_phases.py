"""CPU per phase of the file hook (6 anchored memories), in hook order, each sample a fresh process;
the two source trees alternate sample by sample (median of N each)."""
import json, os, statistics, subprocess, sys, time
N = int(sys.argv[1]) if len(sys.argv) > 1 else 15
TREES = {"before (814e258)": "/tmp/anchors2/base/src", "after": "/work/wt/anchors2/src"}
CHILD = r'''
import time, sys
T = [time.process_time()]
def mark(): T.append(time.process_time())
import memoryd._launch; mark()
import memoryd.hooks; mark()
import logging; mark()
import memoryd.filehook; mark()
import memoryd.limits, memoryd.scope, memoryd.storage.light; mark()
import memoryd.anchors.drift, memoryd.anchors.filectx; mark()
import tempfile; mark()
import filelock; mark()
import json
from pathlib import Path
p = json.load(open("/tmp/anchors2/payload.json")); p["session_id"] = f"bench-ph-{time.time_ns()}"
out = memoryd.filehook.file_context(p, Path("/tmp/anchors2/hooks/size-10000")); mark()
assert out is not None
print(json.dumps([round((b - a) * 1000, 2) for a, b in zip(T, T[1:])]))
'''
names = ["import memoryd._launch (+memoryd, typing)", "import memoryd.hooks", "import logging (hooks' log handler)",
         "import memoryd.filehook (git, injected)", "import limits, scope, storage.light", "import anchors.drift, filectx",
         "import tempfile (claim; before: symbols)", "import filelock (claim)", "work: query, drift check, claim"]
rows = {k: [] for k in TREES}
for i in range(N):
    for k, src in TREES.items():
        r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd="/tmp/anchors2/hooks/widgets",
                           env={**os.environ, "MEMORYD_HOME": "/tmp/anchors2/hooks/size-10000", "PYTHONPATH": src})
        rows[k].append(json.loads(r.stdout.strip().splitlines()[-1]))
print(f"{'phase (ms CPU, median of %d)' % N:<44} " + " ".join(f"{k:>18}" for k in TREES))
for j, name in enumerate(names):
    print(f"{name:<44} " + " ".join(f"{statistics.median(r[j] for r in rows[k]):>18.1f}" for k in TREES))
print(f"{'total after interpreter start':<44} " + " ".join(f"{statistics.median(sum(r) for r in rows[k]):>18.1f}" for k in TREES))
print(f"load {os.getloadavg()}")
