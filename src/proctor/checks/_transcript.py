"""The transcript judge of simulated conversations (Embabel's scorer): tone and a score per task.

Its result is one `CheckResult` of type `transcript` whose score is the mean task score; the tone and
each task's score and reason are in `details`. The prompt is `prompts/transcript.j2` (overridable by
`judge: {prompts: {transcript: ...}}`); the judge runs at temperature 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from proctor.checks._judging import judge_error, no_judge
from proctor.checks._result import CheckResult
from proctor.errors import ModelError

if TYPE_CHECKING:
    from proctor.checks._judging import Judge
    from proctor.suite import SimulatedTask
    from proctor.transcript import Message

__all__ = ["TaskScore", "TranscriptScore", "judge_transcript"]

NAME = "transcript: tasks"


class TaskScore(BaseModel):
    """One task's score."""

    task: int = Field(ge=1)
    """1-based task number."""
    score: float = Field(ge=0, le=1)
    """0 (not done) .. 1 (meets its acceptance criteria)."""
    reason: str = ""
    """Why."""


class TranscriptScore(BaseModel):
    """The transcript judge's verdict."""

    tone: float = Field(ge=0, le=1)
    """How helpful, clear and polite the assistant was."""
    tone_reason: str = ""
    """Why."""
    tasks: list[TaskScore] = Field(default_factory=list)
    """One score per task."""


async def judge_transcript(
    judge: Judge | None, messages: Sequence[Message], tasks: Sequence[SimulatedTask], weight: float = 1.0
) -> CheckResult:
    """Judge a simulated conversation: the mean task score, with tone and per-task scores in the details.

    Returns `skipped` without a judge or without tasks, and `error` when the judge fails or misses a
    task (never a made-up score).
    """
    if judge is None:
        return no_judge(NAME, "transcript", weight, None)
    if not tasks:
        return CheckResult(NAME, "transcript", "skipped", None, weight, "the case has no tasks to score")
    variables = {"tasks": list(tasks), "transcript": list(messages)}
    try:
        verdict, call = await judge.structured("transcript", variables, TranscriptScore)
    except ModelError as exc:
        return judge_error(NAME, "transcript", weight, None, exc)
    by_number = {item.task: item for item in verdict.tasks}
    missing = [n for n in range(1, len(tasks) + 1) if n not in by_number]
    details = {
        "judge": call.to_details(),
        "tone": verdict.tone,
        "tone_reason": verdict.tone_reason,
        "tasks": [
            {"task": tasks[n - 1].task, "score": by_number[n].score, "reason": by_number[n].reason}
            for n in range(1, len(tasks) + 1)
            if n in by_number
        ],
    }
    if missing:
        reason = f"the judge gave no score for task(s) {', '.join(map(str, missing))}"
        return CheckResult(NAME, "transcript", "error", None, weight, reason, None, details)
    score = sum(by_number[n].score for n in range(1, len(tasks) + 1)) / len(tasks)
    reason = f"mean task score {score:.2f} over {len(tasks)} task(s); tone {verdict.tone:.2f}"
    return CheckResult(NAME, "transcript", "passed" if score >= 0.5 else "failed", score, weight, reason, None, details)
