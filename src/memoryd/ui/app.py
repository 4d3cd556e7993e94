"""The console's pages and actions: each reads or writes through one Engine method, nothing more."""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..engine import visible_content
from ..shared.errors import InvalidInput, MemorydError, Rejected
from ..shared.models import ATOM_TYPES, CORRECT_ACTIONS, GOVERN_ACTIONS, CorrectResult, GovernResult
from .security import CSRF_FIELD, bidi_visible

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["ACTOR", "build_app"]

log = logging.getLogger("memoryd")
T = TypeVar("T")
HERE = Path(__file__).parent
ACTOR = "console"  # who the audit chain names for every change made here
GRAPH_ENTITIES, GRAPH_PER_ENTITY = 20, 3  # the entity graph's size: labels stay readable
# The correction and governance actions in plain words (the value sent is the action's name); none preselected.
CORRECT_LABELS = [
    ("negate", "It is wrong: mark it false (negate)"),
    ("replace", "The text is out of date: replace it (new text below)"),
    ("confirm_actual", "It is right: confirm it as a fact (confirm_actual)"),
    ("confirm_necessary", "It is a rule that must always hold (confirm_necessary)"),
    ("demote", "It is only a possibility: lower its certainty (demote)"),
]
GOVERN_LABELS = [
    ("quarantine", "Hide it from agents while someone checks it (quarantine; restore undoes it)"),
    ("restore", "Bring a quarantined memory back, or undo a supersession or merge (restore)"),
    ("seal", "Keep it but never show it to agents again (seal)"),
    ("derive_lesson", "Keep a lesson learned from it (lesson text below)"),
]
if {v for v, _ in CORRECT_LABELS} != set(CORRECT_ACTIONS) or {v for v, _ in GOVERN_LABELS} != {
        *GOVERN_ACTIONS, "restore"} - {"tombstone"}:  # fmt: skip
    raise RuntimeError("every correction and governance action needs its plain-words label")
SECTION = {"memory": "memories", "session": "sessions", "entity": "entities", "chain": "health", "doctor": "health"}
NAV = [("memories", "Memories"), ("review", "Review"), ("sessions", "Sessions"), ("entities", "Entities"),
       ("health", "Health")]  # fmt: skip


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.ChainableUndefined,
        trim_blocks=True, lstrip_blocks=True, finalize=bidi_visible,  # bidi controls shown, not obeyed
    )  # fmt: skip
    env.filters["dt"] = lambda v: v.strftime("%Y-%m-%d %H:%M") if isinstance(v, datetime) else (v or "")
    env.filters["visible"] = visible_content
    env.filters["snippet"] = lambda text, n=160: text if len(text) <= n else text[: n - 1] + "…"
    env.filters["short"] = lambda h, n=10: (h or "")[:n]
    env.filters["path"] = lambda v: quote(str(v), safe=":@")  # one URL path segment (entity ids hold ':')
    return env


class _Flash:
    """Messages shown once after an action redirects (kept server-side: no text in the URL)."""

    def __init__(self, size: int = 256) -> None:
        self._items: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._size = size

    def put(self, kind: str, text: str) -> str:
        key = secrets.token_urlsafe(8)
        self._items[key] = (kind, text)
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return key

    def pop(self, key: str | None) -> tuple[str, str] | None:
        return self._items.pop(key, None) if key else None


def build_app(engine: Engine | Callable[[], Engine]) -> Starlette:
    """The console's Starlette app over `engine` (or a function returning it, for a lazily opened one).

    Wrap it in `security.ConsoleGuard`; `memoryd.ui.create_app` does both.
    """
    env = _environment()
    flash = _Flash()
    get_engine: Callable[[], Engine] = engine if callable(engine) else (lambda: engine)

    async def call(fn: Callable[[Engine], T]) -> T:
        return await run_in_threadpool(lambda: fn(get_engine()))

    def render(request: Request, name: str, http_status: int = 200, **ctx: Any) -> HTMLResponse:
        base = request.scope.get("root_path", "")
        notice = flash.pop(request.query_params.get("done"))
        html = env.get_template(name).render(
            base=base, csrf=request.scope.get("state", {}).get("csrf", ""), csrf_field=CSRF_FIELD, nav=NAV,
            section=SECTION.get(name.removesuffix(".html"), name.removesuffix(".html")), notice=notice, **ctx,
        )  # fmt: skip
        return HTMLResponse(html, status_code=http_status)

    def redirect(request: Request, path: str, kind: str, text: str) -> RedirectResponse:
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}{path}?{urlencode({'done': flash.put(kind, text)})}", status_code=303)

    # -- memories ---------------------------------------------------------------------------

    async def memories(request: Request) -> Response:
        from ..engine.console import BrowseQuery

        p = request.query_params
        query = BrowseQuery(
            q=_opt(p.get("q")), scope=_opt(p.get("scope")), type=_opt(p.get("type")),
            status=None if p.get("status") == "any" else (_opt(p.get("status")) or "active"),
            decay=_opt(p.get("decay")), tag=_opt(p.get("tag")), source=_opt(p.get("source")),
            created_from=_date(p.get("from"), "from"), created_to=_date(p.get("to"), "to"),
            before=_opt(p.get("before")), limit=_int(p.get("limit"), 50, "limit"),
        )  # fmt: skip
        page, scopes = await call(lambda e: (e.browse(query), e.console_scopes()))
        decay = await call(lambda e: e.decay_of([*page.atoms, *(h.atom for h in page.hits or [])]))
        args = {k: v for k, v in p.items() if k not in ("before", "done")}
        next_url = f"?{urlencode({**args, 'before': page.next_before})}" if page.next_before else None
        return render(request, "memories.html", query=query, result=page, scopes=scopes, decay=decay, args=args,
                      next_url=next_url, types=ATOM_TYPES, statuses=_statuses(), count_cap=_count_cap())  # fmt: skip

    async def memory(request: Request, error: str | None = None, status: int = 200,
                     form: dict[str, str] | None = None) -> Response:  # fmt: skip
        atom_id = request.path_params["atom_id"]
        detail = await call(lambda e: e.memory_detail(atom_id))
        return render(request, "memory.html", status, d=detail, a=detail.atom, error=error, form=form or {},
                      correct_labels=CORRECT_LABELS, govern_labels=GOVERN_LABELS)  # fmt: skip

    async def memory_action(request: Request) -> Response:
        atom_id = request.path_params["atom_id"]
        kind = request.path_params["kind"]
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str) and k != CSRF_FIELD}
        reason = form.get("reason", "").strip()
        try:
            await call(lambda e: e.get(atom_id))  # the engine's sensitive gate, before any change
            if kind == "edit":
                if not reason:
                    raise InvalidInput("reason is required: say why you edit this memory")
                await call(lambda e: e.update(
                    atom_id, content=_text(form.get("content")), title=_opt(form.get("title")),
                    tags=_list(form.get("tags")), triggers=_list(form.get("triggers")), actor=ACTOR, reason=reason,
                ))  # fmt: skip
                return redirect(request, f"/memories/{atom_id}", "ok", "Saved: the edit is in the audit history.")
            action = form.get("action", "")
            r: CorrectResult | GovernResult
            if kind == "correct":
                if not action:
                    raise InvalidInput("choose what is wrong with this memory (nothing is preselected)")
                r = await call(lambda e: e.correct(atom_id, action, reason, _text(form.get("new_content")) or None,
                                                   actor=ACTOR))  # fmt: skip
                new_id = getattr(r, "new_atom_id", None)
                if action == "replace" and r.effect == "applied" and new_id:
                    # the replaced text gets its own title and tags (the form's, or a title from the new text)
                    await call(lambda e: _retitle(e, new_id, form, reason))
            elif kind == "govern" and action == "restore":
                r = await call(lambda e: e.restore(atom_id, reason, actor=ACTOR))
            elif kind == "govern":
                if not action:
                    raise InvalidInput("choose an action (nothing is preselected)")
                if action == "tombstone" and form.get("confirm") != "yes":
                    raise InvalidInput("tombstoning destroys the content: tick the box to confirm")
                r = await call(lambda e: e.govern(atom_id, action, reason, _text(form.get("lesson_content")) or None,
                                                  actor=ACTOR))  # fmt: skip
            else:
                raise HTTPException(404, f"no action {kind!r}")
            target = getattr(r, "new_atom_id", None) or getattr(r, "lesson_atom_id", None) or atom_id
            return redirect(request, f"/memories/{target}", "ok", f"{action} applied to {atom_id}.")
        except Rejected as exc:
            return await memory(request, error=f"{action} rejected: {exc.message}", status=409, form=form)
        except InvalidInput as exc:
            return await memory(request, error=exc.message, status=400, form=form)

    # -- review -----------------------------------------------------------------------------

    async def review(request: Request) -> Response:
        p = request.query_params
        scope = _opt(p.get("scope")) or "global"
        types = [p["type"]] if p.get("type") else None
        lo, hi = _float(p.get("min"), 0.0, "min"), _float(p.get("max"), 1.0, "max")
        rows, scopes = await call(lambda e: (e.review_pending(scope=scope, limit=100, min_score=lo, max_score=hi,
                                                              types=types), e.console_scopes()))  # fmt: skip
        return render(request, "review.html", rows=rows, scopes=scopes, types=ATOM_TYPES, args=dict(p.items()))

    async def review_action(request: Request) -> Response:
        form = await request.form()
        single = str(form.get("single") or "")
        action, ids_raw = (single.split(":", 1)[0], [single.split(":", 1)[1]]) if ":" in single else (
            str(form.get("action") or ""), [str(v) for v in form.getlist("ids")])  # fmt: skip
        if action not in ("promote", "reject"):
            raise InvalidInput(f"unknown review action {action!r}; expected promote or reject")
        ids = [_int(v, 0, "promotion id") for v in ids_raw]
        if not ids:
            raise InvalidInput("select at least one promotion")
        done, skipped = await call(lambda e: e.decide_promotions(action, ids, actor=ACTOR))
        past = {"promote": "promoted", "reject": "rejected"}[action]
        text = f"{past}: {', '.join(f'#{i}' for i in done) or 'none'}" + "".join(
            f"; skipped #{s['promotion_id']}: {s['reason']}" for s in skipped)  # fmt: skip
        return redirect(request, "/review", "ok" if done else "error", text)

    # -- sessions ---------------------------------------------------------------------------

    async def sessions(request: Request) -> Response:
        before = _opt(request.query_params.get("before"))
        rows, next_before = await call(lambda e: e.sessions_page(before=before, limit=50))
        return render(request, "sessions.html", rows=rows, next_url=f"?before={next_before}" if next_before else None)

    async def session(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        detail = await call(lambda e: e.session_detail(session_id))
        return render(request, "session.html", s=detail)

    # -- entities ---------------------------------------------------------------------------

    async def entities(request: Request) -> Response:
        graph = await call(lambda e: e.entity_graph())
        top = [n for n in graph.nodes if n["kind"] == "entity"]
        return render(request, "entities.html", top=top, memories=len(graph.nodes) - len(top))

    async def entity_graph(request: Request) -> Response:
        # readable at a glance (issue 25): at most 20 entities and 3 memories each (80 nodes, not 175)
        graph = await call(lambda e: e.entity_graph(entities=GRAPH_ENTITIES, per_entity=GRAPH_PER_ENTITY))
        return JSONResponse(graph.model_dump())

    async def entity(request: Request) -> Response:
        entity_id = request.path_params["entity_id"]
        before = _opt(request.query_params.get("before"))
        page = await call(lambda e: e.entity_page(entity_id, before=before))
        return render(request, "entity.html", entity_id=entity_id, result=page,
                      next_url=f"?before={page.next_before}" if page.next_before else None)  # fmt: skip

    # -- health -----------------------------------------------------------------------------

    async def health(request: Request) -> Response:
        h = await call(lambda e: e.health_overview())
        peak = max((n for _, n in h.growth), default=0)
        return render(request, "health.html", h=h, peak=peak)

    async def health_chain(request: Request) -> Response:
        report = await call(lambda e: e.verify_chain())
        name = "_chain.html" if request.headers.get("hx-request") else "chain.html"
        return render(request, name, report=report)

    async def health_doctor(request: Request) -> Response:
        findings, stats = await call(lambda e: (e.doctor(), e.stats()))
        name = "_doctor.html" if request.headers.get("hx-request") else "doctor.html"
        return render(request, name, findings=findings, indexes=stats.indexes.model_dump())

    async def request_access(request: Request) -> Response:
        form = await request.form()
        scope_hash, reason = str(form.get("scope_hash") or ""), str(form.get("reason") or "")
        r = await call(lambda e: e.request_access(scope_hash, reason))
        return redirect(request, "/health", "ok", r["message"])

    # -- plumbing ---------------------------------------------------------------------------

    async def home(request: Request) -> Response:
        return RedirectResponse(f"{request.scope.get('root_path', '')}/memories", status_code=303)

    async def on_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, MemorydError):
            status, code, message = exc.status, exc.code, exc.message
        elif isinstance(exc, HTTPException):
            status, code, message = exc.status_code, "http", exc.detail or "not found"
        else:
            log.exception("console page failed: %s", request.url.path)
            status, code, message = 500, "internal", "the console failed on this page; see the server log"
        if request.url.path.endswith(".json"):
            return JSONResponse({"error": code, "message": message}, status_code=status)
        return render(request, "error.html", status, status=status, code=code, message=message)

    routes = [
        Route("/", home),
        Route("/memories", memories),
        Route("/memories/{atom_id}", memory),
        Route("/memories/{atom_id}/{kind}", memory_action, methods=["POST"]),
        Route("/review", review),
        Route("/review", review_action, methods=["POST"]),
        Route("/sessions", sessions),
        Route("/sessions/{session_id}", session),
        Route("/entities", entities),
        Route("/entities/graph.json", entity_graph),
        Route("/entities/{entity_id:path}", entity),
        Route("/health", health),
        Route("/health/chain", health_chain),
        Route("/health/doctor", health_doctor),
        Route("/health/request-access", request_access, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        MemorydError: on_error, HTTPException: on_error, Exception: on_error,
    }  # fmt: skip
    return Starlette(routes=routes, exception_handlers=handlers)


def _statuses() -> tuple[str, ...]:
    from ..engine.console import STATUSES

    return STATUSES


def _count_cap() -> int:
    from ..engine.console import COUNT_CAP

    return COUNT_CAP


def _retitle(e: Any, atom_id: str, form: dict[str, str], reason: str) -> None:
    """After a replace from the console: the new memory's title and tags follow its new text (issue 25)."""
    atom = e.get(atom_id)
    title = (form.get("new_title") or "").strip() or " ".join(atom.content.split())[:80].rstrip()
    tags = _list(form.get("new_tags")) if "new_tags" in form else list(atom.tags)
    if title != (atom.title or "") or list(tags or []) != list(atom.tags):
        e.update(atom_id, title=title, tags=tags, actor=ACTOR, reason=f"title and tags for the replaced text: {reason}")


def _opt(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def _text(value: str | None) -> str | None:
    """Form text as typed: browsers send CRLF line ends, memories keep LF."""
    return None if value is None else value.replace("\r\n", "\n")


def _list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _int(value: str | None, default: int, name: str) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {value!r}") from None


def _float(value: str | None, default: float, name: str) -> float:
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a number between 0.0 and 1.0, got {value!r}") from None


def _date(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a date like 2026-12-31, got {value!r}") from None
