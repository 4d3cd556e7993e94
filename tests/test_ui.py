"""The web console over HTTP (ASGI, no browser): token and cookie, Host/Origin, CSRF, headers, errors, escaping.

The browser suite (tests/test_ui_browser.py) clicks through the same pages in Chromium.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest

from memoryd.engine import Engine
from memoryd.search.embed import UseEmbedder
from memoryd.shared.config import Settings
from memoryd.ui import create_app
from memoryd.ui.security import CSP, MIN_TOKEN_CHARS, TokenError, allowed_hosts, resolve_token

from .conftest import make_repo
from .mcp.clients import free_port, server_env

pytestmark = pytest.mark.anyio

TOKEN = "t" * 16 + "0123456789abcdefghij"  # 36 characters
HOST = "127.0.0.1:8767"
ORIGIN = {"Origin": f"http://{HOST}"}
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
XSS_SHORT = '<img src=x onerror="window.__xss=2">'  # fits the 64-character fields (source, tag; limits.py)
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
MCP = str(Path(sys.executable).with_name("memoryd-mcp"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def console(tmp_path: Path, repo: Path, embedder: UseEmbedder) -> Iterator[Engine]:
    with Engine.open(Settings(home=tmp_path / "home"), cwd=repo, embedder=embedder, authority="operator",
                     enforce_sensitive=True) as e:  # fmt: skip
        yield e


def _client(engine: Engine, **headers: str) -> httpx2.AsyncClient:
    app = create_app(engine, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8767))
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=f"http://{HOST}", headers=headers)


@pytest.fixture
async def web(console: Engine) -> AsyncIterator[httpx2.AsyncClient]:
    """A client that has opened the printed address once (so it holds the cookie)."""
    async with _client(console) as c:
        r = await c.get(f"/?token={TOKEN}")
        assert r.status_code == 303
        yield c


async def _csrf(web: httpx2.AsyncClient, path: str = "/memories") -> str:
    m = re.search(r'name="_csrf" value="([0-9a-f]{64})"', (await web.get(path)).text) or re.search(
        r'"X-CSRF-Token": "([0-9a-f]{64})"', (await web.get(path)).text)  # fmt: skip
    assert m, "no CSRF token on the page"
    return m.group(1)


def _notice(html: str) -> str:
    m = re.search(r'class="notice [a-z]+"[^>]*>([^<]*)<', html)
    return m.group(1) if m else ""


# -- token rules ------------------------------------------------------------------------------


def test_token_rules() -> None:
    assert len(resolve_token("127.0.0.1", None)) >= MIN_TOKEN_CHARS
    assert resolve_token("127.0.0.1", None) != resolve_token("127.0.0.1", None)
    assert resolve_token("0.0.0.0", "x" * 40) == "x" * 40
    with pytest.raises(TokenError, match="binding 0.0.0.0 needs MEMORYD_TOKEN set"):
        resolve_token("0.0.0.0", None)
    with pytest.raises(TokenError, match="MEMORYD_TOKEN is 10 characters; use at least 32"):
        resolve_token("127.0.0.1", "x" * 10)
    assert allowed_hosts("127.0.0.1", 9) == {"127.0.0.1:9", "localhost:9", "[::1]:9"}
    # the transport's allow-list (memoryd.shared.http_security): bind address, loopback names, --allowed-host
    assert allowed_hosts("192.0.2.7", 9) == {"192.0.2.7:9", "127.0.0.1:9", "localhost:9", "[::1]:9"}
    assert "memoryd.lan:9" in allowed_hosts("0.0.0.0", 9, ["memoryd.lan"])


async def test_no_token_no_page(console: Engine) -> None:
    async with _client(console) as c:
        for path in ("/memories", "/health", "/static/console.css", "/entities/graph.json", "/nope"):
            r = await c.get(path)
            assert r.status_code == 401, path
            assert "this console needs its token: open the address memoryd ui printed at start" in r.text
            assert r.headers["content-security-policy"] == CSP
        wrong = await c.get("/memories?token=" + "x" * 36)
        assert wrong.status_code == 401 and "the token in the address is wrong" in wrong.text
        assert "set-cookie" not in wrong.headers
        bad_cookie = await c.get("/memories", headers={"Cookie": "memoryd_ui=" + "0" * 64})
        assert bad_cookie.status_code == 401


async def test_token_becomes_a_strict_httponly_cookie_and_leaves_the_address(console: Engine) -> None:
    async with _client(console) as c:
        r = await c.get(f"/memories?token={TOKEN}&type=fact")
        assert r.status_code == 303 and r.headers["location"] == "/memories?type=fact"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie and TOKEN not in cookie
        page = await c.get(r.headers["location"])
        assert page.status_code == 200 and TOKEN not in page.text
    async with _client(console, Authorization=f"Bearer {TOKEN}") as scripted:
        assert (await scripted.get("/health")).status_code == 200


async def test_the_console_answers_only_under_its_capability_path(console: Engine) -> None:
    """Issue 37: the cookie is scoped to a per-run path (`Path=`), and nothing outside that path answers, with
    a cookie, the bearer token or the token in the address."""
    from memoryd.ui.security import console_path

    path = console_path()
    assert re.fullmatch(r"/[A-Za-z0-9_-]{22}", path) and path != console_path()
    app = create_app(console, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8767), path=path)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=f"http://{HOST}") as c:
        r = await c.get(f"{path}/memories?token={TOKEN}")
        assert r.status_code == 303 and r.headers["location"] == f"{path}/memories"
        cookie = r.headers["set-cookie"]
        assert f"Path={path};" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        value = cookie.split(";", 1)[0]
        page = await c.get(f"{path}/memories")
        assert page.status_code == 200 and f'href="{path}/static/console.css"' in page.text
        assert (await c.get(path, headers={"Cookie": ""})).headers["location"] == f"{path}/"
        for outside in ("/", "/memories", "/health", "/static/console.css", f"{path}x/memories", f"{path[:-1]}/",
                        f"/x{path}/memories", f"?token={TOKEN}", f"/memories?token={TOKEN}"):  # fmt: skip
            for headers in ({"Cookie": value}, {"Authorization": f"Bearer {TOKEN}"}):
                r = await c.get(outside, headers=headers)
                assert r.status_code == 404 and "set-cookie" not in r.headers, (outside, headers)
                assert "not found: open the address memoryd ui printed" in r.text
        r = await c.get(f"/memories?token={TOKEN}", headers={"Host": "evil.example:8767"})
        assert r.status_code == 403  # Host first, then the path
    with pytest.raises(ValueError, match="one segment starting with '/'"):
        create_app(console, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8767), path="a/b")


async def test_host_header_must_name_the_console(console: Engine) -> None:
    async with _client(console) as c:
        r = await c.get(f"/?token={TOKEN}", headers={"Host": "evil.example:8767"})
        assert r.status_code == 403 and "Host &#x27;evil.example:8767&#x27; is not allowed" in r.text
        r = await c.get(f"/?token={TOKEN}", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and "Origin &#x27;http://evil.example&#x27; is not allowed" in r.text
        ok = await c.get(f"/?token={TOKEN}", headers={"Host": "localhost:8767"})
        assert ok.status_code == 303
    async with _client(console, Authorization=f"BEARER {TOKEN}") as scripted:  # RFC 7235: any case
        assert (await scripted.get("/health")).status_code == 200


async def test_security_headers_on_every_response(web: httpx2.AsyncClient) -> None:
    for path in ("/memories", "/memories/NOPE", "/static/console.css", "/entities/graph.json", "/health/chain"):
        r = await web.get(path)
        assert r.headers["content-security-policy"] == CSP, path
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "default-src 'none'" in CSP
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
        assert r.headers["referrer-policy"] == "same-origin" and r.headers["cache-control"] == "no-store"
    page = (await web.get("/memories")).text
    assert "<script>" not in page and not re.search(r"<script(?![^>]*\bsrc=\"/static/)", page)  # no inline script
    assert " style=" not in page and "<style" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing from the network


# -- CSRF and cross-site posts ----------------------------------------------------------------


async def test_every_state_changing_route_needs_the_csrf_token(web: httpx2.AsyncClient, console: Engine) -> None:
    atom = console.memorize("Deploys go through the release train on Tuesdays", source="user").atom_id
    posts = [
        (f"/memories/{atom}/edit", {"content": "changed", "reason": "r"}),
        (f"/memories/{atom}/correct", {"action": "negate", "reason": "r"}),
        (f"/memories/{atom}/govern", {"action": "quarantine", "reason": "r"}),
        ("/review", {"action": "promote", "ids": "1"}),
        ("/health/request-access", {"scope_hash": "x", "reason": "r"}),
    ]
    csrf = await _csrf(web)
    for path, data in posts:
        missing = await web.post(path, data=data, headers=ORIGIN)
        assert missing.status_code == 403, path
        assert "missing or wrong CSRF token: reload the console page and send the form again" in missing.text
        wrong = await web.post(path, data={**data, "_csrf": "0" * 64}, headers=ORIGIN)
        assert wrong.status_code == 403, path
        as_json = await web.post(path, json=data, headers=ORIGIN)
        assert as_json.status_code == 403 and "missing CSRF token: send the form from the console page" in as_json.text
    assert [e.action for e in console.history(atom)] == ["create"]
    ok = await web.post(f"/memories/{atom}/correct", data={"action": "negate", "reason": "r"},
                        headers={**ORIGIN, "X-CSRF-Token": csrf})  # the htmx way: the header  # fmt: skip
    assert ok.status_code == 303 and [e.action for e in console.history(atom)] == ["create", "negate"]


async def test_cross_site_posts_are_refused(web: httpx2.AsyncClient, console: Engine) -> None:
    atom = console.memorize("The on-call rotation changes every Monday at 09:00", source="user").atom_id
    csrf = await _csrf(web)
    data = {"_csrf": csrf, "action": "negate", "reason": "attack"}
    cases = [
        # another host: refused by the rules the transport shares (memoryd.shared.http_security)
        ({"Origin": "http://evil.example"}, "Origin &#x27;http://evil.example&#x27; is not allowed"),
        ({"Origin": "null"}, "Origin &#x27;null&#x27; is not allowed"),
        ({}, "no Origin or Referer header"),
        ({"Referer": "http://evil.example/x"}, "Origin http://evil.example is not this console"),
        ({**ORIGIN, "Sec-Fetch-Site": "cross-site"}, "cross-site request refused (Sec-Fetch-Site: cross-site)"),
        ({"Origin": "http://127.0.0.1:9999"}, "is not this console"),  # an allowed host, another port (CSRF)
    ]
    for headers, message in cases:
        r = await web.post(f"/memories/{atom}/correct", data=data, headers=headers)
        assert r.status_code == 403 and message in r.text, headers
    assert [e.action for e in console.history(atom)] == ["create"]
    via_referer = await web.post(f"/memories/{atom}/correct", data=data, headers={"Referer": f"http://{HOST}/memories"})
    assert via_referer.status_code == 303 and console.get(atom).status == "negated"


async def test_oversized_form_is_refused(web: httpx2.AsyncClient) -> None:
    r = await web.post("/review", content=b"a=" + b"x" * (1 << 20), headers={
        **ORIGIN, "Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert r.status_code == 413 and "form larger than 1048576 bytes" in r.text


# -- pages, actions and their error messages --------------------------------------------------


async def test_pages_render_and_actions_leave_audit_events(web: httpx2.AsyncClient, console: Engine) -> None:
    a = console.memorize("We use PostgreSQL 16 for the main database", source="user", tags=["db"]).atom_id
    held = console.memorize("maybe cache sessions in redis later", gate="hold")
    assert held.promotion_id
    s = console.session_start(title="Fix login")
    for path in ("/", "/memories", "/memories?q=PostgreSQL", f"/memories/{a}", "/review", "/sessions",
                 f"/sessions/{s.id}", "/entities", "/entities/entity:library:PostgreSQL", "/health",
                 "/health/chain", "/health/doctor"):  # fmt: skip
        r = await web.get(path, follow_redirects=True)
        assert r.status_code == 200, (path, r.text[:300])
    search = (await web.get("/memories?q=PostgreSQL+database")).text
    assert re.search(r"<strong>0\.\d{3}</strong>", search) and "semantic" in search and "keyword" in search
    graph = await web.get("/entities/graph.json")
    assert graph.headers["content-type"] == "application/json"
    assert any(n["id"] == "entity:library:PostgreSQL" for n in graph.json()["nodes"])
    assert "Chain verified" in (await web.get("/health/chain", headers={"HX-Request": "true"})).text
    csrf = await _csrf(web)
    r = await web.post(f"/memories/{a}/edit", headers=ORIGIN, data={
        "_csrf": csrf, "content": "We use PostgreSQL 17 for the main database\r\n", "title": "DB", "tags": "db, core",
        "triggers": "", "reason": "upgraded"})  # fmt: skip
    assert r.status_code == 303
    assert _notice((await web.get(r.headers["location"])).text) == "Saved: the edit is in the audit history."
    atom = console.get(a)
    assert atom.content == "We use PostgreSQL 17 for the main database" and atom.tags == ["db", "core"]
    last = console.history(a)[-1]
    assert (last.action, last.actor, last.reason) == ("update", "console", "upgraded")
    r = await web.post(
        f"/memories/{a}/correct",
        headers=ORIGIN,
        data={
            "_csrf": csrf,
            "action": "replace",
            "new_content": "We use PostgreSQL 18 for the main database",
            "reason": "again",
        },
    )
    new = r.headers["location"].split("?")[0].rsplit("/", 1)[1]
    assert console.get(new).supersedes == a and console.history(a)[-1].action == "superseded"
    r = await web.post("/review", headers=ORIGIN, data={"_csrf": csrf, "single": f"promote:{held.promotion_id}"})
    assert r.status_code == 303 and "promoted: #" in _notice((await web.get(r.headers["location"])).text)
    assert (
        console.history(held.atom_id)[-1].action == "promote" and console.history(held.atom_id)[-1].actor == "console"
    )


async def test_a_superseded_memory_names_its_successor_and_restores(web: httpx2.AsyncClient, console: Engine) -> None:
    old = console.memorize("Deploys use Capistrano: `bundle exec cap production deploy`, from `main` only.",
                           source="user", written_at="2025-01-20T09:00:00Z").atom_id  # fmt: skip
    new = console.memorize("Capistrano is gone: we deploy with Kamal now, `bin/kamal deploy -d production` from "
                           "`main` only.", source="user")  # fmt: skip
    assert new.supersedes == old
    page = (await web.get(f"/memories/{old}")).text
    assert f'<dt>Superseded by</dt><dd><a href="/memories/{new.atom_id}">{new.atom_id}</a></dd>' in page
    assert "<dt>Written</dt><dd>2025-01-20 09:00" in page and "(at its source)" in page
    assert f'<dt>Supersedes</dt><dd><a href="/memories/{old}">' in (await web.get(f"/memories/{new.atom_id}")).text
    assert "or undo a supersession or merge (restore)" in page
    r = await web.post(f"/memories/{old}/govern", headers=ORIGIN, data={
        "_csrf": await _csrf(web), "action": "restore", "reason": "staging still uses Capistrano"})  # fmt: skip
    assert r.status_code == 303 and console.get(old or "").status == "active"
    assert (
        console.history(old or "")[-1].actor == "console" and console.history(new.atom_id or "")[-1].action == "unlink"
    )


async def test_action_errors_say_what_is_wrong(web: httpx2.AsyncClient, console: Engine) -> None:
    a = console.memorize("Releases are tagged vX.Y.Z from the main branch", source="user").atom_id
    csrf = await _csrf(web)

    async def post(path: str, **data: str) -> httpx2.Response:
        return await web.post(path, headers=ORIGIN, data={"_csrf": csrf, **data})

    cases = [
        (
            f"/memories/{a}/edit",
            {"content": "x", "reason": ""},
            400,
            "reason is required: say why you edit this memory",
        ),
        (
            f"/memories/{a}/edit",
            {"content": "Releases are tagged vX.Y.Z from the main branch", "reason": "r"},
            400,
            "nothing to update",
        ),
        (f"/memories/{a}/correct", {"action": "demolish", "reason": "r"}, 409, "unknown action &#39;demolish&#39;"),
        (f"/memories/{a}/correct", {"action": "replace", "reason": "r"}, 409, "new_content is required for replace"),
        (f"/memories/{a}/correct", {"action": "negate", "reason": " "}, 409, "reason is required"),
        (
            f"/memories/{a}/govern",
            {"action": "tombstone", "reason": "r"},
            400,
            "tombstoning destroys the content: tick the box to confirm",
        ),
        (
            f"/memories/{a}/govern",
            {"action": "restore", "reason": "r"},
            409,
            "atom is active; only quarantined or superseded atoms restore",
        ),
        (
            f"/memories/{a}/govern",
            {"action": "derive_lesson", "reason": "r"},
            409,
            "lesson_content is required for derive_lesson",
        ),
        ("/memories/NOPE/correct", {"action": "negate", "reason": "r"}, 404, "no atom with id &#39;NOPE&#39;"),
        (f"/memories/{a}/explode", {"reason": "r"}, 404, "no action &#39;explode&#39;"),
        ("/review", {"action": "promote"}, 400, "select at least one promotion"),
        ("/review", {"action": "bless", "ids": "1"}, 400, "unknown review action &#39;bless&#39;"),
        ("/review", {"action": "promote", "ids": "one"}, 400, "promotion id must be a whole number"),
        ("/health/request-access", {"scope_hash": "feedfeedfeedfeed", "reason": "r"}, 404, "holds memories"),
    ]
    for path, data, status, message in cases:
        r = await post(path, **data)
        assert r.status_code == status and message in r.text, (path, data, r.status_code, _notice(r.text))
    r = await post("/review", action="promote", ids="999")
    assert "skipped #999: no promotion with id 999" in _notice((await web.get(r.headers["location"])).text)
    assert [e.action for e in console.history(a)] == ["create"]
    gets = [
        ("/memories?type=rumour", 400, "unknown type &#39;rumour&#39;"),
        ("/memories?from=yesterday", 400, "from must be a date like 2026-12-31"),
        ("/memories?limit=9999", 400, "limit must be between 1 and 200"),
        ("/memories/NOPE", 404, "no atom with id &#39;NOPE&#39;"),
        ("/sessions/NOPE", 404, "no session with id &#39;NOPE&#39;"),
        ("/entities/login.py", 400, "entity ids look like entity:&lt;kind&gt;:&lt;name&gt;"),
        ("/review?min=high", 400, "min must be a number between 0.0 and 1.0"),
        ("/review?min=0.9&max=0.1", 400, "min_score 0.9 is above max_score 0.1"),
        ("/nowhere", 404, "Not Found"),
    ]
    for path, status, message in gets:
        r = await web.get(path)
        assert r.status_code == status and message in r.text, (path, r.status_code, _notice(r.text))


async def test_locked_scope_is_refused_and_access_can_only_be_requested(
    web: httpx2.AsyncClient, console: Engine, settings_home: Path, tmp_path: Path, embedder: UseEmbedder
) -> None:
    repo = make_repo(tmp_path / "payroll", remote="git@github.com:acme/payroll.git")
    with Engine.open(Settings(home=settings_home), cwd=repo, embedder=embedder) as other:
        secret = other.memorize("Payroll runs on the 25th through the bank's SFTP drop", source="user").atom_id
        other.mark_sensitive(True)
        locked = other.scope.scope_hash
    r = await web.get(f"/memories/{secret}")
    assert r.status_code == 403 and "is sensitive and has no running grant" in r.text
    assert "Request access on the" in r.text
    assert (await web.get(f"/memories?scope={locked}")).status_code == 403
    assert secret not in (await web.get("/memories?status=any")).text
    health = (await web.get("/health")).text
    assert "locked" in health and "Request access" in health
    csrf = await _csrf(web)
    r = await web.post(f"/memories/{secret}/govern", headers=ORIGIN,
                       data={"_csrf": csrf, "action": "tombstone", "reason": "r", "confirm": "yes"})  # fmt: skip
    assert r.status_code == 403  # refused before any change
    # the person (CLI authority) may write to their sensitive scope; an agent would need a grant (issue 10)
    with Engine.open(Settings(home=settings_home), cwd=repo, embedder=embedder, authority="operator") as other:
        held = other.memorize("maybe the payroll export should move to the 26th", gate="hold")
    r = await web.post("/review", headers=ORIGIN, data={"_csrf": csrf, "single": f"promote:{held.promotion_id}"})
    assert r.status_code == 403 and "is sensitive and has no running grant" in r.text
    assert "promote" not in [e.action for e in console.history(held.atom_id)]
    r = await web.post("/health/request-access", headers=ORIGIN,
                       data={"_csrf": csrf, "scope_hash": locked, "reason": "need the payroll date"})  # fmt: skip
    assert "ask the user to run `memoryd scope grant --minutes 30`" in _notice(
        (await web.get(r.headers["location"])).text
    )
    assert console.store.access_requests()[-1]["reason"] == "need the payroll date"
    assert [e.action for e in console.store.events(secret)] == ["create"]


@pytest.fixture
def settings_home(console: Engine) -> Path:
    return console.settings.home


async def test_every_field_is_escaped(web: httpx2.AsyncClient, console: Engine) -> None:
    a = console.memorize(f"Deploy notes {XSS} for login.py", source=XSS_SHORT, title=XSS, tags=[XSS_SHORT],
                         triggers=[XSS]).atom_id  # fmt: skip
    assert a
    console.correct(a, "confirm_necessary", XSS)
    s = console.session_start(title=XSS, source=XSS_SHORT)
    console.session_end(s.id, XSS)
    with console.store.transaction() as tx:
        tx.link(a, f"entity:file:{XSS}", "mentions")
    pages = ["/memories", "/memories?status=any&q=Deploy+notes", f"/memories/{a}", "/sessions", f"/sessions/{s.id}",
             "/entities", f"/entities/entity:file:{XSS}", "/health", "/review"]  # fmt: skip
    for path in pages:
        html = (await web.get(path)).text
        assert "<script>window.__xss" not in html and "<img src=x" not in html, path
    detail = (await web.get(f"/memories/{a}")).text
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in detail  # shown as text, not markup
    graph = (await web.get("/entities/graph.json")).json()
    assert any(XSS in n["label"] for n in graph["nodes"])  # JSON for the canvas, never HTML


# -- the commands ------------------------------------------------------------------------------


def test_memoryd_ui_prints_one_line_and_serves(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "w")
    env = server_env(tmp_path / "home", MEMORYD_EMBEDDER="hash")
    proc = subprocess.Popen([MEMORYD, "ui", "--no-browser", "--port", "0", "--cwd", str(repo)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.fullmatch(
            r"memoryd ui: http://127\.\d+\.\d+\.\d+:(\d+)/[A-Za-z0-9_-]{22}/\?token=([A-Za-z0-9_-]{43})\n", line
        )
        assert m, line
        with httpx2.Client(follow_redirects=True) as c:
            r = c.get(line.split(": ", 1)[1].strip())
            assert r.status_code == 200 and "<h1>Memories</h1>" in r.text and "token=" not in str(r.url)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert out == "" and err == ""  # exactly one line, nothing else


def test_memoryd_ui_refuses_other_addresses_without_a_long_token(tmp_path: Path) -> None:
    env = server_env(tmp_path / "home", MEMORYD_EMBEDDER="hash")
    r = subprocess.run([MEMORYD, "ui", "--no-browser", "--host", "0.0.0.0", "--port", "0"], env=env,
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert (
        r.returncode == 2 and "memoryd ui: binding 0.0.0.0 needs MEMORYD_TOKEN set (at least 32 characters)" in r.stderr
    )
    r = subprocess.run([MEMORYD, "ui", "--no-browser", "--port", "0"], env={**env, "MEMORYD_TOKEN": "short"},
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 2 and "MEMORYD_TOKEN is 5 characters; use at least 32" in r.stderr


def test_http_transport_serves_the_console_under_ui(tmp_path: Path) -> None:
    port = free_port()
    env = server_env(tmp_path / "home", MEMORYD_EMBEDDER="hash")
    proc = subprocess.Popen([MCP, "--transport", "http", "--port", str(port), "--ui"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        m = re.fullmatch(
            rf"memoryd ui: http://127\.0\.0\.1:{port}/ui(/[A-Za-z0-9_-]{{22}})/\?token=[A-Za-z0-9_-]{{43}}", line
        )
        assert m, line
        deadline = time.monotonic() + 30  # the line comes as uvicorn starts, just before it listens
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        with httpx2.Client(follow_redirects=True) as c:
            first = c.get(line.split(": ", 1)[1])
            ui = f"/ui{m.group(1)}"
            assert first.status_code == 200 and str(first.url).endswith(f"{ui}/memories")
            assert f'href="{ui}/static/console.css"' in first.text
            assert c.get(f"http://127.0.0.1:{port}{ui}/health").status_code == 200  # the cookie, path /ui/<path>
            assert httpx2.get(f"http://127.0.0.1:{port}{ui}/health").status_code == 401
            assert c.get(f"http://127.0.0.1:{port}/ui/health").status_code == 404  # the cookie, off its path
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    r = subprocess.run([MCP, "--ui"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode != 0 and "--ui needs --transport http" in r.stderr


def test_vendored_assets_carry_their_licences() -> None:
    vendor = Path(__file__).parents[1] / "src" / "memoryd" / "ui" / "static" / "vendor"
    names = sorted(p.name for p in vendor.iterdir())
    assert names == ["cytoscape-3.35.0.min.js", "cytoscape-LICENSE.txt", "htmx-2.0.11.min.js", "htmx-LICENSE.txt"]
    assert "Cytoscape Consortium" in (vendor / "cytoscape-LICENSE.txt").read_text()
    assert "Zero-Clause BSD" in (vendor / "htmx-LICENSE.txt").read_text()


async def test_empty_states_say_how_memories_arrive(web: httpx2.AsyncClient, console: Engine) -> None:
    """Issue 25: an empty store's pages are not blank boxes; each says where its rows come from."""
    memories = (await web.get("/memories")).text
    assert "No memory matches these filters." in memories and "memoryd import FILE" in memories
    assert "mem_save" in memories
    sessions = (await web.get("/sessions")).text
    assert "No sessions yet." in sessions and "memoryd install claude" in sessions
    review = (await web.get("/review")).text
    assert "Nothing waits for review." in review and "memoryd import --gate review" in review
    page = (await web.get("/memories", params={"q": "nothing like this"})).text
    assert "every readable scope" in page
    # every page starts with a skip link to the main content
    assert re.search(r'<body[^>]*>\s*<a class="skip-link" href="#main">Skip to content</a>', memories)
    assert '<main id="main" tabindex="-1">' in memories


async def test_entity_graph_stays_small_enough_to_read(web: httpx2.AsyncClient, console: Engine) -> None:
    """Issue 25: 136 nodes with 9 px labels were unreadable; the graph shows at most 20 entities, 3 memories each."""
    for i in range(30):
        for j in range(5):
            console.memorize(f"The module src/pkg/mod{i}.py handles step {j} of the import pipeline", source="user")
    graph = (await web.get("/entities/graph.json")).json()
    entities = [n for n in graph["nodes"] if n["kind"] == "entity"]
    memories = [n for n in graph["nodes"] if n["kind"] == "memory"]
    assert len(entities) == 20 and len(memories) <= 60 and len(graph["nodes"]) <= 80
    per = {e["id"]: sum(1 for x in graph["edges"] if e["id"] in (x["source"], x["target"])) for e in entities}
    assert max(per.values()) <= 3
