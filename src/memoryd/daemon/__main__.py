"""`python -m memoryd.daemon serve [--idle SECONDS]`: run the daemon in the foreground (clients start it so)."""

from __future__ import annotations

import sys

from .server import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
