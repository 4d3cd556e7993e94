"""OpenClaw from the wheel alone: the README's OpenClaw lines, run as written by a shell whose PATH holds the pinned
OpenClaw (and its Node 24) and a fresh virtualenv with memoryd's wheel, in a folder outside the checkout. No
checkout on PATH or PYTHONPATH, no `--plugin`, no npm install of ours: the plugin comes out of the installed
package. Then real `openclaw agent --local` turns, with no daemon running at the first one.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from .host import OPENCLAW, ROOT, Host, memoryd_block
from .mock_model import ScriptedOpenAI, serve

pytestmark = pytest.mark.slow

README = ROOT / "README.md"


def readme_openclaw_lines() -> list[str]:
    """The commands of the README's OpenClaw ```sh block, one a line, comments dropped."""
    section = README.read_text(encoding="utf-8").split("\n## OpenClaw\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```sh\n(.*?)```", section, flags=re.S)
    assert m, "no sh block in the README's OpenClaw section"
    return [line.split("  #")[0].strip() for line in m.group(1).splitlines() if line.strip()]


@pytest.mark.timeout(1200)  # the wheel and its virtualenv (shared with tests/test_wheel.py), then two agent turns
def test_the_readme_openclaw_lines_install_the_plugin_from_the_wheel_and_it_works(
    wheel_venv: Path, tmp_path: Path
) -> None:
    if not OPENCLAW.exists():
        pytest.fail(f"{OPENCLAW} is missing: run `make openclaw` (npm ci --prefix clients/openclaw)")
    install, uninstall = readme_openclaw_lines()
    assert install == "memoryd install openclaw" and uninstall == "memoryd uninstall openclaw"
    memoryd = str(wheel_venv / "memoryd")
    model = ScriptedOpenAI()
    with serve(model) as url:
        oc = Host(tmp_path, model, url, memoryd=memoryd)
        # PATH: the pinned OpenClaw and its Node, the wheel's virtualenv, the system; no memoryd of the checkout
        assert shutil.which("memoryd", path=oc.env["PATH"]) == memoryd and "PYTHONPATH" not in oc.env
        assert not any(p.startswith((str(ROOT / ".venv"), str(ROOT / "src"))) for p in oc.env["PATH"].split(":"))
        r = oc.run("/bin/bash", "-c", install)  # word for word, cwd outside the checkout
        assert r.returncode == 0, r.stdout + r.stderr
        origin = oc.run(str(wheel_venv / "python"), "-c", "import memoryd.agents.install.openclaw as m; "
                        "print(m.openclaw_plugin_dir())").stdout.strip()  # fmt: skip
        assert origin.startswith(str(wheel_venv.parent)) and not origin.startswith(str(ROOT)), origin
        installed = oc.home / ".openclaw" / "extensions" / "memoryd"
        for name in ("openclaw.plugin.json", "dist/index.js", "dist/client.js"):
            assert (installed / name).read_bytes() == (Path(origin) / name).read_bytes(), name
        cfg = oc.config()["plugins"]["entries"]["memoryd"]
        assert cfg["config"]["command"] == memoryd and cfg["hooks"]["allowConversationAccess"] is True
        oc.setup_model()
        oc.plugin_config()
        r = oc.openclaw("plugins", "inspect", "memoryd", "--runtime", "--json")
        assert r.returncode == 0, r.stderr
        text = json.dumps(json.loads(r.stdout[r.stdout.index("{") :]))
        assert all(t in text for t in ("memory_recall", "memory_store", "memory_forget", "before_prompt_build"))
        assert "blocked" not in text

        try:
            _first_turns(oc)
        finally:
            oc.memoryd("daemon", "stop")
        r = oc.run("/bin/bash", "-c", uninstall)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not installed.exists() and "memoryd" not in json.dumps(oc.config().get("plugins", {}).get("slots"))


def _first_turns(oc: Host) -> None:
    """The first turn after install: no daemon runs. What the user asks to keep is kept, and recalled next turn."""
    assert not (oc.data / "daemon.json").exists()
    fact = "The release train leaves every Tuesday at 10:00 UTC from the main branch."
    out, _ = oc.turn(f"remember: {fact}")
    stored = oc.events("tool_store")
    assert stored and stored[-1]["effect"] == "created", oc.events()
    assert oc.events("daemon_started"), oc.events()
    assert f"Stored as {stored[-1]['id']}" in json.dumps(out)  # what the user is told
    assert [h["id"] for h in oc.recall("main", "when does the release train leave")][:1] == [stored[-1]["id"]]
    _, requests = oc.turn("When does the release train leave?")
    assert any(fact in block for block in memoryd_block(requests))
