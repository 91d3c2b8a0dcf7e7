"""The results format: what a real run writes validates, by pydantic and by an independent JSON Schema
validator against the published schema; a damaged file gets a located error, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from proctor.cli import app
from proctor.errors import ConfigError
from proctor.results import load_run, read_previous_trials
from proctor.results._format import results_json_schema, validate_results

DATA = Path(__file__).parent / "data"
SUITE = """\
name: mixed
trials: 2
target: python:helpers.agents:echo
turns:
  - content: "my email is bob.smith@acme.example"
    assert:
      - {type: regex, value: "[a-z]+\\\\.[a-z]+@acme\\\\.example"}
      - {type: contains, value: goodbye}
      - {type: llm-rubric, value: "is polite"}
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("format")
    (folder / "mixed.yaml").write_text(SUITE, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(folder), "--model", "m", "-v", "--trust"])
    assert result.exit_code == 1, result.output  # `contains goodbye` fails
    assert "[a-z]+\\.[a-z]+@acme\\.example" in result.output  # a regex is shown as written, not as markup
    (path,) = (folder / ".results").glob("m_*.json")
    return path


def test_a_real_run_validates_against_the_models_and_the_published_schema(written: Path) -> None:
    data = load_run(written)  # validates
    Draft202012Validator.check_schema(results_json_schema())
    errors = list(Draft202012Validator(results_json_schema()).iter_errors(data))
    assert errors == []
    assert {c["status"] for c in data["cases"][0]["trials"][0]["checks"]} == {"passed", "failed", "skipped"}


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_committed_results_files_validate(path: Path) -> None:
    validate_results(json.loads(path.read_text(encoding="utf-8")), str(path))


def test_a_damaged_file_is_located(written: Path, tmp_path: Path) -> None:
    data = json.loads(written.read_text(encoding="utf-8"))
    data["cases"][0]["trials"][1]["status"] = "pased"
    del data["summary"]["trials"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_run(broken)
    message = str(caught.value)
    assert str(broken) in message and "summary.trials: field required" in message
    assert "cases[0].trials[1].status: input should be" in message and "'pased'" in message


def test_resume_locates_a_damaged_journal_line(written: Path, tmp_path: Path) -> None:
    trial = json.loads(written.read_text(encoding="utf-8"))["cases"][0]["trials"][0]
    journal = tmp_path / "r.journal.jsonl"
    lines = [{"kind": "run", "run_id": "r"}, {"kind": "trial", "case": "x::y", **trial, "turns": "oops"}]
    journal.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{journal}:2 is not a valid trial record: turns: "):
        read_previous_trials(journal)


def test_resume_names_the_first_damaged_line_among_good_ones(written: Path, tmp_path: Path) -> None:
    trial = json.loads(written.read_text(encoding="utf-8"))["cases"][0]["trials"][0]
    journal = tmp_path / "r.journal.jsonl"
    good = [{"kind": "trial", "case": f"x::y{i}", **trial} for i in range(4)]
    bad = [{**good[0], "status": "pased"}, {**good[1], "score": "high"}]
    lines = [{"kind": "run", "run_id": "r"}, *good[:2], bad[0], good[2], bad[1], good[3]]
    journal.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{journal}:4 is not a valid trial record: status: "):
        read_previous_trials(journal)  # the first bad line is named
    journal.write_text("\n".join(json.dumps(line) for line in [lines[0], *good]) + "\n", encoding="utf-8")
    assert len(read_previous_trials(journal)[1]) == 4


def test_a_trial_round_trips_through_its_json_form() -> None:
    """What `--resume` and `rescore` rebuild from a file is the trial that was written, tool calls included."""
    from proctor.checks import CheckResult
    from proctor.results import TrialResult
    from proctor.results._format import validate_trial
    from proctor.transcript import Message, ToolCall

    call = ToolCall("get_weather", {"city": "Oslo"}, "c1", "Sunny", "agent+tools", 2.5, True)
    trial = TrialResult(
        "s.yaml::c",
        2,
        "failed",
        0.0,
        turns=[Message("user", "hi"), Message("assistant", "hello", [call], latency_ms=3.0)],
        checks=[CheckResult("polite", "llm-rubric", "failed", 0.0, reason="rude", turn=0)],
        trace_id="0af7651916cd43dd8448eb211c80319c",
    )
    data = json.loads(json.dumps(trial.to_dict()))
    validate_trial(data, "trial")
    again = TrialResult.from_dict("s.yaml::c", data)
    assert again.turns[1].tool_calls == [call] and again.trace_id == trial.trace_id
    assert again.to_dict() == data
