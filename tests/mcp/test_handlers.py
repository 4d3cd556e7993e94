"""The tool handlers are module-level functions: importable and callable on an engine without a server
(issue 22), and the registration helper builds the same tool whichever profile declares it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memoryd.mcp import hmg, mem
from memoryd.mcp.common import Tool

if TYPE_CHECKING:
    from memoryd.engine import Engine


def test_every_tool_is_a_module_level_handler() -> None:
    for module, tools in ((mem, mem.AGENT + mem.ADMIN), (hmg, hmg.TOOLS)):
        for t in tools:
            assert isinstance(t, Tool)
            assert getattr(module, t.name) is t  # importable by its tool name
            assert t.annotations.title == t.title and t.annotations.open_world_hint is False


def test_handlers_run_on_an_engine_directly(engine: Engine) -> None:
    saved = mem.mem_save(engine, content="The billing service retries webhooks three times with backoff.",
                         type="decision")  # fmt: skip
    assert saved.status == "saved" and saved.memory_id
    found = mem.mem_search(engine, query="billing webhooks retries")
    assert found.results[0].memory_id == saved.memory_id and found.warning is None
    recalled = hmg.memory_recall(engine, query="billing webhook retries")
    assert recalled.atoms[0].atom_id == saved.memory_id


def test_a_scope_argument_naming_another_repository_warns_once_and_stays_here(engine: Engine) -> None:
    mem.mem_save(engine, content="Deploys of the widgets service go through the staging cluster first.")
    found = mem.mem_search(engine, query="widgets deploys staging", scope="other/repo")
    assert found.warning is not None and "names another scope" in found.warning
    assert found.results and all(r.scope_hash == engine.scope.scope_hash for r in found.results)


def test_a_handler_refuses_bad_input_with_the_engines_error(engine: Engine) -> None:
    from memoryd.shared.errors import InvalidInput

    with pytest.raises(InvalidInput, match="scope must be a string"):
        mem.mem_timeline(engine, scope=42)  # type: ignore[arg-type]
