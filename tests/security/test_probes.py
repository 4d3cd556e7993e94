"""What the edge probes found (issue 36), each against the real process: a 100,000-deep JSON body, a JSON-RPC
batch and half-sent requests get a clean, stable answer, and the server goes on serving.

Surfaces: the MCP streamable-HTTP server with its console (`memoryd-mcp --transport http --ui`), the stdio
server in-process and through the daemon (`memoryd-mcp`), and the daemon's Unix socket (local API and MCP).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memoryd.daemon.client import Client
from memoryd.mcp.transport import BATCH_REFUSED
from memoryd.shared.http_security import LOCAL_S
from memoryd.shared.limits import LIMITS

from ..conftest import make_repo
from ..mcp.clients import HEADERS, INIT, SERVER, free_port, server_env

DEPTH = LIMITS["json_depth"][0]
DEEP = b"[" * 100_000 + b"]" * 100_000
TOO_DEEP_CALL = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
    "name": "mem_search", "arguments": {"query": "x", "tags": json.loads("[" * DEPTH + "]" * DEPTH)}}}).encode()  # fmt: skip
BATCH = json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/x"},
                    {"jsonrpc": "2.0", "id": "two", "method": "tools/list"}]).encode()  # fmt: skip
DUMP = ("validation error", "errors.pydantic.dev", "input_value", "Traceback", "Internal Server Error")


def _nested_too_deep(reply: dict[str, Any]) -> None:
    assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == -32600, reply
    assert (
        reply["error"]["message"]
        == f"Invalid Request: invalid_input: the message nests JSON deeper than {DEPTH} levels"
    )


def _batch_refused(replies: Any) -> None:
    assert isinstance(replies, list) and [r["id"] for r in replies] == [1, "two"], replies  # the requests, in order
    assert all(r["error"] == {"code": -32600, "message": BATCH_REFUSED} for r in replies)
    assert "JSON-RPC batches are not supported" in BATCH_REFUSED


# -- MCP over HTTP, and the console it serves under /ui ---------------------------------------------------------


@pytest.fixture
def http_ui(tmp_path: Path) -> Iterator[tuple[int, str, subprocess.Popen[str]]]:
    """`memoryd-mcp --transport http --ui`: (port, the console's address with its token, the process)."""
    port = free_port()
    env = server_env(tmp_path / "home", MEMORYD_EMBEDDER="hash", MEMORYD_DAEMON="off")
    proc = subprocess.Popen([SERVER, "--transport", "http", "--port", str(port), "--ui"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, line
                time.sleep(0.05)
        yield port, line.split(": ", 1)[1], proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_deep_json_and_batches_over_http_get_clean_errors_and_the_server_stays_up(
    http_ui: tuple[int, str, subprocess.Popen[str]],
) -> None:
    port, console_url, proc = http_ui
    url = f"http://127.0.0.1:{port}/mcp"
    with httpx2.Client(timeout=60) as c:
        for body in (DEEP, b'{"a":' * 100_000 + b"1" + b"}" * 100_000, TOO_DEEP_CALL):
            r = c.post(url, content=body, headers=HEADERS)
            assert r.status_code == 400, (r.status_code, r.text[:300])
            _nested_too_deep(r.json())
        r = c.post(url, content=BATCH, headers=HEADERS)
        assert r.status_code == 400 and not any(mark in r.text for mark in DUMP), r.text[:600]
        _batch_refused(r.json())
        notes = json.dumps([{"jsonrpc": "2.0", "method": "notifications/initialized"}]).encode()
        r = c.post(url, content=notes, headers=HEADERS)
        assert r.status_code == 202 and r.content == b""  # notifications only: nothing may answer them
        # the console: a deep JSON body past its CSRF check is a 4xx page, never a 500
        page = c.get(console_url, follow_redirects=True)
        assert page.status_code == 200, page.text[:300]
        m = re.search(r'"X-CSRF-Token": "([0-9a-f]{64})"', page.text)
        assert m, page.text[:500]
        origin = f"http://127.0.0.1:{port}"
        for path in ("/ui/memories", "/ui/review", "/ui/memories/01ARZ3NDEKTSV4RRFFQ69G5FAV/correct"):
            r = c.post(origin + path, content=DEEP, headers={"Content-Type": "application/json", "Origin": origin,
                                                              "X-CSRF-Token": m.group(1)})  # fmt: skip
            assert 400 <= r.status_code < 500, (path, r.status_code, r.text[:300])
            assert "Traceback" not in r.text and "Internal Server Error" not in r.text
        # still serving
        r = c.post(url, json=INIT, headers=HEADERS)
        assert r.status_code == 200 and "result" in r.text, r.text[:300]
        assert c.get(console_url, follow_redirects=True).status_code == 200
    assert proc.poll() is None


# -- MCP over stdio, in-process and through the daemon ----------------------------------------------------------


@pytest.mark.parametrize("daemon", ["off", "on"])
def test_deep_json_and_batches_on_stdio_get_answers_and_the_session_goes_on(tmp_path: Path, daemon: str) -> None:
    home = tmp_path / "home"
    env = server_env(home, MEMORYD_EMBEDDER="hash", MEMORYD_TERM_EMBEDDER="none", MEMORYD_DAEMON=daemon)
    lines = [DEEP, TOO_DEEP_CALL, BATCH, json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()]
    try:
        r = subprocess.run([SERVER], input=b"\n".join(lines) + b"\n", env=env, cwd=make_repo(tmp_path / "w"),
                           capture_output=True, timeout=120)  # fmt: skip
    finally:
        Client(home, autostart=False).stop(timeout=10)
    err = r.stderr.decode()
    assert "Traceback" not in err and "RecursionError" not in err, err[-2000:]
    replies = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert len(replies) == 4, replies  # through the daemon, lines are answered as they finish: any order
    batches = [x for x in replies if isinstance(x, list)]
    assert len(batches) == 1
    _batch_refused(batches[0])
    deep = [x for x in replies if isinstance(x, dict) and x.get("id") is None]
    assert len(deep) == 2
    for reply in deep:
        _nested_too_deep(reply)
    assert {"jsonrpc": "2.0", "id": 7, "result": {}} in replies  # the session goes on


# -- the daemon's Unix socket -----------------------------------------------------------------------------------


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Client, Path]]:
    home = tmp_path / "home"
    for k in [k for k in os.environ if k.startswith("MEMORYD_")]:
        monkeypatch.delenv(k)
    for k, v in {"MEMORYD_HOME": str(home), "MEMORYD_DAEMON": "on", "MEMORYD_EMBEDDER": "hash",
                 "MEMORYD_TERM_EMBEDDER": "none"}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    client = Client(home)
    client.start()
    try:
        yield client, make_repo(tmp_path / "w")
    finally:
        client.stop()


def _raw(path: str, request: bytes, timeout: float = 30) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_the_daemon_answers_deep_json_and_cuts_half_sent_requests_while_serving_others(
    daemon: tuple[Client, Path],
) -> None:
    client, repo = daemon
    sock = str(client.paths.socket)
    scope = json.dumps({"cwd": str(repo)})

    def ask(path: str, body: bytes, **headers: str) -> tuple[int, Any]:
        head = [f"POST {path} HTTP/1.1", "Host: localhost", "Connection: close", f"Content-Length: {len(body)}",
                "Content-Type: application/json", "Accept: application/json, text/event-stream",
                *(f"{k}: {v}" for k, v in {"Memoryd-Scope": scope, **headers}.items())]  # fmt: skip
        answer = _raw(sock, ("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status = int(answer.split(b" ", 2)[1])
        data = answer.split(b"\r\n\r\n", 1)[1]
        if b"chunked" in answer.split(b"\r\n\r\n", 1)[0].lower():
            data = data.split(b"\r\n", 1)[1].rsplit(b"\r\n0\r\n", 1)[0]
        return status, json.loads(data)

    status, data = ask("/v1/memorize", DEEP)
    assert (status, data) == (400, {"error": {"code": "invalid_input",
                                              "message": f"the body nests JSON deeper than {DEPTH} levels"}})  # fmt: skip
    status, data = ask("/v1/recall", b'{"query": "x", "types": ' + b"[" * 70 + b"]" * 70 + b"}")
    assert status == 400 and data["error"]["message"] == f"the body nests JSON deeper than {DEPTH} levels"
    status, data = ask("/v1/recall", b'{"query": "x"}', **{"Memoryd-Scope": "[" * 4000 + "]" * 4000})
    assert status == 400 and data["error"] == {
        "code": "invalid_input", "message": f"the Memoryd-Scope header nests JSON deeper than {DEPTH} levels"}  # fmt: skip
    status, data = ask("/mcp/memoryd", DEEP)
    assert status == 400
    _nested_too_deep(data)
    status, data = ask("/mcp/memoryd", BATCH)
    assert status == 400
    _batch_refused(data)

    # Half-sent requests: headers that never end are closed, a body that never ends gets 408; meanwhile the
    # daemon answers another client at once.
    started = time.monotonic()
    half_head = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    half_body = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for s in (half_head, half_body):
            s.settimeout(LOCAL_S + 20)
            s.connect(sock)
        half_head.sendall(b"POST /v1/recall HTTP/1.1\r\nHost: local")
        half_body.sendall(b"POST /v1/recall HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Memoryd-Scope: " + scope.encode() + b"\r\nContent-Length: 100\r\n\r\n{\"qu")  # fmt: skip
        t0 = time.monotonic()
        status, data = ask("/v1/recall", b'{"query": "deploys"}')
        assert status == 200 and data == {"items": []} and time.monotonic() - t0 < LOCAL_S, data
        assert half_head.recv(100) == b""  # closed by the daemon, no answer
        assert LOCAL_S - 0.5 <= time.monotonic() - started < LOCAL_S + 10
        answer = b"".join(iter(lambda: half_body.recv(4096), b""))  # to the end: the daemon closes it
        assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {"error": {
            "code": "request_timeout", "message": f"the body did not arrive whole within {LOCAL_S:g} s"}}  # fmt: skip
    finally:
        half_head.close()
        half_body.close()
    assert client.health() is not None
    assert client.call("/v1/memorize", {"content": "The nightly export job writes CSV files at 02:00 UTC."},
                       scope={"cwd": str(repo)})["effect"] == "created"  # fmt: skip
