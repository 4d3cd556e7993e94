"""`memoryd hook <event>` through the daemon: the hook's JSON in, the daemon's answer out. Standard library only.

The daemon answers with its warm engine (the full semantic recall for UserPromptSubmit). This module
imports no more than the daemon client (no pydantic, numpy or engine, not even `memoryd.agents.hooks`): a hook
process costs a Python start and one request. When the daemon cannot run here, `run` returns None and the
caller runs the hook in-process (`memoryd.agents.hooks`), which logs one line saying why. Past the hook's
budget the answer is nothing: the agent goes on.
"""

from __future__ import annotations

import os
import sys

__all__ = ["BUDGETS", "run"]

# The same budgets as memoryd.agents.hooks (tests/test_daemon.py checks they agree): below the timeouts
# `memoryd install` declares.
BUDGETS = {"pre-tool-use": 3.0, "session-start": 6.0, "user-prompt-submit": 6.0}
OTHER_BUDGET = 5.0  # session-end, pre-compact: the daemon only starts the observation
EVENTS = {"session-start", "user-prompt-submit", "pre-tool-use", "session-end", "pre-compact"}
ALIASES = {**{e: e for e in EVENTS}, "sessionstart": "session-start", "userpromptsubmit": "user-prompt-submit",
           "pretooluse": "pre-tool-use", "sessionend": "session-end", "precompact": "pre-compact"}  # fmt: skip
STDIN_TIMEOUT = 2.0


def _read_stdin(timeout: float = STDIN_TIMEOUT) -> bytes:
    """All of stdin, or what arrived within `timeout` when the writer never closes it."""
    import select
    import time

    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return b""
    if os.isatty(fd):
        return b""
    chunks: list[bytes] = []
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def run(event: str) -> int:
    """Handle one hook; the exit code (always 0)."""
    from .client import Client, DaemonError, DaemonUnavailable, enabled

    name = ALIASES.get(event.strip().lower())
    data = _read_stdin()
    if name is None or not enabled():
        return _in_process(event, data, None)
    budget = BUDGETS.get(name, OTHER_BUDGET)
    try:
        status, body, _ = Client(client={"host": "claude-code"}, start_timeout=budget).raw(
            "POST", f"/v1/hook/{name}", data or b"{}", timeout=budget)  # fmt: skip
    except DaemonUnavailable as exc:
        return _in_process(event, data, f"the daemon is not available ({exc}); running in-process")
    except DaemonError as exc:
        _log(name, f"the daemon answered {exc.code}: {exc.message}; the agent continues without memoryd's output")
        return 0
    import json

    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if status != 200 or not isinstance(answer, dict):
        err = answer.get("error") if isinstance(answer, dict) else None
        said = f"{err.get('code')}: {err.get('message')}" if isinstance(err, dict) else f"HTTP {status}"
        _log(name, f"the daemon answered {said}; the agent continues without memoryd's output")
        return 0
    out = answer.get("stdout")
    if isinstance(out, str) and out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return 0


def _log(event: str, message: str) -> None:
    from ..agents.hookenv import log

    log(None, event, message)


def _in_process(event: str, data: bytes, why: str | None) -> int:
    from ..agents.hookenv import log
    from ..agents.hooks import _LogToFile, run_hook

    if why:
        log(None, event, why)
    _LogToFile(event).install()
    out = run_hook(event, data.decode("utf-8", "replace"))
    if out.stdout:
        sys.stdout.write(out.stdout)
        sys.stdout.flush()
    return out.exit_code
