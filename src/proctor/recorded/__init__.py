"""Score recorded agent runs: the `AgentData` model, NovaEval's agent scorers, datasets that stream.

```python
from proctor.recorded import AgentData, AgentDataset, AgentScorers

scorers = AgentScorers("openai/gpt-4.1-mini")
dataset = AgentDataset()
for chunk in dataset.stream_from_csv("runs.csv", chunk_size=1000, agent_task="question"):
    for agent_data in chunk:
        results = await scorers.score_all(agent_data)
```

`proctor score FILE` does the same from the command line, with bounded concurrency, rows written as
they finish, aggregates and resume (`score_file`). The scorers themselves are Proctor checks
(`tool-relevancy`, ..., `proctor.recorded.AGENT_SCORERS`), so suites can use them on live runs, and
`agent_data_from_trial` turns a finished trial into `AgentData`.

Layering: the `AgentData` model lives in `proctor.agent_data`, beside `proctor.transcript`, below the
checks that read it; this package sits above `checks`, `models` and `results`. Names load on first use
(PEP 562).

`proctor.recorded.ToolCall` is NovaEval's (`tool_name`, `parameters`, `call_id`), not
`proctor.ToolCall` (a transcript's `name`, `arguments`, `id`); the former accepts the latter's keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from proctor.agent_data import AgentData, ToolCall, ToolResult, ToolSchema, agent_data_from_transcript
    from proctor.checks._agent_scorers import AGENT_SCORERS, AgentScorer
    from proctor.recorded._batch import Aggregates, ScoreObserver, ScoreOptions, ScoreSummary, score_file
    from proctor.recorded._convert import agent_data_from_trial
    from proctor.recorded._dataset import AgentDataset, OnError
    from proctor.recorded._readers import DatasetError, RowError
    from proctor.recorded._scorers import (
        AgentScorers,
        ScorerOutput,
        ScoreWithOriginalTask,
        ScoreWithReasoning,
        context_relevancy_scorer,
        conversation_coherence_scorer,
        goal_achievement_scorer,
        parameter_correctness_scorer,
        role_adherence_scorer,
        task_progression_scorer,
        tool_correctness_scorer,
        tool_relevancy_scorer,
    )

_LAZY = {
    "AGENT_SCORERS": "proctor.checks._agent_scorers",
    "AgentScorer": "proctor.checks._agent_scorers",
    "Aggregates": "_batch",
    "ScoreObserver": "_batch",
    "ScoreOptions": "_batch",
    "ScoreSummary": "_batch",
    "score_file": "_batch",
    "agent_data_from_trial": "_convert",
    "AgentData": "proctor.agent_data",
    "ToolCall": "proctor.agent_data",
    "ToolResult": "proctor.agent_data",
    "ToolSchema": "proctor.agent_data",
    "agent_data_from_transcript": "proctor.agent_data",
    "AgentDataset": "_dataset",
    "OnError": "_dataset",
    "DatasetError": "_readers",
    "RowError": "_readers",
    "AgentScorers": "_scorers",
    "ScoreWithOriginalTask": "_scorers",
    "ScoreWithReasoning": "_scorers",
    "ScorerOutput": "_scorers",
    "context_relevancy_scorer": "_scorers",
    "conversation_coherence_scorer": "_scorers",
    "goal_achievement_scorer": "_scorers",
    "parameter_correctness_scorer": "_scorers",
    "role_adherence_scorer": "_scorers",
    "task_progression_scorer": "_scorers",
    "tool_correctness_scorer": "_scorers",
    "tool_relevancy_scorer": "_scorers",
}

__all__ = [
    "AGENT_SCORERS",
    "AgentData",
    "AgentDataset",
    "AgentScorer",
    "AgentScorers",
    "Aggregates",
    "DatasetError",
    "OnError",
    "RowError",
    "ScoreObserver",
    "ScoreOptions",
    "ScoreSummary",
    "ScoreWithOriginalTask",
    "ScoreWithReasoning",
    "ScorerOutput",
    "ToolCall",
    "ToolResult",
    "ToolSchema",
    "agent_data_from_transcript",
    "agent_data_from_trial",
    "context_relevancy_scorer",
    "conversation_coherence_scorer",
    "goal_achievement_scorer",
    "parameter_correctness_scorer",
    "role_adherence_scorer",
    "score_file",
    "task_progression_scorer",
    "tool_correctness_scorer",
    "tool_relevancy_scorer",
]


__getattr__ = _lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return list(__all__)
