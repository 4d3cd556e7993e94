"""The tool examples of docs/TOOLS.md are run, call by call, against a real server over stdio."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import make_repo
from .mcp.clients import ok, open_session

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # wherever the examples live
BLOCKS = [b for doc in DOCS for b in re.findall(r"```mcp-example\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _bind(value: Any, vars: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        return vars[value]
    if isinstance(value, list):
        return [_bind(v, vars) for v in value]
    if isinstance(value, dict):
        return {k: _bind(v, vars) for k, v in value.items()}
    return value


def _match(expected: Any, actual: Any, vars: dict[str, Any], where: str) -> None:
    if expected == "…":
        return
    if isinstance(expected, str) and expected.startswith("$"):
        if expected in vars:
            assert actual == vars[expected], (where, expected, actual)
        else:
            vars[expected] = actual
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (where, sorted(actual), sorted(expected))
        for k, v in expected.items():
            _match(v, actual[k], vars, f"{where}.{k}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (where, actual)
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _match(e, a, vars, f"{where}[{i}]")
        return
    assert actual == expected, (where, expected, actual)


def test_readme_has_examples_for_both_profiles() -> None:
    profiles = [b.splitlines()[0] for b in BLOCKS]
    assert profiles == ["# profile: memoryd --admin", "# profile: hmg"]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.splitlines()[0].removeprefix("# profile: "))
async def test_readme_example(block: str, tmp_path: Path) -> None:
    lines = block.strip().splitlines()
    args = lines[0].removeprefix("# profile: ").split()
    argv = ["--profile", args[0], *args[1:]]
    repo = make_repo(tmp_path / "widgets")
    vars: dict[str, Any] = {}
    async with open_session("stdio", tmp_path / "home", repo, *argv) as s:
        pairs = list(zip(lines[1::2], lines[2::2], strict=True))
        assert pairs, "no examples"
        for call_line, result_line in pairs:
            assert call_line.startswith("→ ") and result_line.startswith("← "), (call_line, result_line)
            name, _, raw = call_line[2:].partition(" ")
            result = await ok(s, name, _bind(json.loads(raw), vars))
            _match(json.loads(result_line[2:]), result, vars, name)
