"""What every command shares: the app, its options, the one way a command reaches the engine (a running
daemon's or its own, `memoryd.daemon.operator`), and how results and errors are printed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from ..shared.errors import EXIT_CODES, MemorydError, Rejected

if TYPE_CHECKING:
    from ..engine import Engine

T = TypeVar("T")


# Plain click help (rich_markup_mode=None): typer's rich help prints a type such as `<bool>` beside
# every flag, which takes no value.
_PLAIN = {"rich_markup_mode": None, "no_args_is_help": True}
app = typer.Typer(
    name="memoryd",
    help="Local-first long-term memory for AI coding agents.",
    add_completion=False,
    pretty_exceptions_enable=False,
    **_PLAIN,  # type: ignore[arg-type]
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"memoryd {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", is_eager=True, callback=_print_version)
    ] = False,  # fmt: skip
) -> None:
    """Local-first long-term memory for AI coding agents."""


JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
CwdOpt = Annotated[Path | None, typer.Option("--cwd", help="Act for this directory's scope (default: here).")]
REJECTED_EXIT = 4  # an effect "rejected" is reported like a conflict


def _local_engine(cwd: Path | None) -> Engine:
    """This process's own engine, for what cannot cross to a daemon: `import` (its progress callback, and
    Ctrl-C and resume belong to this terminal) and `export` to stdout (a stream)."""
    from ..engine import Engine

    return Engine.open(cwd=cwd, authority="operator")  # the person: any scope, no sensitive gate


def _fail(exc: MemorydError) -> NoReturn:
    typer.echo(f"error [{exc.code}]: {exc.message}", err=True)
    raise typer.Exit(EXIT_CODES.get(exc.code, 1))


def _run(cwd: Path | None, fn: Callable[[Any], T]) -> T:
    """`fn(ops)`: every engine call a command makes, through its one way in (`memoryd.daemon.operator`): the
    running daemon of this home when there is one, else this process's own engine; results as JSON either way."""
    from ..daemon.client import DaemonError, DaemonUnavailable
    from ..daemon.operator import operator_for

    try:
        with operator_for(cwd) as ops:
            try:
                return fn(ops)
            except DaemonUnavailable:
                if ops.calls:  # the daemon went away between calls of one command: say so
                    raise
            ops.in_process()  # it went away before answering anything: nothing was applied
            return fn(ops)
    except MemorydError as exc:
        _fail(exc)
    except (DaemonError, DaemonUnavailable) as exc:
        code, message = (exc.code, exc.message) if isinstance(exc, DaemonError) else ("daemon_unreachable", str(exc))
        typer.echo(f"error [{code}]: {message}; `memoryd daemon status` says whether it runs, and the command runs "
                   "in-process when none does", err=True)  # fmt: skip
        raise typer.Exit(1) from None


def _iso(stamp: str) -> str:
    """A time as the engine's JSON gives it (`…Z`) the way `datetime.isoformat` prints it (`…+00:00`)."""
    return stamp[:-1] + "+00:00" if stamp.endswith("Z") else stamp


def _emit(data: Any, as_json: bool, human: Callable[[], str]) -> None:
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        typer.echo(human())


def _change(cwd: Path | None, fn: Callable[[Any], dict[str, Any]], **shown: object) -> dict[str, Any]:
    """A write's result as the CLI prints it (its None fields left out). A refusal (the engine raises
    `Rejected`) prints like a result, `{"effect": "rejected", …shown, "reason": …}`, and `_effect_exit` then
    exits 4."""

    def run(ops: Any) -> dict[str, Any]:
        try:
            return fn(ops.excluding_none())
        except Rejected as exc:
            return {"effect": "rejected", **shown, "reason": exc.message, **({"dura": exc.dura} if exc.dura else {})}

    return _run(cwd, run)


def _effect_exit(data: dict[str, Any]) -> None:
    if data.get("effect") == "rejected":
        raise typer.Exit(REJECTED_EXIT)
