"""Scored rows on disk: what the JSON writers put in the file reads back as the same values."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from proctor.recorded._output import ScoreWriter, read_scored


def row(number: int, **extra: Any) -> dict[str, Any]:
    scores = {"context_relevancy": {"status": "passed", "score": 0.8, "raw_score": 8, "reason": "Fine — ✓"}}
    return {"row": number, "line": number + 2, "user_id": "u", "error": None, "scores": scores, **extra}


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_rows_read_back_as_written(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"scores{suffix}"
    writer = ScoreWriter(path, ["context_relevancy"])
    writer.start()
    rows = [row(1), row(2, note="non-ASCII: ü 漢字")]
    for item in rows:
        writer.write(item)
    writer.close()
    _, read = read_scored(path)
    assert list(read) == rows
    assert "ü 漢字" in path.read_text(encoding="utf-8")  # written as UTF-8, not \\u escapes


def test_values_json_has_no_form_for(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    writer = ScoreWriter(path, ["context_relevancy"])
    writer.start()
    when = datetime.date(2026, 11, 29)
    writer.write(row(1, when=when, path=Path("a/b"), big=2**70, keys={1: "one"}))
    writer.close()
    written = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert written[0]["when"] == "2026-11-29" and written[0]["path"] == "a/b"
    assert written[0]["big"] == 2**70 and written[0]["keys"] == {"1": "one"}  # the standard library's fallback
    assert len(written) == 1


def test_nan_is_written_as_null(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    writer = ScoreWriter(path, ["context_relevancy"])
    writer.start()
    writer.write(row(1, nan=float("nan")))
    writer.close()
    assert json.loads(path.read_text(encoding="utf-8"))["nan"] is None  # not `NaN`, which is not JSON
