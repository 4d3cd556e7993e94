"""Claude Code hooks: `memoryd hook <event>` (or `python -m memoryd.agents.hooks <event>`), JSON on stdin.

The one hook client. What a hook injects is an engine read, asked of the resident daemon (started when none
runs) or, when it cannot run here, of an engine in this process: the same local API endpoint either way
(`memoryd.daemon.api`). This module only turns the hook input into those requests and their answers into
Claude Code's output, within ONE deadline per hook counted from the process's start (`BUDGETS`, below the
timeouts `memoryd install` declares): waiting for the daemon, starting it and any in-process fallback all
come out of it, and past it the answer is nothing (the agent goes on).

Given means delivered: a memory is recorded as given to the session (`memoryd.shared.injected`) here, by
the process that prints it, once it has the answer in hand; a hook that timed out records nothing, so the
next prompt of the session still gets those memories. The record is claimed all or nothing; when another
hook of the session got one of them first, the answer is asked again without it.

Input (every event): `session_id`, `transcript_path`, `cwd`, `hook_event_name`; PreToolUse adds `tool_name`,
`tool_input`; UserPromptSubmit `prompt`; SessionStart `source`; SessionEnd `reason`; PreCompact `trigger`.

- `session-start`: the agent brief for the scope of `cwd` (`/v1/brief`: latest handoff, memories whose code
  moved since the last session, constraints, preferences, recent decisions, pending-review count; a short
  guide on an empty store; a notice for a sensitive scope without a grant) as `additionalContext`. It also
  warms the daemon: starting it loads the embedding models in the background, so the session's first
  prompt gets its semantic recall.
- `user-prompt-submit`: the memories the engine judges relevant to the prompt and the session does not have
  yet, within `prompt_context_tokens` (`/v1/prompt`, `Engine.prompt_context`), as `additionalContext`.
- `pre-tool-use`: every handler in `memoryd.agents.pretool.PRE_TOOL_USE` whose matcher takes the tool runs,
  and their answers merge into one `hookSpecificOutput` (scope pinning of memoryd's scoped tools; the
  memories anchored to a file Claude Code's file tools touch).
- `session-end`, `pre-compact`: the transcript becomes observations held for review, plus a handoff at
  session end when the session wrote none (`/v1/observe`, on a thread of the daemon; in-process, a detached
  worker process, so the hook returns at once: Claude Code gives SessionEnd hooks 1.5 s and kills them when
  it exits).

A hook never blocks or breaks the agent: every path is time-bounded and exits 0; errors go to
`<MEMORYD_HOME>/hooks.log`. Standard library only until a hook has to run in-process.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import namedtuple

from .hookenv import data_home, log, payload_cwd
from .pretool import dispatch

TYPE_CHECKING = False  # not `typing`'s: its import costs a hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from ..daemon.client import Client
    from ..engine import Embedder, Engine
    from ..shared.config import Settings

__all__ = ["BUDGETS", "EVENTS", "HookOutput", "Way", "main", "run_hook"]

# memoryd hook name -> Claude Code event name
EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse",
    "session-end": "SessionEnd",
    "pre-compact": "PreCompact",
}
_ALIASES = {**{k: k for k in EVENTS}, **{v.lower(): k for k, v in EVENTS.items()}}

# Each hook's one deadline, from the process's start: at least 1.5 s below the timeout `memoryd install` declares
# for it (agents.install.common.HOOK_EVENTS: 10, 10, 5, 15, 30 s), for Python's start and exit on a busy machine.
# A warm daemon answers in tens of milliseconds; the budget is what a cold start (the daemon's, or this process's
# own engine) may take before the hook gives up with nothing.
BUDGETS = {"pre-tool-use": 3.0, "session-start": 8.5, "user-prompt-submit": 8.5, "session-end": 5.0, "pre-compact": 5.0}
STDIN_TIMEOUT = 2.0
IN_PROCESS_MIN = 0.3  # seconds an in-process fallback needs at least; with less left the hook answers nothing
ASK_MARGIN = 0.15  # a request to the daemon gives up this much before the deadline, so the hook logs why
WORKER_HARD_STOP = 120  # the detached observation worker's hard stop

HookOutput = namedtuple("HookOutput", ["stdout", "exit_code"], defaults=["", 0])  # noqa: PYI024 - no typing import


class _NoEmbedder:
    """An engine in a hook process that must not load the model (the brief, MEMORYD_PROMPT_MODEL_WAIT=0): the
    configured model's name and cosine band, and no vector."""

    dim = 384

    def __init__(self, settings: Settings) -> None:
        from ..engine import MODELS, HashEmbedder

        model = MODELS.get(settings.embedder, HashEmbedder)
        self.name, self.dim = model.name, model.dim
        self.cosine_floor, self.cosine_ceil = model.cosine_floor, model.cosine_ceil

    def passages(self, texts: Any) -> Any:
        raise RuntimeError("this hook does not embed")

    def query(self, text: str) -> Any:
        raise RuntimeError("this hook does not embed")


class _LogToFile:
    """A `logging` handler for hook processes: memoryd's warnings go to hooks.log (one line, the exception's
    message without its traceback), never to the agent's stderr."""

    def __init__(self, event: str) -> None:
        import logging

        self.event = event
        self.handler = logging.Handler(logging.WARNING)
        self.handler.emit = self._emit  # type: ignore[method-assign]

    def _emit(self, record: Any) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        log(None, self.event, f"{record.levelname.lower()}: {record.getMessage()}" + (f": {exc}" if exc else ""))

    def install(self) -> None:
        import logging

        logger = logging.getLogger("memoryd")
        logger.addHandler(self.handler)
        logger.propagate = False


class Way:
    """Where one hook's engine reads are answered, within its deadline: the daemon of this data home (started
    when none runs: `memoryd.daemon.client.connect`), else an engine in this process, asked the same endpoint
    (`memoryd.daemon.api.ENDPOINTS`). `daemon` False: in-process only (tests, the detached worker)."""

    def __init__(self, event: str, payload: dict[str, Any], deadline: float, *, daemon: bool,
                 settings: Settings | None = None, embedder: Embedder | None = None,
                 hook_process: bool = False) -> None:  # fmt: skip
        self.event, self.payload, self.deadline = event, payload, deadline
        self.settings, self.embedder = settings, embedder
        self.hook_process = hook_process  # the engine's warnings, if it runs here, go to hooks.log
        self.cwd = os.path.abspath(payload_cwd(payload))
        self.client: Client | None = self._connect() if daemon else None

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def _connect(self) -> Client | None:
        from ..daemon.client import DaemonUnavailable, connect

        who = {"host": "claude-code"}
        session = self.payload.get("session_id")
        if isinstance(session, str) and session and len(session) <= 128 and not any(c in session for c in "@#/"):
            who["session"] = session
        try:
            return connect(start=True, client=who, deadline=self.deadline, lazy=True)  # the first ask starts it
        except DaemonUnavailable as exc:
            log(self.settings, self.event, f"the daemon is not available ({exc}); running in-process")
            return None

    def ask(self, endpoint: str, body: dict[str, Any], *, engine: Callable[[], Engine] | None = None,
            fallback: bool = True) -> Any:  # fmt: skip
        """The endpoint's answer, or None (logged) when it failed or the deadline passed. `engine`: how this
        process opens its own engine for it when the daemon is not there; `fallback` False: never here (the
        caller has a lighter way of its own)."""
        from ..daemon.client import DaemonError, DaemonUnavailable

        if self.client is not None:
            try:
                return self.client.call(
                    f"/v1/{endpoint}", body, scope={"cwd": self.cwd}, timeout=max(0.05, self.left() - ASK_MARGIN)
                )
            except DaemonError as exc:
                log(self.settings, self.event, f"the daemon answered {exc.code}: {exc.message}; the agent continues "
                                               "without memoryd's output")  # fmt: skip
                return None
            except DaemonUnavailable as exc:  # gone since it was found: nothing was sent
                log(self.settings, self.event, f"the daemon is not available ({exc}); running in-process")
                self.client = None
        if not fallback:
            return None
        if self.left() < IN_PROCESS_MIN:
            log(
                self.settings,
                self.event,
                "no time left to run in-process; the agent continues without memoryd's output",
            )
            return None
        from ..daemon.api import ENDPOINTS

        if self.hook_process:
            _LogToFile(self.event).install()

        def work() -> Any:
            with (engine or self.open)() as e:
                due = {"within_ms": max(0, int(self.left() * 1000))} if "within_ms" in body else {}  # after the open
                return ENDPOINTS[endpoint](e, {**body, **due})

        return _bounded(work, self.left(), self.settings, self.event)

    def open(self, *, embeds: bool = True) -> Engine:
        """This process's engine for the hook's scope (an agent: a sensitive scope needs a grant)."""
        from ..engine import Engine
        from ..shared.config import Settings

        settings = self.settings or Settings()
        embedder = self.embedder
        if embedder is None and (not embeds or settings.prompt_model_wait <= 0):
            embedder = _NoEmbedder(settings)
        return Engine.open(settings, cwd=self.cwd, embedder=embedder, enforce_sensitive=True)

    def home(self) -> Path:
        return data_home(self.settings)


# -- running -----------------------------------------------------------------------------------------------------


def _bounded(fn: Callable[[], Any], seconds: float, settings: Settings | None, event: str) -> Any:
    """`fn()` on a daemon thread; past `seconds` give up (None): whatever it does later reaches no one."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["out"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below, never raised into the agent
            import traceback

            box["error"], box["tb"] = exc, traceback.format_exc()

    t = threading.Thread(target=target, name=f"memoryd-hook-{event}", daemon=True)
    t.start()
    t.join(max(0.0, seconds))
    if t.is_alive():
        log(settings, event, f"gave up after {seconds:.1f}s; the agent continues without memoryd's output")
        return None
    if "error" in box:
        log(settings, event, f"error: {box['error']!r}\n{box['tb']}")
        return None
    return box.get("out")


def run_hook(event: str, stdin_text: str, *, settings: Settings | None = None, embedder: Embedder | None = None,
             defer: bool | None = None, deadline: float | None = None, daemon: bool = False,
             hook_process: bool = False) -> HookOutput:  # fmt: skip
    """Handle one hook call. Always exit code 0; errors are logged, not raised.

    `daemon`: ask the daemon (`main` does); else in-process (tests: `settings` and `embedder` are used).
    `deadline` (time.monotonic()): default the event's budget from now. `defer` (session-end, pre-compact,
    in-process): hand the transcript to a detached worker (default; `MEMORYD_HOOK_DEFER=0` turns it off) or
    do it here.
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
    deadline = deadline if deadline is not None else time.monotonic() + BUDGETS[name]
    try:
        way = Way(name, payload, deadline, daemon=daemon, settings=settings, embedder=embedder,
                  hook_process=hook_process)  # fmt: skip
        if name == "pre-tool-use":
            out = _pre_tool_use(way)
        elif name == "session-start":
            out = _session_start(way)
        elif name == "user-prompt-submit":
            out = _user_prompt(way)
        else:
            out = _observe(way, defer)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent
        import traceback

        log(settings, name, f"error: {exc!r}\n{traceback.format_exc()}")
        return HookOutput()
    return HookOutput(stdout=out)


def _output(event: str, **fields: Any) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": EVENTS[event], **fields}}, ensure_ascii=False)


def _record(way: Way) -> Any:
    """The session's record of what it was given, or None when the hook input names no session."""
    session = way.payload.get("session_id")
    if not isinstance(session, str) or not session.strip():
        return None
    from ..shared.injected import InjectedRecord

    return InjectedRecord(way.home(), session)


# -- session-start ---------------------------------------------------------------------------------------------


def _session_start(way: Way) -> str:
    answer = way.ask("brief", {"mark_session": True}, engine=lambda: way.open(embeds=False))
    if not isinstance(answer, dict):
        return ""
    record = _record(way)
    if record is not None and answer.get("ids"):  # the brief goes out whole; what it shows is not injected again
        record.claim(answer["ids"], "session-start")
    return _output("session-start", additionalContext=answer.get("text", ""))


# -- user-prompt-submit ---------------------------------------------------------------------------------------------


def _user_prompt(way: Way) -> str:
    prompt = way.payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    record = _record(way)
    for _ in range(3):  # another hook of the session may claim one of them first: ask again without it
        given = sorted(record.ids()) if record is not None else []
        answer = way.ask("prompt", {"prompt": prompt, "given": given, "within_ms": max(0, int(way.left() * 1000))})
        items = answer.get("items") if isinstance(answer, dict) else None
        if not items:
            return ""
        if record is None or record.claim_all([i["id"] for i in items], "user-prompt-submit"):
            return _output("user-prompt-submit", additionalContext=answer["text"])
    return ""


# -- pre-tool-use ---------------------------------------------------------------------------------------------------


def _pre_tool_use(way: Way) -> str:
    answer = _bounded(lambda: dispatch(way.payload, way), way.left(), way.settings, way.event)
    if answer is None:
        return ""
    fields, contexts = answer
    record = _record(way)
    kept = []
    for text, ids in contexts:
        if not ids or record is None or record.claim_all(ids, "pre-tool-use:file"):
            kept.append(text)
        else:
            log(way.settings, way.event, "another hook of this session gave these memories first; left out")
    if kept:
        fields["additionalContext"] = "\n\n".join(kept)
    return _output("pre-tool-use", **fields) if fields else ""


# -- session-end / pre-compact --------------------------------------------------------------------------------------


def _observe(way: Way, defer: bool | None) -> str:
    payload = way.payload
    if not payload.get("session_id") or not payload.get("transcript_path"):
        log(way.settings, way.event, "no session_id or transcript_path in the hook input; nothing to observe")
        return ""
    body = {"session_id": str(payload["session_id"]), "transcript_path": str(payload["transcript_path"]),
            "event": way.event}  # fmt: skip
    if way.client is not None:
        way.ask("observe", body)  # the daemon reads it on a thread of its own
        return ""
    if defer is None:
        defer = os.environ.get("MEMORYD_HOOK_DEFER", "1").strip().lower() not in ("0", "false", "no")
    if defer:
        _spawn_worker(way, body)
        return ""
    from ..daemon.api import observe

    with way.open() as engine:
        log(way.settings, way.event, observe(engine, body)["summary"])
    return ""


def _spawn_worker(way: Way, body: dict[str, Any]) -> None:
    """`python -m memoryd.agents.hooks --worker <event>`, detached: it outlives Claude Code's exit."""
    import subprocess

    env = {**os.environ, **_settings_env(way.settings)}
    kwargs: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {
        "creationflags": getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd.agents.hooks", "--worker", way.event],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        cwd=way.cwd if os.path.isdir(way.cwd) else None, close_fds=True, **kwargs,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({**body, "cwd": way.cwd}).encode("utf-8"))
    proc.stdin.close()


def _settings_env(settings: Settings | None) -> dict[str, str]:
    if settings is None:
        return {}
    return {f"MEMORYD_{k.upper()}": str(v) for k, v in settings.model_dump().items() if v is not None}


# -- entry point ---------------------------------------------------------------------------------------------------


def _read_stdin(timeout: float) -> str:
    """All of stdin, or what arrived within `timeout` when the writer never closes it."""
    import select

    if sys.stdin is None:
        return ""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):  # not a file (a test's io.StringIO): read what it holds
        return sys.stdin.read() if hasattr(sys.stdin, "read") else ""
    if os.isatty(fd):
        return ""
    chunks: list[bytes] = []
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    """`memoryd hook <event>`: read the hook input, print the hook output, exit 0; one deadline from now."""
    started = time.monotonic()
    args = list(sys.argv[1:] if argv is None else argv)
    worker = "--worker" in args
    args = [a for a in args if a != "--worker"]
    if args[:1] == [
        "hook"
    ]:  # `python -m memoryd.agents.hooks hook <event>`, as `memoryd install --hook-command` writes
        args = args[1:]
    event = args[0] if args else ""
    name = _ALIASES.get(event.strip().lower())
    if worker:  # the detached observation worker: bounded on its own
        import signal

        _LogToFile(event).install()
        if hasattr(signal, "alarm"):  # POSIX: a hard stop however the work hangs
            signal.alarm(WORKER_HARD_STOP)
        out = run_hook(event, _read_stdin(10.0), defer=False)
    else:
        deadline = started + BUDGETS.get(name or "", 5.0)
        stdin_text = _read_stdin(max(0.0, min(STDIN_TIMEOUT, deadline - time.monotonic())))
        out = run_hook(event, stdin_text, deadline=deadline, daemon=_daemon_on(), hook_process=True)
    if out.stdout:
        sys.stdout.write(out.stdout)
        sys.stdout.flush()
    return int(out.exit_code)


def _daemon_on() -> bool:
    from ..daemon.client import enabled

    return enabled()


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # do not wait for a worker thread that gave up (see _bounded)
