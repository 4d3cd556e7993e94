"""The coding-agent recall benchmark's short form end to end (issue 35): `bench/coding_recall.py --quick` stores
the dev set's memories through the agent write path, recalls every third prompt, runs the real prompt hook through
the daemon, and prints its tables; the numbers themselves are read in bench/RESULTS.md, not asserted here beyond
what shows the run did its work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "coding_recall.py"
DATA = ROOT.parent / "shared" / "data" / "coding-dev"


@pytest.mark.timeout(600)
def test_the_quick_coding_recall_bench_runs_and_prints_its_tables(tmp_path: Path) -> None:
    if not DATA.is_dir():
        if os.environ.get("CI"):
            raise RuntimeError(f"the coding dev set is missing at {DATA}")
        pytest.skip(f"no coding dev set at {DATA}")
    out = tmp_path / "coding.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")} | {"OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)], capture_output=True, text=True,
                       timeout=560, env=env, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    for title in ("## recall: memoryd", "## recall: bm25", "## the hook's decision", "## the real hook through the daemon",
                  "## final status"):  # fmt: skip
        assert title in r.stdout, r.stdout[-3000:]
    res = json.loads(out.read_text())
    assert res["store"]["effects"].get("applied", 0) >= 150  # the agent write path stored the memories
    assert {"paraphrase", "keyword", "task", "none"} <= set(res["hook"])  # every prompt went through the real hook
    assert res["recall"]["memoryd"]["keyword"]["any@5"] > 0.5  # the recall found what its own words ask for
    assert all("hook" in row for row in res["rows"])
