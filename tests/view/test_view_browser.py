"""`proctor view` in a real browser (Debian's chromium through Playwright): the runs list, a failed case's
transcript one click from its run, compare, and live progress while trials are journaled.

Every page must load with no console error and fetch nothing but the viewer's own 127.0.0.1 address.
Screenshots are kept under `tests/artifacts/` (git-ignored).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live import LIVE, LiveRun
from viewstore import CLAUDE, GPT, HOSTILE

from helpers.browser import PageWatch, chromium_context, screenshot, visible
from proctor.view import ViewOptions, create_app
from servers._serve import serve_app


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect  # the playwright package may be missing: skip

    return playwright_expect(locator)


def only_local(watch: PageWatch, base: str) -> None:
    assert watch.errors == []
    assert watch.requests and all(url.startswith(base + "/") for url in watch.requests), watch.requests


def test_runs_list_and_a_failed_transcript_one_click_from_the_run(browser_context: Any, viewer: str) -> None:
    page = browser_context.new_page()
    watch = PageWatch(page)
    page.goto(viewer + "/")
    assert page.inner_text("h1") == "Runs"
    assert len(page.query_selector_all("tr.run-row")) == 4
    assert len(page.query_selector_all("div.trend")) == 3
    assert len(page.query_selector_all("div.trend svg.chart")) == 9
    screenshot(page, "view-runs.png", full_page=True)

    page.click(f"tr.run-row:has(button[data-copy='{GPT}']) a.open-run")
    page.wait_for_url(f"{viewer}/runs/{GPT}")
    first_section = page.query_selector("main section")
    assert first_section is not None and first_section.get_attribute("id") == "failures"
    assert page.inner_text("#failures h2") == "What failed"
    assert len(visible(page, "details.failure")) == 5
    screenshot(page, "view-run.png", full_page=True)

    # filters: status, check, text
    page.select_option("#filter-status", "failed")
    assert page.inner_text("#filter-count") == "2 of 4 cases shown"
    page.select_option("#filter-status", "")
    page.select_option("#filter-check", "is-json")
    assert [r.query_selector("a").inner_text() for r in visible(page, "tr.case-row")] == ["json-reply"]
    assert [g.get_attribute("data-check") for g in visible(page, "details.failure")] == ["is-json"]
    page.select_option("#filter-check", "")
    page.fill("#filter-text", "no concrete dates")
    assert [r.query_selector("a").inner_text() for r in visible(page, "tr.case-row")] == ["vacation-dates"]
    page.fill("#filter-text", "")
    assert page.inner_text("#filter-count") == "4 of 4 cases shown"

    copy = page.locator(f"button.copy[data-copy='{GPT}']")
    copy.click()
    expect(copy).to_have_attribute("data-copied", "yes")

    # one click from the run page to the failed trial's transcript
    group = page.query_selector("details.failure[data-check='llm-rubric: concrete dates']")
    group.query_selector("a.trial-link").click()
    page.wait_for_url(f"{viewer}/runs/{GPT}/cases/0#trial-3")
    trial = page.query_selector("#trial-3")
    assert trial.is_visible()
    transcript = trial.query_selector("ol.transcript").inner_text()
    assert "When is Dave on vacation?" in transcript and "Dave has some time off in June, I think." in transcript
    assert "get_time_off" in transcript
    body = trial.inner_text()
    assert "No concrete dates are given." in body and "Vague about the dates." in body
    assert page.evaluate("document.querySelector('#trial-3').getBoundingClientRect().top") < 200  # scrolled to it
    screenshot(trial, "view-failed-trial.png")
    only_local(watch, viewer)
    page.close()


def test_compare_two_runs(browser_context: Any, viewer: str) -> None:
    page = browser_context.new_page()
    watch = PageWatch(page)
    page.goto(viewer + "/compare")
    page.select_option("#compare-a", GPT)
    page.select_option("#compare-b", CLAUDE)
    page.click("#compare-go")
    page.wait_for_selector("#comparison")
    assert "McNemar exact p =" in page.inner_text("#stat-pass-fail")
    assert "bootstrap interval" in page.inner_text("#stat-scores")
    shown = len(visible(page, "tr.compare-row"))
    total = len(page.query_selector_all("tr.compare-row"))
    assert 0 < shown <= total == 4
    page.check("#show-unchanged")
    assert len(visible(page, "tr.compare-row")) == 4
    screenshot(page, "view-compare.png", full_page=True)
    page.click("tr.compare-row >> text=in B")
    page.wait_for_url(f"{viewer}/runs/{CLAUDE}/cases/*")
    only_local(watch, viewer)
    page.close()


def test_hostile_text_stays_text(browser_context: Any, viewer: str) -> None:
    page = browser_context.new_page()
    watch = PageWatch(page)
    for path in ("/", f"/runs/{HOSTILE}", f"/runs/{HOSTILE}/cases/0"):
        page.goto(viewer + path)
        assert page.evaluate("window.__pwned") is None
        assert "<script>window.__pwned = 1</script>" in page.inner_text("main")
    only_local(watch, viewer)
    page.close()


def test_live_progress_updates_while_the_run_executes(browser_context: Any, tmp_path: Path) -> None:
    run = LiveRun(tmp_path)
    run.add("first", 1, True)
    with serve_app(create_app(run.history, options=ViewOptions(poll_seconds=0.05))) as base:
        page = browser_context.new_page()
        watch = PageWatch(page)
        page.goto(base + "/")
        page.click(f"#in-progress a[href='/runs/{LIVE}']")
        page.wait_for_selector("#live")
        assert page.inner_text("#count-total") == "1" and page.inner_text("#live-state") == "running"

        run.add("first", 2, False)
        expect(page.locator("#count-total")).to_have_text("2")
        assert page.inner_text("#count-failed") == "1"
        assert "expected reply to contain 'yes'" in page.inner_text("#live-failures")
        run.add("second", 1, True)
        expect(page.locator("#count-total")).to_have_text("3")
        assert page.inner_text("#count-passed") == "2"
        rows = page.query_selector_all("#live-cases tr")
        assert [r.get_attribute("data-case") for r in rows] == ["live.yaml::first", "live.yaml::second"]
        screenshot(page, "view-live.png", full_page=True)

        run.finish()
        page.wait_for_selector("#finished-link")
        page.wait_for_url(f"{base}/runs/{LIVE}")
        page.wait_for_selector("#failures")
        assert "contains 'yes'" in page.inner_text("#failures")
        only_local(watch, base)
        page.close()


def test_live_progress_of_a_real_run(browser_context: Any, tmp_path: Path) -> None:
    """`proctor run` in another process (a slow agent, one trial at a time) while the page is open."""
    (tmp_path / "slow.yaml").write_text(
        "name: slow\ntrials: 6\ntarget: python:helpers.agents:slow\n"
        "turns: [{content: a, assert: [{type: contains, value: finally}]}]\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "PROCTOR_TRUST": "1"}
    command = [sys.executable, "-m", "proctor", "run", str(tmp_path), "--model", "slow", "--concurrency", "1", "-q"]
    history = tmp_path / ".proctor" / "history.db"
    with serve_app(create_app(history, options=ViewOptions(poll_seconds=0.05))) as base:
        page = browser_context.new_page()
        watch = PageWatch(page)
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while not page.query_selector("#in-progress a"):  # the journal appears once the run has started
                assert time.monotonic() < deadline and process.poll() is None, "the run never showed up"
                page.goto(base + "/")
                time.sleep(0.2)
            page.click("#in-progress a")
            page.wait_for_selector("#live")
            start = int(page.inner_text("#count-total"))
            assert start < 6
            expect(page.locator("#count-total")).to_have_text(str(start + 1), timeout=10_000)  # it moves
            page.wait_for_url(f"{base}/runs/slow_*", timeout=30_000)  # the run ended: its page
            assert "Nothing failed" in page.inner_text("#failures")
            assert page.inner_text("h1").startswith("slow")
        finally:
            _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        only_local(watch, base)
        page.close()
