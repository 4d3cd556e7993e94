"""What every command shares: the app, its options, the engine a command acts through (a running
daemon's or its own), and how results and errors are printed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast

import typer

from ..shared.errors import EXIT_CODES, MemorydError, Rejected

if TYPE_CHECKING:
    from pydantic import BaseModel

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


# Commands that never go through a running daemon, and why. Every other command that reaches the store
# does, when a daemon for this MEMORYD_HOME runs (none is started for a command); else it runs in-process.
IN_PROCESS = {
    "export": "streams the whole store to this process's stdout or files",
    "import": "a long batched job: progress, Ctrl-C and resume belong to this terminal",
    "migrate": "copies a whole store into another database",
    "ui": "with a daemon running, the daemon serves the console (see `ui`)",
    "daemon": "manages the daemon itself",
    "hook": "the hooks' own thin client talks to the daemon",
    "connect": "forwards to a team server, not to this home's store",
    "install": "edits agents' configuration files only",
    "uninstall": "edits agents' configuration files only",
}


def _local_engine(cwd: Path | None) -> Engine:
    from ..engine import Engine

    return Engine.open(cwd=cwd, authority="operator")  # the person: any scope, no sensitive gate


def _engine(cwd: Path | None) -> Engine:
    """The engine a command acts through: the running daemon's (memoryd.daemon.operator) unless the command
    is in IN_PROCESS or no daemon of this home runs, else this process's own."""
    import click

    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None and ctx.parent.parent is not None:
        ctx = ctx.parent  # up to the top command (`vault` of `memoryd vault sync`)
    if ctx is None or ctx.parent is None or ctx.info_name not in IN_PROCESS:
        from ..daemon.operator import proxy_for

        proxy = proxy_for(cwd)
        if proxy is not None:
            return cast("Engine", proxy)
    return _local_engine(cwd)


def _fail(exc: MemorydError) -> NoReturn:
    typer.echo(f"error [{exc.code}]: {exc.message}", err=True)
    raise typer.Exit(EXIT_CODES.get(exc.code, 1))


def _run(cwd: Path | None, fn: Callable[[Engine], T]) -> T:
    from ..daemon.client import DaemonError, DaemonUnavailable

    try:
        with _engine(cwd) as engine:
            try:
                return fn(engine)
            except DaemonUnavailable:
                if getattr(engine, "calls", 1):  # the daemon went away between calls of one command: say so
                    raise
        with _local_engine(cwd) as engine:  # it went away before answering anything: nothing was applied
            return fn(engine)
    except MemorydError as exc:
        _fail(exc)
    except (DaemonError, DaemonUnavailable) as exc:
        code, message = (exc.code, exc.message) if isinstance(exc, DaemonError) else ("daemon_unreachable", str(exc))
        typer.echo(f"error [{code}]: {message}; `memoryd daemon status` says whether it runs, and the command runs "
                   "in-process when none does", err=True)  # fmt: skip
        raise typer.Exit(1) from None


def _emit(data: Any, as_json: bool, human: Callable[[], str]) -> None:
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        typer.echo(human())


def _change(cwd: Path | None, fn: Callable[[Engine], BaseModel], **shown: object) -> dict[str, Any]:
    """A write's result as the CLI prints it. A refusal (the engine raises `Rejected`) prints like a result,
    `{"effect": "rejected", …shown, "reason": …}`, and `_effect_exit` then exits 4."""

    def run(e: Engine) -> dict[str, Any]:
        try:
            return fn(e).model_dump(exclude_none=True)
        except Rejected as exc:
            return {"effect": "rejected", **shown, "reason": exc.message, **({"dura": exc.dura} if exc.dura else {})}

    return _run(cwd, run)


def _effect_exit(data: dict[str, Any]) -> None:
    if data.get("effect") == "rejected":
        raise typer.Exit(REJECTED_EXIT)
