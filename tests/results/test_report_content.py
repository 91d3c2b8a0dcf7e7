"""The markdown and HTML reports, against fixed results files (snapshots)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from proctor.results import Report, build_report, load_run, write_report
from proctor.results._html import render_html
from proctor.results._markdown import render_markdown

DATA = Path(__file__).parent / "data"
RUNS = ["gpt-4-1-mini_20261101T090000Z.json", "claude-sonnet-4_20261102T090000Z.json"]
STAMP = "2026-11-03T10:00:00+00:00"


def fixture_report(*names: str) -> Report:
    return build_report([(load_run(DATA / n), DATA / n) for n in names or RUNS], generated_at=STAMP)


def test_markdown_report(snapshot: SnapshotAssertion) -> None:
    assert render_markdown(fixture_report()) == snapshot


def test_markdown_report_follows_lobus_layout() -> None:
    text = render_markdown(fixture_report())
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[:3] == ["# Eval Report", "## Model Comparison", "## Overall Scores"]
    assert "## Rubric Details: openai/gpt-4.1-mini" in headings
    assert "### vacation-dates -- Trial 3 (score: 0.28)" in headings
    assert "| Eval | openai/gpt-4.1-mini | anthropic/claude-sonnet-4 |" in text
    assert "| Model | Pass Rate | Avg Score | p50 Latency | Total Tokens | Cost |" in text
    # Lobu's cell with the trial pass rate's 95% Wilson interval added (2/3: 0.208-0.939)
    assert "| lookup-email | PASS 1.00 (100% [44-100%]) | FAIL 0.67 (67% [21-94%]) |" in text
    assert "**Trace IDs:** `trace-vacation-dates-3-1`" in text
    assert "- **Precise**: FAIL (2/3 trials) -- Vague about the dates." in text
    assert "\n\n\n" not in text


def test_markdown_escapes_table_cells_and_clips_long_replies() -> None:
    data = load_run(DATA / RUNS[0])
    data["model"] = "team|model"
    trial = data["cases"][0]["trials"][2]
    trial["turns"][1]["content"] = "x" * 600
    text = render_markdown(build_report([(data, None)], generated_at=STAMP))
    assert "| team\\|model |" in text
    assert "**Agent:** " + "x" * 500 + "...\n" in text


def test_same_model_twice_gets_distinct_columns_and_a_run_given_twice_one() -> None:
    assert [r.label for r in fixture_report(RUNS[0], RUNS[0]).runs] == ["openai/gpt-4.1-mini"]
    first, second = load_run(DATA / RUNS[0]), load_run(DATA / RUNS[0])
    second["run_id"] = "gpt-4-1-mini_20261102T000000Z"
    report = build_report([(first, None), (second, None)], generated_at=STAMP)
    assert [r.label for r in report.runs] == [
        "openai/gpt-4.1-mini (gpt-4-1-mini_20261101T090000Z)",
        "openai/gpt-4.1-mini (gpt-4-1-mini_20261102T000000Z)",
    ]
    assert all(len(case.by_run) == 2 for case in report.cases)


def _strip_assets(html: str) -> str:
    """The page without its stylesheet and script (snapshotted apart from them)."""
    html = re.sub(r"<style>.*?</style>", "<style>…</style>", html, flags=re.S)
    return re.sub(r"<script>.*?</script>", "<script>…</script>", html, flags=re.S)


def test_html_report(snapshot: SnapshotAssertion) -> None:
    assert _strip_assets(render_html(fixture_report())) == snapshot


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_html_report_is_self_contained_and_complete() -> None:
    html = render_html(fixture_report())
    parser = _Collector()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert "src" not in attrs, f"<{tag}> loads {attrs['src']}"
        if tag == "link":
            pytest.fail(f"<link> to {attrs.get('href')}")
        if tag == "a":
            assert attrs["href"].startswith("#"), attrs["href"]
    assert "@import" not in html and "url(" not in html and "fetch(" not in html
    assert "default-src 'none'" in html  # the page may not load anything even if a template changed
    trials = [attrs for tag, attrs in parser.tags if tag == "details" and attrs.get("class") == "trial"]
    assert len(trials) == 24  # every trial of both runs
    assert {t["data-status"] for t in trials} == {"passed", "failed", "error"}
    # escaped content: an agent's markup is shown, never rendered
    assert "Bob is in | Sales &lt;b&gt;team&lt;/b&gt;" in html
    for text in ("Judge reasoning", "Trajectory metrics", "tool_call_precision", "trace-vacation-dates-3-1", "Costs"):
        assert text in html


def test_write_report_writes_both_files(tmp_path: Path) -> None:
    written = write_report(fixture_report(), markdown=tmp_path / "r.md", html=tmp_path / "r.html")
    assert written == [tmp_path / "r.md", tmp_path / "r.html"]
    assert (tmp_path / "r.md").read_text().startswith("# Eval Report")
    assert (tmp_path / "r.html").stat().st_mode & 0o044 == 0o044  # readable by others: reports are shared


def test_html_shows_what_other_features_add_to_results() -> None:
    """Arms, case metrics, unknown trial fields and check details are shown, whatever their shape."""
    data = load_run(DATA / RUNS[0])
    data["model"] = None
    case = data["cases"][0]
    case["metrics"] = {"journey_success_rate": 0.5, "by_arm": {"withheld": 0.4, "supplied": 0.9}}
    trial = case["trials"][0]
    trial["arm"] = "withheld"
    trial["composite"] = {"score": 0.61, "components": {"state": 1.0}}
    trial["checks"][0]["details"] = {"leaked_facts": ["salary"], "metrics": {"precision": 0.5}}
    trial["turns"][1]["tool_calls"] = [{"name": "bare"}]
    html = render_html(build_report([(data, None)], generated_at=STAMP))
    assert "gpt-4-1-mini_20261101T090000Z" in html  # no model: the run id names the column
    assert "arm withheld" in html and "journey_success_rate" in html and "by_arm.supplied" in html
    assert "composite" in html and "leaked_facts" in html and "precision" in html
    assert "<code>bare</code>" in html


def test_html_report_leads_with_what_failed_grouped_by_check_then_case() -> None:
    html = render_html(fixture_report())
    failures = html[html.index('<section id="failures">') : html.index('<section id="overview">')]
    assert html.index('<section id="failures">') < html.index('<section id="overview">')
    groups = re.findall(r"<summary><span class=\"badge (\w+)\">(\d+)</span> <b>([^<]+)</b>", failures)
    # the largest groups first: the vacation-dates checks failed in 1 GPT and 2 Claude trials each
    assert groups[:3] == [
        ("failed", "3", "contains &#39;2025-06-09&#39;"),
        ("failed", "3", "llm-rubric: concrete dates"),
        ("failed", "3", "rubric: hr-tone.rubric.md"),
    ]
    assert ("error", "1", "trial error: TargetTimeout") in groups
    # each failed trial links to its trial in the report, which exists
    links = re.findall(r'<a href="#([^"]+)">', failures)
    assert links and all(f'id="{anchor}"' in html for anchor in links)
    assert "case-time-off-vacation-dates--anthropic-claude-sonnet-4--1" in links


def test_html_report_says_when_nothing_failed() -> None:
    data = load_run(DATA / RUNS[0])
    data["cases"] = [data["cases"][1]]  # out-next-week: every trial passed
    html = render_html(build_report([(data, None)], generated_at=STAMP))
    assert "Nothing failed" in html


def test_target_templates_are_placeholders_and_run_ids_do_not_wrap() -> None:
    data = load_run(DATA / RUNS[0])
    data["target"] = "http POST http://127.0.0.1:8000/api/sessions/{{ session_id }}/messages <b>"
    html = render_html(build_report([(data, None)], generated_at=STAMP))
    assert "{{ session_id }}" not in html
    assert 'sessions/<var title="filled in per session">&lt;session_id&gt;</var>/messages &lt;b&gt;' in html
    assert '<code class="run-id">gpt-4-1-mini_20261101T090000Z</code>' in html
    assert "code.run-id { white-space: nowrap; }" in html
    markdown = render_markdown(build_report([(data, None)], generated_at=STAMP))
    assert "Agent: `http POST http://127.0.0.1:8000/api/sessions/<session_id>/messages <b>`" in markdown


def test_trend_chart_links_each_run_and_escapes_labels() -> None:
    from proctor.results._charts import Point, trend_chart

    svg = trend_chart(
        [Point("<b>old</b>", 0.5, 0.2, 0.8, "/runs/a?x=1&y=2"), Point("new", None), Point("newest", 1.0)],
        title="Pass <rate>",
        color="#123456",
        percent=True,
    )
    assert "<b>" not in svg and "&lt;b&gt;old&lt;/b&gt;: 50% [20%-80%]" in svg
    assert '<a href="/runs/a?x=1&amp;y=2">' in svg
    assert svg.count("<circle") == 2  # the run without a value is a gap
    assert "Pass &lt;rate&gt;" in svg
    assert "no data" in trend_chart([], title="t", color="#000")
