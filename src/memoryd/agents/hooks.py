"""Claude Code hooks: `memoryd hook <event>` (or `python -m memoryd.agents.hooks <event>`), JSON on stdin.

Input (every event): `session_id`, `transcript_path`, `cwd`, `hook_event_name`; PreToolUse
adds `tool_name`, `tool_input`; UserPromptSubmit `prompt`; SessionStart `source`; SessionEnd
`reason`; PreCompact `trigger`.

- `session-start`: the agent brief for the scope of `cwd` (latest handoff, memories whose code
  moved since the last session, constraints, preferences, recent decisions, pending-review count; a
  short guide on an empty store) as
  `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": …}}`, at most
  `brief_max_chars` characters. A sensitive scope without a grant gets a notice, not its memories.
  The memories shown are recorded as injected in this session (`memoryd.shared.injected`).
- `user-prompt-submit`: the memories relevant to the prompt (hybrid recall over this repository and
  the global scope; the engine's relevance decision, `memoryd.search.relevance.inject`, picks them,
  score ≥ `prompt_min_score` on top), those not injected yet in this
  session, within `prompt_context_tokens` estimated tokens, as `additionalContext`. The hook waits
  `prompt_model_wait` seconds for the embedding model; past that the recall uses keyword and
  entity signals, and the score bar is scaled to what those can reach. Nothing for a sensitive
  scope without a grant, an empty prompt or a budget of 0.
- `pre-tool-use`: every handler in `memoryd.agents.pretool.PRE_TOOL_USE` whose matcher takes the tool
  runs, and their answers merge into one `hookSpecificOutput`. memoryd's own handler pins the
  scope of its scoped memory tools (`mcp__memoryd__*`, `mcp__hmg__*`) to the one inferred from
  `cwd`: `updatedInput` (the whole input) paired with `permissionDecision` — "allow" (Claude
  Code's documented pairing to apply a rewrite; the user's deny and ask rules still win, checked
  with the real CLI in tests/clients/test_claude_code_hooks.py), "ask" for the destructive
  `memory_govern` (the person confirms the rewritten input). Its file handler, for Claude Code's
  file tools (Read, Edit, Write, MultiEdit, NotebookEdit), adds the memories anchored to that file
  (`memoryd.agents.filehook`, no engine) as `additionalContext`, those not injected yet in this session.
  Other tools: no output.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .hookenv import data_home, log, payload_cwd
from .pretool import dispatch

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ..engine import Embedder, Engine
    from ..shared.config import Settings

__all__ = ["EVENTS", "HookOutput", "main", "run_hook", "serve_hook"]

# memoryd hook name -> Claude Code event name
EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse",
    "session-end": "SessionEnd",
    "pre-compact": "PreCompact",
}
_ALIASES = {**{k: k for k in EVENTS}, **{v.lower(): k for k, v in EVENTS.items()}}

# Budgets stay below the timeouts `memoryd install` declares (10 s, 5 s): answer late rather than never,
# give up rather than make the agent wait.
SESSION_START_BUDGET = 6.0
USER_PROMPT_BUDGET = 6.0  # the model wait (Settings.prompt_model_wait, ≤ 10 s) is cut to fit in it
PRE_TOOL_USE_BUDGET = 3.0
WORKER_BUDGET = 30.0  # the detached observation worker's own bound (then a hard stop at WORKER_HARD_STOP)
WORKER_HARD_STOP = 120
STDIN_TIMEOUT = 2.0

# Types the prompt recall leaves out: session records are bookkeeping, the brief shows the handoff.
PROMPT_SKIP_TYPES = frozenset({"session", "handoff"})


# Named tuples, not dataclasses: the file tool hook runs through this module on every Read/Edit, and
# `dataclasses` (with `inspect`) costs ~14 ms of its start-up (anchors/model.py does the same).
class HookOutput(NamedTuple):
    stdout: str = ""
    exit_code: int = 0


class _NoVector(RuntimeError):
    """The prompt recall goes on without a query vector (the engine then uses keyword and entity signals)."""

    def __init__(self, message: str, *, expected: bool) -> None:
        super().__init__(message)
        self.expected = expected  # MEMORYD_PROMPT_MODEL_WAIT=0: nothing worth a log line


class _DeadlineEmbedder:
    """The configured model when it has loaded by `deadline` (time.monotonic()); otherwise queries fail
    fast and the engine's recall goes on with its keyword and entity signals. `inner` None: never load it."""

    def __init__(self, inner: Any, model: Any, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline
        self.used = False  # whether the last query got a vector
        self.name, self.dim = model.name, model.dim
        self.cosine_floor, self.cosine_ceil = model.cosine_floor, model.cosine_ceil

    def passages(self, texts: Any) -> Any:
        raise RuntimeError("the prompt hook does not write")

    def query(self, text: str) -> Any:
        if self._inner is None:
            raise _NoVector("MEMORYD_PROMPT_MODEL_WAIT=0: keyword and entity signals only", expected=True)
        wait = getattr(self._inner, "wait", None)
        if wait is not None and not wait(max(0.0, self._deadline - time.monotonic())):
            raise _NoVector("the embedding model did not load within MEMORYD_PROMPT_MODEL_WAIT of the hook's start; "
                            "this prompt's recall used keyword and entity signals only", expected=False)  # fmt: skip
        vector = self._inner.query(text)
        self.used = True
        return vector


class _NoEmbedder:
    """The brief never embeds; this keeps session-start from loading the model."""

    name = "none"
    dim = 384

    def passages(self, texts: Any) -> Any:
        raise RuntimeError("the session-start hook does not embed")

    def query(self, text: str) -> Any:
        raise RuntimeError("the session-start hook does not embed")


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
        if isinstance(exc, _NoVector):  # the prompt recall's own fallback, not an error
            if not exc.expected:
                log(None, self.event, f"note: {exc}")
            return
        message = record.getMessage() + (f": {exc}" if exc is not None else "")
        log(None, self.event, f"{record.levelname.lower()}: {message}")

    def install(self) -> None:
        import logging

        logger = logging.getLogger("memoryd")
        logger.addHandler(self.handler)
        logger.propagate = False


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
        return _bounded(lambda: dispatch(payload, settings), PRE_TOOL_USE_BUDGET, settings, name)
    if name == "session-start":
        return _bounded(lambda: _session_start(payload, settings, embedder), SESSION_START_BUDGET, settings, name)
    if name == "user-prompt-submit":
        return _bounded(lambda: _user_prompt(payload, settings, embedder), USER_PROMPT_BUDGET, settings, name)
    if defer is None:
        defer = os.environ.get("MEMORYD_HOOK_DEFER", "1").strip().lower() not in ("0", "false", "no")
    if defer:
        return _bounded(lambda: _spawn_worker(name, payload, settings), 5.0, settings, name)
    return _bounded(lambda: _observe(name, payload, settings, embedder), WORKER_BUDGET + 30, settings, name)


def _opened(engine: Engine | None) -> AbstractContextManager[Engine] | None:
    """An engine the caller keeps open (the daemon's view) as a context that does not close it."""
    if engine is None:
        return None
    from contextlib import nullcontext

    return nullcontext(engine)


# -- the daemon (memoryd.daemon): the hook answered by the resident process -------------------------------


def serve_hook(event: str, payload: dict[str, Any], view_for: Callable[[str], Engine], settings: Settings,
               observers: threading.BoundedSemaphore) -> str:  # fmt: skip
    """The daemon's side of a hook: the same answers, with its warm engine (`view_for(cwd)`: the view for
    that directory's scope) and the full semantic recall. session-end and pre-compact observe the
    transcript on a background thread of the daemon (at most as many at once as `observers` allows)."""
    name = _ALIASES.get((event or "").strip().lower())
    if name is None:
        from ..shared.errors import InvalidInput

        raise InvalidInput(f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
    if name == "pre-tool-use":
        return dispatch(payload, settings)
    if name == "session-start":
        return _session_start(payload, settings, None, engine=view_for(payload_cwd(payload)))
    if name == "user-prompt-submit":
        return _user_prompt(payload, settings, None, engine=view_for(payload_cwd(payload)))
    if not payload.get("session_id") or not payload.get("transcript_path"):
        log(settings, name, "no session_id or transcript_path in the hook input; nothing to observe")
        return ""
    view = view_for(payload_cwd(payload))

    def work() -> None:
        with observers:
            try:
                _observe(name, payload, settings, None, engine=view)
            except Exception as exc:  # noqa: BLE001 - logged like the detached worker's errors
                log(settings, name, f"error: {exc!r}\n{traceback.format_exc()}")

    threading.Thread(target=work, name=f"memoryd-observe-{name}", daemon=True).start()
    return ""


def _via_daemon(name: str, stdin_text: str) -> HookOutput | None:
    """The hook answered by the daemon (started on demand), or None to run in-process (it cannot run here;
    one line in hooks.log says why). Past the hook's budget: no output, the agent goes on."""
    from ..daemon.client import Client, DaemonError, DaemonUnavailable, enabled

    if not enabled():
        return None
    budget = {"pre-tool-use": PRE_TOOL_USE_BUDGET, "session-start": SESSION_START_BUDGET,
              "user-prompt-submit": USER_PROMPT_BUDGET}.get(name, 5.0)  # fmt: skip
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else {}
    except ValueError:
        return None  # run_hook logs it
    client: dict[str, str] = {"host": "claude-code"}
    session = payload.get("session_id") if isinstance(payload, dict) else None
    if isinstance(session, str) and session and len(session) <= 128 and not any(c in session for c in "@#/"):
        client["session"] = session
    try:
        answer = Client(client=client, start_timeout=budget).call(f"/v1/hook/{name}", payload, timeout=budget)
    except DaemonUnavailable as exc:
        log(None, name, f"the daemon is not available ({exc}); running in-process")
        return None
    except DaemonError as exc:
        log(None, name, f"the daemon answered {exc.code}: {exc.message}; the agent continues without memoryd's output")
        return HookOutput()
    out = answer.get("stdout") if isinstance(answer, dict) else None
    return HookOutput(stdout=out if isinstance(out, str) else "")


# -- session-start -----------------------------------------------------------------------------------------


def _session_start(payload: dict[str, Any], settings: Settings | None, embedder: Embedder | None,
                   engine: Engine | None = None) -> str:  # fmt: skip
    """`engine`: the daemon's view for this scope (kept open); else the store is opened here."""
    from ..engine import Engine
    from ..shared.config import Settings

    settings = settings or Settings()
    with _opened(engine) or Engine.open(
        settings,
        cwd=payload_cwd(payload),
        embedder=embedder or _NoEmbedder(),  # type: ignore[arg-type]
    ) as engine:
        context, shown = engine.session_context(mark_session=True)  # the brief also marks where code stood
    if shown is not None and payload.get("session_id"):  # what the brief showed is not injected again this session
        _claim(settings, payload, shown, "session-start")
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}},
                      ensure_ascii=False)  # fmt: skip


# -- the session's injected memories (shared by every hook that injects some) ----------------------------


def _claim(settings: Settings | None, payload: dict[str, Any], ids: list[str], by: str) -> list[str]:
    """The ids of `ids` not yet injected in this session, now recorded as injected (all of them when the
    hook input names no session)."""
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        return ids
    from ..shared.injected import InjectedRecord

    return InjectedRecord(data_home(settings), session_id).claim(ids, by)


def _already_injected(settings: Settings | None, payload: dict[str, Any]) -> set[str]:
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        return set()
    from ..shared.injected import InjectedRecord

    return InjectedRecord(data_home(settings), session_id).ids()


# -- user-prompt-submit -------------------------------------------------------------------------------------


_PROMPT_HEADER = {
    "en": "[memoryd · {scope}] memories relevant to this prompt:",
    "zh": "[memoryd · {scope}] 与这条提示相关的记忆：",
    "zh-Hant": "[memoryd · {scope}] 與這條提示相關的記憶：",
}


def _user_prompt(payload: dict[str, Any], settings: Settings | None, embedder: Embedder | None,
                 engine: Engine | None = None) -> str:  # fmt: skip
    from ..engine import Engine
    from ..shared.config import Settings
    from ..shared.errors import AuthorizationRequired
    from ..shared.injected import estimate_tokens
    from ..shared.models import ATOM_TYPES

    started = time.monotonic()
    settings = settings or Settings()
    deadline = started + min(settings.prompt_model_wait, USER_PROMPT_BUDGET - 2.0)
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or settings.prompt_context_tokens <= 0:
        return ""
    from ..shared.limits import LIMITS

    # A pasted log is not a query; its start says what it is about (and a query has a limit, limits.py).
    prompt = prompt.strip()[: LIMITS["query"][0]]
    types = [t for t in ATOM_TYPES if t not in PROMPT_SKIP_TYPES]
    if embedder is None and engine is None:
        from ..engine import MODELS, HashEmbedder, make_embedder

        model = MODELS.get(settings.embedder, HashEmbedder)
        inner = make_embedder(settings.embedder) if settings.prompt_model_wait > 0 else None
        embedder = _DeadlineEmbedder(inner, model, deadline)
    with _opened(engine) or Engine.open(
        settings, cwd=payload_cwd(payload), embedder=embedder, enforce_sensitive=True
    ) as engine:
        try:
            hits = engine.recall(prompt, max_results=20, types=types).hits
        except AuthorizationRequired:
            return ""  # a sensitive scope without a grant: nothing, and no notice on every prompt
        scope_name = engine.scope.name
    seen = _already_injected(settings, payload)
    floor = settings.prompt_min_score
    if isinstance(embedder, _DeadlineEmbedder) and not embedder.used:
        # Without a vector the fused score tops out at the keyword weight: scale the bar the same way.
        from ..engine import fused

        floor *= fused({"keyword": 1.0})
    header = _PROMPT_HEADER[_language(prompt)].format(scope=scope_name)
    budget = settings.prompt_context_tokens - estimate_tokens(header)
    chosen: list[tuple[str, str]] = []
    from ..engine import relevant

    wanted = {h.atom.id for h in relevant(hits)}  # the engine's relevance decision (active memories only)
    for hit in hits:
        if hit.atom.id not in wanted or hit.score < floor or hit.atom.id in seen:
            continue
        line = f"- ({hit.atom.type}, {hit.atom.id}) {' '.join(hit.atom.content.split())}"
        cost = estimate_tokens(line) + 1
        if cost > budget:
            continue  # a shorter, less relevant one may still fit
        chosen.append((hit.atom.id, line))
        budget -= cost
    fresh = set(_claim(settings, payload, [i for i, _ in chosen], "user-prompt-submit"))
    lines = [line for i, line in chosen if i in fresh]
    if not lines:
        return ""
    context = "\n".join([header, *lines])
    return json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}},
                      ensure_ascii=False)  # fmt: skip


def _language(text: str) -> str:
    from ..engine import language

    return language(text)


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
    """Start `python -m memoryd.agents.hooks --worker <event>` detached; it outlives Claude Code's exit."""
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
        [sys.executable, "-m", "memoryd.agents.hooks", "--worker", event],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        cwd=payload_cwd(payload) if Path(payload_cwd(payload)).is_dir() else None,
        close_fds=True, **kwargs,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(_worker_payload(payload)).encode("utf-8"))
    proc.stdin.close()
    return ""


def _observe(event: str, payload: dict[str, Any], settings: Settings | None, embedder: Embedder | None,
             engine: Engine | None = None) -> str:  # fmt: skip
    from ..engine import Engine
    from ..shared.config import Settings

    session_id, path = payload.get("session_id"), payload.get("transcript_path")
    if not session_id or not path:
        log(settings, event, "no session_id or transcript_path in the hook input; nothing to observe")
        return ""
    settings = settings or Settings()
    started = time.perf_counter()
    deadline = time.monotonic() + WORKER_BUDGET
    with _opened(engine) or Engine.open(settings, cwd=payload_cwd(payload), embedder=embedder) as engine:
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
    if args[:1] == [
        "hook"
    ]:  # `python -m memoryd.agents.hooks hook <event>`, as `memoryd install --hook-command` writes it
        args = args[1:]
    event = args[0] if args else ""
    _LogToFile(event).install()
    if worker:  # the detached observation worker: bounded on its own
        import signal

        if hasattr(signal, "alarm"):  # POSIX: a hard stop however the work hangs
            signal.alarm(WORKER_HARD_STOP)
        out = run_hook(event, _read_stdin(timeout=10.0), defer=False)
    else:
        stdin_text = _read_stdin()
        name = _ALIASES.get(event.strip().lower())
        out = (_via_daemon(name, stdin_text) if name is not None else None) or run_hook(event, stdin_text)
    if out.stdout:
        sys.stdout.write(out.stdout)
        sys.stdout.flush()
    return out.exit_code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # do not wait for a worker thread that gave up (see _bounded)
