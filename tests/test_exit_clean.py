"""Clean exits and crash leftovers (issue 23, "Crashes and leftovers").

- A process that exits while a model loader thread is inside Rust code (WordLlama's tokenizers and
  safetensors calls) used to abort with glibc's `FATAL: exception not rethrown` (SIGABRT, about
  4% of exits timed inside the load window); the loader threads are now joined at exit
  (`memoryd.search.threads`). Tested by exiting at a sweep of moments across the load, and by
  running the CLI itself many times.
- A `kill -9` between a write's commit and its vault file left the file unpublished until an MCP
  server started: every opening of the store (SDK, CLI) now finishes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings

from .conftest import make_repo
from .mcp.clients import server_env

MEMORYD = str(Path(sys.executable).with_name("memoryd"))

# Start loading a process-wide model with a Rust tokenizer in the background (as a recall or a server's
# warm-up does), then exit after argv[1] seconds: the term embedder, and the English sentence model (issue 35).
LOADERS = {"wordllama": 'term_embedder("wordllama")', "minilm": 'english_embedder("minilm")'}
RUNS = {"wordllama": 200, "minilm": 100}  # onnxruntime's load is the longer: 100 moments across it
EXIT_DURING_LOAD = """
import sys, time
from memoryd.search.embed import english_embedder, term_embedder
{loader}.start()
time.sleep(float(sys.argv[1]))
"""


def _load_seconds(loader: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", f"from memoryd.search.embed import english_embedder, term_embedder; e = {loader}; "
         "e._get(); print(e.load_seconds)"],  # fmt: skip
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return float(out.stdout.strip())


def _run_all(commands: list[list[str]], env: dict[str, str] | None = None) -> list[subprocess.CompletedProcess[str]]:
    def one(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, commands))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("model", list(LOADERS))
def test_exit_while_a_model_loads_is_clean(model: str) -> None:
    """Processes exit at evenly spread moments of the model's load (`RUNS`): none aborts."""
    load = _load_seconds(LOADERS[model])
    runs = RUNS[model]
    delays = [load * 1.2 * i / runs for i in range(runs)]
    script = EXIT_DURING_LOAD.format(loader=LOADERS[model])
    results = _run_all([[sys.executable, "-c", script, f"{d:.4f}"] for d in delays])
    aborted = [(d, r.returncode, r.stderr[-200:]) for d, r in zip(delays, results, strict=True) if r.returncode]
    assert not aborted, f"{len(aborted)}/{runs} exits failed (delay s, status, stderr): {aborted[:5]}"


@pytest.mark.slow
def test_cli_runs_exit_clean(tmp_path: Path) -> None:
    """The CLI itself, run many times (memorize and stale, the commands seen aborting): every run exits 0."""
    repo = make_repo(tmp_path / "repo")
    env = server_env(tmp_path / "home")
    cwd_cmd = ["env", "-C", str(repo)]
    commands = [[*cwd_cmd, MEMORYD, "memorize", f"exit test {i}: we deploy from main"] if i % 4 == 0
                else [*cwd_cmd, MEMORYD, "stale"] for i in range(40)]  # fmt: skip
    results = _run_all(commands, env)
    failed = [(r.returncode, r.stderr[-200:]) for r in results if r.returncode]
    assert not failed, f"{len(failed)}/{len(commands)} CLI runs failed: {failed[:5]}"


# The child saves one memory and is killed (SIGKILL) right after the commit, before its vault file.
KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from memoryd.shared.config import Settings
from memoryd.engine import Engine
import memoryd.engine.core as core
from memoryd.search.embed import HashEmbedder

def die(*args):
    os.kill(os.getpid(), signal.SIGKILL)

core.publish = die  # what `Core.write` calls after the commit
with Engine.open(Settings(), cwd=sys.argv[2], embedder=HashEmbedder()) as e:  # MEMORYD_HOME, MEMORYD_DB
    e.memorize("The release branch is cut every Thursday at noon " + sys.argv[3], source="user")
"""


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    return server_env(settings.home, **({"MEMORYD_DB": settings.db} if settings.db else {}), **extra)


def _crash_writes(settings: Settings, repo: Path, first: int, n: int) -> None:
    for i in range(first, first + n):
        r = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(settings.home), str(repo), f"crash {i}"],
                           capture_output=True, text=True, timeout=120, env=_env(settings))  # fmt: skip
        assert r.returncode == -signal.SIGKILL, r.stderr


@pytest.mark.parametrize("opener", ["sdk", "cli"])
def test_every_opening_finishes_what_a_kill_left(settings: Settings, tmp_path: Path, opener: str) -> None:
    repo = make_repo(tmp_path / "repo")
    _crash_writes(settings, repo, 0, 3)
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder(), term_embedder=None) as e:
        pass  # the opening itself finishes the queue
    if opener == "cli":  # crash again, then let a plain CLI command be the next opening
        _crash_writes(settings, repo, 3, 2)
        r = subprocess.run([MEMORYD, "doctor"], cwd=repo, capture_output=True, text=True, timeout=120,
                           env=_env(settings, MEMORYD_EMBEDDER="hash"))  # fmt: skip
        assert "waiting to be published" not in r.stdout + r.stderr, r.stdout + r.stderr
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder(), term_embedder=None) as e:
        assert e._core.store.outbox() == []
        atoms = e._core.store.browse_atoms(_all_filter())
        assert len(atoms) == (5 if opener == "cli" else 3)
        for a in atoms:
            assert a.vault_path and (e._core.vault_root / a.vault_path).is_file(), a.vault_path
        assert "waiting to be published" not in e.doctor()["sync"], e.doctor()["sync"]


def _all_filter():  # type: ignore[no-untyped-def]
    from memoryd.storage.base import AtomFilter

    return AtomFilter(limit=100)


def test_opening_without_leftovers_costs_one_read(tmp_path: Path) -> None:
    """The check on a clean store is one read of the (empty) queue: opening stays fast."""
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    settings = Settings(home=home)
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder(), term_embedder=None) as e:
        e.memorize("We pin the base image to python:3.11-slim", source="user")
    start = time.perf_counter()
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder(), term_embedder=None) as e:
        assert e._core.store.outbox() == []
    assert time.perf_counter() - start < 5
    assert os.path.isdir(home)


def test_background_threads_are_asked_to_stop_and_joined() -> None:
    """What the exit hook does: a thread given a stop event sees it set, and is joined before exit goes on."""
    import threading

    from memoryd.search import threads

    stop = threading.Event()
    seen: list[bool] = []
    t = threads.start(lambda: seen.append(stop.wait(30)), "memoryd-test-worker", stop=stop)
    threads.join_all(timeout=10)
    assert not t.is_alive() and seen == [True]
