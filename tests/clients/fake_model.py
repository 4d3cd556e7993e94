"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, so the real `claude` CLI runs a turn
offline: the model is the outside world, everything else (Claude Code, its hooks, memoryd's MCP server)
is real.

`ScriptedModel(prompt, tool, tool_input)` answers the first request of the conversation that carries
the prompt with one `tool_use` of `tool`, records the `tool_result` Claude Code sends back (the
output of the real tool call), then ends the turn with a short text; with no tool it just answers.
Any other request (a title, a quota probe) gets a plain text answer. Every request is kept in
`requests`, so a test can read what reached the model (hook context included). Streaming (SSE) and
non-streaming requests are both served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedModel", "serve"]


class ScriptedModel:
    def __init__(self, prompt: str, tool: str | None = None, tool_input: dict[str, Any] | None = None) -> None:
        self.prompt = prompt
        self.tool = tool
        self.tool_input = tool_input or {}
        self.requests: list[dict[str, Any]] = []
        self.tool_results: list[Any] = []
        self.offered_tools: list[str] = []
        self._lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks to answer `body` with."""
        with self._lock:
            self.requests.append(body)
            messages = body.get("messages") or []
            text = json.dumps(messages, ensure_ascii=False)
            if self.prompt not in text:
                return [{"type": "text", "text": "ok"}]
            results = [b for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list)
                       for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]  # fmt: skip
            if results:
                seen = {r.get("tool_use_id") for r in self.tool_results}
                self.tool_results.extend(r for r in results if r.get("tool_use_id") not in seen)
                return [{"type": "text", "text": "done"}]
            if self.tool is None:
                return [{"type": "text", "text": "done"}]
            self.offered_tools = [t.get("name", "") for t in body.get("tools") or []]
            return [{"type": "tool_use", "id": f"toolu_{len(self.requests):04d}", "name": self.tool,
                     "input": self.tool_input}]  # fmt: skip


def _message(blocks: list[dict[str, Any]], model: str) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip


def _events(blocks: list[dict[str, Any]], model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    msg = _message([], model)
    msg["stop_reason"] = None
    yield "message_start", {"type": "message_start", "message": msg}
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}  # fmt: skip
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}  # fmt: skip
        else:
            start = {**block, "input": {}}
            yield "content_block_start", {"type": "content_block_start", "index": i, "content_block": start}
            yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}  # fmt: skip
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5}}  # fmt: skip
    yield "message_stop", {"type": "message_stop"}


@contextmanager
def serve(model: ScriptedModel) -> Iterator[str]:
    """Serve `model` on a free loopback port until the block ends; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:  # noqa: N802
            self._json(200, {"data": [], "has_more": False})

        do_HEAD = do_GET  # noqa: N815

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                self._json(200, {"input_tokens": 10})
                return
            blocks = model.reply(body)
            name = body.get("model") or "claude-fake"
            if not body.get("stream"):
                self._json(200, _message(blocks, name))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for event, data in _events(blocks, name):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="fake-model", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
