"""The web console in a real browser: Debian's Chromium driven by Playwright (no browser download).

`memoryd ui` runs as a subprocess on a seeded store; the tests click through every page and
action, check the audit events they cause through the engine, try XSS payloads in every field
and a cross-site POST, and save a screenshot of each page into MEMORYD_UI_SCREENSHOTS (default:
a temporary folder; `MEMORYD_UI_SCREENSHOTS=docs/screenshots` regenerates docs/CONSOLE.md's).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import Engine
from memoryd.search.embed import UseEmbedder
from memoryd.shared.config import Settings

from .conftest import make_repo
from .mcp.clients import server_env

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2"><svg onload="window.__xss=3">'
XSS_SHORT = '<svg onload="window.__xss=3"><img src=x>'  # fits the 64-character fields (source, tag; limits.py)


@pytest.fixture(scope="module")
def playwright_browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError("chromium is not installed; `make test` installs it (apt-get install chromium)")
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("MEMORYD_UI_SCREENSHOTS")
    folder = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Console:
    url: str  # the printed address (with the token)
    base: str  # http://127.0.0.1:PORT
    home: Path
    repo: Path
    ids: dict[str, Any] = field(default_factory=dict)

    @contextmanager
    def engine(self) -> Iterator[Engine]:
        """The same store as the CLI sees it (every scope), to check what the browser's clicks recorded."""
        with Engine.open(Settings(home=self.home), cwd=self.repo, embedder=_EMBEDDER[0], authority="operator") as e:
            yield e


_EMBEDDER: list[UseEmbedder] = []


@contextmanager
def _serve(home: Path, repo: Path) -> Iterator[str]:
    proc = subprocess.Popen([MEMORYD, "ui", "--no-browser", "--port", "0", "--cwd", str(repo)],
                            env=server_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("memoryd ui: http://127."), (line, proc.stderr.read() if proc.stderr else "")
        yield line.split(": ", 1)[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _seed(e: Engine, other: Engine) -> dict[str, Any]:
    ids: dict[str, Any] = {}
    ids["db"] = e.memorize("We use PostgreSQL 16 for the main database, not MongoDB, because we need transactions",
                           source="user", tags=["db", "infra"], title="Main database").atom_id  # fmt: skip
    ids["solid"] = e.memorize("决定从 React 切到 Solid，理由是性能+体积", source="user", type="decision",
                              tags=["frontend"], triggers=["solid", "react"]).atom_id  # fmt: skip
    ids["push"] = e.memorize("Never push directly to main; open a pull request and wait for one review",
                             source="user", type="warning").atom_id  # fmt: skip
    e.correct(ids["push"], "confirm_necessary", "team rule since 2025")
    ids["pool"] = e.memorize("The PostgreSQL connection pool is 20 connections in production (pgbouncer)",
                             source="agent").atom_id  # fmt: skip
    ids["tz"] = e.memorize("abble 偏好 autonomous + 中文汇总", source="openclaw", type="preference").atom_id
    ids["deploy"] = e.memorize("Deploys run from the release branch through the GitHub Actions workflow deploy.yml",
                               source="user", type="playbook").atom_id  # fmt: skip
    ids["lint"] = e.memorize("Run ruff and mypy before every commit; CI rejects warnings", source="user").atom_id
    ids["secret"] = e.memorize("Staging uses the shared test account ops@acme.example", source="agent").atom_id
    e.govern(ids["secret"], "quarantine", "check whether this is allowed in memory")
    s = e.session_start(source="claude-code", title="Fix the login bug")
    ids["session"] = s.id
    ids["login"] = e.memorize("login.py crashed because get_session() returns None after a token refresh",
                              source="agent").atom_id  # fmt: skip
    e.recall("why does login fail")
    e.handoff("Fixed the login.py null pointer in get_session(); next: integration tests for the refresh path")
    e.session_end(s.id, "Fixed the login bug; tests pending")
    ids["pool2"] = e.correct(
        ids["pool"],
        "replace",
        "pgbouncer was resized",
        "The PostgreSQL connection pool is 40 connections in production (pgbouncer)",
    ).new_atom_id
    held = [e.memorize(text, gate="hold") for text in (
        "maybe cache sessions in redis for the login path",
        "the flaky test in test_login.py might be a timing issue",
        "用户可能更喜欢深色主题",
    )]  # fmt: skip
    ids["promotions"] = [r.promotion_id for r in held]
    ids["held"] = [r.atom_id for r in held]
    ids["payroll"] = other.memorize("Payroll runs on the 25th through the bank's SFTP drop", source="user").atom_id
    other.mark_sensitive(True)
    ids["locked"] = other.scope.scope_hash
    return ids


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory, embedder: UseEmbedder) -> Iterator[Console]:
    _EMBEDDER[:] = [embedder]
    root = tmp_path_factory.mktemp("console")
    repo, payroll = make_repo(root / "widgets"), make_repo(root / "payroll", remote="git@github.com:acme/payroll.git")
    home = root / "home"
    with Engine.open(Settings(home=home), cwd=repo, embedder=embedder) as e, \
            Engine.open(Settings(home=home), cwd=payroll, embedder=embedder) as other:  # fmt: skip
        ids = _seed(e, other)
    with _serve(home, repo) as url:
        yield Console(url=url, base=url.split("/?")[0], home=home, repo=repo, ids=ids)


@pytest.fixture
def page(playwright_browser: Any, console: Console) -> Iterator[Any]:
    context = playwright_browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.problems = []  # type: ignore[attr-defined]
    p.on("console", lambda m: p.problems.append(m.text) if m.type in ("error", "warning") else None)
    p.on("pageerror", lambda exc: p.problems.append(str(exc)))
    p.goto(console.url)
    try:
        yield p
    finally:
        context.close()


def _flash(page: Any) -> str:
    return str(page.locator(".notice").first.inner_text())


def test_first_visit_trades_the_token_for_a_cookie(page: Any, console: Console, shots: Path) -> None:
    assert page.url == console.base + "/memories" and "token" not in page.url
    cookies = page.context.cookies()
    assert len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # HttpOnly: invisible to script
    page.goto(console.base + "/health")
    assert page.locator("h1").inner_text() == "Health"
    fresh = page.context.browser.new_context()
    try:
        other = fresh.new_page()
        other.goto(console.base + "/memories")
        assert "this console needs its token" in other.content()
    finally:
        fresh.close()


def test_memories_filter_search_and_page(page: Any, console: Console, shots: Path) -> None:
    rows = page.locator("table.atoms tbody tr")
    assert rows.count() >= 8 and "memories match" in page.locator(".summary").inner_text()
    page.screenshot(path=str(shots / "memories.png"), full_page=True)
    page.select_option("select[name=type]", "decision")  # htmx: the list follows the filter
    page.wait_for_url(re.compile(r"type=decision"))
    page.wait_for_function("document.querySelectorAll('table.atoms tbody tr').length === 1")
    assert "Solid" in rows.first.inner_text()
    page.select_option("select[name=type]", "")
    page.select_option("select[name=status]", "quarantined")
    page.wait_for_url(re.compile(r"status=quarantined"))
    page.wait_for_function("document.querySelector('table.atoms tbody').innerText.includes('[quarantined')")
    page.goto(console.base + "/memories?limit=3")
    page.click("text=Older memories →")
    assert "before=" in page.url and rows.count() == 3
    page.goto(console.base + "/memories")
    page.fill("#q", "PostgreSQL connection pool")  # htmx: typing searches
    page.wait_for_selector("td.score")
    top = rows.first.inner_text()
    assert "40 connections" in top and re.search(r"0\.\d{3}", top) and "semantic" in top
    page.screenshot(path=str(shots / "search.png"), full_page=True)
    page.fill("input[name=tag]", "db")
    page.press("input[name=tag]", "Enter")
    page.wait_for_url(re.compile(r"tag=db"))
    assert not page.problems, page.problems  # type: ignore[attr-defined]


def test_memory_page_actions_leave_audit_events(page: Any, console: Console, shots: Path) -> None:
    ids = console.ids
    page.goto(console.base + f"/memories/{ids['pool2']}")
    assert page.locator("h2", has_text="Supersede chain").count() == 1
    assert page.locator("pre.diff .add").inner_text().startswith("+The PostgreSQL connection pool is 40")
    page.screenshot(path=str(shots / "memory.png"), full_page=True)

    page.goto(console.base + f"/memories/{ids['lint']}")
    page.fill("#edit textarea[name=content]", "Run ruff, mypy and pytest before every commit; CI rejects warnings")
    page.fill("#edit input[name=tags]", "ci, quality")
    page.fill("#edit input[name=reason]", "pytest too")
    page.click("#edit button[type=submit]")
    assert "Saved" in _flash(page)
    page.select_option("#correct select[name=action]", "confirm_necessary")
    page.fill("#correct input[name=reason]", "it is a hard rule")
    page.click("#correct button[type=submit]")
    assert "confirm_necessary applied" in _flash(page)
    page.select_option("#govern select[name=action]", "quarantine")
    page.fill("#govern input[name=reason]", "double-check")
    page.click("#govern button[type=submit]")
    page.select_option("#govern select[name=action]", "restore")
    page.fill("#govern input[name=reason]", "checked, fine")
    page.click("#govern button[type=submit]")
    with console.engine() as e:
        history = [(ev.action, ev.actor, ev.reason) for ev in e.history(ids["lint"])]
        assert history == [("create", "user", None), ("update", "console", "pytest too"),
                           ("confirm_necessary", "console", "it is a hard rule"),
                           ("quarantine", "console", "double-check"), ("restore", "console", "checked, fine")]  # fmt: skip
        assert e.get(ids["lint"]).tags == ["ci", "quality"] and e.get(ids["lint"]).status == "active"

    page.goto(console.base + f"/memories/{ids['tz']}")
    page.select_option("#correct select[name=action]", "replace")
    page.fill("#correct textarea[name=new_content]", "abble 偏好 autonomous + 繁體中文汇总")
    page.fill("#correct input[name=reason]", "prefers Traditional")
    page.click("#correct button[type=submit]")
    replaced = page.url.split("?")[0].rsplit("/", 1)[1]
    assert replaced != ids["tz"] and "繁體" in page.locator("pre.content-box").first.inner_text()
    page.select_option("#govern select[name=action]", "derive_lesson")
    page.fill("#govern textarea[name=lesson_content]", "Write summaries for abble in Traditional Chinese")
    page.fill("#govern input[name=reason]", "keep the lesson")
    page.click("#govern button[type=submit]")
    lesson = page.url.split("?")[0].rsplit("/", 1)[1]
    page.goto(console.base + f"/memories/{ids['deploy']}")
    page.select_option("#correct select[name=action]", "negate")
    page.click("#correct button[type=submit]")  # no reason: the browser's own check stops it
    assert page.url.endswith(ids["deploy"])
    page.fill("#correct input[name=reason]", "we deploy from main now")
    page.click("#correct button[type=submit]")
    page.fill("#tombstone input[name=reason]", "obsolete")
    page.check("#tombstone input[name=confirm]")
    page.click("#tombstone button[type=submit]")
    assert "[tombstoned: content destroyed]" in page.locator("pre.content-box").first.inner_text()
    with console.engine() as e:
        assert e.get(ids["tz"]).status == "superseded" and e.get(replaced).supersedes == ids["tz"]
        assert e.get(lesson).type == "lesson" and e.get(replaced).status == "sealed"
        assert [ev.action for ev in e.history(ids["deploy"])] == ["create", "negate", "tombstone"]
        assert all(ev.actor == "console" for ev in e.history(ids["deploy"])[1:])
        assert e.verify_chain().ok
    assert not page.problems, page.problems  # type: ignore[attr-defined]


def _overflow(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"))


def test_keyboard_screen_reader_and_narrow_layouts(playwright_browser: Any, console: Console, shots: Path) -> None:
    """Issue 25: a skip link first in the Tab order; review buttons that name their row and rows that name their
    repository; at 390 px and at 200% zoom, no page wider than the window, even with a 200-character unbroken title."""
    with console.engine() as e:
        long_id = e.memorize("A memory whose title is one unbroken 200-character token, as pasted from a log",
                             title="x" * 200, source="user").atom_id  # fmt: skip
    try:
        context = playwright_browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(console.url)
        page.goto(console.base + "/review")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "skip-link"
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        first = console.ids["promotions"][0]
        button = page.locator(f"button[name=single][value='promote:{first}']")
        assert (
            button.get_attribute("aria-label") == f"Promote #{first}: maybe cache sessions in redis for the login path"
        )
        assert page.get_by_role("button", name=f"Reject #{first}: maybe cache sessions").count() == 1
        assert page.locator("table.review tbody tr .repo").first.inner_text() == "acme/widgets"
        context.close()
        for width, scale, name in ((390, 1, "narrow-390"), (640, 2, "zoom-200")):  # 1280 px at 200% = 640 CSS px
            context = playwright_browser.new_context(
                viewport={"width": width, "height": 844}, device_scale_factor=scale
            )
            page = context.new_page()
            page.goto(console.url)
            for path in ("/memories", "/review", f"/memories/{long_id}", "/health"):
                page.goto(console.base + path)
                assert _overflow(page) <= 0, (width, path, _overflow(page))
            page.goto(console.base + "/memories")
            # readable, not squeezed: the memory text takes the window's width, not one word (or letter) per line
            box = page.locator("table.atoms td.content").first.bounding_box()
            assert box is not None and box["width"] >= 0.8 * width - 40, (width, box)
            page.screenshot(path=str(shots / f"memories-{name}.png"), full_page=True)
            context.close()
    finally:
        with console.engine() as e:
            e.govern(long_id or "", "tombstone", "test memory for the narrow layouts")


def test_correction_form_speaks_plainly_and_a_replace_retitles(page: Any, console: Console, shots: Path) -> None:
    """Issue 25: no action preselected (a destructive default is one Enter away), options in plain words, and the
    replaced text gets a title from its own words and the tags the form gives."""
    with console.engine() as e:
        old = e.memorize("Invoices are emailed as PDF on the first of the month", title="Invoice emails",
                         tags=["email"], source="user").atom_id  # fmt: skip
    page.goto(f"{console.base}/memories/{old}")
    for form in ("#correct", "#govern"):
        assert page.locator(f"{form} select[name=action]").input_value() == ""
        assert page.locator(f"{form} select[name=action] option").first.inner_text() == "Choose…"
    labels = page.locator("#correct select[name=action] option").all_inner_texts()
    assert (
        "It is wrong: mark it false (negate)" in labels
        and "It is a rule that must always hold (confirm_necessary)" in labels
    )
    page.fill("#correct input[name=reason]", "no action chosen")
    page.click("#correct button[type=submit]")  # the browser refuses the form: nothing happens
    assert page.url.endswith(f"/memories/{old}")
    page.screenshot(path=str(shots / "correct-form.png"), full_page=True)
    page.select_option("#correct select[name=action]", "replace")
    page.fill(
        "#correct textarea[name=new_content]", "Invoices are uploaded to the customer portal on the first working day"
    )
    page.fill("#correct input[name=new_tags]", "billing, portal")
    page.fill("#correct input[name=reason]", "we stopped emailing invoices")
    page.click("#correct button[type=submit]")
    assert "replace applied" in _flash(page)
    with console.engine() as e:
        new = e.get(e.get(old).superseded_by or "")
        assert new.title == "Invoices are uploaded to the customer portal on the first working day"
        assert new.tags == ["billing", "portal"]


def test_a_new_memory_appears_without_reload(page: Any, console: Console) -> None:
    """Issue 25: live updates. The first page of the list refreshes itself every 5 s (htmx polling, no script of
    our own); a memory saved elsewhere (here: another engine on the same store) appears without a reload."""
    page.goto(console.base + "/memories")
    assert page.locator("#results[data-live]").count() == 1
    page.evaluate("window.__marker = 1")  # survives only if the page is not reloaded
    with console.engine() as e:
        live = e.memorize("Live update check: the release train leaves every Thursday at noon", source="user").atom_id
    try:
        page.wait_for_selector("text=the release train leaves every Thursday", timeout=15_000)
        assert page.evaluate("window.__marker") == 1
        page.goto(console.base + "/memories?q=release+train")
        assert page.locator("#results[data-live]").count() == 0  # a search result does not move under the reader
    finally:
        with console.engine() as e:
            e.govern(live or "", "tombstone", "test memory for live updates")


def test_review_promotes_and_rejects(page: Any, console: Console, shots: Path) -> None:
    page.goto(console.base + "/review")
    assert page.locator("table.review tbody tr").count() == 3
    page.screenshot(path=str(shots / "review.png"), full_page=True)
    first = console.ids["promotions"][0]
    page.click(f"button[name=single][value='reject:{first}']")
    assert f"rejected: #{first}" in _flash(page)
    page.wait_for_selector("html[data-console=ready]", state="attached")
    page.check("input.select-all")  # console.js ticks every row
    assert page.locator("input[name=ids]:checked").count() == 2
    page.click("button[name=action][value=promote]")
    assert "promoted:" in _flash(page) and page.locator("td.empty").inner_text().startswith("Nothing waits for review.")
    assert "memoryd import --gate review" in page.locator("td.empty .hint").inner_text()  # an empty state says how
    with console.engine() as e:
        atoms = console.ids["held"]
        assert e.get(atoms[0]).status == "sealed" and e.history(atoms[0])[-1].action == "reject"
        assert [e.get(a).status for a in atoms[1:]] == ["active", "active"]
        assert all(e.history(a)[-1].actor == "console" for a in atoms)


def test_sessions_show_what_was_written_recalled_and_handed_off(page: Any, console: Console, shots: Path) -> None:
    page.goto(console.base + "/sessions")
    page.screenshot(path=str(shots / "sessions.png"), full_page=True)
    page.click("text=Fix the login bug")
    assert page.url.endswith(console.ids["session"])
    assert "get_session() returns None" in page.locator("table.atoms").inner_text()
    assert "get_session() returns None" in page.locator("table.recalls").inner_text()  # what the recall returned
    assert "integration tests" in page.locator("ul.plain").inner_text()
    page.screenshot(path=str(shots / "session.png"), full_page=True)


def test_entities_graph_renders_from_local_assets(page: Any, console: Console, shots: Path) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(console.base + "/entities")
    page.wait_for_selector("#graph canvas")
    page.wait_for_function("Number(document.querySelector('#graph').dataset.nodes) > 5")
    page.wait_for_timeout(300)
    page.screenshot(path=str(shots / "entities.png"), full_page=True)
    assert all(u.startswith((console.base, "data:")) for u in requests), requests
    page.click("table.entities a:text('PostgreSQL')")
    assert "entity:library:PostgreSQL" in page.url and page.locator("table.atoms tbody tr").count() >= 2
    assert not page.problems, page.problems  # type: ignore[attr-defined]


def test_health_verifies_the_chain_and_keeps_sensitive_scopes_locked(page: Any, console: Console, shots: Path) -> None:
    page.goto(console.base + "/health")
    page.click("text=Verify the chain")
    page.wait_for_selector("#chain .notice.ok")
    assert "Chain verified" in page.locator("#chain").inner_text() and page.url.endswith("/health")  # htmx swap
    page.click("text=Run the checks")
    page.wait_for_selector("#doctor table.doctor")
    assert "index_db" in page.locator("#doctor").inner_text()
    row = page.locator("table.scopes tr", has_text="acme/payroll")
    assert "locked" in row.inner_text()
    page.screenshot(path=str(shots / "health.png"), full_page=True)
    row.locator("input[name=reason]").fill("need the payroll date for the release note")
    row.locator("button").click()
    assert "memoryd scope grant --minutes 30" in _flash(page)
    page.goto(console.base + f"/memories/{console.ids['payroll']}")
    assert "403" in page.locator("h1").inner_text() and "no running grant" in page.content()
    with console.engine() as e:
        assert e.store.access_requests()[-1]["reason"] == "need the payroll date for the release note"
        assert [ev.action for ev in e.history(console.ids["payroll"])] == ["create"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, embedder: UseEmbedder) -> Iterator[Console]:
    """A store whose every field holds markup that would run if it were not escaped."""
    _EMBEDDER[:] = [embedder]
    root = tmp_path_factory.mktemp("hostile")
    repo, home = make_repo(root / "widgets"), root / "home"
    with Engine.open(Settings(home=home), cwd=repo, embedder=embedder) as e:
        a = e.memorize(f"Deploy notes {XSS} for login.py", source=XSS_SHORT, title=XSS, tags=[XSS_SHORT, "t"],
                       triggers=[XSS]).atom_id  # fmt: skip
        assert a
        e.correct(a, "confirm_necessary", XSS)
        b = e.memorize(f"Second note about login.py {XSS}", source="user").atom_id
        e.update(b, content=f"Second note about login.py, edited {XSS}", reason=XSS)
        s = e.session_start(title=XSS, source=XSS_SHORT)
        e.recall(f"login.py {XSS}")
        e.handoff(f"handoff {XSS}")
        e.session_end(s.id, XSS)
        held = e.memorize(f"maybe {XSS}", gate="hold")
        with e.store.transaction() as tx:
            tx.link(a, f"entity:file:{XSS}", "mentions")
            tx.link(b, f"entity:file:{XSS}", "mentions")
        ids = {"a": a, "b": b, "session": s.id, "held": held.atom_id}
    with Engine.open(
        Settings(home=home), cwd=make_repo(root / "vault", remote="git@github.com:acme/vault.git"), embedder=embedder
    ) as other:
        other.memorize("The vault unseal keys are split between three people", source="user")
        other.mark_sensitive(True)
        other.request_sensitive_read(XSS)  # the reason is shown on the Health page
    with _serve(home, repo) as url:
        yield Console(url=url, base=url.split("/?")[0], home=home, repo=repo, ids=ids)


def test_markup_in_every_field_never_runs(playwright_browser: Any, hostile: Console, shots: Path) -> None:
    context = playwright_browser.new_context()
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        page.goto(hostile.url)
        ids = hostile.ids
        pages = ["/memories", "/memories?status=any&q=login.py", f"/memories/{ids['a']}", f"/memories/{ids['b']}",
                 f"/memories/{ids['held']}", "/review", "/sessions", f"/sessions/{ids['session']}", "/entities",
                 "/health"]  # fmt: skip
        for path in pages:
            page.goto(hostile.base + path)
            page.wait_for_load_state("networkidle")
            assert page.evaluate("window.__xss") is None, path
            assert page.locator("img[src=x], svg[onload], script:not([src])").count() == 0, path
            assert "<script>window.__xss=1</script>" in page.locator("main").inner_text(), path  # shown as text
        page.goto(hostile.base + "/entities")
        page.wait_for_selector("#graph canvas")
        page.click(f"table.entities a:text('{XSS[:20]}')")
        assert page.evaluate("window.__xss") is None
        page.goto(hostile.base + f"/memories/{ids['a']}")
        page.screenshot(path=str(shots / "xss-escaped.png"), full_page=True)
        assert violations == []  # nothing even tried to run: escaped, not merely blocked by the CSP
    finally:
        context.close()


class _Attacker(BaseHTTPRequestHandler):
    target = ""
    csrf = ""

    def do_GET(self) -> None:
        fields = "<input name=action value=negate><input name=reason value=pwned>"
        if "with-token" in self.path:
            fields += f"<input name=_csrf value={self.csrf}>"
        body = (f"<html><body><form id=f method=post action='{self.target}'>{fields}</form>"
                "<script>document.getElementById('f').submit()</script></body></html>").encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_cross_site_post_is_refused(page: Any, console: Console) -> None:
    target = console.ids["db"]
    _Attacker.target = f"{console.base}/memories/{target}/correct"
    _Attacker.csrf = json.loads(page.get_attribute("body", "hx-headers"))["X-CSRF-Token"]  # as if it had leaked
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)  # another origin (port) on the same site
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # The console runs on its own 127.x.y.z, so 127.0.0.1:<other port> is another site: the cookie is not
        # sent (401); were it sent, the Origin/Fetch metadata check and the CSRF token refuse it (403).
        for path in ("/", "/with-token"):
            with page.expect_navigation(url=re.compile(re.escape(_Attacker.target))) as nav:
                page.goto(f"http://127.0.0.1:{server.server_port}{path}")
            response = nav.value
            assert (response.status, response.status == 401 or "cross-site request refused" in page.content()) in (
                (401, True), (403, True)), path  # fmt: skip
    finally:
        server.shutdown()
    with console.engine() as e:
        assert [ev.action for ev in e.history(target)] == ["create"]


def test_screenshots_are_saved(shots: Path) -> None:
    names = {p.name: p.stat().st_size for p in shots.glob("*.png")}
    for name in ("memories", "search", "memory", "review", "sessions", "session", "entities", "health"):
        assert names.get(f"{name}.png", 0) > 10_000, (name, shots)
