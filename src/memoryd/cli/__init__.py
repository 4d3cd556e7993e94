"""`memoryd`: the command line for people. A thin adapter over the engine.

One Typer app (`common.app`); each module adds its commands to it, in the order `--help` lists them."""

from __future__ import annotations

# Each module adds its commands to `app` when imported; this order is the order `--help` lists them in.
from . import memories  # noqa: F401  # isort: skip
from . import groups  # noqa: F401  # isort: skip
from . import review  # noqa: F401  # isort: skip
from . import hosts  # noqa: F401  # isort: skip
from .common import app

__all__ = ["app", "main"]


def main() -> None:
    """Run the command named on the command line. Only that command (or group) is built: typer reads every
    command's parameters when it builds the tree (~60–90 ms for all of them), and a command through a warm
    daemon should cost what it does. No command, an option first or an unknown name: the whole tree."""
    import copy
    import sys

    from typer.main import get_command_name
    from typer.models import CommandInfo

    name = sys.argv[1] if len(sys.argv) > 1 else ""

    def named(c: CommandInfo) -> str | None:
        return c.name or (get_command_name(c.callback.__name__) if c.callback else None)

    commands = [c for c in app.registered_commands if named(c) == name]
    subgroups = [g for g in app.registered_groups if g.name == name]
    if name.startswith("-") or not (commands or subgroups):
        app()
        return
    only = copy.copy(app)  # the same app, its other commands left out
    only.registered_commands, only.registered_groups = commands, subgroups
    only()


if __name__ == "__main__":
    main()
