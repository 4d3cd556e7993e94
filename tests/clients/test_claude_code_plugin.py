"""memoryd as a Claude Code plugin, installed by the real `claude plugin` commands from this repository's
marketplace (`.claude-plugin/marketplace.json` → `plugin/`), offline, in a throwaway HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .fake_model import ScriptedModel
from .node import run
from .test_claude_code_hooks import Setup, _pending

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


class PluginSetup(Setup):
    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path, install=False)

    def claude(self, *args: str) -> str:
        r = run([self.exe, *args], self.env, self.repo, timeout=120)
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
        return r.stdout


def test_the_plugin_installs_from_the_local_marketplace_and_its_server_and_hooks_work(tmp_path: Path) -> None:
    s = PluginSetup(tmp_path)
    assert "Validation passed" in s.claude("plugin", "validate", str(ROOT))
    assert "Validation passed" in s.claude("plugin", "validate", str(ROOT / "plugin"))
    assert "Successfully added marketplace: memoryd" in s.claude("plugin", "marketplace", "add", str(ROOT))
    assert "Successfully installed plugin: memoryd@memoryd" in s.claude("plugin", "install", "memoryd@memoryd")
    listed = s.claude("plugin", "list")
    assert "memoryd@memoryd" in listed and "Version: 0.1.0" in listed and "✔ enabled" in listed
    assert "plugin:memoryd:memoryd: memoryd-mcp  - ✔ Connected" in s.claude("mcp", "list")
    # Nothing of memoryd in the user's own settings: the plugin carries the server and the hooks.
    settings = json.loads((s.home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert "hooks" not in settings and settings["enabledPlugins"] == {"memoryd@memoryd": True}

    # The plugin's hooks run: its PreToolUse pins the plugin server's tool to this repository.
    other_hash = _pending(s)
    model = ScriptedModel("LIST-PENDING", "mcp__plugin_memoryd_memoryd__mem_review_pending", {"scope": other_hash})
    s.ask(model, "LIST-PENDING")
    text = json.dumps(model.tool_results, ensure_ascii=False)
    assert "Widgets deploys with the Helm charts" in text and "Gadgets" not in text, text
    assert "SessionStart hook additional context: [memoryd · acme/widgets]" in json.dumps(
        model.requests[0], ensure_ascii=False
    )

    assert "Successfully uninstalled" in s.claude("plugin", "uninstall", "memoryd@memoryd")
    assert "plugin:memoryd" not in s.claude("mcp", "list")
