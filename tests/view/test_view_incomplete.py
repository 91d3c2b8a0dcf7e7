"""`proctor view` on a run stopped before all its planned trials ran: its `incomplete` cases have their badge,
their status filter, and their case page says why and which trials never ran; served over HTTP on a real
loopback port from a real history store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest

from proctor.checks import CheckResult
from proctor.results import CaseResult, HistoryStore, RunResult, TrialResult, write_json
from proctor.transcript import Message
from proctor.view import create_app
from servers._serve import serve_app

STOPPED = "stopped_20261129T090000Z"
BASELINE = "baseline_20261128T090000Z"


def trial(case: str, number: int) -> TrialResult:
    check = CheckResult("contains hi", "contains", "passed", 1.0, 1.0, "found", 0)
    turns = [Message("user", "hi"), Message("assistant", "hi")]
    return TrialResult(f"s.yaml::{case}", number, "passed", 1.0, turns=turns, checks=[check], duration_ms=1.0)


def write_run(results: Path, run_id: str, ran: dict[str, int], status: str, started: str) -> None:
    cases = [
        CaseResult(name, "s", "s.yaml", [], 1.0, [trial(name, n) for n in range(1, count + 1)], planned=3)
        for name, count in ran.items()
    ]
    run = RunResult(run_id, started, "openai/gpt-4.1-mini", "t", cases, planned_trials=3 * len(cases))
    run.end(status)
    run.finished_at = started
    write_json(results / f"{run_id}.json", run.to_dict())


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("incomplete")
    results = root / ".results"
    results.mkdir()
    write_run(results, BASELINE, {"done": 3, "partly": 3, "never": 3}, "complete", "2026-11-28T09:00:00+00:00")
    write_run(results, STOPPED, {"done": 3, "partly": 1, "never": 0}, "interrupted", "2026-11-29T09:00:00+00:00")
    history = root / ".proctor" / "history.db"
    with HistoryStore(history) as store:
        assert store.scan(results) == 2
    with serve_app(create_app(history)) as url:
        yield url


def get(base: str, path: str) -> str:
    response = httpx.get(base + path, timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def text_of(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_the_run_page_badges_filters_and_counts_incomplete_cases(viewer: str) -> None:
    html = get(viewer, f"/runs/{STOPPED}")
    statuses = {
        name: status
        for status, name in re.findall(
            r'<tr class="case-row" data-status="([^"]+)"[^>]*>\s*<td><a class="case-link"[^>]*>([^<]+)</a>', html
        )
    }
    assert statuses == {"done": "passed", "partly": "incomplete", "never": "incomplete"}
    assert html.count('<span class="badge incomplete">incomplete</span>') == 2
    options = re.findall(r'<option value="([^"]*)">', html.split('id="filter-status"')[1].split("</select>")[0])
    assert options == ["", "passed", "failed", "error", "inconclusive", "skipped", "incomplete"]
    text = text_of(html)
    assert "interrupted: 1 of 3 trials ran" in text and "interrupted: 0 of 3 trials ran" in text
    assert "(1 of 3 planned ran)" in text and "(0 of 3 planned ran)" in text
    assert re.search(r'<dd id="incomplete-count">2/3</dd>', html)
    assert "(4 of 9 planned ran)" in text  # the run's trials
    assert "Stopped early: interrupted" in text
    assert ".badge.incomplete" in html  # its own colour, not the default grey of an unknown status


def test_the_case_page_says_why_and_which_trials_never_ran(viewer: str) -> None:
    html = get(viewer, f"/runs/{STOPPED}/cases/1")  # partly
    text = text_of(html)
    assert '<h1>partly <span class="badge incomplete">incomplete</span></h1>' in html
    assert (
        "Incomplete: interrupted: 1 of 3 trials ran. 1 of its 3 planned trials ran; the run stopped before "
        "trials 2, 3, so the case is neither passed nor errored." in text
    )
    assert re.findall(r'<span class="unrun"><span class="badge not-run">not run</span> trial (\d+)</span>', html) == [
        "2",
        "3",
    ]
    assert 'id="trial-1"' in html and 'id="trial-2"' not in html  # the trial that ran, with its transcript
    never = text_of(get(viewer, f"/runs/{STOPPED}/cases/2"))
    assert "Incomplete: interrupted: 0 of 3 trials ran. 0 of its 3 planned trials ran" in never
    done = get(viewer, f"/runs/{STOPPED}/cases/0")
    assert 'id="case-reason"' not in done and 'class="unrun"' not in done


def test_the_runs_list_and_compare_page_are_honest_about_it(viewer: str) -> None:
    runs = get(viewer, "/")
    row = next(r for r in runs.split('<tr class="run-row">')[1:] if f'data-copy="{STOPPED}"' in r)
    assert '<span class="badge interrupted">interrupted</span>' in row
    assert '<td class="num">1/3</td>' in row  # 1 of 3 cases passed: the incomplete ones are not passes
    compare = get(viewer, f"/compare?a={BASELINE}&b={STOPPED}")
    changes = re.findall(r'<tr class="compare-row ([^"]+)"', compare)
    assert changes == ["unchanged", "incomplete", "incomplete"]  # not "errored": nothing errored
    assert "passed → incomplete" in text_of(compare)
