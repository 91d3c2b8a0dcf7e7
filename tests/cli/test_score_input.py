"""`proctor score` and bad input: the input is never overwritten, a file that is not a scores file is never
replaced, a `--map` key no record has, outputs that cannot be written, repeated keys and NaN, files with
no record. Each is a located error with exit 2 (or a bad row), no traceback, and nothing lost."""

from __future__ import annotations

import csv
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()

VERDICT = json.dumps({"original_task": "t", "reasoning": "Fine.", "score": 4})
RECORD = {
    "agent_task": "find x",
    "agent_role": "support",
    "agent_response": "x",
    "tool_calls": [{"name": "search", "arguments": {"q": "x"}}],
    "expected_tool_call": {"name": "search", "arguments": {"q": "x"}},
}


def good(path: Path, count: int = 2) -> Path:
    """AgentData rows the deterministic `tool_correctness_exact` scores without a judge."""
    path.write_text("".join(json.dumps({**RECORD, "task_id": f"t{i}"}) + "\n" for i in range(count)))
    return path


def score(*args: str) -> Any:
    return runner.invoke(app, ["score", *args, "--no-cache"])


def clean_exit(result: Any, code: int) -> None:
    """The exit code, and no traceback: the error is a message, not an exception."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def judge(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    script = model_server.script(default=Reply(VERDICT))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(tmp_path)
    return script


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# 1. the input is never the output


@pytest.mark.parametrize("how", ["same", "dotted", "symlink", "hardlink"])
def test_output_naming_the_input_is_refused_and_the_input_is_intact(here: Path, how: str) -> None:
    data = good(here / "good.jsonl")
    before = data.read_bytes()
    target = {"same": data, "dotted": here / "sub" / ".." / "good.jsonl"}.get(how, here / "other.jsonl")
    if how == "symlink":
        target.symlink_to(data)
    elif how == "hardlink":
        os.link(data, target)
    result = score(str(data), "-o", str(target))
    clean_exit(result, 2)
    assert f"--output {target} is the input file" in result.output and "choose another --output" in result.output
    assert data.read_bytes() == before
    assert not list(here.glob("*.tmp"))


def test_summary_naming_the_input_or_the_output_is_refused(judge: Any, here: Path) -> None:
    data = good(here / "good.jsonl")
    before = data.read_bytes()
    on_input = score(str(data), "--judge", "openai/j", "-o", "out.jsonl", "--summary", str(data))
    clean_exit(on_input, 2)
    assert f"--summary {data} is the input file" in on_input.output and data.read_bytes() == before
    on_output = score(str(data), "--judge", "openai/j", "-o", "out.jsonl", "--summary", "out.jsonl")
    clean_exit(on_output, 2)
    assert "--summary out.jsonl is the --output file" in on_output.output
    assert judge.bodies == [] and not (here / "out.jsonl").exists()


def test_dry_run_and_events_refuse_the_input_as_output_too(here: Path) -> None:
    data = good(here / "good.jsonl")
    clean_exit(score(str(data), "--dry-run", "-o", str(data)), 2)
    event = {"event_id": "e1", "event_type": "chat", "agent": {"name": "a"}, "interaction": {"user_query": "q"}}
    events = here / "events.jsonl"
    events.write_text(json.dumps(event) + "\n")
    refused = score(str(events), "-o", str(events))
    clean_exit(refused, 2)
    assert "is the input file" in refused.output and json.loads(events.read_text()) == event


# 2. resuming into, or overwriting, a file that is not a scores file


SCORES_ROW: dict[str, Any] = {
    "row": 1,
    "line": 1,
    "user_id": None,
    "task_id": "t0",
    "turn_id": None,
    "agent_name": None,
}
SCORES_ROW |= {"error": None, "scores": {"tool_correctness_exact": {"status": "passed", "score": 1.0}}}


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("res.jsonl", "garbage\n", "res.jsonl:1:"),
        ("res.jsonl", "garbage", "res.jsonl:1:"),  # one line with no newline, but nothing a row begins with
        ("res.jsonl", json.dumps(SCORES_ROW) + "\n" + '{"a": 1}\n' + json.dumps(SCORES_ROW) + "\n", "res.jsonl:2:"),
        ("res.jsonl", '{"row": "x", "line": 1, "error": null, "scores": {}}\n', "res.jsonl:1:"),
        ("res.json", "[1, 2]\n", "res.json:1:"),
        ("res.json", '{"agent_task": "a"}\n', "res.json:1:"),
        (
            "res.json",
            "[\n" + json.dumps(SCORES_ROW) + ",\ngarbage,\n" + json.dumps(SCORES_ROW) + "\n]\n",
            "res.json:3:",
        ),
        ("res.csv", "agent_task,agent_response\na,b\n", "res.csv:1:"),
        ("res.csv", "row,line,error\n1,1,\nx,y,\n1,2,\n", "res.csv:3:"),
    ],
)
def test_resume_refuses_a_file_that_is_not_a_scores_file(here: Path, name: str, content: str, where: str) -> None:
    data = good(here / "good.jsonl")
    out = here / name
    out.write_text(content)
    result = score(str(data), "-o", str(out), "--resume")
    clean_exit(result, 2)
    assert f"cannot resume into {out}" in result.output and where in result.output, result.output
    assert "not a scores" in result.output and "delete the file to start over" in result.output
    assert out.read_text() == content  # untouched


def test_resume_still_drops_a_cut_off_last_row(here: Path) -> None:
    data = good(here / "good.jsonl", 3)
    out = here / "out.jsonl"
    args = [str(data), "--scorers", "tool_correctness_exact", "-o", str(out)]
    assert score(*args).exit_code == 0
    rows = sorted(read_jsonl(out), key=lambda r: r["row"])
    out.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[1])[:25])  # killed mid-write
    result = score(*args, "--resume")
    clean_exit(result, 0)
    assert "1 rows kept from the previous run" in result.output
    assert sorted(r["row"] for r in read_jsonl(out)) == [1, 2, 3]


def test_without_resume_a_scores_file_is_replaced_and_any_other_file_kept(here: Path) -> None:
    data = good(here / "good.jsonl")
    out = here / "out.jsonl"
    out.write_text(json.dumps({**SCORES_ROW, "row": 9}) + "\n")  # an earlier output: replaced, as documented
    clean_exit(score(str(data), "-o", str(out)), 0)
    assert sorted(r["row"] for r in read_jsonl(out)) == [1, 2]
    other = here / "notes.jsonl"
    other.write_text('{"note": "mine"}\n')
    refused = score(str(data), "-o", str(other))
    clean_exit(refused, 2)
    assert f"--output {other} exists and is not a scores file" in refused.output and "notes.jsonl:1:" in refused.output
    assert other.read_text() == '{"note": "mine"}\n'
    (here / "empty.jsonl").write_text("")
    clean_exit(score(str(data), "-o", str(here / "empty.jsonl")), 0)  # an empty file holds nothing to lose


# 3. a --map key that no record has


@pytest.mark.parametrize("scorers", [[], ["--scorers", "tool_correctness_exact"]])
def test_a_map_key_in_no_record_is_a_usage_error(here: Path, scorers: list[str]) -> None:
    data = good(here / "good.jsonl")
    missing = score(str(data), "--map", "nosuchcol=tool_calls", *scorers)
    clean_exit(missing, 2)
    assert "key 'nosuchcol' (mapped to tool_calls) is in none of its 2 records" in missing.output
    assert "keys: agent_task, agent_role, agent_response, tool_calls" in missing.output
    typo = score(str(data), "--map", "tool_cals=tool_calls", *scorers)
    clean_exit(typo, 2)
    assert "did you mean 'tool_calls'?" in typo.output
    assert not (here / "good.scores.jsonl").exists()


def test_a_map_key_only_later_records_have_is_read(here: Path) -> None:
    """The check reads on past the first record (streaming) only when that record lacks a mapped key."""
    data = here / "sparse.json"
    first = {k: v for k, v in RECORD.items() if k != "tool_calls"}
    later = {**first, "calls": RECORD["tool_calls"]}
    data.write_text(json.dumps([first, later]))
    out = here / "out.jsonl"
    result = score(str(data), "--map", "calls=tool_calls", "--scorers", "tool_correctness_exact", "-o", str(out))
    clean_exit(result, 0)
    rows = {r["row"]: r for r in read_jsonl(out)}
    assert rows[2]["scores"]["tool_correctness_exact"]["status"] == "passed"
    assert rows[1]["scores"]["tool_correctness_exact"]["status"] == "skipped"


def test_a_map_column_not_in_a_csv_header_suggests_the_closest(here: Path) -> None:
    data = here / "runs.csv"
    data.write_text("question,agent_response\nq,a\n")
    result = score(str(data), "--map", "questoin=agent_task")
    clean_exit(result, 2)
    assert "column 'questoin' (mapped to agent_task) is not in the header (did you mean 'question'?)" in result.output


# 4. outputs that cannot be written


def unwritable(here: Path) -> list[tuple[str, str]]:
    (here / "afile").write_text("x")
    (here / "folder.jsonl").mkdir()
    cases = [
        ("-o", str(here / "afile" / "x.jsonl")),
        ("-o", str(here / "folder.jsonl")),
        ("--summary", str(here / "afile" / "s.json")),
        ("--summary", str(here)),
    ]
    if Path("/proc/self").is_dir():  # Linux: no file can be created in /proc, not even by root
        cases += [("-o", "/proc/x.jsonl"), ("--summary", "/proc/s.json")]
    return cases


def test_unwritable_outputs_are_refused_before_any_judge_call(judge: Any, here: Path) -> None:
    data = good(here / "good.jsonl")
    for option, path in unwritable(here):
        args = [str(data), "--judge", "openai/j", "--scorers", "context_relevancy", option, path]
        if option == "--summary":
            args += ["-o", str(here / "out.jsonl")]
        result = score(*args)
        clean_exit(result, 2)
        assert f"error: {option if option != '-o' else '--output'} {path}" in result.output, result.output
        assert judge.bodies == [], (option, path)
        assert not (here / "out.jsonl").exists() and not (here / "good.scores.jsonl").exists()


def test_a_summary_that_fails_at_the_end_is_reported_and_the_scores_kept(
    judge: Any, here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = good(here / "good.jsonl")
    real = Path.write_text

    def full_disk(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name == "summary.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    for quiet in ([], ["--quiet"], ["--json"]):
        out = here / "out.jsonl"
        args = [str(data), "--judge", "openai/j", "--scorers", "context_relevancy", "-o", str(out)]
        result = score(*args, "--summary", "summary.json", *quiet)
        clean_exit(result, 2)
        assert "--summary summary.json: could not write the summary (No space left on device)" in result.output
        assert f"the scored rows are in {out}" in result.output
        assert len(read_jsonl(out)) == 2
    assert len(judge.bodies) == 6


def test_a_scored_row_that_cannot_be_written_is_an_error_not_a_traceback(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proctor.recorded._output import ScoreWriter

    def full_disk(self: ScoreWriter, row: dict[str, Any]) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ScoreWriter, "write", full_disk)
    result = score(str(good(here / "good.jsonl")), "-o", "out.jsonl")
    clean_exit(result, 2)
    assert "--output out.jsonl: could not write a scored row" in result.output and "--resume" in result.output


# 5. repeated keys and NaN


def test_a_column_read_twice_in_a_csv_header_is_an_error(here: Path) -> None:
    data = here / "dup.csv"
    data.write_text("task_id,agent_task,agent_response,task_id\nt1,a,b,t2\n")
    result = score(str(data))
    clean_exit(result, 2)
    assert f"{data}:1: column 'task_id' appears 2 times in the header (columns 1, 4)" in result.output
    mapped = here / "mapped.csv"
    mapped.write_text("question,agent_response,question\nq1,b,q2\n")
    result = score(str(mapped), "--map", "question=agent_task")
    clean_exit(result, 2)
    assert "column 'question' (mapped to agent_task) appears 2 times" in result.output


def test_a_column_nothing_reads_may_repeat(here: Path) -> None:
    """Spreadsheets export several unnamed columns: a repeat of a column no field is read from is fine."""
    data = here / "extra.csv"
    with data.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["", "agent_task", "expected_tool_call", "tool_calls", ""])
        writer.writerow(["x", "a", json.dumps(RECORD["expected_tool_call"]), json.dumps(RECORD["tool_calls"]), "y"])
    clean_exit(score(str(data), "-o", str(here / "o.jsonl")), 0)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_repeated_keys_and_nan_are_bad_rows(here: Path, suffix: str) -> None:
    lines = [
        '{"agent_task": "a", "agent_response": "b", "task_id": "t1", "task_id": "t2"}',
        json.dumps({**RECORD, "task_id": "ok"}),
        '{"agent_task": "a", "agent_response": "b", "task_id": NaN}',
        '{"agent_task": "a", "agent_response": "b", "metadata": {"n": -Infinity}}',
        '{"agent_task": "a", "tool_calls": [{"name": "s", "arguments": {"q": 1, "q": 2}}]}',
    ]
    data = here / f"rows{suffix}"
    data.write_text("\n".join(lines) + "\n" if suffix == ".jsonl" else "[\n" + ",\n".join(lines) + "\n]\n")
    fatal = score(str(data))
    clean_exit(fatal, 2)
    line = 1 if suffix == ".jsonl" else 2
    assert f"{data}:{line}: the key 'task_id' appears twice in one JSON object" in fatal.output
    out = here / "out.jsonl"
    skipped = score(str(data), "--continue-on-error", "-o", str(out))
    clean_exit(skipped, 1)
    rows = {r["row"]: r for r in read_jsonl(out)}
    assert "the key 'task_id' appears twice" in rows[1]["error"] and rows[1]["task_id"] is None
    assert rows[2]["error"] is None and rows[2]["task_id"] == "ok"
    assert rows[3]["error"].startswith("not valid JSON: NaN") and rows[3]["task_id"] is None  # never "nan"
    assert rows[4]["error"].startswith("not valid JSON: -Infinity")
    assert "the key 'q' appears twice" in rows[5]["error"]


# files with no record


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("empty.jsonl", "", "no records to score: the file is empty"),
        ("blank.jsonl", "\n\n", "no records to score: it has only blank lines"),
        ("header.csv", "agent_task,agent_response\n", "no records to score: it has a header row and no data rows"),
        ("empty.csv", "", "the file is empty (a header row is needed)"),
        ("empty.json", "[]\n", "no records to score: its JSON array is empty"),
        ("obj.json", '{"a": 1}\n', "none of its 1 records is an object with a key that names an AgentData field"),
        ("nums.jsonl", "1\n2\n", "none of its 2 records is an object with a key that names an AgentData field"),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_file_with_no_records_is_bad_input(here: Path, name: str, content: str, why: str, dry_run: bool) -> None:
    data = here / name
    data.write_text(content)
    result = score(str(data), "-o", "out.jsonl", *(["--dry-run"] if dry_run else []))
    clean_exit(result, 2)
    assert f"{data}: {why}" in result.output
    assert not (here / "out.jsonl").exists()


def test_text_that_is_not_utf8_is_located_not_a_traceback(here: Path) -> None:
    for name, content, line in [
        ("latin.csv", b"agent_task,agent_response\nok,fine\ncaf\xe9,b\n", 3),
        ("late.csv", b"agent_task,agent_response\n" + b"ok,fine\n" * 5000 + b"caf\xe9,b\n", 5002),  # past a block
        ("latin.json", b'[{"agent_task": "ok"},\n {"agent_task": "caf\xe9"}]', 2),
    ]:
        (here / name).write_bytes(content)
        result = score(name, "--continue-on-error", "-o", "out.jsonl")
        clean_exit(result, 2)
        assert f"{name}:{line}: not UTF-8 text" in result.output
    (here / "res.csv").write_bytes(b"row,line\n\xff\n")
    resumed = score(str(good(here / "good.jsonl")), "-o", "res.csv", "--resume")
    clean_exit(resumed, 2)
    assert "cannot resume into res.csv" in resumed.output and "res.csv:2: not UTF-8 text" in resumed.output
