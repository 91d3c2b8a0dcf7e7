"""Live progress over HTTP: the event stream follows a run's journal, then says where its results are."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
from live import LIVE, LiveRun

from proctor.results import HistoryStore, Journal, write_json
from proctor.view import ViewOptions, create_app
from proctor.view._data import read_journal
from servers._serve import serve_app


def events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, object]]]:
    """`(event, data)` pairs of a server-sent event stream."""
    kind, data = "message", ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            yield kind, json.loads(data)
            kind, data = "message", ""


def test_the_stream_follows_the_journal_and_ends_with_done(tmp_path: Path) -> None:
    run = LiveRun(tmp_path)
    run.add("first", 1, True)
    app = create_app(run.history, options=ViewOptions(poll_seconds=0.02))
    with serve_app(app) as base:
        page = httpx.get(f"{base}/runs/{LIVE}", timeout=10)
        assert page.status_code == 200 and 'id="live"' in page.text  # not in the store yet: the live page
        offset = read_journal(run.journal.path).offset
        assert f"/events?offset={offset}" in page.text
        assert "live/model" in httpx.get(f"{base}/", timeout=10).text  # listed as in progress
        run.add("second", 1, False)  # journaled after the page was rendered: the stream brings it
        seen = []
        with httpx.stream("GET", f"{base}/runs/{LIVE}/events?offset={offset}", timeout=10) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for kind, data in events(stream.iter_lines()):
                seen.append((kind, data.get("name"), data.get("status")))
                if len(seen) == 1:
                    run.add("second", 2, True)  # written while the stream is open
                elif len(seen) == 2:
                    run.finish()
                else:
                    assert data == {"url": f"/runs/{LIVE}"}
                    break
        assert seen == [("trial", "second", "failed"), ("trial", "second", "passed"), ("done", None, None)]
        finished = httpx.get(f"{base}/runs/{LIVE}", timeout=10)
        assert finished.status_code == 200 and 'id="failures"' in finished.text  # now the run's report


def test_the_whole_journal_streams_from_offset_0_and_bad_offsets_are_400(tmp_path: Path) -> None:
    run = LiveRun(tmp_path)
    run.add("first", 1, True)
    run.add("first", 2, False)
    with serve_app(create_app(run.history, options=ViewOptions(poll_seconds=0.02))) as base:
        assert httpx.get(f"{base}/runs/{LIVE}/events?offset=x", timeout=10).status_code == 400
        with httpx.stream("GET", f"{base}/runs/{LIVE}/events", timeout=10) as stream:
            got = []
            for kind, data in events(stream.iter_lines()):
                got.append((kind, data["trial"], data["status"], data["failed_checks"]))
                if len(got) == 2:
                    break
        assert got == [
            ("trial", 1, "passed", []),
            (
                "trial",
                2,
                "failed",
                [
                    {
                        "name": "contains 'yes'",
                        "status": "failed",
                        "reason": "expected reply to contain 'yes'; 'yes' not found",
                    }
                ],
            ),
        ]
        run.journal.close(remove=True)  # stopped without results (killed): the stream says so
        with httpx.stream("GET", f"{base}/runs/{LIVE}/events", timeout=10) as stream:
            assert stream.status_code == 404


def test_a_journal_that_names_its_planned_trials_shows_how_far_the_run_is(tmp_path: Path) -> None:
    journal = Journal(tmp_path / ".results" / "p_1.journal.jsonl", {"run_id": "p_1", "planned_trials": 6})
    try:
        with serve_app(create_app(tmp_path / ".proctor" / "history.db")) as base:
            page = httpx.get(f"{base}/runs/p_1", timeout=10).text
        assert '<span id="count-total">0</span> of 6' in page
    finally:
        journal.close()


def test_a_run_in_progress_is_not_mistaken_for_a_stored_run_its_id_prefixes(tmp_path: Path) -> None:
    run = LiveRun(tmp_path)
    run.add("a", 1, True)
    other = LiveRun(tmp_path / "other")  # a concurrent run of the same id, finished first: `<id>-2`
    other.add("a", 1, True)
    path = other.finish()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["run_id"] = f"{LIVE}-2"
    second = tmp_path / ".results" / f"{LIVE}-2.json"
    write_json(second, data)
    with HistoryStore(run.history) as store:
        store.add(second)
    try:
        with serve_app(create_app(run.history)) as base:
            page = httpx.get(f"{base}/runs/{LIVE}", timeout=10)
            assert page.status_code == 200 and 'id="live"' in page.text
            assert httpx.get(f"{base}/runs/{LIVE}-2", timeout=10).status_code == 200
    finally:
        run.journal.close()
