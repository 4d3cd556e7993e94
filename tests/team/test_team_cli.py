"""The operator's commands: `memoryd token …`, `memoryd team …`, `memoryd scope share` (exit codes, output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..mcp.clients import server_env

CLI = str(Path(sys.executable).with_name("memoryd"))


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], env=server_env(home, MEMORYD_EMBEDDER="hash"), cwd=home, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_operator_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    t = run(home, "token", "create", "--tenant", "alice", "--read-only", "--scope", "acme/api", "--expires", "2w")
    assert t.returncode == 0 and t.stdout.count("\n") == 1 and t.stdout.startswith("mdt_")
    assert "(read-only in acme/api), expires 20" in t.stderr and "shown once" in t.stderr
    listed = run(home, "token", "list")
    assert "alice" in listed.stdout and "active" in listed.stdout and " ro " in listed.stdout
    assert t.stdout.strip().split("_", 2)[2] not in listed.stdout
    as_json = json.loads(run(home, "token", "create", "--tenant", "bob", "--expires", "never", "--json").stdout)
    assert as_json["tenant"] == "bob" and as_json["expires_at"] is None and as_json["token"].startswith("mdt_")
    bad = run(home, "token", "create", "--tenant", "no spaces")
    assert bad.returncode == 2 and "error [invalid_input]: tenant must be 1-64 letters" in bad.stderr and not bad.stdout
    gone = run(home, "token", "revoke", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert gone.returncode == 3 and "no token with id '01ARZ3NDEKTSV4RRFFQ69G5FAV'" in gone.stderr
    assert run(home, "team", "create", "core").stdout.strip() == "team core created"
    assert run(home, "team", "add", "core", "alice", "bob").stdout.strip() == "team core: alice, bob"
    missing = run(home, "team", "add", "web", "alice")
    assert missing.returncode == 3 and "no team 'web'" in missing.stderr
    assert run(home, "scope", "share", "acme/api", "--team", "core").stdout.strip() == "acme/api is shared with core"
    local = run(home, "scope", "share", "local/notes", "--team", "core")
    assert local.returncode == 2 and "cannot be shared" in local.stderr
    assert run(home, "team", "list").stdout.splitlines() == ["core: alice, bob", "acme/api -> core"]
    assert json.loads(run(home, "team", "list", "--json").stdout) == {
        "teams": {"core": ["alice", "bob"]},
        "shares": [{"repository": "acme/api", "team": "core"}],
    }
    verify = json.loads(run(home, "verify", "--json").stdout)
    assert verify["ok"] and verify["events"] == 6  # 2 tokens, 1 team, 2 members, 1 share
