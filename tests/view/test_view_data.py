"""The viewer's read side: journals read to their last complete line, a store that does not exist yet."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from live import LIVE, LiveRun

from proctor.cli._history import store_path as history_store_path
from proctor.cli._view import store_path
from proctor.view import RunStore, create_app
from proctor.view._data import read_journal
from servers._serve import serve_app


def test_a_journal_is_read_to_its_last_complete_line(tmp_path: Path) -> None:
    run = LiveRun(tmp_path)
    run.add("a", 1, True)
    path = run.journal.path
    first = read_journal(path)
    assert first.header is not None and first.header["run_id"] == LIVE and len(first.trials) == 1
    with path.open("a", encoding="utf-8") as file:
        file.write('{"kind":"trial","case":"half')  # a line still being written
    again = read_journal(path, first.offset)
    assert again.trials == [] and again.offset == first.offset and again.header is None
    with path.open("a", encoding="utf-8") as file:
        file.write('"}\n')
    assert read_journal(path, first.offset).trials == [{"kind": "trial", "case": "half"}]
    run.journal.close()


def test_no_history_yet_lists_nothing_but_the_runs_in_progress(tmp_path: Path) -> None:
    run = LiveRun(tmp_path)  # the first run of a project: no store until it ends
    run.add("a", 1, False)
    store = RunStore(run.history)
    assert not run.history.exists() and store.runs() == []
    (live,) = store.live_runs()
    assert live.run_id == LIVE and live.counts()["failed"] == 1
    with serve_app(create_app(run.history)) as base:
        page = httpx.get(base + "/", timeout=10).text
        assert "No finished run in this history yet" in page and f"/runs/{LIVE}" in page
    run.journal.close()
    assert not run.history.exists()  # looking does not create the store


def test_the_default_store_is_the_one_proctor_runs_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proctor.yaml").write_text("trusted: false\n", encoding="utf-8")
    (tmp_path / "evals").mkdir()
    monkeypatch.chdir(tmp_path / "evals")
    monkeypatch.delenv("PROCTOR_HOME", raising=False)
    assert store_path(None) == history_store_path(None) == tmp_path / ".proctor" / "history.db"
