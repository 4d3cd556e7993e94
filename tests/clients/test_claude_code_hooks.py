"""memoryd's hooks inside a real `claude -p` run (Claude Code 2.1.x, offline).

The model is a scripted stand-in on 127.0.0.1 (tests/clients/fake_model.py, `ANTHROPIC_BASE_URL`);
Claude Code, the hooks `memoryd install claude` registered and memoryd's MCP server are real. What
the model receives (hook context, tool results) is what the test reads.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import Engine
from memoryd.shared.config import Settings

from ..conftest import make_repo
from .fake_model import ScriptedModel, serve
from .node import BIN, MEMORYD, client_env, need, run

pytestmark = pytest.mark.slow


class Setup:
    def __init__(self, tmp_path: Path, *, install: bool = True) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.data = tmp_path / "data"
        self.repo = make_repo(tmp_path / "widgets")
        self.other = make_repo(tmp_path / "gadgets", remote="git@github.com:acme/gadgets.git")
        self.env = client_env(self.home, self.data)
        self.exe = str(need(BIN / "claude"))
        if install:
            r = run([MEMORYD, "install", "claude", "--scope", "user"], self.env, self.repo)
            assert r.returncode == 0, r.stderr

    def engine(self, cwd: Path) -> Engine:
        return Engine.open(Settings(home=self.data), cwd=cwd)

    def settings(self, **changes: Any) -> None:
        path = self.home / ".claude" / "settings.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data.update(changes)
        path.write_text(json.dumps(data), encoding="utf-8")

    def ask(self, model: ScriptedModel, prompt: str, *extra: str) -> dict[str, Any]:
        with serve(model) as url:
            env = {**self.env, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000"}
            r = subprocess.run([self.exe, "-p", prompt, "--output-format", "json", *extra], env=env, cwd=self.repo,
                               capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)  # fmt: skip
        assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
        return dict(json.loads(r.stdout))


@pytest.fixture
def s(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def _pending(s: Setup) -> str:
    """A pending save in each repository; the other one's scope hash."""
    with s.engine(s.other) as e:
        e.memorize("Gadgets keeps its deploy keys in Vault under kv/gadgets.", source="agent", gate="hold")
        other_hash = e.scope.scope_hash
    with s.engine(s.repo) as e:
        e.memorize("Widgets deploys with the Helm charts in charts/widgets.", source="agent", gate="hold")
    return other_hash


def test_the_pre_tool_use_scope_override_reaches_the_tool_in_a_real_run(s: Setup) -> None:
    other_hash = _pending(s)
    model = ScriptedModel("LIST-PENDING", "mcp__memoryd__mem_review_pending", {"scope": other_hash, "limit": 10})
    out = s.ask(model, "LIST-PENDING")
    assert out["result"] == "done" and len(model.tool_results) == 1
    result = model.tool_results[0]
    text = result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])
    # The agent named the other repository; the hook pinned the call to this one, and Claude Code ran
    # it without a permission rule of the user's (the hook's "allow").
    assert not result.get("is_error"), text
    assert "Widgets deploys with the Helm charts" in text and "Gadgets" not in text


def test_the_users_deny_rule_still_wins_over_the_hooks_allow(s: Setup) -> None:
    other_hash = _pending(s)
    s.settings(permissions={"deny": ["mcp__memoryd__mem_review_pending"]})
    model = ScriptedModel("LIST-PENDING", "mcp__memoryd__mem_review_pending", {"scope": other_hash})
    s.ask(model, "LIST-PENDING")
    result = model.tool_results[0]
    assert result.get("is_error") and "Widgets" not in json.dumps(result) and "Gadgets" not in json.dumps(result)


def _sent(model: ScriptedModel, marker: str) -> str:
    """Everything the last request of the conversation carrying `marker` sent to the model."""
    bodies = [json.dumps(b, ensure_ascii=False) for b in model.requests if marker in json.dumps(b, ensure_ascii=False)]
    assert bodies, "the prompt never reached the model"
    return bodies[-1]


def test_user_prompt_submit_adds_relevant_memories_once_per_session(s: Setup) -> None:
    with s.engine(s.repo) as e:
        e.memorize("The billing service stores invoices in PostgreSQL 16; MongoDB was rejected.", source="user")
        e.memorize("Frontend components are written in Solid, not React.", source="user", type="decision")
    # Worded so that keyword signals alone find it: on a busy machine the hook's model wait may run out.
    first = ScriptedModel("Which database stores the invoices of the billing service?")
    out = s.ask(first, "Which database stores the invoices of the billing service?")
    sent = _sent(first, "Which database stores the invoices")
    log = (s.data / "hooks.log").read_text(encoding="utf-8") if (s.data / "hooks.log").exists() else ""
    assert "memories relevant to this prompt" in sent and "stores invoices in PostgreSQL 16" in sent, log
    assert "written in Solid" not in sent.split("memories relevant to this prompt")[1]
    # The same session, resumed: the memory is in its context already and is not added again.
    second = ScriptedModel("Again: which database stores the billing service invoices?")
    s.ask(second, "Again: which database stores the billing service invoices?", "--resume", out["session_id"])
    sent = _sent(second, "Again: which database stores the billing service invoices?")
    assert sent.count("stores invoices in PostgreSQL 16") == 1, sent[-3000:]
