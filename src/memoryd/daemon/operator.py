"""The operator endpoint: `memoryd <command>` reaches the engine through one call form, daemon or not.

The CLI acts as the person (the operator: every scope of their home, no grant needed for a sensitive
scope). Every engine method a command calls is one operator call: `{"v", "method", "args", "pos"}` in, the
method's result as JSON out, errors as their stable code and message. `Operator` sends it to the running
daemon of this home (`POST /v1/operator`, answered by `run` on the daemon's warm engine) or, when none runs,
hands it to `run` on an engine of its own: the same function, the same checks and the same JSON either way,
so a command answers the same with a daemon up and without, and a CLI process that a daemon answers imports
neither the engine nor pydantic.

What is served is derived, not listed: every method of `Engine.api()` whose parameters and result are JSON
(`served`); a method that takes a callback or a stream (`import_file`'s progress, `export`'s text stream)
is not, and says so. The daemon's socket admits only the same uid (`SO_PEERCRED`), so an operator call over it
is the same trust as the person opening their own store files; nothing else may ask for it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import functools
import inspect
import json
import os
import types
import typing
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from ..shared.errors import InvalidInput, MemorydError, NotFound, Rejected, TooManyAttempts

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ..engine import Engine
    from .client import Client

__all__ = ["OPERATOR_VERSION", "Operator", "error_of", "operator_for", "run", "served"]

OPERATOR_VERSION = 2
TIMEOUT = 600.0  # seconds a command waits for the daemon's answer (a vault sync of a large home takes a while)


# -- what is served: derived from the engine's API ----------------------------------------------------------------


def _jsonable(hint: Any) -> bool:
    """Whether values of this type cross as JSON (scalars, paths, times, literals, enums, pydantic models,
    typed dicts, and lists, tuples, sets, dicts and unions of those); a callable, a stream or a protocol does not."""
    if hint is Any or hint is object or hint is None or hint is type(None):  # `object`: any JSON value is taken
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(_jsonable(a) for a in typing.get_args(hint))
    if origin is not None:
        import collections.abc as abc

        containers = (list, tuple, set, frozenset, dict, abc.Sequence, abc.Mapping, abc.Set, abc.Collection)
        return origin in containers and all(a is Ellipsis or _jsonable(a) for a in typing.get_args(hint))
    if not isinstance(hint, type):
        return False
    from pydantic import BaseModel

    plain = (str, int, float, bool, bytes, _dt.datetime, _dt.date, PurePath, enum.Enum, BaseModel)
    if (issubclass(hint, tuple) and hasattr(hint, "_fields")) or dataclasses.is_dataclass(hint):
        return all(_jsonable(h) for h in typing.get_type_hints(hint).values())  # as their fields are
    return issubclass(hint, plain) or typing.is_typeddict(hint) or hint in (list, dict, tuple)


class _Call:
    """One served method: its signature and the adapters of its parameters and result."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
        params = [p for p in self.signature.parameters if p != "self"]
        self.why_not = next((f"its parameter {p} is not JSON (a callback or a stream): it runs in the caller's process"
                             for p in params if not _jsonable(hints.get(p, Any))), None)  # fmt: skip
        if self.why_not is None and not _jsonable(hints.get("return", Any)):
            self.why_not = "its result is not JSON: it runs in the caller's process"
        self.params = {p: _adapter(hints.get(p, Any)) for p in params} if self.why_not is None else {}
        self.result: TypeAdapter[Any] | None = _adapter(hints.get("return", Any)) if self.why_not is None else None


def _adapter(hint: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(hint)
    except Exception:  # a type pydantic cannot build (a typing.TypedDict on Python 3.11): JSON as it is
        return TypeAdapter(Any)


@functools.cache
def _calls() -> dict[str, _Call]:
    from ..engine import Engine

    return {name: _Call(name, fn) for name, fn in Engine.api().items()}


def served() -> dict[str, str | None]:
    """Every method of `Engine.api()`: None when the operator serves it, else why not."""
    return {name: call.why_not for name, call in _calls().items()}


# -- the call, on whichever engine answers it ----------------------------------------------------------------------


def run(engine: Engine, body: dict[str, Any]) -> Any:
    """Check the call, run it on `engine` (an operator view), its result as JSON (the daemon's side, and the
    CLI's own when no daemon runs). Raises InvalidInput (a malformed call), NotFound (no such method), and
    whatever the method raises."""
    from pydantic import ValidationError

    if body.get("v") != OPERATOR_VERSION:
        raise InvalidInput(f"operator call version {body.get('v')!r}; this daemon speaks {OPERATOR_VERSION}")
    name, args, pos = body.get("method"), body.get("args", {}), body.get("pos", [])
    call = _calls().get(name) if isinstance(name, str) else None
    if call is None or call.why_not is not None:
        why = f": {call.why_not}" if call is not None else ""
        raise NotFound(f"no operator method {name!r}{why}; the daemon serves the engine's API (Engine.api()) "
                       "methods whose arguments and result are JSON")  # fmt: skip
    if not isinstance(args, dict) or not isinstance(pos, list):
        raise InvalidInput("args must be a JSON object of the method's parameters (and pos a list)")
    unknown = sorted(set(args) - set(call.params))
    if unknown:
        raise InvalidInput(f"{name}: unknown parameters {unknown}")
    try:
        bound = call.signature.bind(None, *pos, **args)
    except TypeError as exc:
        raise InvalidInput(f"{name}: {exc}") from None
    values: list[Any] = []
    named: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        if key == "self":
            continue
        try:
            checked = call.params[key].validate_python(value)
        except ValidationError as exc:
            raise InvalidInput(f"{name}: {key}: {exc.errors()[0]['msg']}") from None
        if call.signature.parameters[key].kind is inspect.Parameter.POSITIONAL_ONLY:
            values.append(checked)
        else:
            named[key] = checked
    assert call.result is not None and isinstance(name, str)
    result = getattr(engine, name)(*values, **named)
    return call.result.dump_python(result, mode="json", exclude_none=body.get("exclude_none") is True)


def error_body(exc: MemorydError) -> dict[str, Any]:
    """An error as the operator answers it: its code and message, and what its class carries besides."""
    out: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if isinstance(exc, Rejected) and exc.dura:
        out["dura"] = exc.dura
    if isinstance(exc, TooManyAttempts):
        out["retry_after"] = exc.retry_after
    return out


def error_of(code: str, message: str, extra: dict[str, Any] | None = None) -> MemorydError:
    """The MemorydError of a stable code, as the in-process engine raises it; KeyError for the daemon's own codes."""
    extra = extra or {}
    todo: list[type[MemorydError]] = [MemorydError]
    while todo:
        cls = todo.pop()
        if cls.code == code:
            if cls is TooManyAttempts:
                return TooManyAttempts(message, int(extra.get("retry_after", 0)))
            if cls is Rejected:
                dura = extra.get("dura")
                return Rejected(message, dura=dura if isinstance(dura, dict) else None)
            return cls(message)
        todo.extend(cls.__subclasses__())
    raise KeyError(code)


def _json(value: Any) -> Any:
    """An argument as JSON: a path absolute (the daemon's working directory is not the command's)."""
    if isinstance(value, PurePath):
        return os.path.abspath(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"an operator call takes JSON arguments, not {type(value).__name__}")


class Operator:
    """The engine as `memoryd <command>` reaches it: `ops.<method>(…)` is one operator call, answered by the
    running daemon (`client`) or by this process's own engine (opened at the first call), its result as JSON."""

    def __init__(self, cwd: Path, client: Client | None) -> None:
        self.cwd = Path(os.path.abspath(cwd))
        self.client = client
        self.calls = 0  # answered calls (a daemon gone before the first one means in-process, nothing applied)
        self._engine: Engine | None = None

    def excluding_none(self) -> _Options:
        """This operator with results dumped without their None fields (a pydantic model's `exclude_none`)."""
        return _Options(self, {"exclude_none": True})

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(self.call, name, {})

    def call(self, name: str, options: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        """`Engine.<name>(*args, **kwargs)` as one operator call; `options`: how the result is dumped."""
        body = {"v": OPERATOR_VERSION, "method": name, "args": {k: _json(v) for k, v in kwargs.items()},
                "pos": [_json(a) for a in args], **options}  # fmt: skip
        answer = self._local(body) if self.client is None else self._remote(body)
        self.calls += 1
        return answer

    def _local(self, body: dict[str, Any]) -> Any:
        if self._engine is None:
            from ..engine import Engine

            self._engine = Engine.open(cwd=self.cwd, authority="operator")  # the person: any scope, no sensitive gate
        return run(self._engine, json.loads(json.dumps(body)))

    def _remote(self, body: dict[str, Any]) -> Any:
        from .client import DaemonError

        assert self.client is not None
        try:
            return self.client.call("/v1/operator", body, scope={"cwd": str(self.cwd)}, timeout=TIMEOUT)
        except DaemonError as exc:
            try:
                err = error_of(exc.code, exc.message, exc.extra)
            except KeyError:  # the daemon's own codes (daemon_unreachable, timeout): the caller says what happened
                raise exc from None
            raise err from None

    def in_process(self) -> None:
        """Answer the next calls with this process's own engine (the daemon went away before answering any)."""
        self.client = None

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __enter__(self) -> Operator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Options:
    """An operator's calls with dump options (`Operator.excluding_none`)."""

    def __init__(self, operator: Operator, options: dict[str, Any]) -> None:
        self._operator, self._options = operator, options

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(self._operator.call, name, self._options)


def operator_for(cwd: Path | None) -> Operator:
    """The engine a command reaches: the running daemon of this data home when one answers with this version
    and settings (none is started for a command), else this process's own (`memoryd.daemon.client.connect`)."""
    from .client import DaemonUnavailable, connect

    try:
        client = connect(start=False)
    except DaemonUnavailable:
        client = None
    return Operator(Path(cwd if cwd is not None else os.getcwd()), client)
