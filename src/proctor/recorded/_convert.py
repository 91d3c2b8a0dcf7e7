"""A Proctor trial as `AgentData`, so the agent scorers run on live runs as on recorded ones."""

from __future__ import annotations

from typing import Any

from proctor.agent_data import AgentData, agent_data_from_transcript
from proctor.results import TrialResult

__all__ = ["agent_data_from_trial"]


def agent_data_from_trial(trial: TrialResult, **fields: Any) -> AgentData:
    """Build the `AgentData` of a whole trial.

    `task_id` is the case key, `turn_id` the trial number, `agent_task` the first user message,
    `agent_response` the last reply, `tool_calls` every call made, `trace` the transcript; the run is
    over, so `agent_exit` is true and `exit_status` is `completed`, or the trial's error type.

    Args:
        trial: The trial (from a run's results, or `TrialResult.from_dict`).
        **fields: Other `AgentData` fields (e.g. `agent_role`, `tools_available`); they win.

    Returns:
        The record.
    """
    defaults: dict[str, Any] = {
        "task_id": trial.case_key,
        "turn_id": str(trial.trial),
        "exit_status": trial.error_type or ("error" if trial.error else "completed"),
    }
    return agent_data_from_transcript(trial.turns, agent_exit=True, **{**defaults, **fields})
