"""The viewer's Starlette app: server-rendered pages over the run store, and live progress as server-sent events.

Routes:

* `/`: runs over time per model (pass rate with 95 % Wilson intervals, cost, latency), runs in progress,
  every run.
* `/runs/{id}`: what failed and why (failed checks grouped by check, then case), then every case, with
  filters; a run still in progress shows its live progress instead.
* `/runs/{id}/cases/{n}`: one case's trials: transcripts, tool calls, checks with reasons, judge verdicts.
* `/runs/{id}/events?offset=N`: the run's journal from byte `N` on, one `trial` event per finished trial,
  then `done` once its results file is written.
* `/compare?a=ID&b=ID`: two runs side by side with `proctor compare`'s paired statistics.

Pages carry their CSS and script inline (a per-response nonce), and a Content-Security-Policy that lets
them fetch nothing but their own event stream.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from proctor.errors import ConfigError
from proctor.results import RunSummary
from proctor.results._html import target_markup
from proctor.view._data import LiveRun, RunStore, read_journal
from proctor.view._gate import Gate
from proctor.view._pages import (
    case_url,
    case_view,
    compare_view,
    model_trends,
    pretty,
    run_url,
    run_view,
    trial_rate,
)

__all__ = ["ViewOptions", "create_app"]

TEMPLATES = Path(__file__).parent / "templates"

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; img-src data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


@dataclass(frozen=True, slots=True)
class ViewOptions:
    """How the viewer serves.

    Attributes:
        token: Every request must carry it (`?token=`, a cookie, or a bearer header); `None`: no token.
        loopback: The viewer is bound to a loopback address: requests for any other `Host` are refused.
        poll_seconds: How often a live page's event stream looks at the journal.
        stopping: Set when the server shuts down: open event streams end at once (a server waiting for
            them would cancel them and log an error).
    """

    token: str | None = None
    loopback: bool = True
    poll_seconds: float = 0.25
    stopping: threading.Event = field(default_factory=threading.Event)


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(num=_fmt, pct=_pct, pretty=pretty, target=target_markup)
    env.globals.update(run_url=run_url, case_url=case_url, trial_rate=trial_rate)
    env.globals["css"] = (TEMPLATES / "view.css").read_text(encoding="utf-8")
    env.globals["js"] = (TEMPLATES / "view.js").read_text(encoding="utf-8")
    return env


class _Viewer:
    """The route handlers over one store."""

    def __init__(self, store: RunStore, options: ViewOptions) -> None:
        self.store = store
        self.options = options
        self.env = _environment()

    def page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        html = self.env.get_template(template).render(nonce=nonce, **context)
        headers = {
            "content-security-policy": _CSP.format(nonce=nonce),
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cache-control": "no-store",
        }
        return HTMLResponse(html, status_code=status, headers=headers)

    def _run(self, run_id: str) -> RunSummary:
        try:
            return self.store.get(run_id)
        except ConfigError as exc:
            raise HTTPException(404, str(exc)) from None

    def _data(self, run: RunSummary) -> dict[str, Any]:
        try:
            return self.store.load(run)
        except ConfigError as exc:
            raise HTTPException(410, f"{exc} (`proctor runs --prune` forgets runs whose file is gone)") from None

    async def runs(self, request: Request) -> Response:
        runs = self.store.runs()
        return self.page(
            "runs.html.j2",
            runs=runs,
            trends=model_trends(runs),
            live=self.store.live_runs(runs),
            history=self.store.history,
            previous_of=_previous_runs(runs),
        )

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            run = self.store.get(run_id)
        except ConfigError as exc:
            live = self.store.live(run_id)
            if live is None:
                raise HTTPException(404, str(exc)) from None
            return self.live_page(live)
        if run.run_id != run_id:  # a prefix, unless a run in progress has exactly this id
            live = self.store.live(run_id)
            if live is not None:
                return self.live_page(live)
            return RedirectResponse(run_url(run.run_id), status_code=307)  # the address names the run in full
        # the runs of its matrix in the order they ran (the store lists newest first): the baseline first
        group = [r for r in reversed(self.store.runs()) if r.run_group == run.run_group] if run.run_group else []
        return self.page("run.html.j2", group=group, **run_view(run, self._data(run)))

    def live_page(self, live: LiveRun) -> HTMLResponse:
        cases: dict[str, dict[str, Any]] = {}
        for trial in live.trials:
            entry = cases.setdefault(
                trial["case"], {"name": trial.get("name"), "file": trial.get("file"), "trials": []}
            )
            entry["trials"].append(trial)
        return self.page("live.html.j2", live=live, cases=cases, counts=live.counts())

    async def case(self, request: Request) -> Response:
        run = self._run(request.path_params["run_id"])
        try:
            context = case_view(run, self._data(run), request.path_params["index"])
        except IndexError:
            raise HTTPException(404, f"run {run.run_id} has no case {request.path_params['index']}") from None
        return self.page("case.html.j2", **context)

    async def compare(self, request: Request) -> Response:
        runs = self.store.runs()
        a_ref, b_ref = request.query_params.get("a", ""), request.query_params.get("b", "")
        context: dict[str, Any] = {"runs": runs, "a_ref": a_ref, "b_ref": b_ref, "result": None, "problem": None}
        if a_ref and b_ref:
            a, b = self._run(a_ref), self._run(b_ref)
            if a.path == b.path:
                context["problem"] = "A and B are the same run: choose two different runs."
            else:
                try:
                    a_cases, b_cases = self.store.cases(a), self.store.cases(b)
                except ConfigError as exc:
                    raise HTTPException(410, str(exc)) from None
                show_all = request.query_params.get("all") == "1"
                context["result"] = compare_view(a, a_cases, b, b_cases, show_all=show_all)
        return self.page("compare.html.j2", **context)

    async def events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        live = self.store.live(run_id)
        if live is None:
            raise HTTPException(404, f"run {run_id} is not in progress")
        try:
            offset = max(0, int(request.query_params.get("offset", "0")))
        except ValueError:
            raise HTTPException(400, "offset must be a byte count") from None
        stream = self._tail(request, live, offset)
        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def _tail(self, request: Request, live: LiveRun, offset: int) -> AsyncIterator[str]:
        """Follow the journal: each new trial as an event; `done` (and the end) once the run is written."""
        yield "retry: 1000\n\n"
        idle = 0.0
        while not self.options.stopping.is_set() and not await request.is_disconnected():
            try:
                chunk = read_journal(live.journal, offset)
            except OSError:  # the journal is removed once the results file is written
                if live.results_file.exists():
                    yield f"event: done\ndata: {_compact({'url': run_url(live.run_id)})}\n\n"
                    return
                yield "event: gone\ndata: {}\n\n"
                return
            offset = chunk.offset
            for trial in chunk.trials:
                yield f"event: trial\nid: {offset}\ndata: {_event(trial)}\n\n"
            idle = 0.0 if chunk.trials else idle + self.options.poll_seconds
            if idle >= 15:  # a comment now and then keeps proxies from closing a quiet stream
                idle = 0.0
                yield ": waiting\n\n"
            await asyncio.sleep(self.options.poll_seconds)

    async def error_page(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return self.page("error.html.j2", status=status, status_code=status, detail=detail)


def _previous_runs(runs: list[RunSummary]) -> dict[str | None, RunSummary]:
    """Each run's previous run of the same model (by results file), for the "vs previous" links."""
    previous: dict[str | None, RunSummary] = {}
    newer: dict[str, RunSummary] = {}
    for run in runs:  # newest first
        if run.model is None:
            continue
        if run.model in newer:
            previous[newer[run.model].path] = run
        newer[run.model] = run
    return previous


def _event(trial: dict[str, Any]) -> str:
    """A journal's trial record as a small event: enough for the live page's counts and failures."""
    failed = [
        {"name": c.get("name"), "status": c.get("status"), "reason": c.get("reason")}
        for c in trial.get("checks") or []
        if c.get("status") in ("failed", "error")
    ]
    event = {
        "case": trial.get("case"),
        "name": trial.get("name"),
        "file": trial.get("file"),
        "trial": trial.get("trial"),
        "status": trial.get("status"),
        "score": trial.get("score"),
        "duration_ms": trial.get("duration_ms"),
        "error": trial.get("error"),
        "failed_checks": failed,
    }
    return _compact(event)


def _compact(value: Any) -> str:
    """One line of JSON (an event's `data:` line; newlines inside strings stay escaped)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def create_app(history: Path, *, results_dirs: list[Path] | None = None, options: ViewOptions | None = None) -> Any:
    """The viewer as an ASGI app.

    Args:
        history: The run history database (it may not exist yet).
        results_dirs: More directories where runs in progress keep their journals.
        options: Token, loopback, polling.

    Returns:
        The ASGI app (the Starlette app inside the token and host gate).
    """
    options = options or ViewOptions()
    viewer = _Viewer(RunStore(history, results_dirs or []), options)
    app = Starlette(
        routes=[
            Route("/", viewer.runs),
            Route("/compare", viewer.compare),
            Route("/runs/{run_id}", viewer.run),
            Route("/runs/{run_id}/cases/{index:int}", viewer.case),
            Route("/runs/{run_id}/events", viewer.events),
        ],
        exception_handlers={HTTPException: viewer.error_page, 404: viewer.error_page},
    )
    return Gate(app, options.token, check_host=options.loopback)
