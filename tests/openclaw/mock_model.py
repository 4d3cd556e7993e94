"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, so a real `openclaw agent --local` turn
runs offline: the model is the outside world, everything else (OpenClaw, the memoryd plugin, the memoryd
daemon) is real.

Rules, on the last message the user typed (OpenClaw's own internal-context messages are skipped):
`remember: X` → one `memory_store` tool call with text X; `forget: ID` → one `memory_forget` call;
`recall: Q` → one `memory_recall` call; after a tool result → a final text quoting it; anything else →
a plain reply. Every request body is kept in `requests` (what reached the model); streaming (SSE) and
non-streaming requests are both served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedOpenAI", "serve", "text_of"]

INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class ScriptedOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._n = 0

    def system_texts(self) -> list[str]:
        return [text_of(m.get("content")) for r in self.requests for m in r.get("messages") or []
                if m.get("role") in ("system", "developer")]  # fmt: skip

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """{"content": str} or {"tool": name, "args": {...}}."""
        with self._lock:
            self.requests.append(body)
            self._n += 1
            messages = body.get("messages") or []
            last_user = -1
            for i, m in enumerate(messages):
                if m.get("role") == "user" and INTERNAL not in text_of(m.get("content")):
                    last_user = i
            if last_user < 0:
                return {"content": "MOCK-REPLY"}
            after = messages[last_user + 1 :]
            results = [text_of(m.get("content")) for m in after if m.get("role") == "tool"]
            if results:
                return {"content": "MOCK-FINAL: " + results[-1][:500]}
            if any(m.get("role") == "assistant" for m in after):
                return {"content": "MOCK-REPLY"}
            said = text_of(messages[last_user].get("content"))
            for line in said.splitlines():
                for prefix, tool, key in (("remember:", "memory_store", "text"), ("forget:", "memory_forget", "id"),
                                          ("recall:", "memory_recall", "query")):  # fmt: skip
                    if prefix in line:
                        arg = line.split(prefix, 1)[1].strip()
                        return {"tool": tool, "args": {key: arg}, "id": f"call_{self._n}"}
            return {"content": "MOCK-REPLY"}


class _Handler(BaseHTTPRequestHandler):
    model: ScriptedOpenAI

    def log_message(self, *_: Any) -> None:
        pass

    def _json(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:  # noqa: N802
        self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "mock"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no {self.path}"}})
            return
        r = self.model.reply(body)
        if "tool" in r:
            call = {
                "id": r["id"],
                "type": "function",
                "function": {"name": r["tool"], "arguments": json.dumps(r["args"])},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": r["content"]}, "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            self._json(200, {"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "scripted",
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})  # fmt: skip
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        delta: dict[str, Any] = {"role": "assistant"}
        if "tool" in r:
            delta["tool_calls"] = [{"index": 0, **call}]
        else:
            delta["content"] = r["content"]
        base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
        for chunk in ({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                      {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}):  # fmt: skip
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@contextmanager
def serve(model: ScriptedOpenAI) -> Iterator[str]:
    """Serve `model` on 127.0.0.1; yields the base URL (…/v1)."""
    handler = type("Handler", (_Handler,), {"model": model})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
