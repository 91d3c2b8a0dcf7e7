"""NovaEval's eight agent scorers as Proctor checks, scoring `AgentData` records or live conversations.

Tool relevancy, tool correctness and parameter correctness judge each tool call on its own (1-10) and
score their mean; task progression is 1-5 and extracts the original task; context relevancy and role
adherence are 1-10; goal achievement and conversation coherence are 1-10, extract the original task
and need `agent_exit` (else `skipped`: the agent has not exited). The raw score on the scorer's scale is
kept in `details["raw_score"]`; `score` is normalised to 0..1. `tool-correctness-exact` is the
deterministic twin of tool correctness: the expected call by name and arguments, no judge.

Order of outcomes: not exited -> `skipped`; a required field empty or absent -> `skipped` (nothing to
score: a record without tool calls has no tool calls to judge; the details keep NovaEval's "Missing
required fields" dictionary, which NovaEval returns as an error); no judge configured -> `skipped` with
the hint; a judge call that fails -> `error` with its reason. A failure is never a score.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
from pydantic import AfterValidator, AliasChoices, BaseModel, Field, TypeAdapter

from proctor.agent_data import FIELDS, AgentData, ToolCall, ToolResult, agent_data_from_transcript
from proctor.checks._arguments import values_equal
from proctor.checks._judging import Judge, JudgeCall, judge_error, no_judge
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.suite import AssertionSpec, MatchingSpec
from proctor.transcript import Message

__all__ = [
    "AGENT_SCORERS",
    "DEFAULT_THRESHOLD",
    "AgentScorer",
    "ScoreVerdict",
    "TaskProgressVerdict",
    "TaskVerdict",
    "context_agent_data",
    "exact_match",
    "missing_fields",
    "score_agent_data",
]

DEFAULT_THRESHOLD = 0.5
"""An agent scorer passes at this normalised score unless `options.threshold` says otherwise."""


class ScoreVerdict(BaseModel):
    """The judge's answer on a 1-10 scale."""

    reasoning: str = Field(validation_alias=AliasChoices("reasoning", "reason"))
    """Why, citing the record (`reason` is accepted too)."""
    score: float = Field(ge=1, le=10)
    """1 (worst) to 10 (best)."""


class TaskVerdict(BaseModel):
    """The judge's answer on a 1-10 scale, with the original task it identified."""

    original_task: str
    """The task the agent was originally given, as the judge understood it."""
    reasoning: str = Field(validation_alias=AliasChoices("reasoning", "reason"))
    """Why, citing the record (`reason` is accepted too)."""
    score: float = Field(ge=1, le=10)
    """1 (worst) to 10 (best)."""


class TaskProgressVerdict(BaseModel):
    """The judge's answer for task progression (1-5), with the original task it identified."""

    original_task: str
    """The task the agent was originally given, as the judge understood it."""
    reasoning: str = Field(validation_alias=AliasChoices("reasoning", "reason"))
    """Why, citing the record (`reason` is accepted too)."""
    score: float = Field(ge=1, le=5)
    """1 (no progress) to 5 (done)."""


@dataclass(frozen=True, slots=True)
class AgentScorer:
    """One agent scorer: what it needs and how it judges."""

    name: str
    """The Python and CLI name, e.g. `tool_relevancy`."""
    check_type: str
    """The check type in suites, e.g. `tool-relevancy` (also its prompt template's name)."""
    description: str
    """One line for `proctor list --checks`."""
    required: tuple[str, ...]
    """The `AgentData` fields it needs."""
    scale: tuple[int, int] | None
    """The judge's score range; `None` for the deterministic twin."""
    verdict: type[BaseModel] | None = None
    """The judge's answer type."""
    per_call: bool = False
    """Judge each tool call on its own and score the mean."""
    needs_exit: bool = False
    """Skip unless `agent_exit` is true."""
    scope: Literal["turn", "conversation", "any"] = "any"
    """Where the check may be used in a suite."""

    @property
    def judged(self) -> bool:
        """Whether it calls a judge model."""
        return self.scale is not None


def _scorer(name: str, text: str, required: str, scale: tuple[int, int] | None, **kw: Any) -> AgentScorer:
    return AgentScorer(name, name.replace("_", "-"), text, tuple(required.split()), scale, **kw)


_TEN, _FIVE = (1, 10), (1, 5)
AGENT_SCORERS: dict[str, AgentScorer] = {
    s.name: s
    for s in (
        _scorer(
            "tool_relevancy",
            "Each tool call was the right tool to use, given the tools available (judge, 1-10 per call).",
            "tools_available tool_calls",
            _TEN,
            verdict=ScoreVerdict,
            per_call=True,
        ),
        _scorer(
            "tool_correctness",
            "Each tool call matches the expected tool call (judge, 1-10 per call).",
            "expected_tool_call tool_calls",
            _TEN,
            verdict=ScoreVerdict,
            per_call=True,
        ),
        _scorer(
            "parameter_correctness",
            "Each tool call was given correct parameters, judged with its result (judge, 1-10 per call).",
            "tool_calls parameters_passed tool_call_results",
            _TEN,
            verdict=ScoreVerdict,
            per_call=True,
        ),
        _scorer(
            "task_progression",
            "How far the response moves the assigned task forward (judge, 1-5, extracts the original task).",
            "agent_task agent_role system_prompt agent_response",
            _FIVE,
            verdict=TaskProgressVerdict,
        ),
        _scorer(
            "context_relevancy",
            "The response (and any retrieved context) fits the agent's task and role (judge, 1-10).",
            "agent_task agent_role agent_response",
            _TEN,
            verdict=ScoreVerdict,
        ),
        _scorer(
            "role_adherence",
            "The response and tool calls stay within the agent's assigned role (judge, 1-10).",
            "agent_role agent_task agent_response",
            _TEN,
            verdict=ScoreVerdict,
        ),
        _scorer(
            "goal_achievement",
            "The finished run achieved its original goal (judge, 1-10; needs agent_exit).",
            "trace",
            _TEN,
            verdict=TaskVerdict,
            needs_exit=True,
            scope="conversation",
        ),
        _scorer(
            "conversation_coherence",
            "The finished run's conversation is coherent and keeps context (judge, 1-10; needs agent_exit).",
            "trace",
            _TEN,
            verdict=TaskVerdict,
            needs_exit=True,
            scope="conversation",
        ),
        _scorer(
            "tool_correctness_exact",
            "A tool call matches expected_tool_call exactly, by name and arguments (deterministic).",
            "expected_tool_call tool_calls",
            None,
        ),
    )
}
"""Every agent scorer by name: the eight judged ones, then the deterministic twin."""


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):  # two plain checks: `str | list` would build a union at every call
        return bool(value.strip())
    if isinstance(value, list):
        return bool(value)
    return True  # an empty dict of parameters is a fact (the call took none), not a gap


def missing_fields(scorer: AgentScorer, data: AgentData) -> dict[str, Any] | None:
    """Return NovaEval's error dictionary when `data` lacks a field `scorer` needs, else `None`.

    Returns:
        `{"error": "Missing required fields", "required_fields": {field: available},
        "missing_fields": [field, ...]}`, or `None` when every required field is there.
    """
    # a loop that stops at nothing missing: the dictionary is built only for a record that lacks a field
    for name in scorer.required:
        if not _present(getattr(data, name)):
            break
    else:
        return None
    available = {field: _present(getattr(data, field)) for field in scorer.required}
    return {
        "error": "Missing required fields",
        "required_fields": available,
        "missing_fields": [field for field, ok in available.items() if not ok],
    }


MissingStatus = Literal["skipped", "error"]
"""What a record without a scorer's input gives: `skipped` for recorded data (nothing to score: the
default for `proctor score`), `error` for suite checks (the check was asked for and cannot run)."""


def _nothing_to_score(missing: Mapping[str, Any]) -> str:
    """The reason of a scorer skipped for want of input (NovaEval's error dictionary goes in the details)."""
    fields = ", ".join(missing["missing_fields"])
    return f"nothing to score: the record has no {fields} (empty or absent; NovaEval: missing required fields)"


def _json(value: Any) -> str:
    """Render a field for the prompt: text as it is, structured values as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    elif isinstance(value, list):
        value = [v.model_dump(mode="json", exclude_none=True) if isinstance(v, BaseModel) else v for v in value]
    return json.dumps(value, ensure_ascii=False, default=str)


def _label(call: ToolCall | str) -> str:
    return call.tool_name if isinstance(call, ToolCall) else "tool call"


def _calls(data: AgentData) -> list[ToolCall | str]:
    """The tool calls to judge one by one (text that is not JSON is one opaque call, as in NovaEval)."""
    return [data.tool_calls] if isinstance(data.tool_calls, str) else list(data.tool_calls)


def _per_call_variables(scorer: AgentScorer, data: AgentData) -> list[dict[str, Any]]:
    calls = _calls(data)
    common: dict[str, Any] = {"agent_task": data.agent_task or "", "agent_role": data.agent_role or ""}
    if scorer.name == "tool_relevancy":
        tools = _json(data.tools_available)
        return [{**common, "tools_available": tools, "tool_call": _json(call)} for call in calls]
    if scorer.name == "tool_correctness":
        expected = _json(data.expected_tool_call)
        return [{**common, "expected_tool_call": expected, "tool_call": _json(call)} for call in calls]
    results = data.tool_call_results
    by_id: dict[str, ToolResult] = {}
    if isinstance(results, list):
        by_id = {r.call_id: r for r in results if r.call_id is not None}
    schemas = {t.name: t for t in data.tools_available} if isinstance(data.tools_available, list) else {}
    out = []
    for index, call in enumerate(calls):
        if isinstance(results, str):
            result = results
        elif isinstance(call, ToolCall) and call.call_id in by_id:
            result = _json(by_id[call.call_id])
        elif isinstance(results, list) and len(results) == len(calls) and all(r.call_id is None for r in results):
            result = _json(results[index])  # results without ids, one per call, in order
        else:
            result = ""
        schema = schemas.get(call.tool_name) if isinstance(call, ToolCall) else None
        out.append(
            {
                **common,
                "tool_call": _json(call),
                "parameters_passed": _json(data.parameters_passed) if data.parameters_passed else "",
                "tool_result": result,
                "tool_schema": _json(schema) if schema is not None else "",
            }
        )
    return out


_FIELD_TEXT: dict[str, Callable[[AgentData], str]] = {
    "agent_task": lambda d: d.agent_task or "",
    "agent_role": lambda d: d.agent_role or "",
    "system_prompt": lambda d: d.system_prompt or "",
    "agent_response": lambda d: d.agent_response or "",
    "tool_calls": lambda d: _json(d.tool_calls) if d.tool_calls else "",
    "retrieval_query": lambda d: _json(d.retrieval_query) if d.retrieval_query else "",
    "retrieved_context": lambda d: _json(d.retrieved_context) if d.retrieved_context else "",
    "trace": lambda d: _json(d.trace) if d.trace is not None else "",
    "ground_truth": lambda d: d.ground_truth or "",
}
"""How each prompt variable of the single-judgement scorers is rendered from the record."""

_PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "task_progression": ("agent_role", "system_prompt", "agent_task", "agent_response"),
    "context_relevancy": ("agent_role", "agent_task", "retrieval_query", "retrieved_context", "agent_response"),
    "role_adherence": ("agent_role", "agent_task", "agent_response", "tool_calls"),
    "goal_achievement": ("trace", "ground_truth"),
    "conversation_coherence": ("trace",),
}
"""The variables each single-judgement scorer's prompt uses (only these are rendered)."""


def _variables(scorer: AgentScorer, data: AgentData) -> dict[str, Any]:
    return {name: _FIELD_TEXT[name](data) for name in _PROMPT_FIELDS[scorer.name]}


def _call_details(calls: list[JudgeCall]) -> dict[str, Any]:
    """One `details["judge"]` entry for all of a check's judge calls (usage and cost summed)."""
    first = calls[0]
    if len(calls) == 1:  # one call: its figures as the sums below give them, without their generators
        details = first.to_details()
        details["cached"] = bool(first.cached)
        return details
    costs = [c.cost_usd for c in calls]
    return {
        "model": first.model,
        "template": first.template,
        "template_sha": first.template_sha,
        "usage": {"prompt": sum(c.prompt_tokens for c in calls), "completion": sum(c.completion_tokens for c in calls)},
        "cost_usd": None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        "cached": all(c.cached for c in calls),
        "calls": sum(c.calls for c in calls),
        "attempts": sum(c.attempts for c in calls),
    }


async def _judge_all(
    judge: Judge, template: str, items: list[dict[str, Any]], verdict: type[BaseModel]
) -> list[tuple[BaseModel, JudgeCall] | Exception]:
    """Judge several items in parallel (one is awaited by the caller); a failure is returned, not raised."""
    out: list[tuple[BaseModel, JudgeCall] | Exception] = [ValueError("not judged")] * len(items)

    async def one(index: int) -> None:
        try:
            out[index] = await judge.structured(template, items[index], verdict)
        except Exception as exc:  # a judge failure is data: the check becomes an error
            out[index] = exc

    async with anyio.create_task_group() as group:
        for index in range(len(items)):
            group.start_soon(one, index)
    return out


# One table-driven function over every NovaEval scorer (inputs, prompt, scale, threshold): split per
# scorer it would be eight copies of the same steps.
async def score_agent_data(
    scorer: str | AgentScorer,
    data: AgentData,
    judge: Judge | None,
    *,
    name: str | None = None,
    weight: float = 1.0,
    threshold: float | None = None,
    turn: int | None = None,
    missing: MissingStatus = "skipped",
) -> CheckResult:
    """Score one record with one agent scorer.

    Args:
        scorer: The scorer or its name (`AGENT_SCORERS`).
        data: The record.
        judge: The judge; `None` skips the judged scorers with a hint (the deterministic twin still runs).
        name: The result's display name (default: the check type).
        weight: The result's weight.
        threshold: The normalised score at which it passes (default `DEFAULT_THRESHOLD`).
        turn: The turn checked, for results of suite checks.
        missing: The status when a required field is empty or absent (`MissingStatus`).

    Returns:
        The result: `score` is 0..1; `details` keeps `raw_score`, `scale`, the per-call `scores`, the
        `original_task` where the scorer extracts it, and the judge's usage.
    """
    spec = AGENT_SCORERS[scorer] if isinstance(scorer, str) else scorer
    kind, label = spec.check_type, name or spec.check_type
    if spec.needs_exit and not data.agent_exit:
        reason = f"the agent has not exited (agent_exit is false): {spec.name} is scored once its run is over"
        return CheckResult(label, kind, "skipped", None, weight, reason, turn)
    absent = missing_fields(spec, data)
    if absent is not None:
        return CheckResult(label, kind, missing, None, weight, _nothing_to_score(absent), turn, absent)
    if spec.scale is None or spec.verdict is None:
        return exact_match(data, label, weight, turn, missing=missing)
    if judge is None:
        return no_judge(label, kind, weight, turn)
    items = _per_call_variables(spec, data) if spec.per_call else [_variables(spec, data)]
    judged: list[tuple[BaseModel, JudgeCall] | Exception]
    if len(items) == 1:  # the common case, awaited here: no `_judge_all` coroutine per check
        try:
            judged = [await judge.structured(kind, items[0], spec.verdict)]
        except Exception as exc:  # a judge failure is data: the check becomes an error
            judged = [exc]
    else:
        judged = await _judge_all(judge, kind, items, spec.verdict)
    calls = [j[1] for j in judged if not isinstance(j, Exception)]
    for index, outcome in enumerate(judged):
        if isinstance(outcome, Exception):
            result = judge_error(label, kind, weight, turn, outcome)
            if spec.per_call:
                result.reason = f"tool call {index + 1} of {len(items)}: {result.reason}"
            if calls:
                result.details["judge"] = _call_details(calls)
            return result
    low, high = spec.scale
    verdicts: list[Any] = [j[0] for j in judged if not isinstance(j, Exception)]
    raw = sum(v.score for v in verdicts) / len(verdicts)
    score = (raw - low) / (high - low)
    limit = DEFAULT_THRESHOLD if threshold is None else threshold
    details: dict[str, Any] = {"judge": _call_details(calls), "raw_score": raw, "scale": [low, high]}
    where = f"{raw:g} on {low}..{high}, normalised {score:.2f}, threshold {limit:.2f}"
    if spec.per_call:
        details["scores"] = per_call = _per_call_scores(data, verdicts, low, high)
        worst = min(per_call, key=lambda e: e["score"])
        reason = (
            f"mean {raw:.2f} on {low}..{high} over {len(per_call)} tool call{'s' if len(per_call) > 1 else ''} "
            f"(normalised {score:.2f}, threshold {limit:.2f}); lowest {worst['tool_name']} {worst['score']:g}: "
            f"{worst['reasoning']}"
        )
    else:
        verdict = verdicts[0]
        details["reasoning"] = verdict.reasoning
        if "original_task" in type(verdict).model_fields:  # not hasattr: pydantic builds an error to say no
            details["original_task"] = verdict.original_task
        reason = f"judge: {verdict.reasoning} ({where})"
    return CheckResult(label, kind, "passed" if score >= limit else "failed", score, weight, reason, turn, details)


def _per_call_scores(data: AgentData, verdicts: list[Any], low: float, high: float) -> list[dict[str, Any]]:
    """Each tool call's verdict: its tool, raw and normalised score, call id (when known) and reasoning."""
    per_call = []
    for call, verdict in zip(_calls(data), verdicts, strict=True):
        entry = {"tool_name": _label(call), "score": verdict.score, "normalized": (verdict.score - low) / (high - low)}
        if isinstance(call, ToolCall) and call.call_id is not None:
            entry["call_id"] = call.call_id
        per_call.append({**entry, "reasoning": verdict.reasoning})
    return per_call


_STRICT = MatchingSpec()
"""Arguments compare as the trajectory checks' `strict` strategy: by value, `1 == 1.0`, `True` never `1`."""


def _differences(call: ToolCall, expected: ToolCall) -> list[str]:
    found: list[str] = []
    if call.tool_name != expected.tool_name:
        found.append(f"called {call.tool_name!r}, expected {expected.tool_name!r}")
    for key, value in expected.parameters.items():
        if key not in call.parameters:
            found.append(f"argument {key!r} missing")
        elif not values_equal(value, call.parameters[key], _STRICT):
            found.append(
                f"argument {key!r} is {json.dumps(call.parameters[key], default=str)}, expected "
                f"{json.dumps(value, default=str)}"
            )
    found.extend(f"unexpected argument {key!r}" for key in call.parameters if key not in expected.parameters)
    return found


def exact_match(
    data: AgentData,
    label: str = "tool-correctness-exact",
    weight: float = 1.0,
    turn: int | None = None,
    *,
    missing: MissingStatus = "skipped",
) -> CheckResult:
    """The deterministic twin of tool correctness: passed when a tool call equals `expected_tool_call`.

    Names must be equal and arguments equal by value (numbers by value, so `1 == 1.0`); a call to the
    expected tool with other arguments scores 0.5, no such call 0. Missing fields give `missing`, as
    for the judged scorers.
    """
    kind = "tool-correctness-exact"
    absent = missing_fields(AGENT_SCORERS["tool_correctness_exact"], data)
    if absent is not None:
        return CheckResult(label, kind, missing, None, weight, _nothing_to_score(absent), turn, absent)
    expected, calls = data.expected_tool_call, data.tool_calls
    if isinstance(expected, str) or isinstance(calls, str):
        which = "expected_tool_call" if isinstance(expected, str) else "tool_calls"
        reason = f"{which} is text, not JSON tool calls: compare it with the judged tool_correctness instead"
        return CheckResult(label, kind, missing, None, weight, reason, turn)
    assert expected is not None
    per_call = [_differences(call, expected) for call in calls]
    details: dict[str, Any] = {
        "expected": expected.model_dump(exclude_none=True),
        "calls": [{"tool_name": c.tool_name, "differences": d} for c, d in zip(calls, per_call, strict=True)],
    }
    shown = f"{expected.tool_name}({json.dumps(expected.parameters, default=str)})"
    if any(not d for d in per_call):
        index = next(i for i, d in enumerate(per_call) if not d)
        return CheckResult(label, kind, "passed", 1.0, weight, f"tool call {index + 1} is {shown}", turn, details)
    named = [d for c, d in zip(calls, per_call, strict=True) if c.tool_name == expected.tool_name]
    score = 0.5 if named else 0.0
    closest = named[0] if named else per_call[0]
    what = "called with other arguments" if named else "not called"
    reason = f"expected {shown}: {what} ({'; '.join(closest)})"
    return CheckResult(label, kind, "failed", score, weight, reason, turn, details)


def _known_fields(value: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown AgentData field(s) {', '.join(unknown)}; fields: {', '.join(FIELDS)}")
    AgentData.model_validate(value)
    return value


_FIELDS_VALUE: TypeAdapter[Any] = TypeAdapter(Annotated[dict[str, Any], AfterValidator(_known_fields)])


def context_agent_data(spec: AssertionSpec, context: CheckContext) -> AgentData:
    """The record a suite check scores: the conversation (or one turn), plus the fields in its value."""
    extra: Mapping[str, Any] = spec.value or {}
    messages = list(context.transcript)
    if context.reply is None:
        return agent_data_from_transcript(messages, **extra)
    reply = Message("assistant", context.reply.text, list(context.reply.tool_calls), context.reply.latency_ms)
    if messages and messages[-1].role == "assistant":
        messages[-1] = reply
    else:
        messages.append(reply)
    return agent_data_from_transcript(messages, reply_index=len(messages) - 1, **extra)


def _check(scorer: AgentScorer) -> Callable[[AssertionSpec, CheckContext], Any]:
    if not scorer.judged:

        def exact(spec: AssertionSpec, context: CheckContext) -> CheckResult:
            data = context_agent_data(spec, context)
            return exact_match(data, spec.display_name(), spec.weight, context.turn, missing="error")

        return exact

    async def judged(spec: AssertionSpec, context: CheckContext) -> CheckResult:
        return await score_agent_data(
            scorer,
            context_agent_data(spec, context),
            context.judge,
            name=spec.display_name(),
            weight=spec.weight,
            threshold=spec.options.threshold,
            turn=context.turn,
            missing="error",  # in a suite, an input the check cannot find is a mistake to fix
        )

    return judged


for _agent_scorer in AGENT_SCORERS.values():
    registry.register(
        CheckType(
            _agent_scorer.check_type,
            "agent",
            _agent_scorer.description + " Value: AgentData fields the transcript lacks (e.g. agent_role).",
            _check(_agent_scorer),
            value=_FIELDS_VALUE,
            value_required=False,
            negatable=False,
            needs_model=_agent_scorer.judged,
            scope=_agent_scorer.scope,
        )
    )
