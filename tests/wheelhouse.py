"""The built wheel and a fresh virtualenv holding it, once per test session (tests/test_wheel.py and the OpenClaw
suite's install from the wheel share them): `make wheel` as written, then `pip install` of the wheel alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = "Scripts" if os.name == "nt" else "bin"


def run_ok(cmd: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
           timeout: float = 600) -> subprocess.CompletedProcess[str]:  # fmt: skip
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 0, (cmd, r.stdout[-3000:], r.stderr[-3000:])
    return r


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # its own notice, not ours
    # `make wheel` as written: the build frontend in a small venv of its own, never the test virtualenv
    plan = run_ok(["make", "-n", "-C", str(ROOT), "wheel"], env=env).stdout
    assert "[test]" not in plan and "pip install --quiet build" in plan, plan
    bv = tmp_path_factory.mktemp("build-venv")
    r = run_ok(["make", "--no-print-directory", "-C", str(ROOT), "wheel", f"DIST={out}", f"BUILD_VENV={bv}",
                f"PYTHON={sys.executable}"], env=env)  # sdist, then the wheel from it  # fmt: skip
    assert not (bv / BIN / "pytest").exists() and not (bv / BIN / "memoryd").exists()  # the frontend only
    warnings = [line for line in (r.stdout + r.stderr).splitlines()
                if "warning" in line.lower() and "Location 'file:" not in line]  # fmt: skip
    assert warnings == [], warnings  # e.g. the licence table setuptools deprecates
    (built,) = out.glob("memoryd-*.whl")
    return built


@pytest.fixture(scope="session")
def wheel_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed by pip (no extras); its bin directory."""
    root = tmp_path_factory.mktemp("venv")
    run_ok([sys.executable, "-m", "venv", str(root)])
    run_ok([str(root / BIN / "python"), "-m", "pip", "install", "--quiet", str(wheel)])
    return root / BIN
