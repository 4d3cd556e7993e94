"""The operator endpoint (`POST /v1/operator`, internal): `memoryd <command>` answered by the daemon's warm engine.

The CLI acts as the person (the operator: every scope of their home, no grant needed for a sensitive
scope). The daemon's socket admits only the same uid (`SO_PEERCRED`), so an operator call over it is
the same trust as the person opening their own store files; nothing else may ask for it.

What crosses the socket is one `Engine` method call: its name (one of `METHODS`), its arguments and
its result, each converted by a pydantic `TypeAdapter` built from the method's own type hints (so no
command has forwarding code of its own). Errors keep their stable code and message (`error_of`).
The daemon runs the call on an operator view of the scope the CLI inferred from its directory
(`Memoryd-Scope`), with no client name, exactly as `Engine.open(cwd=…, authority="operator")` would.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..shared.errors import InvalidInput, MemorydError, NotFound, TooManyAttempts

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ..engine import Engine
    from .client import Client

__all__ = ["METHODS", "OPERATOR_VERSION", "EngineProxy", "error_of", "proxy_for", "run"]

OPERATOR_VERSION = 1
# The Engine methods (and attributes) the CLI's commands call; nothing else is served. A method that takes
# a callback, a stream, or works on the whole store stays in-process (cli.IN_PROCESS says which commands).
METHODS = frozenset({
    "access_requests", "add_members", "agent_brief", "anchors", "code_changes", "code_status", "confirm_anchors",
    "correct", "create_team", "create_token", "dismiss_link", "doctor", "get", "govern", "grant", "handoff",
    "history", "list_tokens", "mark_sensitive", "memorize", "path_of", "promote", "recall", "reject", "restore",
    "review_links", "review_pending", "revoke_token", "scope_info", "search", "share_scope", "stale",
    "stale_checked", "stats", "supersede", "teams_overview", "timeline", "vault_check", "vault_sync",
    "verify_chain",
})  # fmt: skip
ATTRIBUTES = frozenset({"scope"})
TIMEOUT = 600.0  # seconds a command waits for the daemon's answer (a vault sync of a large home takes a while)


class _Call:
    """One method's signature and the adapters of its parameters and result."""

    def __init__(self, name: str) -> None:
        from ..engine import Engine

        attr = inspect.getattr_static(Engine, name)
        if name in ATTRIBUTES:
            fn = attr.fget
        else:
            fn = getattr(attr, "method", attr)  # a `_part`: the part's own method
        self.signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
        self.params = {p: _adapter(hints.get(p, Any)) for p in self.signature.parameters if p != "self"}
        self.result: TypeAdapter[Any] = _adapter(hints.get("return", Any))


def _adapter(hint: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(hint)
    except Exception:  # a type pydantic cannot build (a typing.TypedDict on Python 3.11): JSON as it is
        return TypeAdapter(Any)


@functools.cache
def _call(name: str) -> _Call:
    return _Call(name)


def run(engine: Engine, body: dict[str, Any]) -> Any:
    """The daemon's side: check the body, call the method on `engine` (an operator view), its result as JSON."""
    from pydantic import ValidationError

    if body.get("v") != OPERATOR_VERSION:
        raise InvalidInput(f"operator call version {body.get('v')!r}; this daemon speaks {OPERATOR_VERSION}")
    name, args = body.get("method"), body.get("args", {})
    if not isinstance(name, str) or name not in METHODS | ATTRIBUTES:
        raise NotFound(f"no operator method {name!r}; the daemon serves {', '.join(sorted(METHODS | ATTRIBUTES))}")
    if not isinstance(args, dict):
        raise InvalidInput("args must be a JSON object of the method's parameters")
    call = _call(name)
    if name in ATTRIBUTES:
        return call.result.dump_python(getattr(engine, name), mode="json")
    unknown = sorted(set(args) - set(call.params))
    if unknown:
        raise InvalidInput(f"{name}: unknown parameters {unknown}")
    values = {}
    for key, value in args.items():
        try:
            values[key] = call.params[key].validate_python(value)
        except ValidationError as exc:
            raise InvalidInput(f"{name}: {key}: {exc.errors()[0]['msg']}") from None
    kinds = call.signature.parameters
    positional = [values.pop(p) for p in list(values) if kinds[p].kind is inspect.Parameter.POSITIONAL_ONLY]
    return call.result.dump_python(getattr(engine, name)(*positional, **values), mode="json")


def error_of(code: str, message: str) -> MemorydError:
    """The MemorydError of a stable code, as the in-process engine raises it; KeyError for the daemon's own codes."""
    todo: list[type[MemorydError]] = [MemorydError]
    while todo:
        cls = todo.pop()
        if cls.code == code:
            return TooManyAttempts(message, 0) if cls is TooManyAttempts else cls(message)
        todo.extend(cls.__subclasses__())
    raise KeyError(code)


class EngineProxy:
    """What `memoryd <command>` calls when a daemon runs: the `METHODS` of `Engine`, answered by the daemon."""

    def __init__(self, client: Client, cwd: Path) -> None:
        self.client = client
        self.scope_header = {"cwd": str(cwd)}
        self.calls = 0  # answered calls (the CLI falls back in-process only before the first)

    def __getattr__(self, name: str) -> Any:
        if name in ATTRIBUTES:
            return self._invoke(name, {})
        if name not in METHODS:
            raise AttributeError(f"Engine.{name} is not served through the daemon (memoryd.daemon.operator.METHODS)")

        def method(*args: Any, **kwargs: Any) -> Any:
            call = _call(name)
            bound = call.signature.bind(None, *args, **kwargs)
            sent = {k: call.params[k].dump_python(v, mode="json") for k, v in bound.arguments.items() if k != "self"}
            return self._invoke(name, sent)

        return method

    def _invoke(self, name: str, args: dict[str, Any]) -> Any:
        from .client import DaemonError

        body = {"v": OPERATOR_VERSION, "method": name, "args": args}
        try:
            data = self.client.call("/v1/operator", body, scope=self.scope_header, timeout=TIMEOUT)
        except DaemonError as exc:
            try:
                err = error_of(exc.code, exc.message)
            except KeyError:  # the daemon's own codes (daemon_unreachable, timeout): the caller says what happened
                raise exc from None
            raise err from None
        self.calls += 1
        return _call(name).result.validate_python(data)

    def close(self) -> None:
        pass

    def __enter__(self) -> EngineProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def proxy_for(cwd: Path | None) -> EngineProxy | None:
    """The running daemon of this data home as an engine for the CLI, or None: no daemon runs (none is
    started for a command), the daemon is off, or it runs another version or other settings."""
    from .client import Client, enabled, settings_digest, version

    if not enabled():
        return None
    client = Client(autostart=False, client=None)
    info = client.health(timeout=2.0)
    if info is None or info.get("version") != version() or info.get("settings") != settings_digest():
        return None
    return EngineProxy(client, Path(os.path.abspath(cwd if cwd is not None else os.getcwd())))
