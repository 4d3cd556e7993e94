"""One plain `tools/call` over stateless streamable HTTP, answered without the SDK's per-request session.

The team server and the resident daemon serve MCP statelessly with JSON answers: for every POST the SDK
builds a transport, memory streams, a task, a JSON-RPC dispatcher and a server session, runs the request
through its middleware, and tears it all down. Profiled on a replica (py-spy, issue 27), that machinery was
about a third of a replica's CPU per `mem_search`, more than the query's embedding.

`tool_call` answers the common case itself, after `transport.http_guard` has checked the request (host,
identity, body size, UTF-8, JSON-RPC shape): a single `tools/call` request to the MCP path, with the media
types and protocol version the SDK's 2025-era stateless path accepts, no `_meta`, no session. It runs the same
tool call (`MemorydServer.call_tool`: argument validation, memoryd's error codes), maps exceptions as the SDK's
`_handle_call_tool` and dispatcher do, validates the result against the protocol version's schema
(`serialize_server_result`) and writes the SDK's own JSON-RPC models. Anything else returns None and goes to the
SDK unchanged: initialize, listings, notifications, batches, other protocol versions, odd headers.
`tests/security/test_fast_path.py` sends the same requests both ways and compares the answers.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import CallToolResult, ErrorData, JSONRPCError, JSONRPCResponse, TextContent
from mcp_types.methods import serialize_server_result, validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request

from .common import REQUEST_ENGINE
from .transport import FastPath

if TYPE_CHECKING:
    from .server import MemorydServer

__all__ = ["tool_call"]

# What the fast path logs, it logs where the SDK would, under the same names and levels: servers quiet the
# "mcp" loggers (each request's INFO lines), and a failed tool's message stays out of memoryd's own log.
tool_log = logging.getLogger("mcp.server.mcpserver.server")
dispatch_log = logging.getLogger("mcp.shared.jsonrpc_dispatcher")
runner_log = logging.getLogger("mcp.server.runner")
DEFAULT_VERSION = "2025-03-26"  # the SDK's DEFAULT_NEGOTIATED_VERSION: a request without the header
_FIELDS = frozenset({"jsonrpc", "id", "method", "params"})


def _media_types(value: bytes | None) -> list[str]:
    return [t.strip().split(";")[0].strip().lower() for t in (value or b"").decode("latin-1").split(",")]


def _headers_fit(headers: dict[bytes, bytes]) -> str | None:
    """The protocol version of a request the SDK's stateless JSON path would take as it is, else None."""
    accept = _media_types(headers.get(b"accept"))
    if not any(t in ("application/json", "application/*", "*/*") for t in accept):
        return None  # the SDK answers 406
    content_type = (headers.get(b"content-type") or b"").decode("latin-1").split(";")[0]
    if "application/json" not in [p.strip() for p in content_type.split(",")]:
        return None  # 415
    if b"mcp-session-id" in headers or any(k.startswith(b"mcp-param") for k in headers):
        return None
    version = headers.get(b"mcp-protocol-version")
    if version is None:
        return DEFAULT_VERSION
    text = version.decode("latin-1")
    return text if text in HANDSHAKE_PROTOCOL_VERSIONS else None  # a 2026-era or unknown one: the SDK's modern path


def tool_call(mcp: MemorydServer, path: str) -> FastPath:
    """The fast path for `mcp`'s endpoint at `path`, built after `mcp.streamable_http_app(...)`: only for a
    stateless server with JSON answers. (The SDK's other reshaping of a result, cache hints, is not for
    `tools/call`, and memoryd sets none.)"""
    manager = mcp.session_manager
    if not (manager.stateless and manager.json_response):
        return _never
    security = TransportSecurityMiddleware(manager.security_settings)  # the SDK's Host/Origin/Content-Type rules
    tools = mcp.tool_names()

    async def answer(headers: dict[bytes, bytes], scope: dict[str, Any], text: str) -> bytes | None:
        if scope.get("path") != path or (version := _headers_fit(headers)) is None:
            return None
        if await security.validate_request(Request(scope), is_post=True) is not None:
            return None  # the SDK refuses it, in its words
        message = json.loads(text)
        if not isinstance(message, dict) or message.keys() != _FIELDS or message.get("method") != "tools/call":
            return None
        if message["jsonrpc"] != "2.0":
            return None
        rid, params = message["id"], message["params"]
        if isinstance(rid, bool) or not isinstance(rid, int | str) or not isinstance(params, dict):
            return None
        name, arguments = params.get("name"), params.get("arguments", {})
        if not params.keys() <= {"name", "arguments"} or name not in tools or not isinstance(arguments, dict):
            return None
        try:
            validate_client_request("tools/call", version, params)
        except (KeyError, ValueError, ValidationError):
            return None  # the SDK's own answer for it
        REQUEST_ENGINE.set(scope.get("memoryd.engine"))
        try:
            result = await _call(mcp, name, arguments)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            try:
                wire = serialize_server_result("tools/call", version, dumped)
            except ValidationError:
                runner_log.exception("handler for %r returned an invalid result", "tools/call")
                raise MCPError(code=-32603, message="Handler returned an invalid result") from None
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                dispatch_log.exception("handler for %r raised", "tools/call")
                error = ErrorData(code=0, message=str(exc))
            return (
                JSONRPCError(jsonrpc="2.0", id=rid, error=error)
                .model_dump_json(by_alias=True, exclude_unset=True)
                .encode()
            )
        return (
            JSONRPCResponse(jsonrpc="2.0", id=rid, result=wire)
            .model_dump_json(by_alias=True, exclude_unset=True)
            .encode()
        )

    return answer


async def _never(headers: dict[bytes, bytes], scope: dict[str, Any], text: str) -> bytes | None:
    return None


async def _call(mcp: MemorydServer, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """`MCPServer._handle_call_tool` for a bound engine: the tool's result, or its failure as an error result."""
    try:
        result = await mcp.call_bound_tool(name, arguments)
    except Exception as exc:
        if isinstance(exc, MCPError):
            raise
        if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
            if isinstance(exc.__cause__, ValidationError):
                fields = sorted({".".join(str(part) for part in err["loc"]) for err in exc.__cause__.errors()})
                tool_log.info("Tool %r rejected arguments: %r", name, fields)
            else:
                tool_log.info("Tool %r failed: %r", name, str(exc))
        else:
            tool_log.exception("Tool %r raised an unexpected exception", name)
        return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
    if not isinstance(result, CallToolResult):  # an interim result (input_required): not ours to shape
        raise TypeError(f"tool {name!r} returned {type(result).__name__}")
    return result
