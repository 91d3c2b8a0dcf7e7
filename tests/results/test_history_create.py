"""Creating the history store: built aside, made durable once, linked into place, never replacing another's."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from proctor.results import _history
from proctor.results._history import SCHEMA_VERSION, HistoryStore


def _pragma(path: Path, name: str) -> object:
    db = sqlite3.connect(path)
    try:
        return db.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        db.close()


def test_a_new_store_has_the_schema_in_wal_mode_and_leaves_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "history.db"
    with HistoryStore(path) as store:
        assert store.runs() == []
    assert _pragma(path, "user_version") == SCHEMA_VERSION
    assert _pragma(path, "journal_mode") == "wal"
    assert sorted(os.listdir(path.parent)) == ["history.db"]


def test_a_store_made_meanwhile_by_another_process_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    theirs = sqlite3.connect(path)
    theirs.execute("CREATE TABLE mine (x)")
    theirs.execute("INSERT INTO mine VALUES (42)")
    theirs.commit()
    theirs.close()
    _history._create_store(path)  # as if the other store appeared after this process looked
    db = sqlite3.connect(path)
    assert db.execute("SELECT x FROM mine").fetchall() == [(42,)]
    db.close()
    assert sorted(os.listdir(tmp_path)) == ["history.db"]


def test_the_store_has_the_mode_sqlite_gives_a_new_database(tmp_path: Path) -> None:
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).close()
    path = tmp_path / "history.db"
    HistoryStore(path).close()
    assert path.stat().st_mode == plain.stat().st_mode


def _failing(error: OSError) -> Callable[..., None]:
    def fail(*_args: object) -> None:
        raise error

    return fail


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ("link", PermissionError(1, "Operation not permitted")),  # a filesystem without hard links
        ("fsync", OSError(28, "No space left on device")),  # a full disk while pre-creating
    ],
)
def test_when_pre_creating_fails_sqlite_creates_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, error: OSError
) -> None:
    monkeypatch.setattr(os, call, _failing(error))
    path = tmp_path / "history.db"
    with HistoryStore(path) as store:
        assert store.runs() == []
    assert _pragma(path, "user_version") == SCHEMA_VERSION
    assert sorted(os.listdir(tmp_path)) == ["history.db"]
