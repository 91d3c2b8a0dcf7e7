"""The transcript judge (Embabel's `TranscriptScorer`): tone and a score per task, facts as ground truth.

`judge_transcript` scores a simulated conversation: one `CheckResult` of type `transcript` whose score
is the mean task score; the tone and each task's score and reason are in `details`. The `tasks` check
runs the same judge over a scripted conversation and passes as Embabel's consumers decide (urbot's
`ConversationEvalIT`): every task score >= `min_task_score` (urbot's `minTaskScore`, default 0.5) and
their mean >= `min_average_score` (`minAverageScore`, default 0.6). The prompt is
`prompts/transcript.j2` (overridable by `judge: {prompts: {transcript: ...}}`); the judge runs at
temperature 0.

Example:
    ```yaml
    assert:
      - type: tasks
        value:
          tasks: [{type: question, task: "What are my hobbies?", acceptanceCriteria: "Mentions guitar"}]
          facts: ["The user plays guitar"]
          min_task_score: 0.5
          min_average_score: 0.6
    ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from proctor.checks._judging import judge_error, no_judge
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.errors import ModelError
from proctor.suite import AssertionSpec, SimulatedTask

if TYPE_CHECKING:
    from proctor.checks._judging import Judge
    from proctor.transcript import Message

__all__ = ["TaskScore", "TasksValue", "TranscriptScore", "judge_transcript"]

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
    judge: Judge | None,
    messages: Sequence[Message],
    tasks: Sequence[SimulatedTask],
    weight: float = 1.0,
    *,
    facts: Sequence[str] = (),
) -> CheckResult:
    """Judge a conversation: the mean task score, with tone and per-task scores in the details.

    Args:
        judge: The judge model; `None` skips.
        messages: The conversation.
        tasks: What the user wanted, with acceptance criteria.
        weight: The result's weight.
        facts: Ground truth the judge may use (Embabel's scorer is given the job's facts).

    Returns `skipped` without a judge or without tasks, and `error` when the judge fails or misses a
    task (never a made-up score).
    """
    if judge is None:
        return no_judge(NAME, "transcript", weight, None)
    if not tasks:
        return CheckResult(NAME, "transcript", "skipped", None, weight, "the case has no tasks to score")
    variables = {"tasks": list(tasks), "transcript": list(messages), "facts": list(facts)}
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


class TasksValue(BaseModel):
    """The `tasks` check's value: the tasks to judge, ground-truth facts and the two thresholds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tasks: list[SimulatedTask] = Field(min_length=1)
    """The tasks, in the order the conversation asks them."""
    facts: list[str] = Field(default_factory=list)
    """Ground truth for the judge."""
    min_task_score: float = Field(default=0.5, ge=0, le=1, alias="minTaskScore")
    """Every task's score must reach this (urbot's default 0.5)."""
    min_average_score: float = Field(default=0.6, ge=0, le=1, alias="minAverageScore")
    """The mean task score must reach this (urbot's default 0.6)."""


async def _check_tasks(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    value: TasksValue = spec.value
    name = spec.display_name()
    judged = await judge_transcript(context.judge, context.transcript, value.tasks, spec.weight, facts=value.facts)
    if judged.score is None:  # skipped or error: passed on as it is
        return CheckResult(name, spec.type, judged.status, None, spec.weight, judged.reason, None, judged.details)
    scores = [item["score"] for item in judged.details["tasks"]]
    low = [f"task {n} {score:.2f}" for n, score in enumerate(scores, 1) if score < value.min_task_score]
    ok = not low and judged.score >= value.min_average_score
    found = f"mean {judged.score:.2f}" + (f"; below {value.min_task_score:g}: {', '.join(low)}" if low else "")
    reason = (
        f"expected every task score >= {value.min_task_score:g} and their mean >= {value.min_average_score:g}; "
        f"found {found} (tone {judged.details['tone']:.2f})"
    )
    details = {**judged.details, "mean": judged.score, "min_task_score": value.min_task_score,
               "min_average_score": value.min_average_score}  # fmt: skip
    return CheckResult(name, spec.type, "passed" if ok else "failed", 1.0 if ok else 0.0, spec.weight, reason, None,
                       details)  # fmt: skip


registry.register(
    CheckType(
        "tasks",
        "judges",
        "An LLM judge scores each task of the conversation against its acceptance criteria (facts as ground "
        "truth); passes when every score >= min_task_score and their mean >= min_average_score.",
        _check_tasks,
        value=TypeAdapter(TasksValue),
        negatable=False,
        needs_model=True,
        scope="conversation",
    )
)
