"""memoryd's MCP server class: stable error codes for tools, checked stdio, prompts and resources.

- Tools: the SDK's own failures (bad arguments, unknown tool, a crash) are mapped to memoryd's
  stable codes (`invalid_input: top_k: …`), never a pydantic dump (issue 10).
- stdio: every line is checked before the SDK sees it (`transport.stdio_streams`): no request goes
  unanswered.
- prompts/list, prompts/get: the prompts saved with `mem_save_prompt`, served from the engine
  (`memoryd.engine.library`); each `{placeholder}` in a prompt is a required argument.
- resources/list: `memory://brief` (the agent brief of this repository) and `memory://<id>` for
  this repository's and the global scope's active memories (newest first, at most 500; sensitive
  scopes without a grant left out); resources/templates/list: `memory://{memory_id}`.
- resources/read: the brief, or a memory's markdown file (frontmatter and body). Another
  repository's memory is not found; a sensitive one without a grant is JSON-RPC -32001, as for tools.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import GetPromptResult, PromptMessage, TextContent
from mcp_types import Prompt as MCPPrompt
from mcp_types import PromptArgument as MCPPromptArgument
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from pydantic import AnyUrl, ValidationError

from ..shared.errors import AuthorizationRequired, InvalidInput, MemorydError, NotFound
from .common import AUTHORIZATION_REQUIRED, REQUEST_ENGINE, EngineHandle, describe_validation

__all__ = ["MemorydServer"]

T = TypeVar("T")
log = logging.getLogger("memoryd")
INVALID_PARAMS = -32602
BRIEF_URI = "memory://brief"
MEMORY_PREFIX = "memory://"
MARKDOWN = "text/markdown"


class MemorydServer(MCPServer[Any]):
    """The SDK's server with its own failures mapped to memoryd's stable codes, checked stdio, and
    prompts and resources from memoryd's engine (set `engine_handle`).

    The SDK reports bad arguments as "Error executing tool X: <pydantic dump>", an unknown tool as
    "Unknown tool: X" and a crash as "Error executing tool X" with no reason; every tool error of
    memoryd instead starts with a code: `invalid_input: top_k: Input should be …`.
    """

    engine_handle: EngineHandle | None = None

    # -- the team server: each request's engine --------------------------------------------------
    # The HTTP guard leaves the engine a request acts with in its ASGI scope (`memoryd.engine`); each
    # handler binds it for `RequestHandle.get` from the HTTP request the SDK hands it: the public
    # handlers get it in their `context`; the two listings get none, so their SDK handlers are wrapped.

    @staticmethod
    def _bind(ctx: Any) -> None:
        """Bind the engine of the request in `ctx` (a ServerRequestContext, or a Context holding one)."""
        if isinstance(ctx, Context):
            try:
                ctx = ctx.request_context
            except ValueError:  # called outside a request (tests call tools directly)
                ctx = None
        scope = getattr(getattr(ctx, "request", None), "scope", None)
        REQUEST_ENGINE.set(scope.get("memoryd.engine") if isinstance(scope, dict) else None)

    async def _handle_list_resources(self, ctx: Any, params: Any) -> Any:
        self._bind(ctx)
        return await super()._handle_list_resources(ctx, params)

    async def _handle_list_prompts(self, ctx: Any, params: Any) -> Any:
        self._bind(ctx)
        return await super()._handle_list_prompts(ctx, params)

    # -- tools and stdio ----------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        self._bind(context)
        return await self.call_bound_tool(name, arguments, context)

    def tool_names(self) -> set[str]:
        """The tools this server serves (the SDK's registry)."""
        return {t.name for t in self._tool_manager.list_tools()}

    async def call_bound_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """`call_tool` with the request's engine already bound (`REQUEST_ENGINE`): the stateless HTTP fast path
        (`memoryd.mcp.fast`) binds it from the ASGI scope itself."""
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            log.error("tool %r crashed", name, exc_info=exc.__cause__ or exc)
            raise ToolError(f"internal: {name} failed unexpectedly; the server log (stderr) has the details") from None
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"invalid_input: {describe_validation(cause)}") from None
            if self._tool_manager.get_tool(name) is None:
                shown = name if len(name) <= 80 else name[:77] + "..."
                raise ToolError(f"invalid_input: unknown tool {shown!r}; tools/list names the tools") from None
            text = str(exc).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(text if ": " in text else f"internal: {text or name + ' failed'}") from None

    async def run_stdio_async(self) -> None:
        """stdio with every line checked first (see `transport`): no request goes unanswered."""
        from mcp.server.stdio import stdio_server

        from .transport import stdio_streams

        async with stdio_streams() as (lines, out), stdio_server(stdin=lines, stdout=out) as (read, write):  # type: ignore[arg-type]
            await self._lowlevel_server.run(read, write, self._lowlevel_server.create_initialization_options())

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
            MCPPrompt(
                name=p.name,
                title=p.name,
                description=p.description or None,
                arguments=[
                    MCPPromptArgument(name=a, description=f"Fills {{{a}}} in the prompt.", required=True)
                    for a in p.arguments
                ],
            )  # fmt: skip
            for p in prompts
        ]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult:
        self._bind(context)
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
        self._bind(context)
        text = str(uri)
        if text == BRIEF_URI:
            return [ReadResourceContents(content=await self._run(lambda e: e.brief_resource()), mime_type=MARKDOWN)]
        if not text.startswith(MEMORY_PREFIX) or not text[len(MEMORY_PREFIX) :]:
            raise ResourceNotFoundError(f"not_found: unknown resource {text!r}; memoryd serves {BRIEF_URI} and "
                                        f"{MEMORY_PREFIX}<memory id>")  # fmt: skip
        atom_id = text[len(MEMORY_PREFIX) :]
        return [ReadResourceContents(content=await self._run(lambda e: e.resource(atom_id)), mime_type=MARKDOWN)]


def _title(content: str) -> str:
    line = " ".join(content.split())
    return line if len(line) <= 80 else line[:79] + "…"
