"""`proctor score`: streaming a data file through the agent scorers, against a scripted judge server."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()

VERDICT = json.dumps({"original_task": "t", "reasoning": "Fine.", "score": 4})
TOOLS = json.dumps([{"name": "search", "description": "Search the docs"}])


def write_rows(path: Path, rows: int, *, bad: set[int] = frozenset()) -> Path:  # type: ignore[assignment]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "user",
                "task_id",
                "agent_name",
                "agent_role",
                "question",
                "agent_response",
                "tools_available",
                "tool_calls",
                "agent_exit",
            ]
        )
        for i in range(rows):
            call = json.dumps([{"tool_name": "search", "parameters": {"q": f"q{i}"}, "call_id": f"c{i}"}])
            if i in bad:  # a call without its tool's name
                call = json.dumps([{"parameters": {"q": f"q{i}"}}])
            exit_flag = "true"
            writer.writerow(
                [
                    f"u{i % 3}",
                    f"t{i % 4}",
                    f"a{i % 2}",
                    "Support agent",
                    f"Question {i}?",
                    f"Answer {i}.",
                    TOOLS,
                    call,
                    exit_flag,
                ]
            )
    return path


@pytest.fixture
def judge(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    script = model_server.script(default=Reply(VERDICT))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(tmp_path)
    return script


def score(*args: str) -> Any:
    return runner.invoke(app, ["score", *args, "--no-cache"])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_scores_a_csv_with_mapping_and_writes_rows_and_aggregates(judge: Any, tmp_path: Path) -> None:
    judge.default = Reply(VERDICT, delay=0.02)
    data = write_rows(tmp_path / "runs.csv", 12)
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    result = score(
        str(data), "--map", "question=agent_task", "--map", "user=user_id",
        "--scorers", "context_relevancy,tool-relevancy", "--judge", "openai/score-judge", "--concurrency", "4",
        "-o", str(out), "--summary", str(summary),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = read_jsonl(out)
    assert sorted(r["row"] for r in rows) == list(range(1, 13)) and rows[0]["line"] == rows[0]["row"] + 1
    first = next(r for r in rows if r["row"] == 1)
    assert (first["user_id"], first["task_id"], first["agent_name"]) == ("u0", "t0", "a0")
    entry = first["scores"]["context_relevancy"]
    assert (entry["status"], entry["raw_score"]) == ("failed", 4) and entry["score"] == pytest.approx(1 / 3)
    assert entry["details"]["judge"]["model"] == "openai/score-judge"
    assert "Question 0?" in json.dumps(judge.bodies) and len(judge.bodies) == 24
    assert 2 <= judge.max_in_flight <= 4  # bounded by --concurrency
    totals = json.loads(summary.read_text())
    assert totals["rows"] == 12 and totals["scorers"]["context_relevancy"]["count"] == 12
    assert totals["scorers"]["tool_relevancy"]["raw_mean"] == 4
    assert set(totals["by_agent"]) == {"a0", "a1"} and totals["by_user"]["u1"]["context_relevancy"]["count"] == 4
    assert totals["by_task"]["t3"]["tool_relevancy"]["count"] == 3
    assert "Scores: runs.csv" in result.output and "By agent" in result.output and "12 rows scored" in result.output


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_csv_and_json_outputs(judge: Any, tmp_path: Path, suffix: str) -> None:
    data = write_rows(tmp_path / "runs.csv", 3)
    out = tmp_path / f"out{suffix}"
    result = score(
        str(data),
        "--map",
        "question=agent_task",
        "--scorers",
        "role_adherence",
        "--judge",
        "openai/score-judge",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    if suffix == ".csv":
        rows = list(csv.DictReader(out.read_text().splitlines()))
        assert [r["role_adherence_status"] for r in rows] == ["failed"] * 3 and rows[0][
            "role_adherence_raw_score"
        ] == "4.0"
    else:
        rows = json.loads(out.read_text())
        assert len(rows) == 3 and rows[0]["scores"]["role_adherence"]["reason"].startswith("judge: Fine.")


def test_default_output_and_default_scorers(judge: Any, tmp_path: Path) -> None:
    data = write_rows(tmp_path / "runs.csv", 2)
    result = score(str(data), "--map", "question=agent_task", "--judge", "openai/score-judge")
    assert result.exit_code == 0, result.output
    rows = read_jsonl(tmp_path / "runs.scores.jsonl")
    # the first record has tools, calls, task, role, response and agent_exit, but no trace or expected call
    assert set(rows[0]["scores"]) == {"tool_relevancy", "context_relevancy", "role_adherence"}


def test_bad_row_is_fatal_with_its_line_unless_skipped(judge: Any, tmp_path: Path) -> None:
    data = write_rows(tmp_path / "runs.csv", 6, bad={3})
    args = [str(data), "--map", "question=agent_task", "--scorers", "role_adherence", "--judge", "openai/score-judge"]
    fatal = score(*args)
    assert fatal.exit_code == 2
    assert "runs.csv:5: tool_calls.list[ToolCall].0.tool_name: Field required" in fatal.output
    assert "--continue-on-error" in fatal.output
    skipped = score(*args, "--continue-on-error", "-o", str(tmp_path / "skip.jsonl"))
    assert skipped.exit_code == 1, skipped.output
    rows = {r["row"]: r for r in read_jsonl(tmp_path / "skip.jsonl")}
    assert len(rows) == 6 and rows[4]["line"] == 5 and "tool_name: Field required" in rows[4]["error"]
    assert rows[4]["scores"] == {} and "bad row" in skipped.output and "runs.csv:5" in skipped.output


def test_no_judge_skips_judged_scorers_but_the_exact_twin_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "runs.jsonl"
    record = {
        "tool_calls": [{"name": "search", "arguments": {"q": "x"}}],
        "expected_tool_call": {"name": "search", "arguments": {"q": "x"}},
    }
    path.write_text(json.dumps({**record, "agent_task": "find x", "agent_role": "r", "agent_response": "x"}) + "\n")
    result = score(str(path), "--scorers", "tool_correctness_exact,context_relevancy", "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 0, result.output
    (row,) = read_jsonl(tmp_path / "o.jsonl")
    assert row["scores"]["tool_correctness_exact"]["status"] == "passed"
    assert row["scores"]["context_relevancy"]["status"] == "skipped" and "no judge model" in result.output


def test_judge_that_never_answers_usefully_exits_3(judge: Any, tmp_path: Path) -> None:
    judge.default = Reply("not JSON")
    data = write_rows(tmp_path / "runs.csv", 2)
    result = score(
        str(data), "--map", "question=agent_task", "--scorers", "context_relevancy", "--judge", "openai/score-judge"
    )
    assert result.exit_code == 3, result.output
    rows = read_jsonl(tmp_path / "runs.scores.jsonl")
    assert {r["scores"]["context_relevancy"]["status"] for r in rows} == {"error"}
    assert {r["scores"]["context_relevancy"]["score"] for r in rows} == {None}


@pytest.mark.parametrize("answer", [VERDICT, "not JSON"])
def test_quiet_prints_nothing_but_writes_the_summary_and_exits_as_loud(judge: Any, tmp_path: Path, answer: str) -> None:
    judge.default = Reply(answer)
    data = write_rows(tmp_path / "runs.csv", 3)
    summary = tmp_path / "summary.json"
    args = [str(data), "--map", "question=agent_task", "--scorers", "context_relevancy", "--judge", "openai/j"]
    quiet = score(*args, "-o", str(tmp_path / "q.jsonl"), "--summary", str(summary), "--quiet")
    loud = score(*args, "-o", str(tmp_path / "l.jsonl"))
    assert quiet.exit_code == loud.exit_code == (0 if answer == VERDICT else 3), loud.output
    assert quiet.output == "" and loud.output != ""
    assert json.loads(summary.read_text())["rows"] == 3 and len(read_jsonl(tmp_path / "q.jsonl")) == 3


def test_resume_scores_only_what_is_missing(judge: Any, tmp_path: Path) -> None:
    data = write_rows(tmp_path / "runs.csv", 10)
    out = tmp_path / "out.jsonl"
    args = [
        str(data),
        "--map",
        "question=agent_task",
        "--scorers",
        "context_relevancy",
        "--judge",
        "openai/score-judge",
        "-o",
        str(out),
    ]
    assert score(*args).exit_code == 0
    rows = read_jsonl(out)
    # an interrupted run: rows 1-5 were written (row 3 with a judge error), row 6 was cut off mid-line
    kept = sorted((r for r in rows if r["row"] <= 5), key=lambda r: r["row"])  # written as they finish
    kept[2]["scores"]["context_relevancy"] = {"status": "error", "score": None, "raw_score": None, "reason": "timeout"}
    cut = json.dumps(next(r for r in rows if r["row"] == 6))[:40]
    out.write_text("".join(json.dumps(r) + "\n" for r in kept) + cut)
    before = len(judge.bodies)
    result = score(*args, "--resume")
    assert result.exit_code == 0, result.output
    asked = [b["messages"][1]["content"] for b in judge.bodies[before:]]
    assert sorted(int(p.split("Question ")[1].split("?")[0]) for p in asked) == [2, 5, 6, 7, 8, 9]
    final = read_jsonl(out)
    assert sorted(r["row"] for r in final) == list(range(1, 11))  # every row once, none twice
    assert "4 rows kept from the previous run" in result.output
    other = score(*[a if a != "context_relevancy" else "role_adherence" for a in args], "--resume")
    assert other.exit_code == 2 and "was scored with context_relevancy" in other.output


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_resume_reads_csv_and_cut_off_json_outputs(judge: Any, tmp_path: Path, suffix: str) -> None:
    data = write_rows(tmp_path / "runs.csv", 6)
    out = tmp_path / f"out{suffix}"
    args = [
        str(data),
        "--map",
        "question=agent_task",
        "--scorers",
        "role_adherence",
        "--judge",
        "openai/score-judge",
        "-o",
        str(out),
    ]
    assert score(*args).exit_code == 0
    text = out.read_text()
    if suffix == ".json":
        rows = json.loads(text)
        out.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows[:3]) + ",\n" + json.dumps(rows[3])[:30])
    else:
        out.write_text("".join(text.splitlines(keepends=True)[:4]))  # header + 3 rows
    before = len(judge.bodies)
    result = score(*args, "--resume")
    assert result.exit_code == 0, result.output
    assert len(judge.bodies) - before == 3
    rows = list(csv.DictReader(out.read_text().splitlines())) if suffix == ".csv" else json.loads(out.read_text())
    assert sorted(int(r["row"]) for r in rows) == list(range(1, 7))


def test_dry_run_counts_calls_without_calling(judge: Any, tmp_path: Path) -> None:
    data = write_rows(tmp_path / "runs.csv", 5, bad={1})
    result = score(
        str(data),
        "--map",
        "question=agent_task",
        "--scorers",
        "tool_relevancy,goal_achievement",
        "--dry-run",
        "--continue-on-error",
    )
    assert result.exit_code == 1, result.output
    assert "4 judge calls would be made; 1 bad rows" in result.output and judge.bodies == []


def test_usage_errors_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = write_rows(tmp_path / "runs.csv", 1)
    assert score(str(tmp_path / "none.csv")).exit_code == 2
    unknown = score(str(data), "--scorers", "tool_relevance")
    assert unknown.exit_code == 2 and "did you mean 'tool_relevancy'" in unknown.output
    bad_map = score(str(data), "--map", "question")
    assert bad_map.exit_code == 2 and "expected COLUMN=FIELD" in bad_map.output
    wrong_field = score(str(data), "--map", "question=agent_tsk")
    assert wrong_field.exit_code == 2 and "did you mean 'agent_task'" in wrong_field.output
    bad_out = score(str(data), "-o", str(tmp_path / "out.txt"))
    assert bad_out.exit_code == 2 and "use a .csv, .json or .jsonl file" in bad_out.output


EVENT = {
    "event_id": "e1",
    "event_type": "chat",
    "agent": {"name": "a"},
    "interaction": {"user_query": "q", "context": "", "answer": "a"},
}


def test_service_events_are_handed_to_score_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import proctor.service

    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(EVENT) + "\n")
    seen: dict[str, Any] = {}

    class Summary:
        verdicts = {"pass": 1}
        invalid: list[str] = []

        def to_dict(self) -> dict[str, Any]:
            return {"events": 1, "verdicts": self.verdicts}

    def score_events(
        path: Path, *, workers: int, continue_on_error: bool, output: Path | None, settings: Any
    ) -> Summary:
        seen.update(
            path=path, workers=workers, continue_on_error=continue_on_error, output=output, judge=settings.judge_model
        )
        return Summary()

    monkeypatch.setattr(proctor.service, "score_events", score_events, raising=False)
    result = runner.invoke(app, ["score", str(events), "--workers", "3", "--judge", "openai/x", "--continue-on-error"])
    assert result.exit_code == 0, result.output
    assert seen == {"path": events, "workers": 3, "continue_on_error": True, "output": None, "judge": "openai/x"}
    assert json.loads(result.stdout)["verdicts"] == {"pass": 1}
    Summary.verdicts = {"fail": 1}
    assert runner.invoke(app, ["score", str(events)]).exit_code == 1


def test_service_events_without_the_service_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(EVENT) + "\n")
    monkeypatch.setitem(sys.modules, "proctor.service", None)  # as if the module were absent
    result = runner.invoke(app, ["score", str(events)])
    assert result.exit_code == 2
    assert "holds online-service events" in result.output and "proctor.service.score_events" in result.output


def test_ctrl_c_exits_130_keeps_the_rows_and_resume_finishes(judge: Any, tmp_path: Path) -> None:
    judge.default = Reply(VERDICT, delay=0.1)
    data = write_rows(tmp_path / "runs.csv", 40)
    out = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "proctor", "score", str(data), "--map", "question=agent_task"]
    command += ["--scorers", "context_relevancy", "--judge", "openai/score-judge", "--concurrency", "2"]
    command += ["--no-cache", "-o", str(out)]
    env = {**os.environ, "OPENAI_BASE_URL": judge.base_url, "OPENAI_API_KEY": "k"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 4):
        time.sleep(0.05)  # rows are flushed within 0.2 s of finishing
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr
    assert "rerun with --resume" in stdout
    written = read_jsonl(out)
    assert 4 <= len(written) < 40
    before = len(judge.bodies)
    judge.default = Reply(VERDICT)
    resumed = subprocess.run([*command, "--resume", "-q"], env=env, capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(r["row"] for r in read_jsonl(out)) == list(range(1, 41))
    assert len(judge.bodies) - before == 40 - len(written)
