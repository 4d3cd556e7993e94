"""What every profile's handlers share: the lazily opened engine, the error mapping, and `tool` /
`register_tools`, which turn a module-level handler `fn(engine, **arguments) -> Model` into an MCP tool."""

from __future__ import annotations

import inspect
import json
import logging
import threading
import typing
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from ..shared.errors import AuthorizationRequired, InvalidInput, MemorydError

if TYPE_CHECKING:
    from ..engine import Engine
    from ..shared.config import Settings

__all__ = [
    "AUTHORIZATION_REQUIRED",
    "REQUEST_ENGINE",
    "EngineHandle",
    "RequestHandle",
    "ScopeInput",
    "Tool",
    "call",
    "describe_validation",
    "register_tools",
    "result",
    "tool",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("memoryd")

# JSON-RPC error code for AuthorizationRequired (server-defined range, stable).
AUTHORIZATION_REQUIRED = -32001


class ScopeInput(BaseModel):
    """Accepted for compatibility and ignored: memoryd infers the scope from the working directory."""

    tenant_id: str | None = Field(None, description="Tenant (local user); ignored, inferred.")
    workspace: str | None = Field(None, description="Workspace (git remote owner); ignored, inferred.")
    repository: str | None = Field(None, description="Repository name; ignored, inferred.")
    branch: str | None = Field(None, description="Branch; ignored, inferred.")


def describe_validation(exc: ValidationError) -> str:
    """Pydantic's errors as one readable line: `field: message; …` (never the input values)."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("", None)) or "arguments"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


class EngineHandle:
    """Opens the engine on a background thread so `initialize` never waits for imports."""

    def __init__(self, settings: Settings | None, cwd: str | Path | None, *, sync_vault: bool = True) -> None:
        self._settings = settings
        self._cwd = cwd
        self._sync_vault = sync_vault  # False on a team server: its vault is a by-product, not a person's edits
        self._engine: Engine | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._open, name="memoryd-engine-open", daemon=True).start()

    def _open(self) -> None:
        try:
            from ..engine import Engine  # deferred: pulls numpy, the tokenizer and the detector

            engine = Engine.open(self._settings, cwd=self._cwd, authority="agent")
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        try:
            if self._sync_vault:
                report = engine.vault_sync()  # hand edits made while the server was down
            else:  # finish only what a crash left in the outbox (files this database still owes)
                report = {"published": engine.recover_vault()["published"], "broken": []}
        except Exception:  # the store still serves; doctor and `memoryd vault sync` report the gap
            log.exception("vault sync at start failed")
        else:
            changes = {k: len(v) for k, v in report.items() if v}
            if changes:
                log.warning("vault sync at start: %s", changes)
            for broken in report["broken"]:
                log.warning("vault file left untouched: %s: %s", broken["path"], broken["error"])
        finally:
            self._engine = engine
            self._ready.set()
        try:
            engine.warm()  # load the vector index now rather than in the first search
        except Exception:
            log.exception("loading the vector index at start failed; the first search will retry")

    @property
    def ready(self) -> bool:
        """Whether the engine has opened (or failed to): `get` answers without waiting."""
        return self._ready.is_set()

    def get(self) -> Engine:
        self._ready.wait()
        if self._engine is None:
            raise MemorydError(f"memoryd could not open its store: {self._error}")
        return self._engine

    def close(self) -> None:
        if self._ready.is_set() and self._engine is not None:
            self._engine.close()


# The team server's engine for the request being served: set by `MemorydServer` from what the HTTP guard
# decided for this request (its token and Memoryd-Scope header), read by `RequestHandle.get`.
REQUEST_ENGINE: ContextVar[Engine | None] = ContextVar("memoryd_request_engine", default=None)


class RequestHandle(EngineHandle):
    """The team server's handle: each request gets the engine its token and scope header decided (the HTTP
    guard, `transport.http_guard(identify=…)`); `base` is the process's engine they are built from."""

    def __init__(self, base: EngineHandle) -> None:  # no thread of its own: `base` opens the store
        self.base = base

    def get(self) -> Engine:
        engine = REQUEST_ENGINE.get()
        if engine is None:
            raise MemorydError(
                "this request carries no identity (a team server answers only authenticated HTTP requests)"
            )
        return engine

    def close(self) -> None:
        self.base.close()


def result(model: BaseModel) -> CallToolResult:
    """Structured content without the fields a result leaves out (e.g. no reason when applied)."""
    data = model.model_dump(mode="json", exclude_none=True)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))], structured_content=data
    )


def _error(exc: MemorydError) -> CallToolResult:
    # Text only: structured content must match the tool's output schema, and clients (the TypeScript
    # SDK, the Inspector) validate it even on an error result, so a {code, message} object fails them.
    return CallToolResult(content=[TextContent(type="text", text=f"{exc.code}: {exc.message}")], is_error=True)


async def call(handle: EngineHandle, fn: Callable[[Engine], BaseModel]) -> CallToolResult:
    """Run one engine call off the event loop and map memoryd errors once, for every tool."""
    try:
        model = await anyio.to_thread.run_sync(lambda: fn(handle.get()))
    except AuthorizationRequired as exc:
        raise MCPError(AUTHORIZATION_REQUIRED, f"AuthorizationRequired: {exc.message}") from exc
    except (InvalidInput, MemorydError) as exc:
        return _error(exc)
    return result(model)


# -- tools: module-level handlers, one registration for both profiles -----------------------------


@dataclass(frozen=True)
class Tool(Generic[M]):
    """One MCP tool: a handler `fn(engine, **arguments)` returning its output model, and how a client
    sees it. Callable like the handler, so a test (or another surface) can run it on an engine."""

    fn: Callable[..., M]
    title: str
    description: str
    annotations: ToolAnnotations

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __call__(self, engine: Engine, /, **arguments: Any) -> M:
        return self.fn(engine, **arguments)


def tool(title: str, description: str, *, read_only: bool = False, destructive: bool = False,
         idempotent: bool = False) -> Callable[[Callable[..., M]], Tool[M]]:  # fmt: skip
    """Declare a module-level handler a tool. Its first parameter is the engine; the others are the
    tool's arguments (their annotations are its input schema); its return annotation is its output
    model. openWorldHint is false throughout: memoryd reads and writes only its own store."""

    def declare(fn: Callable[..., M]) -> Tool[M]:
        ann = ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                              idempotent_hint=idempotent, open_world_hint=False)  # fmt: skip
        return Tool(fn=fn, title=title, description=description, annotations=ann)

    return declare


def register_tools(mcp: MCPServer, handle: EngineHandle, tools: Iterable[Tool[Any]]) -> None:
    """Add each tool to `mcp`, served by the engine behind `handle` (off the event loop, errors mapped
    once by `call`)."""
    for t in tools:
        mcp.tool(name=t.name, title=t.title, description=t.description, annotations=t.annotations)(_handler(t, handle))


def _handler(t: Tool[Any], handle: EngineHandle) -> Callable[..., Any]:
    """The async function the SDK registers: the handler's signature without the engine, its types
    resolved (the SDK builds the input and output schemas from them)."""
    hints = typing.get_type_hints(t.fn, localns={"Engine": object}, include_extras=True)
    params = list(inspect.signature(t.fn).parameters.values())[1:]  # the first is the engine
    signature = inspect.Signature(
        [p.replace(annotation=hints[p.name]) for p in params],
        return_annotation=Annotated[CallToolResult, hints["return"]],
    )

    async def handler(**arguments: Any) -> CallToolResult:
        return await call(handle, lambda engine: t.fn(engine, **arguments))

    handler.__name__ = handler.__qualname__ = t.name
    handler.__doc__ = t.description
    handler.__signature__ = signature  # type: ignore[attr-defined]
    return handler
