"""Claude Code hooks: `memoryd hook <event>` (or `python -m memoryd.hooks <event>`), JSON on stdin.

Input (every event): `session_id`, `transcript_path`, `cwd`, `hook_event_name`; PreToolUse
adds `tool_name`, `tool_input`; SessionStart `source`; SessionEnd `reason`; PreCompact `trigger`.

- `session-start`: the agent brief for the scope of `cwd` (latest handoff, constraints,
  preferences, recent decisions, pending-review count; a short guide on an empty store) as
  `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": …}}`, at most
  `brief_max_chars` characters. A sensitive scope without a grant gets a notice, not its memories.
- `pre-tool-use`: for memoryd's own tools (`mcp__memoryd__*`, `mcp__hmg__*`) the scope inferred
  from `cwd` replaces whatever the agent passed, through
  `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {…whole input…}}}`
  (no `permissionDecision`: the user's permission rules still apply). Other tools: no output.
- `session-end`, `pre-compact`: the transcript becomes observations held for review, plus a
  handoff at session end when the session wrote none (`Engine.observe_transcript`). The work is
  handed to a detached worker process so the hook returns at once: Claude Code gives SessionEnd
  hooks 1.5 s unless they declare a timeout, and kills them when it exits.

A hook never blocks or breaks the agent: every path is time-bounded and exits 0; errors go to
`<MEMORYD_HOME>/hooks.log`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Settings
    from .engine import Embedder

__all__ = ["EVENTS", "HookOutput", "main", "run_hook"]

# memoryd hook name -> Claude Code event name
EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "pre-tool-use": "PreToolUse",
    "session-end": "SessionEnd",
    "pre-compact": "PreCompact",
}
_ALIASES = {**{k: k for k in EVENTS}, **{v.lower(): k for k, v in EVENTS.items()}}

# Budgets stay below the timeouts `memoryd install` declares (10 s, 5 s): answer late rather than never,
# give up rather than make the agent wait.
SESSION_START_BUDGET = 6.0
PRE_TOOL_USE_BUDGET = 3.0
WORKER_BUDGET = 30.0  # the detached observation worker's own bound (then a hard stop at WORKER_HARD_STOP)
WORKER_HARD_STOP = 120
STDIN_TIMEOUT = 2.0
LOG_MAX_BYTES = 1_000_000

# Memory tools whose input carries a scope, from the servers' published input schemas.
HMG_SCOPED = frozenset({"memory_memorize", "memory_recall", "memory_correct", "memory_govern", "memory_handoff"})
MEM_SCOPED = frozenset({"mem_save", "mem_search", "mem_timeline", "mem_session_start", "mem_capture_passive",
                        "mem_request_sensitive_read"})  # fmt: skip
MEM_REVIEW_SCOPED = frozenset({"mem_review_pending", "mem_promote"})  # "global" = every scope (their default)
SERVERS = ("memoryd", "hmg")


@dataclass(frozen=True)
class HookOutput:
    stdout: str = ""
    exit_code: int = 0


class _NoEmbedder:
    """The brief never embeds; this keeps session-start from loading the model."""

    name = "none"
    dim = 384

    def passages(self, texts: Any) -> Any:
        raise RuntimeError("the session-start hook does not embed")

    def query(self, text: str) -> Any:
        raise RuntimeError("the session-start hook does not embed")


# -- logging -------------------------------------------------------------------------------------------


def _home(settings: Settings | None) -> Path:
    if settings is not None:
        return Path(settings.home)
    env = os.environ.get("MEMORYD_HOME")
    if env:
        return Path(env)
    try:
        from .config import Settings

        return Path(Settings().home)
    except Exception:  # noqa: BLE001 - a broken environment must not stop the log
        import platformdirs

        return Path(platformdirs.user_data_dir("memoryd", appauthor=False))


def log(settings: Settings | None, event: str, message: str) -> None:
    """Append one line to `<home>/hooks.log` (rotated at 1 MB); never raises."""
    try:
        path = _home(settings) / "hooks.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name("hooks.log.1"))
        stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{stamp} [{os.getpid()}] {event}: {message.rstrip()}\n")
    except Exception:  # noqa: BLE001, S110 - logging is best effort; a hook must never fail on it
        pass


# -- running ---------------------------------------------------------------------------------------------


def _bounded(fn: Callable[[], str], seconds: float, settings: Settings | None, event: str) -> HookOutput:
    """Run `fn` on a daemon thread; past `seconds` give up with no output (the agent goes on)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["out"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below, never raised into the agent
            box["error"] = exc
            box["tb"] = traceback.format_exc()

    t = threading.Thread(target=target, name=f"memoryd-hook-{event}", daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        log(settings, event, f"gave up after {seconds:.1f}s; the agent continues without memoryd's output")
        return HookOutput(exit_code=0)
    if "error" in box:
        log(settings, event, f"error: {box['error']!r}\n{box['tb']}")
        return HookOutput()
    return HookOutput(stdout=box.get("out") or "")


def run_hook(
    event: str,
    stdin_text: str,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    defer: bool | None = None,
) -> HookOutput:
    """Handle one hook call. Always exit code 0; errors are logged, not raised.

    `defer` (session-end, pre-compact): hand the transcript to a detached worker (default, also
    `MEMORYD_HOOK_DEFER=0` turns it off) or do it here. `embedder` overrides the configured one
    (tests share a loaded model).
    """
    name = _ALIASES.get((event or "").strip().lower())
    if name is None:
        log(settings, str(event), f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
        return HookOutput()
    try:
        payload = json.loads(stdin_text) if stdin_text and stdin_text.strip() else {}
        if not isinstance(payload, dict):
            raise TypeError(f"hook input is a JSON {type(payload).__name__}, not an object")
    except (ValueError, TypeError) as exc:
        log(settings, name, f"bad hook input: {exc}")
        return HookOutput()
    if name == "pre-tool-use":
        return _bounded(lambda: _pre_tool_use(payload), PRE_TOOL_USE_BUDGET, settings, name)
    if name == "session-start":
        return _bounded(lambda: _session_start(payload, settings, embedder), SESSION_START_BUDGET, settings, name)
    if defer is None:
        defer = os.environ.get("MEMORYD_HOOK_DEFER", "1").strip().lower() not in ("0", "false", "no")
    if defer:
        return _bounded(lambda: _spawn_worker(name, payload, settings), 5.0, settings, name)
    return _bounded(lambda: _observe(name, payload, settings, embedder), WORKER_BUDGET + 30, settings, name)


# -- session-start -----------------------------------------------------------------------------------------


def _cwd(payload: dict[str, Any]) -> str:
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd.strip() else os.getcwd()


def _session_start(payload: dict[str, Any], settings: Settings | None, embedder: Embedder | None) -> str:
    from .config import Settings
    from .engine import Engine

    settings = settings or Settings()
    with Engine.open(settings, cwd=_cwd(payload), embedder=embedder or _NoEmbedder()) as engine:  # type: ignore[arg-type]
        context = engine.session_context()
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}},
                      ensure_ascii=False)  # fmt: skip


# -- pre-tool-use -------------------------------------------------------------------------------------------


def _split_tool(tool_name: str) -> tuple[str, str] | None:
    if not tool_name.startswith("mcp__"):
        return None
    server, sep, tool = tool_name[len("mcp__"):].partition("__")
    if not sep or server not in SERVERS:
        return None
    return server, tool


def _pre_tool_use(payload: dict[str, Any]) -> str:
    parts = _split_tool(str(payload.get("tool_name") or ""))
    if parts is None:
        return ""
    _, tool = parts
    given = payload.get("tool_input")
    tool_input: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    updated = dict(tool_input)
    if tool in HMG_SCOPED:
        from .scope import infer_scope

        s = infer_scope(_cwd(payload))
        updated["scope"] = {"tenant_id": s.tenant_id, "workspace": s.workspace, "repository": s.repository,
                            "branch": s.branch}  # fmt: skip
    elif tool in MEM_SCOPED:
        updated["scope"] = "global" if tool_input.get("scope") == "global" else "auto"
    elif tool in MEM_REVIEW_SCOPED:
        if "scope" in tool_input and tool_input["scope"] not in ("global", "auto"):
            updated["scope"] = "auto"  # a scope hash would name another repository
    else:
        return ""
    if updated == given:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": updated}},
                      ensure_ascii=False)  # fmt: skip


# -- session-end / pre-compact --------------------------------------------------------------------------------


def _worker_payload(payload: dict[str, Any]) -> dict[str, Any]:
    keys = ("session_id", "transcript_path", "cwd", "hook_event_name", "reason", "trigger")
    return {k: payload[k] for k in keys if k in payload}


def _settings_env(settings: Settings | None) -> dict[str, str]:
    if settings is None:
        return {}
    out = {}
    for key, value in settings.model_dump().items():
        if value is not None:
            out[f"MEMORYD_{key.upper()}"] = str(value)
    return out


def _spawn_worker(event: str, payload: dict[str, Any], settings: Settings | None) -> str:
    """Start `python -m memoryd.hooks --worker <event>` detached; it outlives Claude Code's exit."""
    if not payload.get("session_id") or not payload.get("transcript_path"):
        log(settings, event, "no session_id or transcript_path in the hook input; nothing to observe")
        return ""
    env = {**os.environ, **_settings_env(settings)}
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd.hooks", "--worker", event],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        cwd=_cwd(payload) if Path(_cwd(payload)).is_dir() else None,
        close_fds=True, **kwargs,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(_worker_payload(payload)).encode("utf-8"))
    proc.stdin.close()
    return ""


def _observe(event: str, payload: dict[str, Any], settings: Settings | None, embedder: Embedder | None) -> str:
    from .config import Settings
    from .engine import Engine

    session_id, path = payload.get("session_id"), payload.get("transcript_path")
    if not session_id or not path:
        log(settings, event, "no session_id or transcript_path in the hook input; nothing to observe")
        return ""
    settings = settings or Settings()
    started = time.perf_counter()
    deadline = time.monotonic() + WORKER_BUDGET
    with Engine.open(settings, cwd=_cwd(payload), embedder=embedder) as engine:
        while True:  # a long transcript is read in slices until done or out of time
            report = engine.observe_transcript(path, str(session_id), final=event == "session-end", event=event,
                                               budget_seconds=max(1.0, deadline - time.monotonic()))  # fmt: skip
            log(settings, event, f"{report.summary()} ({time.perf_counter() - started:.2f}s)")
            if not report.truncated or time.monotonic() >= deadline:
                break
    return ""


# -- entry point ---------------------------------------------------------------------------------------------


def _read_stdin(timeout: float = STDIN_TIMEOUT) -> str:
    """All of stdin, or what arrived within `timeout` if the writer never closes it."""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(sys.stdin.read()), daemon=True)
    t.start()
    t.join(timeout)
    return box[0] if box else ""


def main(argv: list[str] | None = None) -> int:
    """`memoryd hook <event>`: read the hook input, print the hook output, exit 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    worker = "--worker" in args
    args = [a for a in args if a != "--worker"]
    if args[:1] == ["hook"]:  # `python -m memoryd.hooks hook <event>`, as `memoryd install --hook-command` writes it
        args = args[1:]
    event = args[0] if args else ""
    if worker:  # the detached observation worker: bounded on its own
        import signal

        if hasattr(signal, "alarm"):  # POSIX: a hard stop however the work hangs
            signal.alarm(WORKER_HARD_STOP)
        out = run_hook(event, _read_stdin(timeout=10.0), defer=False)
    else:
        out = run_hook(event, _read_stdin())
    if out.stdout:
        sys.stdout.write(out.stdout)
        sys.stdout.flush()
    return out.exit_code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # do not wait for a worker thread that gave up (see _bounded)
