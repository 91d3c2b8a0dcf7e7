"""The SQLite history store: indexing, listing, choosing runs, and what it refuses."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from dataclasses import fields
from pathlib import Path

import pytest

from proctor.checks import CheckResult
from proctor.errors import ConfigError
from proctor.results import (
    CaseResult,
    HistoryStore,
    RunResult,
    RunSummary,
    StoredCase,
    TrialResult,
    index_run,
    load_run,
    resolve_history_path,
    write_bytes,
)
from proctor.results._history import SCHEMA_VERSION
from proctor.transcript import Message, Usage

DATA = Path(__file__).parent / "data"
GPT = "gpt-4-1-mini_20261101T090000Z.json"
CLAUDE = "claude-sonnet-4_20261102T090000Z.json"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    directory = tmp_path / "suites" / ".results"
    directory.mkdir(parents=True)
    for name in (GPT, CLAUDE):
        shutil.copy(DATA / name, directory / name)
    return directory


def test_add_and_list_runs(results: Path, tmp_path: Path) -> None:
    db = tmp_path / "suites" / ".proctor" / "history.db"
    with HistoryStore(db) as store:
        summary = store.add(results / GPT)
        store.add(results / CLAUDE)
        runs = store.runs()
    assert db.exists()
    assert [r.run_id for r in runs] == ["claude-sonnet-4_20261102T090000Z", "gpt-4-1-mini_20261101T090000Z"]
    assert runs[1] == summary
    gpt = runs[1]
    assert (gpt.model, gpt.cases, gpt.passed, gpt.failed, gpt.pass_rate) == ("openai/gpt-4.1-mini", 4, 2, 2, 0.5)
    assert (gpt.trials_run, gpt.trials_passed, gpt.trials_failed, gpt.trials_errored) == (12, 9, 2, 1)
    assert gpt.tokens == 1602 and gpt.cost_usd == pytest.approx(0.0009792 + 0.0018996)
    assert gpt.p50_latency_ms is not None and gpt.avg_score is not None
    assert gpt.path == str((results / GPT).resolve())


def test_the_store_agrees_with_the_results_file(results: Path, tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.db") as store:
        stored = store.add(results / GPT)
        cases = store.cases(stored)
    data = load_run(results / GPT)
    assert stored == RunSummary.from_data(data, (results / GPT).resolve())
    assert cases == StoredCase.from_data(data)
    assert cases[3].trials == {1: ("passed", 1.0), 2: ("error", None), 3: ("failed", 0.0)}


def test_reindexing_a_file_replaces_it(results: Path, tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.db") as store:
        store.add(results / GPT)
        store.add(results / GPT)
        assert len(store.runs()) == 1
        assert len(store.cases(store.runs()[0])) == 4


def test_latest_per_model_and_filters(results: Path, tmp_path: Path) -> None:
    newer = json.loads((results / GPT).read_text())
    newer["run_id"] = "gpt-4-1-mini_20261105T090000Z"
    newer["started_at"] = "2026-11-05T09:00:00+00:00"
    (results / "newer.json").write_text(json.dumps(newer))
    with HistoryStore(tmp_path / "h.db") as store:
        assert store.scan(results.parent) == 3
        assert store.scan(results.parent) == 0  # unchanged files are not re-read
        latest = store.latest_per_model()
        assert [r.run_id for r in latest] == ["claude-sonnet-4_20261102T090000Z", "gpt-4-1-mini_20261105T090000Z"]
        assert [r.run_id for r in store.runs(model="openai/gpt-4.1-mini")] == [
            "gpt-4-1-mini_20261105T090000Z",
            "gpt-4-1-mini_20261101T090000Z",
        ]
        assert len(store.runs(limit=1)) == 1


def test_get_by_id_prefix_and_path(results: Path, tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.db") as store:
        store.scan(results)
        assert store.get("claude-sonnet-4_20261102T090000Z").model == "anthropic/claude-sonnet-4"
        assert store.get("gpt-4").run_id == "gpt-4-1-mini_20261101T090000Z"
        assert store.get(str(results / CLAUDE)).run_id == "claude-sonnet-4_20261102T090000Z"
        with pytest.raises(ConfigError, match="no run 'nope'"):
            store.get("nope")
        with pytest.raises(ConfigError, match="matches 2 runs"):
            store.get("")
        with pytest.raises(ConfigError, match="no run"):
            store.get("gpt_4")  # `_` is literal in a prefix, not a LIKE wildcard


def test_scan_skips_journals_and_foreign_json(results: Path, tmp_path: Path) -> None:
    (results / "notes.json").write_text('{"hello": 1}')
    (results / "broken.json").write_text("{")
    (results / "x.journal.jsonl").write_text('{"kind": "run"}\n')
    with HistoryStore(tmp_path / "h.db") as store:
        assert store.scan(results) == 2


def test_remove_missing(results: Path, tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.db") as store:
        store.scan(results)
        (results / GPT).unlink()
        assert store.remove_missing() == 1
        assert [r.run_id for r in store.runs()] == ["claude-sonnet-4_20261102T090000Z"]


def test_missing_store_is_a_clear_error_unless_created(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no run history at .*proctor run"):
        HistoryStore(tmp_path / "none.db", create=False)
    assert not (tmp_path / "none.db").exists()


def test_not_a_database_and_newer_schema(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_text("this is not sqlite " * 100)
    with pytest.raises(ConfigError, match="not a Proctor run history"):
        HistoryStore(bogus)
    newer = tmp_path / "newer.db"
    connection = sqlite3.connect(newer)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    with pytest.raises(ConfigError, match="newer Proctor"):
        HistoryStore(newer)


def test_index_run_never_fails_a_finished_run(results: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("x")
    data = load_run(results / GPT)
    with caplog.at_level(logging.WARNING, logger="proctor.history"):
        assert index_run(blocked / "h.db", results / GPT, data) is False  # its directory is a file
    assert "not added to the history" in caplog.text
    assert index_run(tmp_path / "ok" / "h.db", results / GPT, data) is True


def test_summary_columns_match_the_schema(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.db") as store:
        columns = {row[1] for row in store._db.execute("PRAGMA table_info(runs)")}
    assert {f.name for f in fields(RunSummary)} <= columns


def test_resolve_history_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROCTOR_HOME", raising=False)
    assert resolve_history_path(None) == tmp_path / ".proctor" / "history.db"  # the project's store
    assert resolve_history_path(tmp_path) == tmp_path / ".proctor" / "history.db"
    assert resolve_history_path(tmp_path / "x.db") == tmp_path / "x.db"


def test_concurrent_writers_do_not_lose_runs(results: Path, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    first, second = HistoryStore(db), HistoryStore(db)
    try:
        first.add(results / GPT)
        second.add(results / CLAUDE)
        assert len(first.runs()) == len(second.runs()) == 2
    finally:
        first.close()
        second.close()


def test_a_run_is_indexed_in_its_projects_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from proctor.results import default_history_path

    monkeypatch.delenv("PROCTOR_HOME", raising=False)
    (tmp_path / "evals").mkdir()
    (tmp_path / "proctor.yaml").write_text("trusted: false\n")
    assert default_history_path(tmp_path / "evals" / ".results") == tmp_path / ".proctor" / "history.db"
    (tmp_path / "proctor.yaml").write_text("trusted: maybe\n")  # unreadable: the run still finds a store
    assert default_history_path(tmp_path / "evals" / ".results") == tmp_path / "evals" / ".proctor" / "history.db"


def test_a_version_1_store_gains_the_run_group_and_keeps_its_runs(tmp_path: Path) -> None:
    from proctor.results._history import _SCHEMA

    path = tmp_path / "history.db"
    old = sqlite3.connect(path)  # the store as the previous release made it: no run_group column
    old.executescript(_SCHEMA.replace("    run_group TEXT,\n", ""))
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    first = sorted(DATA.glob("*.json"))[0]
    with HistoryStore(path) as store:  # the migration
        store.add(first)
        grouped = tmp_path / "grouped.json"
        grouped.write_text(json.dumps({**load_run(first), "run_id": "g_1", "group": "matrix_x"}), encoding="utf-8")
        store.add(grouped)
        by_id = {run.run_id: run.run_group for run in store.runs()}
    assert by_id[load_run(first)["run_id"]] is None and by_id["g_1"] == "matrix_x"
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2


def _judged(key: str, number: int, status: str, cost: float | None, latency: float) -> TrialResult:
    judge = {"judge": {"usage": {"prompt": 7, "completion": 2}, "cost_usd": cost, "calls": 1}}
    return TrialResult(
        case_key=key,
        trial=number,
        status=status,
        score=1.0 if status == "passed" else 0.25,
        turns=[Message("user", "hi"), Message("assistant", "hello", latency_ms=latency)],
        checks=[CheckResult("polite", "llm-rubric", status, 1.0 if status == "passed" else 0.25, details=judge)],
        duration_ms=12.3456,
        usage=Usage(3, 4),
        agent_cost_usd=0.00012345678,
    )


@pytest.mark.parametrize("same_key", [False, True])
def test_a_recorded_run_is_indexed_as_its_written_file_would_be(tmp_path: Path, same_key: bool) -> None:
    """Rows made from the `RunResult` (one pass, no JSON) equal those of indexing the file it wrote.

    Costs with prices, several trials, a case sharing its one trial's costs; and two cases with one key
    (the last row of a key is kept, placed last, as for a file).
    """
    cases = [
        CaseResult("a", "s", "s.yaml", ["x"], 0.5, [_judged("s.yaml::a", 1, "passed", 0.003, 1.23456)]),
        CaseResult(
            "b",
            "s",
            "s.yaml",
            [],
            0.5,
            [_judged("s.yaml::b", n, s, c, n * 0.7) for n, s, c in [(2, "failed", None), (1, "passed", 1e-9)]],
        ),
        CaseResult("a" if same_key else "c", "s", "s.yaml", ["y"], 0.5, [_judged("s.yaml::c", 1, "failed", None, 4.0)]),
    ]
    run = RunResult("r1", "2026-11-29T00:00:00+00:00", "m", "t", cases, "2026-11-29T00:00:01+00:00", planned_trials=4)
    path = tmp_path / "r1.json"
    write_bytes(path, run.json_chunks())
    with HistoryStore(tmp_path / "recorded.db") as store:
        recorded = store.add(path, run)
    with HistoryStore(tmp_path / "read.db") as store:
        read = store.add(path)
    assert recorded == read and recorded.cost_usd is not None
    assert _table_rows(tmp_path / "recorded.db") == _table_rows(tmp_path / "read.db")
    assert len(_table_rows(tmp_path / "read.db")["cases"]) == (2 if same_key else 3)


def _table_rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        columns = [d[0] for d in db.execute("SELECT * FROM runs").description]
        kept = [i for i, name in enumerate(columns) if name not in ("id", "indexed_at")]
        return {
            "runs": [tuple(row[i] for i in kept) for row in db.execute("SELECT * FROM runs")],
            "cases": db.execute("SELECT * FROM cases ORDER BY rowid").fetchall(),
            "trials": db.execute("SELECT * FROM trials ORDER BY rowid").fetchall(),
        }
    finally:
        db.close()


def test_a_large_run_keeps_every_row_in_order(tmp_path: Path) -> None:
    """Rows go in many to a statement (`_insert`): a run of more than one statement's rows keeps each, in order."""
    cases = [
        CaseResult(
            f"c{n}",
            "s",
            "s.yaml",
            [],
            0.5,
            [_judged(f"s.yaml::c{n}", t, ("passed", "failed")[t - 1], None, n + t) for t in (1, 2)],
        )
        for n in range(250)
    ]
    run = RunResult("r1", "2026-11-29T00:00:00+00:00", "m", "t", cases, "2026-11-29T00:00:01+00:00", planned_trials=500)
    path = tmp_path / "r1.json"
    write_bytes(path, run.json_chunks())
    with HistoryStore(tmp_path / "h.db") as store:
        store.add(path, run)
    rows = _table_rows(tmp_path / "h.db")
    assert [row[1] for row in rows["cases"]] == [f"s.yaml::c{n}" for n in range(250)]
    assert [row[1:3] for row in rows["trials"]] == [(f"s.yaml::c{n}", t) for n in range(250) for t in (1, 2)]
    assert [row[4] for row in rows["trials"][:3]] == [1.0, 0.25, 1.0]  # each row's own values
