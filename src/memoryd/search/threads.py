"""Background threads that run native code, joined before the interpreter ends them.

At exit CPython ends daemon threads: one that comes back from native code with the GIL released is
unwound by `pthread_exit`'s forced unwind, and a Rust or C++ frame on its stack that catches that
unwind (pyo3's `catch_unwind` around the tokenizers and safetensors calls of WordLlama's loader, a
C++ `catch (...)`) makes glibc abort the whole process with `FATAL: exception not rethrown` (exit
status -6, SIGABRT) — after the command's work is done, so a save that worked reports a failure.

So the threads that run such code start here — WordLlama's loader (Rust) and the vector-graph build
(usearch, C++) — and an `atexit` hook (run before daemon threads are ended) asks each to stop, when
it can, and joins it. The load takes ~0.4 s; a graph build stops at its next chunk. Threads in pure C
or numpy (the USE and E5 loaders) stay plain daemon threads: nothing on their stack catches the
unwind, and a short command should not wait for a model it never used.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable

__all__ = ["JOIN_SECONDS", "join_all", "start"]

JOIN_SECONDS = 120.0  # per thread; a load or a build chunk that takes longer is left to the old behaviour

_LOCK = threading.Lock()
_THREADS: list[tuple[threading.Thread, threading.Event | None]] = []


def start(target: Callable[[], object], name: str, stop: threading.Event | None = None) -> threading.Thread:
    """Start `target` on a daemon thread that is joined at exit (`stop` is set first, when given)."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    with _LOCK:
        _THREADS[:] = [(t, s) for t, s in _THREADS if t.is_alive()]
        _THREADS.append((thread, stop))
    thread.start()
    return thread


def join_all(timeout: float = JOIN_SECONDS) -> None:
    """Ask the running threads to stop and wait for them (the exit hook; tests call it too)."""
    with _LOCK:
        running = [(t, s) for t, s in _THREADS if t.is_alive()]
    for _, stop in running:
        if stop is not None:
            stop.set()
    for thread, _ in running:
        if thread is not threading.current_thread():
            thread.join(timeout)


atexit.register(join_all)
