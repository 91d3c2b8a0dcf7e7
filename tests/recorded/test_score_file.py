"""`score_file`, the engine behind `proctor score`, used from Python."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.recorded import DatasetError, ScoreOptions, score_file
from proctor.recorded import _batch as batch


def records(path: Path, count: int) -> Path:
    lines = []
    for i in range(count):
        call = {"name": "lookup", "arguments": {"id": i % 2}}
        expected = {"name": "lookup", "arguments": {"id": 0}}
        lines.append(json.dumps({"agent_name": f"a{i % 2}", "tool_calls": [call], "expected_tool_call": expected}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.anyio
async def test_summary_only_with_aggregates(tmp_path: Path) -> None:
    summary = await score_file(records(tmp_path / "r.jsonl", 6), None, ScoreOptions(concurrency=2))
    assert summary.scorers == ["tool_correctness", "tool_correctness_exact"]  # chosen from the fields
    assert summary.output is None and summary.aggregates.overall["tool_correctness"].skipped == 6  # no judge
    stats = summary.aggregates.to_dict()
    assert stats["scorers"]["tool_correctness_exact"] == {
        "mean": 0.75,  # three exact matches, three right tools with other arguments (0.5)
        "raw_mean": 0.75,
        "count": 6,
        "passed": 3,
        "errors": 0,
        "skipped": 0,
    }
    assert stats["by_agent"]["a0"]["tool_correctness_exact"]["mean"] == 1.0
    assert stats["by_agent"]["a1"]["tool_correctness_exact"]["mean"] == 0.5
    assert (summary.read, summary.scored, summary.aggregates.nothing_scored) == (6, 6, False)


@pytest.mark.anyio
async def test_rows_whose_every_result_is_skipped_are_read_not_scored(tmp_path: Path) -> None:
    """Only the judged scorer and no judge: six rows read, none scored, and the summary says so."""
    summary = await score_file(records(tmp_path / "r.jsonl", 6), None, ScoreOptions(["tool_correctness"]))
    assert summary.aggregates.overall["tool_correctness"].skipped == 6
    assert (summary.read, summary.scored, summary.aggregates.nothing_scored) == (6, 0, True)
    assert summary.to_dict()["scored"] == 0 and summary.to_dict()["rows"] == 6
    assert summary.judged == 0  # skipped for want of a judge: not a judged result


@pytest.mark.anyio
async def test_an_unexpected_failure_is_an_error_row_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = batch.score_agent_data

    async def flaky(scorer: str, data: Any, judge: Any, **kwargs: Any) -> Any:
        if data.agent_name == "a1":
            raise RuntimeError("boom")
        return await real(scorer, data, judge, **kwargs)

    monkeypatch.setattr(batch, "score_agent_data", flaky)
    out = tmp_path / "out.jsonl"
    summary = await score_file(
        records(tmp_path / "r.jsonl", 4), None, ScoreOptions(["tool_correctness_exact"], output=out)
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    reasons = sorted(r["scores"]["tool_correctness_exact"]["reason"] for r in rows)
    assert reasons[:2] == ["could not score: RuntimeError: boom"] * 2
    # every row read, the two errored ones not scored (errors are not scores)
    assert summary.aggregates.errors == 2 and (summary.read, summary.scored) == (4, 2)


@pytest.mark.anyio
async def test_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="concurrency must be >= 1"):
        ScoreOptions(concurrency=0)
    with pytest.raises(DatasetError, match="resuming needs the output file"):
        ScoreOptions(resume=True)
    with pytest.raises(DatasetError, match="no such file"):
        await score_file(tmp_path / "missing.csv", None, ScoreOptions())
