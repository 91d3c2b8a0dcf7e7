"""Bad input to the readers and to `score_file`, through the Python API: located `DatasetError`s and bad
records, never a silent guess; a scores file read back strictly, but a cut-off last row still dropped."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from proctor.recorded import AgentDataset, DatasetError, ScoreOptions, score_file
from proctor.recorded._output import check_overwrite, read_scored, same_file
from proctor.recorded._readers import InvalidJSON, RecordReader, iter_json_array

ROW: dict[str, Any] = {
    "row": 1,
    "line": 1,
    "user_id": None,
    "task_id": None,
    "turn_id": None,
    "agent_name": None,
    "error": None,
}
ROW["scores"] = {"context_relevancy": {"status": "passed", "score": 1.0, "raw_score": 10, "reason": "ok"}}


def rows_json(*numbers: int) -> list[str]:
    return [json.dumps({**ROW, "row": n, "line": n}) for n in numbers]


def test_a_json_mapped_key_in_no_record_raises_and_a_later_one_is_found(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text('{"question": "q1"}\n{"question": "q2", "answer": "a"}\n')
    with pytest.raises(DatasetError, match=r"key 'quest' \(mapped to agent_task\) is in none of its 2 records "):
        AgentDataset().ingest_from_json(path, agent_task="quest")
    dataset = AgentDataset()
    dataset.ingest_from_json(path, agent_task="question", agent_response="answer")  # `answer`: the 2nd record
    assert [r.agent_response for r in dataset] == [None, "a"]


def test_json_records_with_no_field_at_all_raise(tmp_path: Path) -> None:
    path = tmp_path / "obj.json"
    path.write_text('{"a": 1}\n')
    with pytest.raises(DatasetError, match="none of its 1 records is an object with a key that names an AgentData"):
        list(RecordReader(path))


def test_repeated_keys_and_nan_are_bad_records_in_both_json_forms(tmp_path: Path) -> None:
    items = ['{"agent_task": "a", "agent_task": "b"}', '{"agent_task": NaN}', '{"agent_task": "fine"}']
    lines, array = tmp_path / "r.jsonl", tmp_path / "r.json"
    lines.write_text("\n".join(items) + "\n")
    array.write_text("[" + ",\n".join(items) + "]")
    for path in (lines, array):
        dataset = AgentDataset(on_error="skip")
        dataset.ingest_from_json(path)
        assert [r.agent_task for r in dataset] == ["fine"]
        assert [(e.line, e.message.split(":")[0]) for e in dataset.errors] == [
            (1, "the key 'agent_task' appears twice in one JSON object"),
            (2, "not valid JSON"),
        ]


def test_the_array_scanner_flags_invalid_json_data() -> None:
    raw = io.BytesIO(b'[{"a": 1, "a": 2}, {"b": Infinity}, {"c": [1, {"d": 1, "d": 1}]}, {"e": 1}]')
    items = [item for _, item in iter_json_array(raw, "x")]
    assert [type(item).__name__ for item in items] == ["InvalidJSON", "InvalidJSON", "InvalidJSON", "dict"]
    assert isinstance(items[0], InvalidJSON) and items[0].value == {"a": 2}


def test_a_cut_off_array_stops_quietly_only_at_a_last_line_a_row_could_begin(tmp_path: Path) -> None:
    good = "[\n" + ",\n".join(rows_json(1, 2)) + ",\n" + rows_json(3)[0][:20]
    path = tmp_path / "out.json"
    path.write_text(good)
    assert [r["row"] for r in read_scored(path)[1]] == [1, 2]
    path.write_text("[\n" + ",\n".join(rows_json(1)) + ",\n{broken\n" + rows_json(2)[0] + "\n]\n")
    with pytest.raises(DatasetError, match=r"out\.json:3: broken JSON"):
        list(read_scored(path)[1])
    path.write_text("[\n" + rows_json(1)[0] + ",\ngarbage")
    with pytest.raises(DatasetError, match=r"out\.json:3: broken JSON"):
        list(read_scored(path)[1])


def test_a_cut_off_csv_row_is_dropped_and_a_broken_one_mid_file_is_not(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    header = "row,line,user_id,task_id,turn_id,agent_name,error,x_status,x_score,x_raw_score,x_reason\n"
    path.write_text(header + "1,2,,,,,,passed,1.0,10,fine\n" + '2,3,,,,,,passed,1.0,10,"a reason\n')
    assert [r["row"] for r in read_scored(path)[1]] == [1]  # cut off inside a quoted reason with a newline
    path.write_text(header + "1,2,,,,,,passed,1.0,10,fine\n" + "2,3,,,,,,pas")
    assert [r["row"] for r in read_scored(path)[1]] == [1]  # cut off with no newline after it
    path.write_text(header + "1,2,,,,,,passed,1.0,10,fine\n1,2\n" + "3,4,,,,,,passed,1.0,10,fine\n")
    with pytest.raises(DatasetError, match=r"out\.csv:3: not a scores row: it has 2 fields, the header 11"):
        list(read_scored(path)[1])
    path.write_text(header + "1,2,,,,,,passed,high,10,fine\n")
    with pytest.raises(DatasetError, match=r"out\.csv:2: not a scores row: could not convert"):
        list(read_scored(path)[1])


def test_check_overwrite_and_same_file(tmp_path: Path) -> None:
    scores, other, empty = tmp_path / "s.jsonl", tmp_path / "o.jsonl", tmp_path / "e.jsonl"
    scores.write_text(rows_json(1)[0] + "\n")
    other.write_text('{"agent_task": "x"}\n')
    empty.write_text("")
    check_overwrite(scores)
    check_overwrite(empty)
    check_overwrite(tmp_path / "missing.jsonl")
    with pytest.raises(DatasetError, match=r"o\.jsonl:1: not a scores row.*without row, line, error, scores"):
        check_overwrite(other)
    (tmp_path / "link.jsonl").symlink_to(scores)
    assert same_file(tmp_path / "link.jsonl", scores) and same_file(tmp_path / "x" / ".." / "s.jsonl", scores)
    assert not same_file(other, scores) and not same_file(tmp_path / "new.jsonl", scores)


@pytest.mark.anyio
async def test_score_file_refuses_its_input_as_output_and_a_file_with_no_records(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text('{"agent_task": "t", "agent_role": "r", "agent_response": "a"}\n')
    before = data.read_text()
    options: dict[str, Any] = {"scorers": ["context_relevancy"]}
    with pytest.raises(DatasetError, match="is the input file"):
        await score_file(data, None, ScoreOptions(output=data, **options))
    assert data.read_text() == before
    empty = tmp_path / "empty.csv"
    empty.write_text("agent_task\n")
    with pytest.raises(DatasetError, match="no records to score: it has a header row and no data rows"):
        await score_file(empty, None, ScoreOptions(output=tmp_path / "o.jsonl", **options))
    assert not (tmp_path / "o.jsonl").exists()
