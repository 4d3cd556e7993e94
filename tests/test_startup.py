"""`memoryd-mcp --version` answers before anything heavy is imported (issue 36: it took 0.67 s on a quiet machine,
importing the MCP server; bench/resident.py --startup-only measures it against Python's own start)."""

from __future__ import annotations

import json
import subprocess
import sys

from memoryd import __version__

PROBE = """
import json, sys
before = set(sys.modules)
from memoryd.daemon.mcp_entry import main
main(["--version"])
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_memoryd_mcp_version_imports_nothing_but_its_own_modules() -> None:
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    printed, loaded = r.stdout.splitlines()
    assert printed == f"memoryd-mcp {__version__}"  # what argparse's --version prints
    assert json.loads(loaded) == ["__future__", "memoryd", "memoryd.daemon", "memoryd.daemon.mcp_entry"]
