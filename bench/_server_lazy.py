"""Experiment, not a product change: `memoryd-mcp` with the engine opened on first use instead of at start.

bench/latency.py spawns this next to the real `memoryd-mcp` to measure how much of the
`initialize` gap to the floor server comes from the background engine-open thread competing
with the event loop for the GIL (numpy / engine imports, model load, vault sync). It patches
`memoryd.mcp.common.EngineHandle` in this process only; src/ is untouched.
"""

import threading

from memoryd.mcp import common

_orig_init = common.EngineHandle.__init__


def _lazy_init(self, settings, cwd):  # type: ignore[no-untyped-def]
    self._settings = settings
    self._cwd = cwd
    self._engine = None
    self._error = None
    self._ready = threading.Event()
    self._started = False
    self._start_lock = threading.Lock()


def _lazy_get(self):  # type: ignore[no-untyped-def]
    with self._start_lock:
        if not self._started:
            self._started = True
            threading.Thread(target=self._open, name="memoryd-engine-open", daemon=True).start()
    self._ready.wait()
    if self._engine is None:
        raise common.MemorydError(f"memoryd could not open its store: {self._error}")
    return self._engine


common.EngineHandle.__init__ = _lazy_init
common.EngineHandle.get = _lazy_get

if __name__ == "__main__":
    from memoryd.mcp.app import main

    main()
