"""`memoryd-mcp`: over stdio, a thin forwarder to the daemon's MCP endpoint; in-process when it cannot be.

Each line an agent writes is POSTed as it is to the daemon's `/mcp/<profile>` with `Memoryd-Scope:
{"cwd": <the directory>}` (the scope is inferred by the daemon exactly as the in-process server infers
it), and the daemon's answer (the same JSON-RPC bytes the in-process server writes) goes to stdout as one
line. The daemon checks each line as the stdio transport does (invalid UTF-8, lone surrogates, not
JSON-RPC), so both tool profiles answer byte for byte as they do in-process.

Standard library only: an open agent session costs a small Python process, not a copy of the models.
In-process (`memoryd.mcp.app.main`, as before) for the HTTP transports, `--team`, `--ui`, `--admin`,
`--help`, `MEMORYD_DAEMON=off`, or when the daemon cannot start (one line on stderr says why). `--version` alone
is answered here, before any of that is imported.
A request the daemon could not answer (it died mid-way, a timeout) gets a JSON-RPC error, never a hang;
the next request restarts the daemon.
"""

from __future__ import annotations

import os
import sys

# Nothing but os and sys at import: `memoryd-mcp --version` answers before anything else is imported, and
# TYPE_CHECKING is not `typing`'s: every open agent session holds this process (its memory is measured).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

_IN_PROCESS_FLAGS = ("--team", "--ui", "--admin", "--version", "-h", "--help", "--host", "--port", "--allowed-host")
UNREACHABLE, TIMEOUT = -32000, -32002
TOOL_TIMEOUT = 300.0


def _forwardable(argv: list[str]) -> tuple[str, str | None] | None:
    """(profile, --cwd) when this invocation is a stdio server the daemon can serve, else None."""
    profile, cwd = "memoryd", None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in _IN_PROCESS_FLAGS:
            return None
        if name in ("--profile", "--cwd", "--transport"):
            if not eq:
                if i + 1 >= len(argv):
                    return None
                value = argv[i + 1]
                i += 1
            if name == "--profile":
                if value not in ("memoryd", "hmg"):
                    return None  # argparse says what is wrong
                profile = value
            elif name == "--cwd":
                cwd = value
            elif value != "stdio":
                return None
        else:
            return None  # something argparse will explain
        i += 1
    if os.environ.get("MEMORYD_MCP_ADMIN") == "1":
        return None
    return profile, cwd


def _ids(line: bytes) -> list[Any]:
    import json

    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # the daemon answers it (a parse error, nested too deep)
        return []
    items = message if isinstance(message, list) else [message]
    return [m["id"] for m in items if isinstance(m, dict) and "method" in m and m.get("id") is not None]


class _Stdio:
    def __init__(self, client: Any, profile: str, scope: str, out: Any) -> None:
        import threading

        self.client, self.profile, self.scope, self.out = client, profile, scope, out
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            self.out.write(data.rstrip(b"\n") + b"\n")
            self.out.flush()

    def fail(self, ids: list[Any], code: int, message: str) -> None:
        import json

        if not ids:
            print(f"memoryd-mcp: {message}", file=sys.stderr, flush=True)
        for rid in ids:
            self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode())

    def handle(self, line: bytes) -> None:
        import json

        from .client import DaemonError, DaemonUnavailable

        ids = _ids(line)
        try:
            status, data, headers = self.client.raw("POST", f"/mcp/{self.profile}", line, scope=self.scope,
                                                     timeout=TOOL_TIMEOUT,
                                                     extra={"Accept": "application/json, text/event-stream"})  # fmt: skip
        except DaemonError as exc:
            self.fail(ids, TIMEOUT if exc.code == "timeout" else UNREACHABLE, f"memoryd-mcp: {exc.message}")
            return
        except DaemonUnavailable as exc:
            self.fail(ids, UNREACHABLE, f"memoryd-mcp: the memoryd daemon is not available ({exc})")
            return
        except Exception as exc:  # never die of one message
            self.fail(ids, UNREACHABLE, f"memoryd-mcp: {type(exc).__name__}: {exc}")
            return
        if status == 202 or not data.strip():
            return
        try:
            answer = json.loads(data)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict) and "jsonrpc" not in answer:
            err = answer["error"]  # the daemon's own refusal ({"error": {code, message}}), not JSON-RPC
            self.fail(ids, UNREACHABLE, f"memoryd-mcp: the daemon refused the request: {err.get('code')}: "
                                        f"{err.get('message')}")  # fmt: skip
            return
        if answer is None:
            self.fail(
                ids, UNREACHABLE, f"memoryd-mcp: the daemon answered HTTP {status} with something that is not JSON"
            )
            return
        self.write(data)


def forward(profile: str, cwd: str) -> int:
    """Serve stdio through the daemon until stdin closes. Raises DaemonUnavailable before reading anything."""
    import json
    import threading

    from .client import connect

    client = connect(start=True)
    io = _Stdio(client, profile, json.dumps({"cwd": cwd}, ensure_ascii=True), sys.stdout.buffer)
    slots = threading.BoundedSemaphore(8)  # requests in flight at once (a thread each; no executor to import)
    workers: list[threading.Thread] = []

    def work(line: bytes) -> None:
        try:
            io.handle(line)
        finally:
            slots.release()

    try:
        for line in sys.stdin.buffer:
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            if b'"initialize"' in line:
                io.handle(line)  # answered before anything else is sent, as a session starts
                continue
            slots.acquire()
            workers = [t for t in workers if t.is_alive()]
            t = threading.Thread(target=work, args=(line,), name="memoryd-mcp", daemon=True)
            workers.append(t)
            t.start()
    except KeyboardInterrupt:
        pass
    finally:
        for t in workers:
            t.join()
    return 0


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # what argparse prints, without importing the MCP server (0.6 s of imports)
        from .. import __version__

        print(f"memoryd-mcp {__version__}")
        return
    from .client import DaemonUnavailable, enabled

    plan = _forwardable(args) if enabled() else None
    if plan is not None:
        profile, cwd = plan
        if cwd is not None and ("${" in cwd or not os.path.isdir(cwd)):
            print(f"memoryd-mcp: --cwd {cwd!r} is not a directory (a client that does not expand the variable?); "
                  f"using the working directory {os.getcwd()}", file=sys.stderr)  # fmt: skip
            cwd = None
        try:
            sys.exit(forward(profile, os.path.abspath(cwd or os.getcwd())))
        except DaemonUnavailable as exc:
            print(f"memoryd-mcp: the memoryd daemon is not available ({exc}); serving in-process", file=sys.stderr,
                  flush=True)  # fmt: skip
    from ..mcp.app import main as in_process

    in_process(args)
