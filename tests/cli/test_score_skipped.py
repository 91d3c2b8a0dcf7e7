"""`proctor score` when nothing, or not every row, got a score: exit codes, `scored`, resume (a scripted judge
server on loopback where a judge is needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()

VERDICT = json.dumps({"original_task": "t", "reasoning": "Fine.", "score": 4})  # 4 of 1-5: passed


def agent_rows(path: Path, count: int = 3) -> Path:
    """AgentData rows task progression can score (with a judge): task, role, system prompt, response."""
    rows = [
        {"agent_task": f"task {i}", "agent_role": "support", "system_prompt": "Be brief.", "agent_response": f"r{i}"}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def score(*args: str) -> Any:
    return runner.invoke(app, ["score", *args, "--no-cache"])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def judge(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    script = model_server.script(default=Reply(VERDICT))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(tmp_path)
    return script


def test_only_judged_scorers_and_no_judge_scores_nothing_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = agent_rows(tmp_path / "rows.jsonl")
    result = score(str(data), "--scorers", "task_progression", "--json")
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)  # stdout is the JSON alone; the notes went to stderr
    assert (summary["rows"], summary["scored"], summary["kept"]) == (3, 0, 0)
    assert summary["scorers"]["task_progression"] == {
        "mean": None,
        "raw_mean": None,
        "count": 0,
        "passed": 0,
        "errors": 0,
        "skipped": 3,
    }
    assert (
        "no judge model" in result.stderr and "nothing scored: every result of the 3 rows was skipped" in result.stderr
    )
    loud = score(str(data), "--scorers", "task_progression", "-o", str(tmp_path / "loud.jsonl"))
    assert loud.exit_code == 3
    assert "3 rows read, 0 scored in" in loud.output and "3 rows scored" not in loud.output
    quiet = score(str(data), "--scorers", "task_progression", "-o", str(tmp_path / "q.jsonl"), "--quiet")
    assert quiet.exit_code == 3


def test_events_without_a_judge_exit_3_as_agent_data_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same situation through the online service's events path: the two agree."""
    monkeypatch.chdir(tmp_path)
    event = {
        "event_id": "e1",
        "event_type": "chat",
        "agent": {"name": "a"},
        "interaction": {
            "user_query": "What is the capital of France?",
            "context": "Paris is the capital of France.",
            "answer": "Paris is the capital.",
        },
    }
    (tmp_path / "events.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    events = score(str(tmp_path / "events.jsonl"))
    rows = score(str(agent_rows(tmp_path / "rows.jsonl")), "--scorers", "task_progression")
    assert events.exit_code == rows.exit_code == 3, (events.output, rows.output)


def test_a_row_with_every_result_skipped_is_not_counted_as_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two rows the exact scorer can score, one without an expected call (skipped): 2 scored of 3, exit 0."""
    monkeypatch.chdir(tmp_path)
    call = {"name": "search", "arguments": {"q": "x"}}
    rows = [{"tool_calls": [call], "expected_tool_call": call}] * 2 + [{"tool_calls": [call]}]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    args = [str(data), "--scorers", "tool_correctness_exact", "-o", str(tmp_path / "o.jsonl")]
    result = score(*args, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["rows"], summary["scored"]) == (3, 2)
    assert summary["scorers"]["tool_correctness_exact"]["skipped"] == 1
    loud = score(*args)
    assert "3 rows read, 2 scored in" in loud.output and "nothing scored" not in loud.output


def test_a_row_whose_every_result_is_an_error_is_not_scored(judge: Any, tmp_path: Path) -> None:
    """Errors are not scores: `scored` leaves such rows out (the exit code is the judge's, 3)."""
    judge.default = Reply("not JSON")
    data = agent_rows(tmp_path / "rows.jsonl", 2)
    result = score(str(data), "--scorers", "task_progression", "--judge", "openai/j", "--json")
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)
    assert (summary["rows"], summary["scored"], summary["scorers"]["task_progression"]["errors"]) == (2, 0, 2)
    assert "nothing scored" not in result.stderr  # not skipped: errored (the judge's own exit 3)


def test_resume_with_a_judge_scores_the_rows_a_run_without_one_skipped(judge: Any, tmp_path: Path) -> None:
    data = agent_rows(tmp_path / "rows.jsonl")
    out = tmp_path / "out.jsonl"
    unjudged = score(str(data), "--scorers", "task_progression", "-o", str(out))
    assert unjudged.exit_code == 3 and judge.bodies == []
    assert {r["scores"]["task_progression"]["status"] for r in read_jsonl(out)} == {"skipped"}
    resumed = score(str(data), "--scorers", "task_progression", "--judge", "openai/j", "-o", str(out), "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert len(judge.bodies) == 3  # every skipped row judged: none kept as if scored
    assert "rows kept from the previous run" not in resumed.output and "3 rows scored in" in resumed.output
    rows = read_jsonl(out)
    assert sorted(r["row"] for r in rows) == [1, 2, 3]
    assert {r["scores"]["task_progression"]["status"] for r in rows} == {"passed"}
    again = score(str(data), "--scorers", "task_progression", "--judge", "openai/j", "-o", str(out), "--resume")
    assert again.exit_code == 0 and len(judge.bodies) == 3  # judged rows are kept
    assert "3 rows kept from the previous run" in again.output


def test_an_empty_file_or_only_unreadable_rows_are_not_every_result_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No record at all: bad input (exit 2, tests/cli/test_score_input.py), not "nothing scored"; only
    unreadable rows: exit 1 for them, not 3."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    empty = score(str(tmp_path / "empty.jsonl"), "--scorers", "task_progression", "--json")
    assert empty.exit_code == 2, empty.output
    assert "no records to score" in empty.stderr and "nothing scored" not in empty.stderr and empty.stdout == ""
    (tmp_path / "bad.jsonl").write_text('{"tool_calls": 7}\n', encoding="utf-8")
    bad = score(str(tmp_path / "bad.jsonl"), "--scorers", "task_progression", "--continue-on-error", "--json")
    assert bad.exit_code == 1, bad.output
    assert json.loads(bad.stdout)["bad_rows"] == 1 and "nothing scored" not in bad.stderr


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_resume_reads_rows_skipped_for_want_of_a_judge_from_csv_and_json(
    judge: Any, tmp_path: Path, suffix: str
) -> None:
    data = agent_rows(tmp_path / "rows.jsonl")
    args = [str(data), "--scorers", "task_progression", "-o", str(tmp_path / f"out{suffix}")]
    assert score(*args).exit_code == 3
    resumed = score(*args, "--judge", "openai/j", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert len(judge.bodies) == 3
