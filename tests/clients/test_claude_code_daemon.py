"""A real `claude -p` run (Claude Code 2.1.x, offline) whose hooks and memoryd tools all go through the daemon.

As tests/clients/test_claude_code_hooks.py: a scripted model on 127.0.0.1, the real CLI, the hooks and
MCP server `memoryd install claude` registered; here with the daemon on (`MEMORYD_DAEMON=on`), so
`memoryd hook …` and `memoryd-mcp` are thin clients of one resident process with the real model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.daemon.client import Client

from .fake_model import ScriptedModel
from .node import MEMORYD
from .test_claude_code_hooks import Setup, _sent

pytestmark = pytest.mark.slow

WARM = """
import json
from memoryd.daemon.client import Client
print(json.dumps(Client().call("/v1/recall", {"query": "warm the model"}, scope={"cwd": %r}, timeout=120)))
"""


def _health(data: Path) -> dict[str, object]:
    info = Client(data, autostart=False).health()
    assert info is not None, "no daemon runs"
    return info


def test_hooks_and_tools_of_a_real_claude_run_go_through_the_daemon(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.env["MEMORYD_DAEMON"] = "on"
    try:
        with s.engine(s.repo) as e:
            e.memorize(
                "The billing service stores invoices in PostgreSQL 16; MongoDB was rejected.",
                source="user",
                type="fact",
            )  # a fact: not in the brief, so the prompt hook adds it
        r = subprocess.run([MEMORYD, "daemon", "start"], env=s.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        # Warm: the first recall waits for the model (the hook's budget is for a warm daemon).
        r = subprocess.run([sys.executable, "-c", WARM % str(s.repo)], env=s.env, capture_output=True, text=True,
                           timeout=180)  # fmt: skip
        assert r.returncode == 0, r.stderr
        pid = _health(s.data)["pid"]

        prompt = "Which database stores the invoices of the billing service?"
        model = ScriptedModel(prompt, "mcp__memoryd__mem_search", {"query": "invoice storage"})
        out = s.ask(model, prompt)
        assert out["result"] == "done"
        sent = _sent(model, prompt)
        assert "[memoryd · acme/widgets]" in sent  # SessionStart's brief
        assert "memories relevant to this prompt" in sent and "stores invoices in PostgreSQL 16" in sent
        result = model.tool_results[0]
        text = result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])
        assert not result.get("is_error") and "stores invoices in PostgreSQL 16" in text

        info = _health(s.data)
        assert info["pid"] == pid  # the same daemon answered everything
        assert int(str(info["calls"])) >= 5  # health, warm-up, SessionStart, UserPromptSubmit, PreToolUse, MCP calls
        log = (s.data / "hooks.log").read_text(encoding="utf-8") if (s.data / "hooks.log").exists() else ""
        assert "running in-process" not in log and "gave up" not in log, log
    finally:
        Client(s.data, autostart=False).stop()
