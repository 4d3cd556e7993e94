"""OpenClaw: the native memory plugin (integrations/openclaw), installed with OpenClaw's own CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .common import (
    Change,
    InstallError,
    InstallReport,
    _atomic_write,
    _load_json,
    _read,
    backup_dir,
    default_executable,
)

OPENCLAW_PLUGIN_ID = "memoryd"
# What install sets (besides the plugin itself), as config paths; uninstall puts each back as it was.
_OPENCLAW_PATHS = ("plugins.slots.memory", "plugins.entries.memoryd", "plugins.entries.memory-core")


def openclaw_plugin_dir() -> Path:
    """The plugin built into this memoryd (package data: `make wheel` builds integrations/openclaw into it, a checkout
    has it after `make openclaw-plugin`), wherever memoryd is installed."""
    return Path(__file__).resolve().parent / "openclaw_plugin"


def _openclaw_record() -> Path:
    return backup_dir() / "openclaw-install.json"


def _openclaw(openclaw: str, *args: str, stdin: str | None = None, timeout: float = 180) -> str:
    import subprocess

    try:
        r = subprocess.run([openclaw, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                           stdin=None if stdin is not None else subprocess.DEVNULL)  # fmt: skip
    except FileNotFoundError:
        raise InstallError(f"OpenClaw's CLI {openclaw!r} was not found: install OpenClaw (npm i -g openclaw) or "
                           "pass --openclaw PATH") from None  # fmt: skip
    except subprocess.TimeoutExpired:
        raise InstallError(f"`openclaw {' '.join(args[:3])}` did not finish within {timeout:.0f} s") from None
    if r.returncode != 0:
        tail = (r.stderr.strip() or r.stdout.strip())[-600:]
        raise InstallError(f"`openclaw {' '.join(args[:3])}` failed (exit {r.returncode}): {tail}")
    return r.stdout


def _dig(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _openclaw_state(openclaw: str) -> tuple[Path, dict[str, Any]]:
    """OpenClaw's config file (as `openclaw config file` names it) and its content ({} when absent)."""
    lines = [ln.strip() for ln in _openclaw(openclaw, "config", "file").splitlines() if ln.strip()]
    path = Path(os.path.expanduser(lines[-1])) if lines else Path.home() / ".openclaw" / "openclaw.json"
    raw = _read(path)
    if raw is None:
        return path, {}
    try:
        data = json.loads(raw)
    except ValueError:
        data = {}  # JSON5 with comments: the prior values are then read as absent
    return path, data if isinstance(data, dict) else {}


def _patch_for(values: dict[str, Any]) -> dict[str, Any]:
    """A `config patch` object setting each dotted path to its value (None deletes it)."""
    out: dict[str, Any] = {}
    for dotted, value in values.items():
        node = out
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def install_openclaw(openclaw: str = "openclaw", *, plugin_dir: Path | None = None, command: str | None = None,
                     dry_run: bool = False) -> InstallReport:  # fmt: skip
    """Install the memoryd plugin into OpenClaw with OpenClaw's CLI: `plugins install`, then one `config patch`
    binding `plugins.slots.memory` to it, granting the conversation access its hooks need, giving it the memoryd
    command (to start the daemon) and MEMORYD_HOME, and disabling `memory-core` (whose memory_search/memory_get
    would otherwise stay offered next to memoryd's tools). The values found before are kept for uninstall.
    """
    plugin = (plugin_dir or openclaw_plugin_dir()).resolve()
    if plugin_dir is None and not (plugin / "dist" / "index.js").is_file():
        raise InstallError(f"this memoryd has no OpenClaw plugin built in ({plugin} is missing): in a checkout, run "
                           "`make openclaw-plugin` (a wheel made by `make wheel` carries it)")  # fmt: skip
    if not (plugin / "openclaw.plugin.json").is_file():
        raise InstallError(f"no OpenClaw plugin at {plugin} (openclaw.plugin.json is missing)")
    if not (plugin / "dist" / "index.js").is_file():
        raise InstallError(f"the plugin at {plugin} is not built: run `make openclaw-plugin` (tsc) first")
    exe = command or default_executable("memoryd")
    config_path, before = _openclaw_state(openclaw)
    plugin_config: dict[str, Any] = {"command": exe}
    if os.environ.get("MEMORYD_HOME"):
        plugin_config["home"] = os.environ["MEMORYD_HOME"]
    entry = {"enabled": True, "hooks": {"allowConversationAccess": True}, "config": plugin_config}
    report = InstallReport("openclaw", "install", "memoryd", "user", OPENCLAW_PLUGIN_ID, dry_run=dry_run)
    items = [f"plugin {OPENCLAW_PLUGIN_ID} from {plugin}", "plugins.slots.memory = memoryd",
             "plugins.entries.memoryd.hooks.allowConversationAccess = true",
             f"plugins.entries.memoryd.config = {json.dumps(plugin_config)}",
             "plugins.entries.memory-core.enabled = false"]  # fmt: skip
    report.changes.append(Change(str(config_path), "updated", items))
    if dry_run:
        return report
    record = _openclaw_record()
    if not record.exists():  # a reinstall keeps what was there before the first install
        prior = {p: _dig(before, p) for p in _OPENCLAW_PATHS}
        agents = _dig(before, "agents.entries")
        prior["agents.entries"] = sorted(agents) if isinstance(agents, dict) else None
        record.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(record, json.dumps({"config": str(config_path), "prior": prior}, indent=2).encode())
    _openclaw(openclaw, "plugins", "install", str(plugin), "--force", "--accept-capabilities")
    patch = _patch_for({"plugins.slots.memory": OPENCLAW_PLUGIN_ID, "plugins.entries.memoryd": entry,
                        "plugins.entries.memory-core.enabled": False})  # fmt: skip
    _openclaw(openclaw, "config", "patch", "--stdin", stdin=json.dumps(patch))
    report.notes.append(f"what was there before is kept in {record}; `memoryd uninstall openclaw` puts it back")
    report.notes.append("a running OpenClaw Gateway picks the plugin up on its next start (openclaw gateway restart)")
    return report


def uninstall_openclaw(openclaw: str = "openclaw", *, dry_run: bool = False) -> InstallReport:
    """Reverse `install_openclaw`: `plugins uninstall memoryd`, then the slot, the plugin's entry and memory-core's
    `enabled` put back as they were before the install (absent ones removed)."""
    report = InstallReport("openclaw", "uninstall", "memoryd", "user", OPENCLAW_PLUGIN_ID, dry_run=dry_run)
    record = _openclaw_record()
    config_path, now = _openclaw_state(openclaw)
    if not record.exists() and not isinstance(_dig(now, "plugins.entries.memoryd"), dict):
        report.changes.append(Change(str(config_path), "unchanged"))
        report.notes.append("memoryd is not installed in OpenClaw")
        return report
    prior: dict[str, Any] = {}
    if record.exists():
        prior = json.loads(record.read_text(encoding="utf-8")).get("prior") or {}
    restore = {p: prior.get(p) for p in _OPENCLAW_PATHS}
    core = restore["plugins.entries.memory-core"]
    if isinstance(core, dict):  # merged back; `enabled` removed again when it was not set before
        restore["plugins.entries.memory-core"] = {**core, "enabled": core.get("enabled")}
    items = [f"plugin {OPENCLAW_PLUGIN_ID} removed"] + [
        f"{p} = {json.dumps(v)}" if v is not None else f"{p} removed" for p, v in restore.items()]  # fmt: skip
    report.changes.append(Change(str(config_path), "restored", items))
    if dry_run:
        return report
    if _dig(now, "plugins.installs.memoryd") is not None or (config_path.parent / "extensions" / "memoryd").exists():
        _openclaw(openclaw, "plugins", "uninstall", OPENCLAW_PLUGIN_ID, "--force")
    # `plugins uninstall` leaves an empty `agents.entries.<id>` for agents it visited: those were not there before
    after = _load_json(config_path, _read(config_path)) if config_path.exists() else {}
    agents, known = _dig(after, "agents.entries"), prior.get("agents.entries")
    if isinstance(agents, dict):
        new_empty = [a for a, v in agents.items() if v == {} and (known is None or a not in known)]
        if known is None and new_empty and len(new_empty) == len(agents):  # there was no agents.entries before
            restore["agents" if set(_dig(after, "agents") or {}) == {"entries"} else "agents.entries"] = None
        else:
            restore.update({f"agents.entries.{a}": None for a in new_empty})
    _openclaw(openclaw, "config", "patch", "--stdin", stdin=json.dumps(_patch_for(restore)))
    record.unlink(missing_ok=True)
    return report
