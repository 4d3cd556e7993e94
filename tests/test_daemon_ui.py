"""`memoryd ui` with a daemon running: the daemon serves the console with its warm engine, on a per-run
loopback address and token of its own, checked in Debian's Chromium (Playwright) as tests/test_ui_browser.py does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from memoryd.daemon.client import Client

from .conftest import make_repo
from .test_daemon import MEMORYD, PY, _env, use_env
from .test_daemon_cli import PROBE
from .test_ui_browser import playwright_browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow
MEMORY = "The billing service stores amounts as integer cents, never floats."


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    home, repo = tmp_path / "home", make_repo(tmp_path / "widgets")
    env = _env(home)
    use_env(monkeypatch, env)
    r = subprocess.run([MEMORYD, "memorize", MEMORY, "--type", "decision"], env={**env, "MEMORYD_DAEMON": "off"},
                       cwd=repo, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    Client(home).start()
    yield home, repo, env
    Client(home, autostart=False).stop()


def _ui(env: dict[str, str], repo: Path) -> tuple[subprocess.Popen[str], str]:
    """`memoryd ui` with Engine.open refused in its process: only the daemon can serve it."""
    proc = subprocess.Popen([PY, "-c", PROBE, "ui", "--no-browser", "--port", "0"], env=env, cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("memoryd ui: http://127."), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.removeprefix("memoryd ui: ")


def _refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=3)
    except urllib.error.HTTPError:
        return False
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return True
    return False


def test_the_daemon_serves_the_console(home: tuple[Path, Path, dict[str, str]], playwright_browser: Any) -> None:  # noqa: F811
    root, repo, env = home
    pid = Client(root, autostart=False).health()["pid"]  # type: ignore[index]
    proc, url = _ui(env, repo)
    other, other_url = _ui(env, repo)
    try:
        base, token = url.split("/?token=")
        assert not base.startswith("http://127.0.0.1:") and len(token) >= 32
        assert other_url.split("/?token=")[0] != base and other_url.split("/?token=")[1] != token  # per run
        log = (root / "daemon.log").read_text()
        assert f"serving on {urlsplit(base).netloc}" in log and urlsplit(base).path not in log  # never the path
        context = playwright_browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.goto(url)
            assert page.url == base + "/memories" and "token" not in page.url
            assert MEMORY in page.content()
            cookies = context.cookies()
            assert len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
            path = urlsplit(base).path  # the console's capability path: its cookie goes nowhere else
            assert re.fullmatch(r"/[\w-]{22}", path) and cookies[0]["path"] == path, cookies
            origin, cookie = base.removesuffix(path), f"{cookies[0]['name']}={cookies[0]['value']}"
            off_path = urllib.request.Request(origin + "/memories", headers={"Cookie": cookie})
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(off_path, timeout=10)
            page.goto(base + "/health")
            assert page.locator("h1").inner_text() == "Health"
            page.goto(other_url.split("/?token=")[0] + "/memories")  # the other console: this cookie is not its
            assert "this console needs its token" in page.content()
        finally:
            context.close()
        fresh = playwright_browser.new_context()
        try:
            p = fresh.new_page()
            p.goto(base + "/memories")
            assert "this console needs its token" in p.content()
        finally:
            fresh.close()
        proc.send_signal(signal.SIGINT)  # Ctrl-C: this console closes, the other and the daemon stay
        # a renewal in flight (KEEP) and the stop it asks the daemon for (up to 15 s) come first: under a full
        # suite's load 30 s was seen to pass before the clean exit
        assert proc.wait(timeout=60) == 0
        assert _refused(base + "/memories")
        assert not _refused(other_url.split("/?token=")[0] + "/memories")
        info = Client(root, autostart=False).health()
        assert info is not None and info["pid"] == pid
    finally:
        for p in (proc, other):
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
    assert _refused(other_url.split("/?token=")[0] + "/memories")  # SIGTERM closes it too
    stderr = other.stderr.read() if other.stderr else ""
    assert f"served by the memoryd daemon (pid {pid})" in stderr and "Engine.open" not in stderr
    assert json.dumps(Client(root, autostart=False).health()) != "null"


def test_a_console_whose_daemon_dies_ends_its_memoryd_ui(home: tuple[Path, Path, dict[str, str]]) -> None:
    root, repo, env = home
    pid = Client(root, autostart=False).health()["pid"]  # type: ignore[index]
    proc, url = _ui(env, repo)
    try:
        os.kill(pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == 1  # it notices at its next renewal (every 5 s)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert f"memoryd ui: the console is gone (the daemon stopped: no daemon is listening on {root}" in stderr, stderr
    assert "Traceback" not in stderr
    assert _refused(url.split("/?token=")[0] + "/memories")
