"""`AgentDataset`: ingest, column mapping, bad rows with line numbers, streaming in bounded memory, export."""

from __future__ import annotations

import csv
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from proctor.recorded import AgentData, AgentDataset, DatasetError
from proctor.recorded import _readers as readers
from proctor.recorded._readers import RecordReader, iter_json_array

ROWS = [
    {
        "question": "What is 2+2?",
        "answer": "4",
        "user": "u1",
        "tool_calls": '[{"tool_name": "calc", "parameters": {"e": "2+2"}}]',
        "agent_exit": "true",
    },
    {"question": "Capital of France?", "answer": "Paris", "user": "u2", "tool_calls": "", "agent_exit": "false"},
]
MAPPING = {"agent_task": "question", "agent_response": "answer", "user_id": "user"}


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def check_rows(data: list[AgentData]) -> None:
    assert [d.agent_task for d in data] == ["What is 2+2?", "Capital of France?"]
    assert [d.user_id for d in data] == ["u1", "u2"] and [d.agent_exit for d in data] == [True, False]
    assert data[0].tool_calls[0].tool_name == "calc" and data[1].tool_calls == []  # type: ignore[union-attr]


def test_csv_with_the_seeds_column_mapping(tmp_path: Path) -> None:
    dataset = AgentDataset()
    dataset.ingest_from_csv(write_csv(tmp_path / "d.csv", ROWS), **MAPPING)
    check_rows(dataset.get_data())
    assert len(dataset) == 2 and list(dataset.get_datapoint()) == dataset.data


def test_json_array_and_json_lines(tmp_path: Path) -> None:
    array = tmp_path / "d.json"
    array.write_text(json.dumps(ROWS, indent=2))
    lines = tmp_path / "d.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n\n")
    for path in (array, lines):
        dataset = AgentDataset()
        dataset.ingest_from_json(path, **MAPPING)
        check_rows(dataset.data)
    undecorated = tmp_path / "lines.json"  # JSON Lines under a .json name: told apart by the first character
    undecorated.write_text(lines.read_text())
    assert [d.agent_task for d in AgentDataset(on_error="raise")._records(undecorated, None, None, MAPPING)] == [
        "What is 2+2?",
        "Capital of France?",
    ]


def test_mapping_mistakes_are_explained(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", ROWS)
    with pytest.raises(DatasetError, match=r"unknown AgentData field 'agent_tsk' \(did you mean 'agent_task'\?\)"):
        AgentDataset().ingest_from_csv(path, agent_tsk="question")
    with pytest.raises(DatasetError, match="column 'query' \\(mapped to agent_task\\) is not in the header"):
        AgentDataset().ingest_from_csv(path, agent_task="query")
    with pytest.raises(DatasetError, match="no column names an AgentData field; columns: a, b"):
        AgentDataset().ingest_from_csv(write_csv(tmp_path / "x.csv", [{"a": 1, "b": 2}]))


def test_bad_rows_name_their_line_and_are_fatal_or_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        'agent_task,agent_response,tool_calls\n"multi\nline task",ok,\nfine,ok,"[{""id"": 1}]"\nshort\nlast,ok,\n'
    )
    with pytest.raises(DatasetError, match=r"bad.csv:4: tool_calls.list\[ToolCall\].0.tool_name: Field required"):
        AgentDataset().ingest_from_csv(path)
    dataset = AgentDataset(on_error="skip")
    dataset.ingest_from_csv(path)
    assert [d.agent_task for d in dataset.data] == ["multi\nline task", "last"]
    assert [(e.line, e.message.split(":")[0]) for e in dataset.errors] == [
        (4, "tool_calls.list[ToolCall].0.tool_name"),
        (5, "the row has 1 fields, the header has 3"),
    ]
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"agent_task": "a"}\n{oops\n[1]\n{"agent_task": "b"}\n')
    skipped = AgentDataset(on_error="skip")
    skipped.ingest_from_json(jsonl)
    assert [d.agent_task for d in skipped.data] == ["a", "b"]
    assert [(e.line, e.message[:12]) for e in skipped.errors] == [(2, "not valid JS"), (3, "expected a J")]


def test_stream_yields_chunks(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [{"agent_task": f"task {i}", "agent_exit": "true"} for i in range(25)])
    chunks = list(AgentDataset().stream_from_csv(path, chunk_size=10))
    assert [len(c) for c in chunks] == [10, 10, 5] and chunks[2][-1].agent_task == "task 24"
    lines = tmp_path / "d.jsonl"
    lines.write_text("".join(json.dumps({"q": f"t{i}"}) + "\n" for i in range(7)))
    assert [len(c) for c in AgentDataset().stream_from_jsonl(lines, chunk_size=3, agent_task="q")] == [3, 3, 1]
    assert AgentDataset().data == []  # streaming keeps nothing


def test_json_array_is_parsed_incrementally_across_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readers, "_BLOCK", 7)  # tiny blocks: elements and numbers span several reads
    items = [{"agent_task": f"t{i}", "turn_id": 1234567 + i, "agent_response": "é" * i} for i in range(30)]
    path = tmp_path / "a.json"
    path.write_text("[\n" + ",\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n]\n")
    records = list(RecordReader(path))
    assert [r.data.turn_id for r in records if r.data] == [str(1234567 + i) for i in range(30)]
    assert [r.line for r in records] == list(range(2, 32))
    with path.open("rb") as raw:
        assert [value for _, value in iter_json_array(raw, "x")] == items


def test_broken_json_array_is_fatal_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n{"agent_task": "a"},\n{"agent_task": "b"\n')
    with pytest.raises(DatasetError, match=r"broken.json:3: .*(not closed|broken JSON)"):
        AgentDataset().ingest_from_json(path)
    path.write_text('[{"agent_task": "a"} {"agent_task": "b"}]')
    with pytest.raises(DatasetError, match="expected ',' or ']'"):
        AgentDataset().ingest_from_json(path)


def test_export_round_trips(tmp_path: Path) -> None:
    dataset = AgentDataset()
    dataset.ingest_from_csv(write_csv(tmp_path / "d.csv", ROWS), **MAPPING)
    for name in ("out.csv", "out.json", "out.jsonl"):
        dataset.export_to_csv(tmp_path / name) if name.endswith(".csv") else dataset.export_to_json(tmp_path / name)
        again = AgentDataset()
        (again.ingest_from_csv if name.endswith(".csv") else again.ingest_from_json)(tmp_path / name)
        assert again.data == dataset.data, name
    assert json.loads((tmp_path / "out.json").read_text())[0]["agent_task"] == "What is 2+2?"


def _peak_streaming(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        rows = 0
        for chunk in AgentDataset().stream_from_csv(path, chunk_size=500):
            rows += len(chunk)
        return rows, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_streaming_a_large_csv_keeps_memory_bounded(tmp_path: Path) -> None:
    def generate(path: Path, rows: int) -> Path:
        call = json.dumps([{"tool_name": "search", "parameters": {"q": "x" * 200}}])
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["agent_task", "agent_response", "tool_calls", "agent_exit"])
            for i in range(rows):
                writer.writerow([f"task {i} " + "y" * 300, "z" * 300, call, "true"])
        return path

    small, large = generate(tmp_path / "small.csv", 2_000), generate(tmp_path / "large.csv", 20_000)
    assert large.stat().st_size > 17_000_000
    small_rows, small_peak = _peak_streaming(small)
    large_rows, large_peak = _peak_streaming(large)
    assert (small_rows, large_rows) == (2_000, 20_000)
    # ten times the rows, about the same peak: one chunk in memory, never the file
    assert large_peak < small_peak * 1.5 + 1_000_000, (small_peak, large_peak)
    assert large_peak < 8_000_000
