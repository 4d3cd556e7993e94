"""Prompts, resources, titles and annotations, through a real MCP client over stdio and HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from memoryd.engine import Engine
from memoryd.mcp.hmg import TOOL_NAMES as HMG_TOOLS
from memoryd.mcp.mem import ADMIN_TOOLS, AGENT_TOOLS
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

from ..conftest import make_repo
from .clients import ok, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("args", "names"), [(("--profile", "hmg"), HMG_TOOLS), (("--admin",), AGENT_TOOLS + ADMIN_TOOLS)]
)
async def test_every_tool_has_a_title_and_every_annotation(
    tmp_path: Path, args: tuple[str, ...], names: list[str]
) -> None:
    async with open_session("stdio", tmp_path / "home", make_repo(tmp_path / "w"), *args) as s:
        tools = (await s.list_tools()).tools
    assert [t.name for t in tools] == names
    for t in tools:
        a = t.annotations
        assert t.title and a is not None and a.title == t.title, t.name
        assert a.open_world_hint is False, t.name  # memoryd touches only its own store
        assert None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint), t.name
        assert not (a.read_only_hint and a.destructive_hint), t.name
    assert len({t.title for t in tools}) == len(tools)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_saved_prompts_are_served_with_their_arguments(transport: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "w")
    async with open_session(transport, tmp_path / "home", repo, "--admin") as s:
        assert (await s.list_prompts()).prompts == []
        await ok(s, "mem_save_prompt", {"name": "dura-extract", "content": "Score DURA for: {text}\nLanguage: {lang}"})
        await ok(s, "mem_save_prompt", {"name": "handoff", "content": "Write a handoff for {{this}} session."})
        prompts = {p.name: p for p in (await s.list_prompts()).prompts}
        assert list(prompts) == ["dura-extract", "handoff"]
        assert [(a.name, a.required) for a in prompts["dura-extract"].arguments or []] == [
            ("text", True),
            ("lang", True),
        ]
        assert prompts["dura-extract"].description == "Score DURA for: {text}"
        got = await s.get_prompt("dura-extract", {"text": "用 {PostgreSQL} 16", "lang": "zh"})
        assert got.messages[0].role == "user"
        assert got.messages[0].content.text == "Score DURA for: 用 {PostgreSQL} 16\nLanguage: zh\n"
        with pytest.raises(MCPError) as exc:
            await s.get_prompt("dura-extract", {"text": "x"})
        assert "invalid_input: prompt 'dura-extract' needs the argument(s) lang" in exc.value.error.message
        with pytest.raises(MCPError) as exc:
            await s.get_prompt("nope")
        assert "not_found: no saved prompt named 'nope'" in exc.value.error.message


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_memories_and_the_brief_are_resources_within_the_scope_boundary(transport: str, tmp_path: Path) -> None:
    home, repo, other = (
        tmp_path / "home",
        make_repo(tmp_path / "w"),
        make_repo(tmp_path / "o", remote="git@x:acme/o.git"),
    )
    async with open_session(transport, home, other) as s:
        theirs = (await ok(s, "mem_save", {"content": "Repository o keeps its deploy keys in Vault kv/o.",
                                            "type": "fact"}))["memory_id"]  # fmt: skip
    async with open_session(transport, home, repo) as s:
        mine = (await ok(s, "mem_save", {"content": "Invoices are stored in PostgreSQL 16, never MongoDB.",
                                          "type": "decision"}))["memory_id"]  # fmt: skip
        everywhere = (await ok(s, "mem_save", {"content": "The user prefers answers in Chinese with English code.",
                                                "type": "preference", "scope": "global"}))["memory_id"]  # fmt: skip
        listed = {str(r.uri): r for r in (await s.list_resources()).resources}
        assert set(listed) == {"memory://brief", f"memory://{mine}", f"memory://{everywhere}"}  # not o's memory
        assert listed[f"memory://{mine}"].mime_type == "text/markdown"
        assert listed[f"memory://{mine}"].title == "Invoices are stored in PostgreSQL 16, never MongoDB."
        templates = (await s.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memory://{memory_id}"]
        body = (await s.read_resource(f"memory://{mine}")).contents[0]
        assert body.text.startswith("---\n") and f"id: {mine}" in body.text
        assert body.text.rstrip().endswith("Invoices are stored in PostgreSQL 16, never MongoDB.")
        brief = (await s.read_resource("memory://brief")).contents[0].text
        assert "Invoices are stored in PostgreSQL 16" in brief and "Chinese" in brief
        for uri in (f"memory://{theirs}", "memory://01NOTANID", "memory://", "file:///etc/passwd"):
            with pytest.raises(MCPError) as exc:
                await s.read_resource(uri)
            assert "not_found" in exc.value.error.message and "Vault" not in exc.value.error.message, uri

    with Engine.open(Settings(home=home), cwd=repo, embedder=HashEmbedder()) as person:
        person.mark_sensitive(True)
    async with open_session(transport, home, repo) as s:
        listed = {str(r.uri) for r in (await s.list_resources()).resources}
        assert listed == {"memory://brief", f"memory://{everywhere}"}  # the sensitive scope's memories are left out
        for uri in (f"memory://{mine}", "memory://brief"):
            with pytest.raises(MCPError) as exc:
                await s.read_resource(uri)
            assert exc.value.error.code == -32001 and exc.value.error.message.startswith("AuthorizationRequired: ")
        assert (await s.read_resource(f"memory://{everywhere}")).contents[0].text.rstrip().endswith("English code.")
