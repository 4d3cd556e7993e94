"""The team server's shortened load proof: `bench/team_load.py --quick` end to end (issue 16).

Two `memoryd-mcp --transport http --team` replicas on one throwaway PostgreSQL, 8 MCP HTTP clients
(people with their own tokens, shared and private repositories) searching and saving for two
phases; in the second, one replica is killed with SIGKILL and its clients move to the other. With
`--standby` (issue 27) the replicas read from a `pg_basebackup -R` hot standby, every save is searched
for by its writer next, and a third phase kills the standby with SIGKILL and restarts it.
The numbers are the bench's own: no failed call, no acknowledged write lost, no own write missed, the
chain verifies, the restarted standby serves reads again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parent.parent / "bench" / "team_load.py"


@pytest.mark.timeout(1200)
def test_quick_load_with_a_replica_killed_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "team_load.json"
    r = subprocess.run([sys.executable, str(BENCH), "--quick", "--standby", "--json", str(out)], capture_output=True,
                       text=True, timeout=1100)  # fmt: skip
    assert out.is_file(), f"exit {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    report = json.loads(out.read_text())
    phases = report["phases"]
    assert set(phases) == {"steady", "standby-kill", "kill"}, phases.keys()
    for name, p in phases.items():
        # Both tools were really exercised, writes were acknowledged, and each phase was checked.
        assert p["tools"]["mem_search"]["calls"] > 0 and p["tools"]["mem_save"]["calls"] > 0, name
        assert p["lost"]["acked"] > 0, name
        assert p["chain"]["events"] > 0, name
    assert phases["kill"]["killed"]["replica"] == "replica0"
    assert phases["steady"]["killed"] is None
    for name, p in phases.items():  # the writer's next search found every save, standby or not
        assert p["ryw"]["checked"] > 0 and p["ryw"]["missed"] == 0, (name, p["ryw"])
    standby = phases["standby-kill"]["standby"]
    assert standby["killed_at_s"] is not None and standby["back_in_rotation_s"] is not None, standby
    assert phases["steady"]["standby"]["standby_xacts"] > 0  # the replicas read there
    failures = [s for p in phases.values() for s in p["errors"]["failed_samples"]]
    assert report["errors"] == 0, failures
    assert report["acked_lost"] == 0, [p["lost"]["lost_ids"] for p in phases.values()]
    assert report["chain_ok"] is True, [p["chain"] for p in phases.values()]
    assert r.returncode == 0, r.stdout[-4000:]
