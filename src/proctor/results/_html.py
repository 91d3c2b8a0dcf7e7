"""The self-contained HTML report: one file, inline CSS, JS and SVG, nothing fetched when it opens.

It leads with what failed and why (failed checks grouped by check, then case, each linking to its trial),
then the overview by model (pass rates with Wilson intervals, pass@k and pass^k, scores, latency,
tokens, costs), per-case pass rates with intervals, score distributions, latency per turn, filters by
tag, status and model, and every trial: its transcript with tool calls, each check with its reason,
judge reasoning, arms, trajectory metrics and other check details, and costs by role.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from proctor.results._charts import Bar, Series, histogram, interval_bars, interval_pill, line_chart, medians
from proctor.results._failures import failure_groups
from proctor.results._summary import Report, ReportRun
from proctor.scoring import percentile, wilson_interval

__all__ = ["render_html", "target_markup"]

TEMPLATES = Path(__file__).parent / "templates"
"""The report's template, stylesheet and script."""

_JUDGE_KEYS = {"judge", "criteria", "judge_score", "verdict", "raw_outputs", "threshold"}
_METRIC_KEYS = ("metrics", "trajectory")
_TRIAL_KEYS = {
    "trial",
    "status",
    "passed",
    "score",
    "error",
    "error_type",
    "warnings",
    "retries",
    "duration_ms",
    "tokens",
    "costs",
    "trace_ids",
    "trace_id",
    "trace_url",
    "turns",
    "checks",
    "arm",
}


@dataclass(slots=True)
class _Cell:
    status: str
    passed: int
    scored: int
    rate: float | None
    low: float | None
    high: float | None
    avg_score: float | None
    pass_k: float | None
    pill: str


@dataclass(slots=True)
class _Judged:
    name: str
    status: str
    reason: str
    judge: dict[str, Any]
    criteria: list[dict[str, Any]]
    extra: dict[str, Any]


@dataclass(slots=True)
class _Trial:
    anchor: str
    model: str
    color: str
    data: dict[str, Any]
    tags: list[str]
    judged: list[_Judged] = field(default_factory=list)
    metrics: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    details: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed_checks(self) -> int:
        return sum(1 for c in self.data.get("checks") or [] if c["status"] in ("failed", "error"))


@dataclass(slots=True)
class _Row:
    name: str
    suite: str
    description: str | None
    tags: list[str]
    anchor: str
    statuses: list[str]
    cells: list[_Cell | None]
    trials: list[_Trial]
    metrics: list[tuple[str, dict[str, Any]]]


def _cell(case: dict[str, Any], color: str) -> _Cell:
    trials = case.get("trials") or []
    passed = sum(1 for t in trials if t["status"] == "passed")
    scored = sum(1 for t in trials if t["status"] in ("passed", "failed"))
    interval = wilson_interval(passed, scored)
    rate = passed / scored if scored else None
    low, high = interval if interval else (None, None)
    pill = interval_pill(rate, low, high, color) if rate is not None else ""
    return _Cell(
        case.get("status", "error"), passed, scored, rate, low, high, case.get("avg_score"), case.get("pass_k"), pill
    )


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as `a.b` keys (lists and scalars kept as they are)."""
    if not isinstance(value, dict):
        return {prefix or "value": value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        out.update(_flat(item, name) if isinstance(item, dict) else {name: item})
    return out


def _trial(run: ReportRun, case: dict[str, Any], trial: dict[str, Any]) -> _Trial:
    view = _Trial(
        trial_anchor(case.get("suite") or "", case["name"], run.label, trial["trial"]),
        run.label,
        run.color,
        trial,
        case.get("tags") or [],
    )
    for check in trial.get("checks") or []:
        details = check.get("details") or {}
        if "judge" in details or "criteria" in details:
            extra = {k: v for k, v in details.items() if k in ("verdict", "judge_score", "threshold", "raw_outputs")}
            view.judged.append(
                _Judged(
                    check["name"],
                    check["status"],
                    check.get("reason", ""),
                    details.get("judge") or {},
                    details.get("criteria") or [],
                    extra,
                )
            )
        for key in _METRIC_KEYS:
            if isinstance(details.get(key), dict):
                view.metrics.append((check["name"], _flat(details[key])))
        other = {k: v for k, v in details.items() if k not in _JUDGE_KEYS and k not in _METRIC_KEYS}
        if other:
            view.details.append((check["name"], other))
    view.extra = {k: v for k, v in trial.items() if k not in _TRIAL_KEYS}
    return view


def _rows(report: Report) -> list[_Row]:
    rows = []
    for case in report.cases:
        cells: list[_Cell | None] = []
        trials: list[_Trial] = []
        metrics: list[tuple[str, dict[str, Any]]] = []
        for run in report.runs:
            data = case.by_run.get(run.label)
            if data is None:
                cells.append(None)
                continue
            cells.append(_cell(data, run.color))
            trials += [_trial(run, data, t) for t in data.get("trials") or []]
            if isinstance(data.get("metrics"), dict):
                metrics.append((run.label, _flat(data["metrics"])))
        statuses = sorted({c.status for c in cells if c is not None})
        rows.append(
            _Row(case.name, case.suite, case.description, case.tags, case.anchor, statuses, cells, trials, metrics)
        )
    return rows


def _overview(run: ReportRun) -> dict[str, Any]:
    s = run.summary
    statistics = run.data.get("summary") or {}  # pass@k and pass^k as `build_report` computed them
    latencies = [lat for group in run.latency_by_turn() for lat in group]
    return {
        "run": run,
        "s": s,
        "case_ci": run.case_interval,
        "trial_rate": s.trials_passed / (s.trials_passed + s.trials_failed)
        if s.trials_passed + s.trials_failed
        else None,
        "trial_ci": run.trial_interval,
        "pass_at_k": statistics.get("pass_at_k"),
        "pass_hat_k": statistics.get("pass_hat_k"),
        "p95": percentile(latencies, 95),
        "costs": (run.data.get("summary") or {}).get("costs") or {},
    }


_TEMPLATE_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)[^}]*\}\}")


def target_markup(text: str) -> Markup:
    """A target's description with its URL templates (`{{ session_id }}`) shown as placeholders.

    The target is recorded as configured, so an HTTP target's URL still holds the variables each session
    fills in; printed raw they read like a template the report forgot to render.
    """
    parts, last = [], 0
    for match in _TEMPLATE_VARIABLE.finditer(text):
        parts.append(escape(text[last : match.start()]))
        parts.append(Markup('<var title="filled in per session">&lt;{}&gt;</var>').format(match.group(1)))
        last = match.end()
    parts.append(escape(text[last:]))
    return Markup("").join(parts)


def trial_anchor(suite: str, name: str, label: str, trial: int) -> str:
    """The HTML id of a trial in the report (`ReportCase.anchor`, the run's label, the trial number)."""
    return f"case-{_slug(f'{suite}-{name}')}--{_slug(label)}--{trial}"


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).lower()


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def render_html(report: Report) -> str:
    """Render the report as one self-contained HTML page."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pretty=_pretty, num=_fmt, pct=_pct, slug=_slug, target=target_markup)
    env.globals.update(trial_anchor=trial_anchor)
    bars = []
    for r in report.runs:
        scored = r.summary.trials_passed + r.summary.trials_failed
        low, high = r.trial_interval or (None, None)
        rate = r.summary.trials_passed / scored if scored else None
        bars.append(Bar(r.label, rate, low, high, r.color, "(trials passed, 95% Wilson interval)"))
    pass_rates = interval_bars(bars, title="Trial pass rate by model, with 95% Wilson intervals")
    histograms = [histogram(r.scores(), title=f"{r.label}: trial scores", color=r.color) for r in report.runs]
    latency = line_chart(
        [Series(r.label, medians(r.latency_by_turn()), r.color) for r in report.runs],
        title="Median reply latency per turn",
        y_label="ms (median)",
    )
    return env.get_template("report.html.j2").render(
        report=report,
        overview=[_overview(r) for r in report.runs],
        rows=_rows(report),
        failures=failure_groups((r.label, r.data) for r in report.runs),
        charts={"pass_rates": pass_rates, "histograms": histograms, "latency": latency},
        css=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        js=(TEMPLATES / "report.js").read_text(encoding="utf-8"),
    )
