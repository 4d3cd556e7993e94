"""Entry point of the `memoryd` command.

`memoryd hook <event>` runs on every Claude Code session start, prompt and memory tool call, so it goes
straight to the one hook client (`memoryd.agents.hooks`: the daemon's answers, an engine in-process when the
daemon cannot run) without importing the CLI framework (typer and its dependencies cost ~0.2 s per hook,
measured with bench/hooks_latency.py). `memoryd connect` (an agent starts it as its
MCP server) goes straight to `memoryd.agents.remote` for the same reason. Everything else is `memoryd.cli`.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        from .agents.hooks import main as hook  # through the resident daemon; in-process when it cannot run

        code = hook([argv[1]])
        sys.stdout.flush()
        os._exit(code)  # as `python -m memoryd.agents.hooks`: never wait for a hook thread that gave up
    if argv and argv[0] == "connect":
        from .agents.remote import main as connect_main

        sys.exit(connect_main(argv[1:]))
    from .cli import main as cli_main

    cli_main()
