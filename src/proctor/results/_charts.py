"""Inline SVG charts for the HTML report and `proctor view`: no library, no script, nothing fetched.

Every function returns SVG markup with its text escaped; the template inserts it as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from proctor.scoring import percentile

__all__ = ["Bar", "Point", "Series", "histogram", "interval_bars", "interval_pill", "line_chart", "trend_chart"]

_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


@dataclass(frozen=True, slots=True)
class Bar:
    """A rate with its confidence interval."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    color: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class Series:
    """A line: y values at x = 1, 2, ... (`None` for a gap)."""

    label: str
    values: Sequence[float | None]
    color: str


@dataclass(frozen=True, slots=True)
class Point:
    """One run on a trend: its value, optional interval, and where a click on it leads."""

    label: str
    """What the point's tooltip names (the run's id and date)."""
    value: float | None
    low: float | None = None
    high: float | None = None
    href: str | None = None


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def interval_bars(bars: Sequence[Bar], *, title: str, width: int = 520) -> str:
    """Horizontal bars (0..100 %) with whiskers for the interval."""
    left, right, row = 150, 60, 26
    height = 30 + row * len(bars)
    plot = width - left - right
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" {_FONT}>',
        f"<title>{escape(title)}</title>",
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot * tick
        parts.append(f'<line x1="{_num(x)}" y1="8" x2="{_num(x)}" y2="{height - 18}" stroke="#ddd"/>')
        parts.append(f'<text x="{_num(x)}" y="{height - 5}" text-anchor="middle" fill="#666">{int(tick * 100)}%</text>')
    for index, bar in enumerate(bars):
        y = 10 + index * row
        parts.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{escape(_short(bar.label, 24))}</text>')
        if bar.value is None:
            parts.append(f'<text x="{left + 4}" y="{y + 12}" fill="#666">no scored trials</text>')
            continue
        parts.append(
            f'<rect x="{left}" y="{y + 2}" width="{_num(plot * bar.value)}" height="14" fill="{bar.color}" '
            f'opacity="0.85"><title>{escape(bar.label)}: {bar.value:.0%} {escape(bar.note)}</title></rect>'
        )
        if bar.low is not None and bar.high is not None:
            x1, x2 = left + plot * bar.low, left + plot * bar.high
            parts.append(
                f'<path d="M{_num(x1)} {y + 9}H{_num(x2)}M{_num(x1)} {y + 4}V{y + 14}M{_num(x2)} {y + 4}V{y + 14}" '
                'stroke="#222" stroke-width="1.5" fill="none"/>'
            )
        parts.append(f'<text x="{left + plot + 6}" y="{y + 12}">{bar.value:.0%}</text>')
    parts.append("</svg>")
    return "".join(parts)


def interval_pill(value: float, low: float | None, high: float | None, color: str) -> str:
    """A small 0..100 % bar with the interval, for a table cell."""
    width, height = 90, 12
    parts = [
        f'<svg class="pill" viewBox="0 0 {width} {height}" width="{width}" height="{height}" aria-hidden="true">',
        f'<rect x="0" y="3" width="{width}" height="6" fill="#eee"/>',
        f'<rect x="0" y="3" width="{_num(width * value)}" height="6" fill="{color}"/>',
    ]
    if low is not None and high is not None:
        parts.append(
            f'<path d="M{_num(width * low)} 6H{_num(width * high)}M{_num(width * low)} 1V11'
            f'M{_num(width * high)} 1V11" stroke="#222" stroke-width="1"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def histogram(values: Sequence[float], *, title: str, color: str, bins: int = 10, width: int = 240) -> str:
    """Histogram of scores in 0..1."""
    height, bottom, top = 120, 20, 14
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value * bins)))] += 1
    tallest = max(1, *counts)
    plot_h = height - bottom - top
    step = (width - 20) / bins
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" {_FONT}>',
        f"<title>{escape(title)}</title>",
        f'<text x="10" y="11" font-weight="600">{escape(_short(title, 34))}</text>',
    ]
    for index, count in enumerate(counts):
        bar_h = plot_h * count / tallest
        x = 10 + index * step
        parts.append(
            f'<rect x="{_num(x + 1)}" y="{_num(top + plot_h - bar_h)}" width="{_num(step - 2)}" '
            f'height="{_num(bar_h)}" fill="{color}"><title>{index / bins:.1f}-{(index + 1) / bins:.1f}: '
            f"{count}</title></rect>"
        )
    parts.append(f'<line x1="10" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#999"/>')
    parts.append(f'<text x="10" y="{height - 5}" fill="#666">0</text>')
    parts.append(f'<text x="{width - 10}" y="{height - 5}" text-anchor="end" fill="#666">1</text>')
    if not values:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#666">no scores</text>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(series: Sequence[Series], *, title: str, y_label: str, width: int = 520) -> str:
    """Lines over x = 1..n (e.g. median latency per turn), one per series, with a legend."""
    height, left, bottom, top = 200, 56, 34, 14
    count = max((len(s.values) for s in series), default=0)
    peak = max((v for s in series for v in s.values if v is not None), default=0.0)
    scale = _nice(peak)
    plot_w = width - left - 16
    plot_h = height - bottom - top
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height + 18 * len(series)}" width="{width}" '
        f'height="{height + 18 * len(series)}" {_FONT}>',
        f"<title>{escape(title)}</title>",
    ]
    for tick in range(5):
        value = scale * tick / 4
        y = top + plot_h - plot_h * tick / 4
        parts.append(f'<line x1="{left}" y1="{_num(y)}" x2="{width - 16}" y2="{_num(y)}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 4}" y="{_num(y + 4)}" text-anchor="end" fill="#666">{_num(value)}</text>')
    parts.append(
        f'<text x="12" y="{top + plot_h / 2}" transform="rotate(-90 12 {top + plot_h / 2})" '
        f'text-anchor="middle" fill="#666">{escape(y_label)}</text>'
    )

    def x_at(index: int) -> float:
        return left + (plot_w * index / (count - 1) if count > 1 else plot_w / 2)

    for index in range(count):
        parts.append(
            f'<text x="{_num(x_at(index))}" y="{top + plot_h + 14}" text-anchor="middle" fill="#666">{index + 1}</text>'
        )
    parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 28}" text-anchor="middle" fill="#666">turn</text>')
    for number, line in enumerate(series):
        points = [
            (x_at(i), top + plot_h - (plot_h * v / scale if scale else 0))
            for i, v in enumerate(line.values)
            if v is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{'M' if i == 0 else 'L'}{_num(x)} {_num(y)}" for i, (x, y) in enumerate(points))
            parts.append(f'<path d="{path}" stroke="{line.color}" stroke-width="2" fill="none"/>')
        for (x, y), value in zip(points, [v for v in line.values if v is not None], strict=True):
            parts.append(
                f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3" fill="{line.color}">'
                f"<title>{escape(line.label)}: {_num(value)} ms</title></circle>"
            )
        legend_y = height + 4 + 18 * number
        parts.append(f'<rect x="{left}" y="{legend_y}" width="12" height="12" fill="{line.color}"/>')
        parts.append(f'<text x="{left + 18}" y="{legend_y + 10}">{escape(line.label)}</text>')
    if not count:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#666">no latencies</text>')
    parts.append("</svg>")
    return "".join(parts)


def _trend_value(value: float, percent: bool, unit: str) -> str:
    return f"{value:.0%}" if percent else f"{value:.4g}{unit}"


def trend_chart(
    points: Sequence[Point],
    *,
    title: str,
    color: str,
    percent: bool = False,
    unit: str = "",
    width: int = 360,
) -> str:
    """Values over successive runs (oldest left), with interval whiskers and each point a link to its run.

    Args:
        points: The runs, oldest first (`None` values leave a gap).
        title: The chart's title (drawn and in its `<title>`).
        color: The line's colour.
        percent: The values are rates in 0..1 (axis 0..100 %).
        unit: A unit appended to values otherwise (` ms`, ` $`).
        width: Width in px.
    """
    height, left, bottom, top = 130, 44, 16, 22
    plot_w, plot_h = width - left - 12, height - bottom - top
    known = [p for p in points if p.value is not None]
    peak = 1.0 if percent else _nice(max((max(p.value or 0, p.high or 0) for p in known), default=0.0))
    parts = [
        f'<svg class="chart trend" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" {_FONT}>',
        f"<title>{escape(title)}</title>",
        f'<text x="{left}" y="13" font-weight="600">{escape(_short(title, 48))}</text>',
    ]
    for tick in (0.0, 0.5, 1.0):
        y = top + plot_h - plot_h * tick
        parts.append(f'<line x1="{left}" y1="{_num(y)}" x2="{width - 12}" y2="{_num(y)}" stroke="#eee"/>')
        shown = f"{tick:.0%}" if percent else f"{peak * tick:.3g}"  # costs are fractions of a cent
        parts.append(f'<text x="{left - 4}" y="{_num(y + 4)}" text-anchor="end" fill="#666">{escape(shown)}</text>')

    def at(index: int, value: float) -> tuple[float, float]:
        x = left + (plot_w * index / (len(points) - 1) if len(points) > 1 else plot_w / 2)
        return x, top + plot_h - (plot_h * value / peak if peak else 0)

    placed = [(at(i, p.value), p) for i, p in enumerate(points) if p.value is not None]
    if len(placed) > 1:
        path = " ".join(f"{'M' if i == 0 else 'L'}{_num(x)} {_num(y)}" for i, ((x, y), _) in enumerate(placed))
        parts.append(f'<path d="{path}" stroke="{color}" stroke-width="1.5" fill="none"/>')
    for (x, y), point in placed:
        if point.low is not None and point.high is not None:
            y_low, y_high = at(0, point.low)[1], at(0, point.high)[1]
            parts.append(f'<path d="M{_num(x)} {_num(y_low)}V{_num(y_high)}" stroke="{color}" opacity="0.5"/>')
        assert point.value is not None
        tip = f"{point.label}: {_trend_value(point.value, percent, unit)}"
        if point.low is not None and point.high is not None:
            tip += f" [{_trend_value(point.low, percent, unit)}-{_trend_value(point.high, percent, unit)}]"
        dot = f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3.5" fill="{color}"><title>{escape(tip)}</title></circle>'
        parts.append(f'<a href="{escape(point.href)}">{dot}</a>' if point.href else dot)
    if not placed:
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" text-anchor="middle" fill="#666">no data</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def medians(groups: Sequence[Sequence[float]]) -> list[float | None]:
    """The median of each group (`None` for an empty one)."""
    return [percentile(group, 50) for group in groups]


def _nice(peak: float) -> float:
    """A round axis maximum at or above `peak`."""
    if peak <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(peak))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if peak <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
