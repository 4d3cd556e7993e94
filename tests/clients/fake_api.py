"""A stand-in for the Anthropic Messages API, so the real Claude Code CLI runs offline in tests.

The model is the outside world here: this server plays a model that calls the `Read` tool on each
given file in turn (one tool call per turn), then answers "done". Every request body is kept, so a
test can see exactly what Claude Code sent the model, hook context included. Streaming only (what
Claude Code asks for); `count_tokens` answers a fixed count.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeModel", "fake_model"]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class FakeModel:
    def __init__(self, reads: list[str]) -> None:
        self.reads = reads
        self.requests: list[dict[str, Any]] = []
        self.port = 0

    def reply(self, body: dict[str, Any]) -> list[bytes]:
        results = sum(
            1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
            for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result"
        )  # fmt: skip
        tools = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        start = {"type": "message_start", "message": {
            "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body.get("model", "m"),
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}  # fmt: skip
        events = [_sse("message_start", start)]
        if "Read" in tools and results < len(self.reads):
            block = {"type": "tool_use", "id": f"toolu_{results}", "name": "Read", "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps({"file_path": self.reads[results]})}
            stop = "tool_use"
        else:
            block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": "done"}, "end_turn"
        events += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),  # fmt: skip
            _sse("message_stop", {"type": "message_stop"}),
        ]
        return events


@contextmanager
def fake_model(reads: list[str]) -> Iterator[FakeModel]:
    """A FakeModel served on 127.0.0.1 (its `port`) for the duration of the block."""
    model = FakeModel(reads)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            if "count_tokens" in self.path:
                data = json.dumps({"input_tokens": 10}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            model.requests.append(body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for chunk in model.reply(body):
                self.wfile.write(chunk)

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(404)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    model.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
