"""NovaEval's own datasets, unchanged, scored by `proctor score` (files under `seeds/novaeval/`, Apache-2.0).

Each file is scored with a scripted judge on loopback: every row reads, no scorer result is an error, and
a scorer whose input a row lacks (`"tool_calls": []`) is `skipped` for that row. A file some row of which
is scored exits 0; one where no row feeds any scorer (every result skipped) exits 3, nothing scored.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.recorded import AgentDataset
from proctor.recorded._defaults import default_scorers
from servers.model_server import Reply

SEEDS = Path(__file__).parent / "seeds" / "novaeval"
FILES = [SEEDS / "simple_agent_dataset.csv", *sorted((SEEDS / "processed_datasets").iterdir())]
VERDICT = Reply(json.dumps({"original_task": "t", "reasoning": "Fine.", "score": 4}))
NOTHING_TO_SCORE = {
    f"{name}_processed_dataset.{suffix}"
    for name in (
        "agent.llm-rag_dataset",
        "agent.llm_model_execution_dataset",
        "agent.query_routing_dataset",
        "agent.routing_evaluation_metrics_dataset",
        "agent.web_search_generation_dataset",
        "tool-orchestator_dataset",
    )
    for suffix in ("csv", "json")
}
"""NovaEval's datasets where no row has any scorer's input (e.g. every `tool_calls` is `[]`)."""
runner = CliRunner()


def statuses(path: Path) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert row["error"] is None, row
        counts.update((name, score["status"]) for name, score in row["scores"].items())
    return counts


def test_simple_agent_dataset_loads_with_agent_exit_as_novaeval_reads_it() -> None:
    dataset = AgentDataset()
    dataset.ingest_from_csv(SEEDS / "simple_agent_dataset.csv")
    assert len(dataset) == 10
    # "success" is not one of NovaEval's true strings (true, 1, yes, on): the agents have not exited
    assert {record.agent_exit for record in dataset} == {False}
    assert dataset.data[0].tool_calls == "file_reader call"  # text where JSON is not given, as NovaEval keeps it


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_dataset_is_scored_without_errors(path: Path, model_server: Any, tmp_path: Path) -> None:
    script = model_server.script(default=VERDICT)
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(
        app,
        ["score", str(path), "--judge", "openai/judge", "--no-cache", "-o", str(out), "-q"],
        env={"OPENAI_BASE_URL": script.base_url, "OPENAI_API_KEY": "k"},
    )
    counts = statuses(out)
    assert counts and not any(status == "error" for _, status in counts)
    scored = any(status in ("passed", "failed") for _, status in counts)
    assert scored == (path.name not in NOTHING_TO_SCORE) == bool(script.requests)
    assert result.exit_code == (0 if scored else 3), result.output  # nothing scored is not a pass


def test_tool_scorers_are_skipped_where_a_row_has_no_calls(model_server: Any, tmp_path: Path) -> None:
    path = SEEDS / "processed_datasets" / "tool-orchestator_dataset_processed_dataset.json"
    rows = json.loads(path.read_text())
    assert all(row["tool_calls"] == [] for row in rows)
    assert default_scorers(path) is None  # no row feeds any scorer: score_file picks from the first row
    script = model_server.script(default=VERDICT)
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(
        app,
        ["score", str(path), "--scorers", "tool_relevancy", "--judge", "openai/j", "--no-cache", "-o", str(out)],
        env={"OPENAI_BASE_URL": script.base_url, "OPENAI_API_KEY": "k"},
    )
    assert result.exit_code == 3, result.output  # every result skipped: nothing was scored
    assert f"nothing scored: every result of the {len(rows)} rows was skipped" in result.output
    assert statuses(out) == Counter({("tool_relevancy", "skipped"): len(rows)})
    first = json.loads(out.read_text().splitlines()[0])["scores"]["tool_relevancy"]
    assert first["reason"].startswith("nothing to score: the record has no tools_available, tool_calls")
    assert script.requests == []


def test_the_default_set_is_every_scorer_some_row_can_feed(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"agent_task": "t", "agent_response": "", "agent_role": "r"},
        {"agent_task": "t", "agent_response": "done", "agent_role": "r"},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    # the first row alone would feed nothing with a response; the second feeds these
    assert default_scorers(path) == ["context_relevancy", "role_adherence"]
