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
    app()


if __name__ == "__main__":
    main()
