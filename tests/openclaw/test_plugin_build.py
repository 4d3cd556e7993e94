"""The OpenClaw plugin inside memoryd is its TypeScript, built: the committed build (package data, what a wheel and
`uv tool install ./memoryd` carry) is byte for byte what the pinned toolchain makes of `integrations/openclaw` now,
and the plugin type-checks against the pinned OpenClaw's own SDK types, not only the subset it is built against."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .host import HOST, PLUGIN, ROOT

SOURCE = ROOT / "integrations" / "openclaw"
TSC = SOURCE / "toolchain" / "node_modules" / "typescript" / "bin" / "tsc"


def _tsc(*args: str) -> subprocess.CompletedProcess[str]:
    if not TSC.exists():
        pytest.fail(f"{TSC} is missing: run `make openclaw-plugin` (npm ci --prefix integrations/openclaw/toolchain)")
    return subprocess.run(["node", str(TSC), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_plugin_inside_memoryd_is_a_fresh_build_of_its_sources(tmp_path: Path) -> None:
    r = _tsc("-p", str(SOURCE / "tsconfig.json"), "--outDir", str(tmp_path / "dist"))
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("openclaw.plugin.json", "package.json"):
        (tmp_path / name).write_bytes((SOURCE / name).read_bytes())
    fresh, shipped = _files(tmp_path), _files(PLUGIN)
    assert sorted(shipped) == ["dist/client.js", "dist/index.js", "openclaw.plugin.json", "package.json"]
    stale = [name for name in fresh if shipped.get(name) != fresh[name]]
    assert stale == [], f"{stale} differ from a build of integrations/openclaw: run `make openclaw-plugin`"


def test_the_plugin_type_checks_against_the_pinned_openclaw_sdk() -> None:
    if not (HOST / "openclaw" / "dist" / "plugin-sdk").is_dir():
        pytest.fail(f"{HOST / 'openclaw'} is missing: run `make openclaw`")
    r = _tsc("-p", str(SOURCE / "tsconfig.sdk.json"))
    assert r.returncode == 0, r.stdout + r.stderr
