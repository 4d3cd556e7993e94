"""MCP prompts and resources of both profiles, served from the engine (`memoryd.engine.library`).

- prompts/list, prompts/get: the prompts saved with `mem_save_prompt`; each `{placeholder}` in a
  prompt is a required argument.
- resources/list: `memory://brief` (the agent brief of this repository) and `memory://<id>` for
  this repository's and the global scope's active memories (newest first, at most 500; sensitive
  scopes without a grant left out); resources/templates/list: `memory://{memory_id}`.
- resources/read: the brief, or a memory's markdown file (frontmatter and body). Another
  repository's memory is not found; a sensitive one without a grant is JSON-RPC -32001, as for tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp_types import GetPromptResult, PromptMessage, TextContent
from mcp_types import Prompt as MCPPrompt
from mcp_types import PromptArgument as MCPPromptArgument
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from pydantic import AnyUrl

from ..errors import AuthorizationRequired, InvalidInput, MemorydError, NotFound
from .common import AUTHORIZATION_REQUIRED, EngineHandle

__all__ = ["MemorydServer"]

T = TypeVar("T")
INVALID_PARAMS = -32602
BRIEF_URI = "memory://brief"
MEMORY_PREFIX = "memory://"
MARKDOWN = "text/markdown"


class MemorydServer(MCPServer[Any]):
    """An MCPServer whose prompts and resources come from memoryd's engine (set `engine_handle`)."""

    engine_handle: EngineHandle | None = None

    async def _run(self, fn: Callable[[Any], T]) -> T:
        if self.engine_handle is None:
            raise MCPError(INVALID_PARAMS, "memoryd: no engine behind this server")
        handle = self.engine_handle
        try:
            return await anyio.to_thread.run_sync(lambda: fn(handle.get()))
        except AuthorizationRequired as exc:
            raise MCPError(AUTHORIZATION_REQUIRED, f"AuthorizationRequired: {exc.message}") from exc
        except NotFound as exc:
            raise ResourceNotFoundError(f"{exc.code}: {exc.message}") from exc
        except (InvalidInput, MemorydError) as exc:
            raise MCPError(INVALID_PARAMS, f"{exc.code}: {exc.message}") from exc

    # -- prompts ------------------------------------------------------------------------------

    async def list_prompts(self) -> list[MCPPrompt]:
        prompts = await self._run(lambda e: e.prompts())
        return [
            MCPPrompt(name=p.name, title=p.name, description=p.description or None,
                      arguments=[MCPPromptArgument(name=a, description=f"Fills {{{a}}} in the prompt.", required=True)
                                 for a in p.arguments])  # fmt: skip
            for p in prompts
        ]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult:
        args = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
        try:
            text = await self._run(lambda e: e.render_prompt(name, args))
            description = (await self._run(lambda e: e.prompt(name))).description or None
        except ResourceNotFoundError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from exc
        return GetPromptResult(description=description,
                               messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))])  # fmt: skip

    # -- resources ----------------------------------------------------------------------------

    async def list_resources(self) -> list[MCPResource]:
        atoms = await self._run(lambda e: e.resources())
        brief = MCPResource(uri=BRIEF_URI, name="brief", title="Agent brief",
                            description="Latest handoff, constraints, preferences and recent decisions of this "
                                        "repository (what the SessionStart hook shows).", mime_type=MARKDOWN)  # fmt: skip
        return [brief, *(
            MCPResource(uri=f"{MEMORY_PREFIX}{a.id}", name=a.id, title=a.title or _title(a.content),
                        description=f"{a.type} · {a.scope.name}", mime_type=MARKDOWN)
            for a in atoms
        )]  # fmt: skip

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return [MCPResourceTemplate(uri_template=f"{MEMORY_PREFIX}{{memory_id}}", name="memory", title="Memory",
                                    description="One memory of this repository or the global scope, by id, as its "
                                                "markdown file.", mime_type=MARKDOWN)]  # fmt: skip

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents]:
        text = str(uri)
        if text == BRIEF_URI:
            return [ReadResourceContents(content=await self._run(lambda e: e.brief_resource()), mime_type=MARKDOWN)]
        if not text.startswith(MEMORY_PREFIX) or not text[len(MEMORY_PREFIX):]:
            raise ResourceNotFoundError(f"not_found: unknown resource {text!r}; memoryd serves {BRIEF_URI} and "
                                        f"{MEMORY_PREFIX}<memory id>")  # fmt: skip
        atom_id = text[len(MEMORY_PREFIX):]
        return [ReadResourceContents(content=await self._run(lambda e: e.resource(atom_id)), mime_type=MARKDOWN)]


def _title(content: str) -> str:
    line = " ".join(content.split())
    return line if len(line) <= 80 else line[:79] + "…"
