"""The agent scorers' Python API, shaped like NovaEval's (`AgentScorers(model)`, `await score_all(...)`).

```python
from proctor.models import get_model
from proctor.recorded import AgentData, AgentScorers

scorers = AgentScorers(get_model("openai/gpt-4.1-mini"))     # or AgentScorers("openai/gpt-4.1-mini")
results = await scorers.score_all(agent_data)                # {"tool_relevancy": [...], ...}
```

Each `score_*` method returns NovaEval's shapes: a list of `ScoreWithReasoning` (one per tool call), a
`ScoreWithReasoning`, or a `ScoreWithOriginalTask`; `score` is on the scorer's scale (1-10, task
progression 1-5) and `normalized` is 0..1. What is not a score is a dictionary: NovaEval's
`{"error": "Missing required fields", ...}` when fields are missing, `{"error": "Judge call failed",
"reason": ...}` when the judge failed (NovaEval scored that as a genuine 1), and `{"skipped": True,
"reason": ...}` when the agent has not exited or no judge model is configured. `check`/`check_all`
return Proctor's `CheckResult` instead, as suites and `proctor score` see them.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import sniffio
from pydantic import BaseModel

from proctor.agent_data import AgentData
from proctor.checks import CheckResult
from proctor.checks._agent_scorers import AGENT_SCORERS, AgentScorer, score_agent_data
from proctor.checks._judging import Judge

if TYPE_CHECKING:
    from proctor.models import Model

__all__ = [
    "AgentScorers",
    "ScoreWithOriginalTask",
    "ScoreWithReasoning",
    "ScorerOutput",
    "context_relevancy_scorer",
    "conversation_coherence_scorer",
    "goal_achievement_scorer",
    "make_judge",
    "parameter_correctness_scorer",
    "role_adherence_scorer",
    "seed_shape",
    "task_progression_scorer",
    "tool_correctness_scorer",
    "tool_relevancy_scorer",
]

JUDGED = tuple(name for name, scorer in AGENT_SCORERS.items() if scorer.judged)
"""The eight judged scorers, in NovaEval's order."""


class ScoreWithReasoning(BaseModel):
    """A score with the judge's reasoning (for one tool call, or for the whole record)."""

    score: float
    """On the scorer's scale (e.g. 1-10)."""
    reasoning: str
    """The judge's explanation."""
    normalized: float
    """The score mapped to 0..1."""
    scale: tuple[float, float]
    """The scorer's scale, `(low, high)`."""
    tool_name: str | None = None
    """For per-call scorers: the tool call scored."""
    call_id: str | None = None
    """For per-call scorers: the call's id, when it has one."""


class ScoreWithOriginalTask(BaseModel):
    """A score with the original task the judge identified, and its reasoning."""

    original_task: str
    """The task the agent was originally given, as the judge understood it."""
    score: float
    """On the scorer's scale (1-10, or 1-5 for task progression)."""
    reasoning: str
    """The judge's explanation."""
    normalized: float
    """The score mapped to 0..1."""
    scale: tuple[float, float]
    """The scorer's scale, `(low, high)`."""


ScorerOutput: TypeAlias = list[ScoreWithReasoning] | ScoreWithReasoning | ScoreWithOriginalTask | dict[str, Any]
"""What a `score_*` method returns."""

_judges: weakref.WeakKeyDictionary[Any, Judge] = weakref.WeakKeyDictionary()


def make_judge(model: Model | Judge | str | None) -> Judge | None:
    """The `Judge` for a model: a `Model`, a `provider/model` name, a `Judge` (as it is) or `None`.

    Judges are kept per model object, so calling the function-style scorers in a loop builds one.
    """
    if model is None or isinstance(model, Judge):
        return model
    if isinstance(model, str):
        # on first use: a caller that passes a built model never pays for the provider registry
        from proctor.models import get_model

        model = get_model(model)
    judge = _judges.get(model)
    if judge is None:
        judge = _judges[model] = Judge(model)
    return judge


_closers: weakref.WeakKeyDictionary[Any, dict[int, Any]] = weakref.WeakKeyDictionary()


async def _closer(model: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await model.aclose()


async def _close_with_loop(judge: Judge | None) -> None:
    """Close the judge's connections when the running asyncio loop shuts down (`asyncio.run` ending).

    The seed's examples call the scorers inside `asyncio.run(...)` and never close the model; without
    this, its pooled connections would outlive their loop. An async generator started in the loop is
    finalised by the loop's `shutdown_asyncgens()`, inside the loop, which is when this one closes them.
    """
    if judge is None or sniffio.current_async_library() != "asyncio":
        return
    import asyncio

    loop = asyncio.get_running_loop()
    started = _closers.setdefault(loop, {})
    if id(judge.model) not in started:
        closer = started[id(judge.model)] = _closer(judge.model)
        await closer.__anext__()


def _record(agent_data: AgentData | Mapping[str, Any]) -> AgentData:
    return agent_data if isinstance(agent_data, AgentData) else AgentData.model_validate(dict(agent_data))


def seed_shape(scorer: str | AgentScorer, result: CheckResult) -> ScorerOutput:
    """Turn a scorer's `CheckResult` into NovaEval's return shape (see the module docstring)."""
    spec = AGENT_SCORERS[scorer] if isinstance(scorer, str) else scorer
    details = result.details
    if details.get("error") == "Missing required fields":  # skipped in Proctor's results; NovaEval's dict here
        return {key: details[key] for key in ("error", "required_fields", "missing_fields")}
    if result.status == "error":
        failure: dict[str, Any] = {"error": "Judge call failed", "reason": result.reason}
        if spec.scale is None:
            failure["error"] = "Cannot compare"
        if "raw_outputs" in details:
            failure["raw_outputs"] = details["raw_outputs"]
        return failure
    if result.status == "skipped" or result.score is None:
        return {"skipped": True, "reason": result.reason}
    if spec.scale is None:
        return ScoreWithReasoning(score=result.score, reasoning=result.reason, normalized=result.score, scale=(0, 1))
    scale = (float(spec.scale[0]), float(spec.scale[1]))
    if spec.per_call:
        return [
            ScoreWithReasoning(
                score=entry["score"],
                reasoning=entry["reasoning"],
                normalized=entry["normalized"],
                scale=scale,
                tool_name=entry["tool_name"],
                call_id=entry.get("call_id"),
            )
            for entry in details["scores"]
        ]
    if "original_task" in details:
        return ScoreWithOriginalTask(
            original_task=details["original_task"],
            score=details["raw_score"],
            reasoning=details["reasoning"],
            normalized=result.score,
            scale=scale,
        )
    return ScoreWithReasoning(
        score=details["raw_score"], reasoning=details["reasoning"], normalized=result.score, scale=scale
    )


class AgentScorers:
    """Every agent scorer, sharing one judge model.

    Args:
        model: The judge: a `Model` (`proctor.models.get_model("openai/gpt-4.1-mini")`), a
            `provider/model` name, a `Judge`, or `None` (judged scorers are then skipped with a hint;
            `score_tool_correctness_exact` still runs).
        threshold: The normalised score at which a `CheckResult` passes (default 0.5).

    Example:
        ```python
        scorers = AgentScorers("openai/gpt-4.1-mini")
        relevancy = await scorers.score_tool_relevancy(agent_data)   # [ScoreWithReasoning, ...] or a dict
        results = await scorers.check_all(agent_data)                 # {name: CheckResult}
        ```
    """

    def __init__(self, model: Model | Judge | str | None = None, *, threshold: float | None = None) -> None:
        self.judge = make_judge(model)
        self.threshold = threshold
        self.model = self.judge.model if self.judge is not None else None

    async def aclose(self) -> None:
        """Close the judge model's connections (they reopen if it is used again)."""
        if self.judge is not None:
            await self.judge.model.aclose()

    async def __aenter__(self) -> AgentScorers:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def check(
        self, scorer: str, agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None = None
    ) -> CheckResult:
        """Score one record with one scorer (`AGENT_SCORERS` names) and return the `CheckResult`."""
        if scorer not in AGENT_SCORERS:
            raise ValueError(f"unknown agent scorer {scorer!r}; scorers: {', '.join(AGENT_SCORERS)}")
        judge = self.judge if model is None else make_judge(model)
        await _close_with_loop(judge)
        return await score_agent_data(scorer, _record(agent_data), judge, threshold=self.threshold)

    async def check_all(
        self, agent_data: AgentData | Mapping[str, Any], scorers: Sequence[str] | None = None
    ) -> dict[str, CheckResult]:
        """Run several scorers (default: the eight judged ones) on one record, in parallel."""
        names = list(scorers) if scorers is not None else list(JUDGED)
        record = _record(agent_data)
        results: dict[str, CheckResult] = {}

        async def one(name: str) -> None:
            results[name] = await self.check(name, record)

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
        return {name: results[name] for name in names}

    async def _shaped(self, name: str, agent_data: AgentData | Mapping[str, Any], model: Any = None) -> Any:
        return seed_shape(name, await self.check(name, agent_data, model))

    async def score_tool_relevancy(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> list[ScoreWithReasoning] | dict[str, Any]:
        """Judge each tool call's relevancy given the tools available (1-10 each)."""
        result: list[ScoreWithReasoning] | dict[str, Any] = await self._shaped("tool_relevancy", agent_data)
        return result

    async def score_tool_correctness(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> list[ScoreWithReasoning] | dict[str, Any]:
        """Judge each tool call against `expected_tool_call` (1-10 each)."""
        result: list[ScoreWithReasoning] | dict[str, Any] = await self._shaped("tool_correctness", agent_data)
        return result

    async def score_tool_correctness_exact(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> ScoreWithReasoning | dict[str, Any]:
        """Compare the tool calls with `expected_tool_call` by name and arguments, without a judge (0..1)."""
        result: ScoreWithReasoning | dict[str, Any] = await self._shaped("tool_correctness_exact", agent_data)
        return result

    async def score_parameter_correctness(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> list[ScoreWithReasoning] | dict[str, Any]:
        """Judge each tool call's parameters, with its result (1-10 each)."""
        result: list[ScoreWithReasoning] | dict[str, Any] = await self._shaped("parameter_correctness", agent_data)
        return result

    async def score_task_progression(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> ScoreWithOriginalTask | dict[str, Any]:
        """Judge the progress on the assigned task (1-5), extracting the original task."""
        result: ScoreWithOriginalTask | dict[str, Any] = await self._shaped("task_progression", agent_data)
        return result

    async def score_context_relevancy(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> ScoreWithReasoning | dict[str, Any]:
        """Judge whether the response fits the task and role (1-10)."""
        result: ScoreWithReasoning | dict[str, Any] = await self._shaped("context_relevancy", agent_data)
        return result

    async def score_role_adherence(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> ScoreWithReasoning | dict[str, Any]:
        """Judge whether the response and tool calls stay in role (1-10)."""
        result: ScoreWithReasoning | dict[str, Any] = await self._shaped("role_adherence", agent_data)
        return result

    async def score_goal_achievement(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> ScoreWithOriginalTask | dict[str, Any]:
        """Judge how well a finished run achieved its goal (1-10); skipped unless `agent_exit`."""
        result: ScoreWithOriginalTask | dict[str, Any] = await self._shaped("goal_achievement", agent_data)
        return result

    async def score_conversation_coherence(
        self, agent_data: AgentData | Mapping[str, Any]
    ) -> ScoreWithOriginalTask | dict[str, Any]:
        """Judge a finished run's coherence (1-10); skipped unless `agent_exit`."""
        result: ScoreWithOriginalTask | dict[str, Any] = await self._shaped("conversation_coherence", agent_data)
        return result

    async def goal_achievement_scorer(
        self, agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None = None
    ) -> ScoreWithOriginalTask | dict[str, Any]:
        """`score_goal_achievement` under NovaEval's name, optionally with another judge model."""
        result: ScoreWithOriginalTask | dict[str, Any] = await self._shaped("goal_achievement", agent_data, model)
        return result

    async def conversation_coherence_scorer(
        self, agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None = None
    ) -> ScoreWithOriginalTask | dict[str, Any]:
        """`score_conversation_coherence` under NovaEval's name, optionally with another judge model."""
        result: ScoreWithOriginalTask | dict[str, Any] = await self._shaped("conversation_coherence", agent_data, model)
        return result

    async def score_all(self, agent_data: AgentData | Mapping[str, Any]) -> dict[str, ScorerOutput]:
        """Run the eight judged scorers on one record, in parallel; NovaEval's shapes by scorer name."""
        results = await self.check_all(agent_data)
        return {name: seed_shape(name, result) for name, result in results.items()}


async def _function(name: str, agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None) -> Any:
    judge = make_judge(model)
    await _close_with_loop(judge)
    return seed_shape(name, await score_agent_data(name, _record(agent_data), judge))


async def tool_relevancy_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> list[ScoreWithReasoning] | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_tool_relevancy`."""
    result: list[ScoreWithReasoning] | dict[str, Any] = await _function("tool_relevancy", agent_data, model)
    return result


async def tool_correctness_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> list[ScoreWithReasoning] | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_tool_correctness`."""
    result: list[ScoreWithReasoning] | dict[str, Any] = await _function("tool_correctness", agent_data, model)
    return result


async def parameter_correctness_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> list[ScoreWithReasoning] | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_parameter_correctness`."""
    result: list[ScoreWithReasoning] | dict[str, Any] = await _function("parameter_correctness", agent_data, model)
    return result


async def task_progression_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> ScoreWithOriginalTask | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_task_progression`."""
    result: ScoreWithOriginalTask | dict[str, Any] = await _function("task_progression", agent_data, model)
    return result


async def context_relevancy_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> ScoreWithReasoning | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_context_relevancy`."""
    result: ScoreWithReasoning | dict[str, Any] = await _function("context_relevancy", agent_data, model)
    return result


async def role_adherence_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> ScoreWithReasoning | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_role_adherence`."""
    result: ScoreWithReasoning | dict[str, Any] = await _function("role_adherence", agent_data, model)
    return result


async def goal_achievement_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> ScoreWithOriginalTask | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_goal_achievement`."""
    result: ScoreWithOriginalTask | dict[str, Any] = await _function("goal_achievement", agent_data, model)
    return result


async def conversation_coherence_scorer(
    agent_data: AgentData | Mapping[str, Any], model: Model | Judge | str | None
) -> ScoreWithOriginalTask | dict[str, Any]:
    """NovaEval's function form of `AgentScorers.score_conversation_coherence`."""
    result: ScoreWithOriginalTask | dict[str, Any] = await _function("conversation_coherence", agent_data, model)
    return result
