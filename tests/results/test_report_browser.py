"""The HTML report in a real headless browser: Debian's chromium driven by Playwright.

Checks that the page loads with no console errors and no network request, that the filters work and
that a failed trial's transcript opens; saves screenshots under `tests/artifacts/` (git-ignored).
Needs `/usr/bin/chromium` (`make system-deps`); Playwright never downloads a browser here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.browser import ARTIFACTS, PageWatch, chromium_context, visible
from proctor.results import build_report, load_run, write_report

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = [(load_run(DATA / n), DATA / n) for n in sorted(p.name for p in DATA.glob("*.json"))[::-1]]
    path = tmp_path_factory.mktemp("report") / "evals-report.html"
    write_report(build_report(runs, generated_at="2026-11-03T10:00:00+00:00"), html=path)
    return path


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


def test_report_loads_filters_and_opens_a_failed_transcript(browser_context: Any, report_file: Path) -> None:
    page = browser_context.new_page()
    watch = PageWatch(page)
    page.goto(report_file.as_uri())
    page.wait_for_selector("#filter-count:has-text('trials shown')")
    assert page.inner_text("h1") == "Eval report"
    assert page.inner_text("#filter-count") == "24 of 24 trials shown"
    assert len(page.query_selector_all("#overview tbody tr")) == 2
    assert len(page.query_selector_all("svg.chart")) == 4  # pass rates, two histograms, latency per turn

    page.select_option("#filter-status", "failed")
    assert page.inner_text("#filter-count") == "5 of 24 trials shown"
    statuses = {t.get_attribute("data-status") for t in visible(page, "details.trial")}
    assert statuses == {"failed"}
    rows = [r.query_selector("a").inner_text() for r in visible(page, "tr.case-row")]
    assert rows == ["vacation-dates", "lookup-email", "json-reply"]  # out-next-week failed nowhere
    assert not page.is_visible("#case-time-off-out-next-week")

    page.select_option("#filter-model", "anthropic/claude-sonnet-4")
    assert page.inner_text("#filter-count") == "3 of 24 trials shown"
    page.select_option("#filter-model", "")
    page.select_option("#filter-status", "")
    page.select_option("#filter-tag", "directory")
    assert page.inner_text("#filter-count") == "6 of 24 trials shown"
    assert [r.query_selector("a").inner_text() for r in visible(page, "tr.case-row")] == ["lookup-email"]
    page.select_option("#filter-tag", "")
    page.select_option("#filter-status", "error")
    assert page.inner_text("#filter-count") == "1 of 24 trials shown"
    page.select_option("#filter-status", "failed")

    trial = visible(page, "details.trial")[0]
    assert not trial.query_selector(".transcript").is_visible()
    trial.query_selector("summary").click()
    transcript = trial.query_selector(".transcript")
    assert transcript.is_visible()
    assert "When is Dave on vacation?" in transcript.inner_text()
    assert "Dave has some time off in June, I think." in transcript.inner_text()
    assert "get_time_off" in transcript.inner_text()
    body = trial.inner_text()
    for text in ("No concrete dates are given.", "Vague about the dates.", "trace-vacation-dates-3-1", "COSTS"):
        assert text in body
    ARTIFACTS.mkdir(exist_ok=True)
    trial.screenshot(path=str(ARTIFACTS / "report-failed-trial.png"))

    page.click("#open-failed")
    assert all(t.get_attribute("open") is not None for t in visible(page, "details.trial"))
    page.click("#close-all")
    assert not page.query_selector_all("details.trial[open]")
    page.select_option("#filter-status", "")
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)

    assert watch.errors == []
    assert watch.requests == [report_file.as_uri()]  # nothing fetched besides the page itself
    page.close()


def test_a_link_to_a_trial_opens_it(browser_context: Any, report_file: Path) -> None:
    page = browser_context.new_page()
    watch = PageWatch(page)
    anchor = "case-json-output-json-reply--openai-gpt-4-1-mini--2"
    page.goto(f"{report_file.as_uri()}#{anchor}")
    trial = page.wait_for_selector(f"#{anchor}")
    assert trial.get_attribute("open") is not None
    assert "no reply within 15 s" in trial.inner_text()
    assert watch.errors == []
    page.close()


def test_what_failed_leads_the_page_and_its_links_open_the_trial(browser_context: Any, report_file: Path) -> None:
    page = browser_context.new_page()
    watch = PageWatch(page)
    page.goto(report_file.as_uri())
    first = page.query_selector("main section")
    assert first is not None and first.get_attribute("id") == "failures"
    assert page.evaluate("document.getElementById('failures').getBoundingClientRect().top") < 200  # above the fold
    anchor = "case-json-output-json-reply--openai-gpt-4-1-mini--2"
    page.click(f"#failures a[href='#{anchor}']")
    trial = page.wait_for_selector(f"#{anchor}[open]")
    assert "no reply within 15 s" in trial.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-what-failed.png"))
    assert watch.errors == []
    page.close()
