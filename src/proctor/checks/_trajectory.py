"""The `journey` check: the agent's tool calls and answers matched against an expected goal graph.

A goal dependency graph is a partial order. A tool-call goal matches a call to the same tool whose
arguments match (`proctor.checks._arguments`) and which comes after the calls that matched all of its
prerequisites; goals that do not depend on each other may match in any order; each call matches one goal
at most, so a tool the journey needs twice must be called twice. A text goal matches an answer (an
assistant reply at or after its prerequisites' calls) holding every keyword in normalised forms (case,
spacing, and dates in any spelling: `proctor.checks._keywords`), and, with
`enable_fuzzy_matching`, meaning what the expected `response` says.

The assignment of calls to goals is the one matching the most goals (a bounded exhaustive search, so a
greedy first choice never hides a valid order). The journey succeeds when every goal matched; extra calls
and calls with wrong arguments lower precision but do not fail it by themselves. The result's details
carry the watsonx metrics (total, expected, correct and relevant calls, calls with incorrect parameters,
precision, recall, text match, journey success, average response time), each goal's verdict with every
argument's, and each call's classification.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from proctor.checks._arguments import (
    ArgumentVerdict,
    FuzzyMatcher,
    FuzzyRequest,
    FuzzyVerdict,
    compare_arguments,
    text_form,
)
from proctor.checks._keywords import keyword_found
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.checks._text import excerpt
from proctor.suite import AssertionSpec, JourneySpec, MatchingSpec, TextGoal, ToolCallGoal
from proctor.transcript import Message, ToolCall

__all__ = ["CallRef", "conversation_calls", "journey_metrics"]

SEARCH_BUDGET = 20_000
"""Search steps before the best assignment found so far is taken (never reached by real journeys)."""

Position = tuple[int, float]
"""Where something happened: (transcript message index, index of the call in that message; `inf` for the
reply text, which follows the message's calls)."""


@dataclass(frozen=True, slots=True)
class CallRef:
    """One tool call with where it was made."""

    number: int
    """1-based over the calls checked (as reasons say `call #2`)."""
    turn: int
    """0-based index of the turn (assistant reply) that made it."""
    position: Position
    """(message index, index within the message)."""
    call: ToolCall
    """The call."""


def conversation_calls(context: CheckContext) -> list[CallRef]:
    """The calls a check sees: the reply's on a turn, every assistant message's on the conversation."""
    if context.reply is not None:
        turn = context.turn or 0
        last = len(context.transcript) - 1
        return [CallRef(k + 1, turn, (last, k), call) for k, call in enumerate(context.reply.tool_calls)]
    refs: list[CallRef] = []
    turn = -1
    for index, message in enumerate(context.transcript):
        if message.role != "assistant":
            continue
        turn += 1
        for k, call in enumerate(message.tool_calls):
            refs.append(CallRef(len(refs) + 1, turn, (index, k), call))
    return refs


@dataclass(slots=True)
class _TextVerdict:
    message: int
    missing: list[str]
    ok: bool | None
    method: str = "keywords"
    similarity: float | None = None
    note: str = ""


@dataclass(slots=True)
class _Matching:
    """Everything compared before the search: argument verdicts per (goal, call), text verdicts per reply."""

    journey: JourneySpec
    calls: list[CallRef]
    replies: list[tuple[int, Message]]
    arguments: dict[tuple[str, int], list[ArgumentVerdict]] = field(default_factory=dict)
    texts: dict[tuple[str, int], _TextVerdict] = field(default_factory=dict)
    pending: list[tuple[FuzzyRequest, ArgumentVerdict | _TextVerdict]] = field(default_factory=list)

    def compare(self) -> None:
        for goal in self.journey.goal_details:
            if isinstance(goal, ToolCallGoal):
                for ref in self.calls:
                    if ref.call.name == goal.tool_name:
                        self._compare_call(goal, ref)
            else:
                for index, message in self.replies:
                    self._compare_text(goal, index, message)

    def _compare_call(self, goal: ToolCallGoal, ref: CallRef) -> None:
        verdicts = compare_arguments(goal, ref.call.arguments, self.journey)
        self.arguments[(goal.name, ref.number)] = verdicts
        if any(v.ok is False for v in verdicts):
            return  # decided without fuzzy matching
        for verdict in verdicts:
            if verdict.ok is None:
                request = FuzzyRequest(
                    text_form(verdict.expected), text_form(verdict.actual), "argument", goal.tool_name, verdict.name
                )
                self.pending.append((request, verdict))

    def _compare_text(self, goal: TextGoal, index: int, message: Message) -> None:
        missing = [k for k in goal.keywords if not keyword_found(k, message.content)]
        verdict = _TextVerdict(index, missing, not missing)
        self.texts[(goal.name, index)] = verdict
        response = goal.response.strip()
        if missing or not response:
            return
        if self.journey.enable_fuzzy_matching:
            if _squash(response) == _squash(message.content):
                verdict.method = "equal"
            else:
                verdict.ok, verdict.method = None, "pending"
                self.pending.append((FuzzyRequest(response, message.content, "response"), verdict))
        elif not goal.keywords:  # nothing else to go by: the expected response must appear in the reply
            verdict.ok, verdict.method = _squash(response) in _squash(message.content), "contains"

    def apply(self, decided: dict[FuzzyRequest, FuzzyVerdict]) -> None:
        for request, verdict in self.pending:
            outcome = decided[request]
            verdict.ok, verdict.method = outcome.ok, outcome.method
            verdict.similarity, verdict.note = outcome.similarity, outcome.note

    def candidates(self) -> dict[str, list[Position]]:
        out: dict[str, list[Position]] = {}
        for goal in self.journey.goal_details:
            if isinstance(goal, ToolCallGoal):
                out[goal.name] = [
                    ref.position
                    for ref in self.calls
                    if (goal.name, ref.number) in self.arguments
                    and all(v.ok for v in self.arguments[(goal.name, ref.number)])
                ]
            else:
                out[goal.name] = [(index, math.inf) for index, _ in self.replies if self.texts[(goal.name, index)].ok]
        return out


def _squash(text: str) -> str:
    return " ".join(text.casefold().split())


def _assign(
    order: Sequence[ToolCallGoal | TextGoal], before: dict[str, list[str]], candidates: dict[str, list[Position]]
) -> dict[str, Position]:
    """The assignment of positions to goals that matches the most goals in dependency order.

    A call position serves one goal at most; a reply may satisfy several text goals. Among equally good
    assignments the earliest positions win (they are tried first).
    """
    best: dict[str, Position] = {}
    best_count = -1
    budget = SEARCH_BUDGET
    current: dict[str, Position] = {}
    used: set[Position] = set()
    total = len(order)

    def search(index: int, count: int) -> None:
        nonlocal best, best_count, budget
        if count + (total - index) <= best_count:
            return
        if index == total or budget <= 0:
            if count > best_count:
                best, best_count = dict(current), count
            return
        budget -= 1
        goal = order[index]
        exclusive = isinstance(goal, ToolCallGoal)
        prerequisites = before[goal.name]
        if all(p in current for p in prerequisites):
            floor = max((current[p] for p in prerequisites), default=None)
            for position in candidates[goal.name]:
                if (floor is not None and position <= floor) or (exclusive and position in used):
                    continue
                current[goal.name] = position
                if exclusive:
                    used.add(position)
                search(index + 1, count + 1)
                del current[goal.name]
                used.discard(position)
                if best_count == total:
                    return
        search(index + 1, count)

    search(0, 0)
    return best


def journey_metrics(
    journey: JourneySpec,
    matching: _Matching,
    assigned: dict[str, Position],
    latencies: Sequence[float],
) -> dict[str, Any]:
    """The watsonx metrics of one conversation."""
    tool_goals = [g for g in journey.goal_details if isinstance(g, ToolCallGoal)]
    text_goals = [g for g in journey.goal_details if isinstance(g, TextGoal)]
    expected_tools = {g.tool_name for g in tool_goals}
    total = len(matching.calls)
    correct = len(_correct_goals(tool_goals, matching))
    relevant = [ref for ref in matching.calls if ref.call.name in expected_tools]
    incorrect = sum(1 for ref in relevant if _wrong_arguments(ref, tool_goals, matching))
    return {
        "total_tool_calls": total,
        "expected_tool_calls": len(tool_goals),
        "correct_tool_calls": correct,
        "relevant_tool_calls": len(relevant),
        "incorrect_parameter_calls": incorrect,
        "tool_call_precision": correct / total if total else (1.0 if not tool_goals else 0.0),
        "tool_call_recall": correct / len(tool_goals) if tool_goals else 1.0,
        "text_match": all(g.name in assigned for g in text_goals) if text_goals else None,
        "journey_success": len(assigned) == len(journey.goal_details),
        "avg_response_time_ms": sum(latencies) / len(latencies) if latencies else None,
    }


def _correct_goals(goals: Sequence[ToolCallGoal], matching: _Matching) -> set[str]:
    """The goals some call matched, counted as IBM's framework does: in any order.

    Each call counts for the first goal (in `goal_details` order) of its tool whose arguments it matches;
    dependency order is left to journey success.
    """
    correct: set[str] = set()
    for ref in matching.calls:
        for goal in goals:
            if goal.tool_name == ref.call.name and all(v.ok for v in matching.arguments[(goal.name, ref.number)]):
                correct.add(goal.name)
                break
    return correct


def _wrong_arguments(ref: CallRef, goals: Sequence[ToolCallGoal], matching: _Matching) -> bool:
    """Whether the call's arguments fail every goal for its tool."""
    return all(
        any(not v.ok for v in matching.arguments[(g.name, ref.number)]) for g in goals if g.tool_name == ref.call.name
    )


def _journey(spec: AssertionSpec, context: CheckContext) -> CheckResult | Awaitable[CheckResult]:
    journey: JourneySpec = spec.value
    replies = [(i, m) for i, m in enumerate(context.transcript) if m.role == "assistant"]
    matching = _Matching(journey, conversation_calls(context), replies)
    matching.compare()
    if not matching.pending:
        return _result(spec, context, matching, None)
    return _with_fuzzy(spec, context, matching)


async def _with_fuzzy(spec: AssertionSpec, context: CheckContext, matching: _Matching) -> CheckResult:
    matcher = FuzzyMatcher(context.judge, matching.journey.similarity_threshold)
    matching.apply(await matcher.resolve([request for request, _ in matching.pending]))
    return _result(spec, context, matching, matcher)


def _result(
    spec: AssertionSpec, context: CheckContext, matching: _Matching, matcher: FuzzyMatcher | None
) -> CheckResult:
    journey = matching.journey
    before = journey.prerequisites()
    assigned = _assign(journey.order(), before, matching.candidates())
    latencies = [m.latency_ms for _, m in matching.replies if m.latency_ms is not None]
    metrics = journey_metrics(journey, matching, assigned, latencies)
    goals = [_goal_details(goal, before, assigned, matching) for goal in journey.goal_details]
    failures = [g["reason"] for g in goals if g["status"] != "matched"]
    summary = f"precision {metrics['tool_call_precision']:.2f}, recall {metrics['tool_call_recall']:.2f}"
    if not failures:
        text = [g.name for g in journey.goal_details if isinstance(g, TextGoal)]
        said = f"; text goal {', '.join(map(repr, text))} matched" if text else ""
        reason = (
            f"journey succeeded: {metrics['correct_tool_calls']} of {metrics['expected_tool_calls']} tool-call "
            f"goals matched in dependency order{said}; {summary}"
        )
    else:
        more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
        reason = f"journey failed: {'; '.join(failures[:3])}{more}; {summary}"
    details: dict[str, Any] = {
        "metrics": metrics,
        "goals": goals,
        "calls": [_call_details(ref, journey, assigned, matching) for ref in matching.calls],
        "matching": journey.model_dump(include=set(MatchingSpec.model_fields)),
    }
    if matcher is not None:
        details["fuzzy"] = matcher.details()
    ok = metrics["journey_success"]
    return CheckResult(
        spec.display_name(),
        spec.type,
        "passed" if ok else "failed",
        1.0 if ok else 0.0,
        spec.weight,
        reason,
        None,
        details,
    )


def _ref_at(matching: _Matching, position: Position) -> CallRef:
    return next(ref for ref in matching.calls if ref.position == position)


def _goal_details(
    goal: ToolCallGoal | TextGoal, before: dict[str, list[str]], assigned: dict[str, Position], matching: _Matching
) -> dict[str, Any]:
    out: dict[str, Any] = {"goal": goal.name, "type": goal.type}
    if isinstance(goal, ToolCallGoal):
        out["tool"] = goal.tool_name
        if goal.name in assigned:
            ref = _ref_at(matching, assigned[goal.name])
            out |= {"status": "matched", "call": ref.number, "turn": ref.turn}
            out["arguments"] = [v.to_dict() for v in matching.arguments[(goal.name, ref.number)]]
            return out
        out["status"] = "missing"
        why, closest = _why_call(goal, before, assigned, matching)
        if closest is not None:
            out["closest_call"] = closest.number
            out["arguments"] = [v.to_dict() for v in matching.arguments[(goal.name, closest.number)]]
        out["reason"] = f"goal {goal.name!r} ({goal.tool_name}) not matched: {why}"
        return out
    if goal.name in assigned:
        index = int(assigned[goal.name][0])
        verdict = matching.texts[(goal.name, index)]
        out |= {"status": "matched", "message": index, "method": verdict.method}
        if verdict.similarity is not None:
            out["similarity"] = round(verdict.similarity, 4)
        return out
    out["status"] = "missing"
    out["reason"] = f"text goal {goal.name!r} not matched: {_why_text(goal, before, assigned, matching)}"
    return out


def _blocking(goal: ToolCallGoal | TextGoal, before: dict[str, list[str]], assigned: dict[str, Position]) -> list[str]:
    return [p for p in before[goal.name] if p not in assigned]


def _why_call(
    goal: ToolCallGoal, before: dict[str, list[str]], assigned: dict[str, Position], matching: _Matching
) -> tuple[str, CallRef | None]:
    same_tool = [ref for ref in matching.calls if ref.call.name == goal.tool_name]
    if not same_tool:
        return f"the agent never called {goal.tool_name}", None
    good = [ref for ref in same_tool if all(v.ok for v in matching.arguments[(goal.name, ref.number)])]
    if not good:
        closest = min(same_tool, key=lambda r: sum(not v.ok for v in matching.arguments[(goal.name, r.number)]))
        wrong = [v.describe() for v in matching.arguments[(goal.name, closest.number)] if not v.ok]
        calls = "the only call" if len(same_tool) == 1 else f"the closest of {len(same_tool)} calls"
        return f"wrong arguments: {calls} (#{closest.number}) had {', '.join(wrong)}", closest
    missing = _blocking(goal, before, assigned)
    if missing:
        fits = good[0]
        return f"its prerequisite {', '.join(map(repr, missing))} was not matched (call #{fits.number} fits)", fits
    floor = max(assigned[p] for p in before[goal.name]) if before[goal.name] else None
    late = [ref for ref in good if floor is None or ref.position > floor]
    if not late:
        prerequisite = max(before[goal.name], key=lambda p: assigned[p])
        return f"call #{good[-1].number} fits but comes before its prerequisite {prerequisite!r} was done", good[-1]
    owners = [name for name, position in assigned.items() if position in {r.position for r in late}]
    taken = ", ".join(map(repr, owners))
    return f"every call that fits (#{', #'.join(str(r.number) for r in late)}) matched {taken} already", late[0]


def _why_text(goal: TextGoal, before: dict[str, list[str]], assigned: dict[str, Position], matching: _Matching) -> str:
    if not matching.replies:
        return "the agent gave no answer"
    verdicts = [matching.texts[(goal.name, index)] for index, _ in matching.replies]
    last_text = matching.replies[-1][1].content
    with_keywords = [v for v in verdicts if not v.missing]
    if not with_keywords:
        fewest = min(verdicts, key=lambda v: len(v.missing))
        return f"no answer contains {', '.join(map(repr, fewest.missing))} (last answer: {excerpt(last_text)})"
    good = [v for v in with_keywords if v.ok]
    if not good:
        last = with_keywords[-1]
        how = f"{last.method} similarity {last.similarity:.2f}" if last.similarity is not None else last.method
        note = f"; {last.note}" if last.note and last.method == "judge" else ""
        return f"the answer has the keywords but does not match the expected response ({how}{note})"
    missing = _blocking(goal, before, assigned)
    if missing:
        return f"its prerequisite {', '.join(map(repr, missing))} was not matched"
    return "the matching answer came before its prerequisites were done"


def _call_details(
    ref: CallRef, journey: JourneySpec, assigned: dict[str, Position], matching: _Matching
) -> dict[str, Any]:
    owner = next((name for name, position in assigned.items() if position == ref.position), None)
    goals = [g for g in journey.goal_details if isinstance(g, ToolCallGoal) and g.tool_name == ref.call.name]
    fits = [g.name for g in goals if all(v.ok for v in matching.arguments[(g.name, ref.number)])]
    if owner is not None:
        verdict = "correct"
    elif not goals:
        verdict = "irrelevant"
    elif not fits:
        verdict = "incorrect_parameters"
    elif any(name in assigned for name in fits):
        verdict = "redundant"
    else:
        verdict = "out_of_order"
    return {
        "call": ref.number,
        "turn": ref.turn,
        "tool": ref.call.name,
        "arguments": ref.call.arguments,
        "goal": owner,
        "verdict": verdict,
    }


registry.register(
    CheckType(
        "journey",
        "trajectory",
        "The tool calls and answer match an expected goal graph (watsonx ground truth; `expect:` adds it).",
        _journey,
        value=TypeAdapter(JourneySpec),
        negatable=False,
        scope="conversation",
    )
)
