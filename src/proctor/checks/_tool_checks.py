"""Tool-call checks in the agentevals vocabulary, for native suites.

Each works on a turn (that reply's calls) or on the case (every call of the conversation):

- `tool-called`: a call to the tool (with these arguments, when given) was made; `not-tool-called` or
  `tool-not-called` for the opposite.
- `tool-sequence`: the calls against a list of tools, by `mode`: `strict` (exactly these, in this order),
  `unordered` (exactly these, any order), `subset` (no call outside the list), `superset` (at least these).
- `tool-args-match`: every expected call was made with matching arguments, by `mode`: `exact`, `ignore`,
  `subset` (the call's arguments are among the expected ones) or `superset` (the call has at least the
  expected ones); `overrides` sets a mode (or the argument names to compare) per tool. Partial score.
- `tool-call-f1`: the F1 of the calls made against the calls expected (partial credit; passes at
  `options.threshold`, default 1.0).

A tool given as `{name, args}` matches a call with that name whose arguments include `args` (equal
after normalisation: key order, `1 == 1.0`, and `options.case_insensitive`). Repeated tools count:
each call satisfies one expected item at most.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter

from proctor.checks._arguments import values_equal
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.checks._trajectory import CallRef, conversation_calls
from proctor.suite import AssertionSpec, MatchingSpec

__all__ = ["ArgsMatchSpec", "SequenceSpec", "ToolCallSpec"]

ArgsMode = Literal["exact", "ignore", "subset", "superset"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallSpec(_Strict):
    """An expected call: a tool name, and optionally arguments it must include."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None

    def describe(self) -> str:
        """`name` or `name(args)`."""
        return self.name if self.args is None else f"{self.name}({self.args})"


def _tool(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


def _tools(value: Any) -> Any:
    return [_tool(item) for item in value] if isinstance(value, list) else value


# json_schema_input_type: `proctor schema` shows the short forms the validators accept (a name for a tool)
Tool = Annotated[ToolCallSpec, BeforeValidator(_tool, json_schema_input_type=str | ToolCallSpec)]
Tools = Annotated[list[Tool], BeforeValidator(_tools)]


class SequenceSpec(_Strict):
    """The value of `tool-sequence`: a list of tools, or this mapping."""

    tools: Tools
    mode: Literal["strict", "unordered", "subset", "superset"] = "strict"


class ArgsMatchSpec(_Strict):
    """The value of `tool-args-match`: a list of expected calls, or this mapping."""

    calls: Annotated[Tools, Field(min_length=1)]
    mode: ArgsMode = "exact"
    overrides: dict[str, ArgsMode | list[str]] = Field(default_factory=dict)
    """Per tool: a mode, or the names of the only arguments to compare (exactly)."""


def _as_mapping(key: str) -> Callable[[Any], Any]:
    def wrap(value: Any) -> Any:
        return {key: value} if isinstance(value, list) else value

    return wrap


def _options(spec: AssertionSpec) -> MatchingSpec:
    return MatchingSpec(case_insensitive=bool(spec.options.case_insensitive))


def _includes(expected: Mapping[str, Any], actual: Mapping[str, Any], options: MatchingSpec) -> bool:
    return all(key in actual and values_equal(value, actual[key], options) for key, value in expected.items())


def _fits(tool: ToolCallSpec, ref: CallRef, options: MatchingSpec) -> bool:
    return ref.call.name == tool.name and (tool.args is None or _includes(tool.args, ref.call.arguments, options))


def _pairs(expected: Sequence[Any], calls: Sequence[CallRef], fits: Callable[[Any, CallRef], bool]) -> dict[int, int]:
    """A maximum matching of expected items to distinct calls (augmenting paths): item index -> call index."""
    owner: dict[int, int] = {}  # call index -> item index

    def place(item: int, seen: set[int]) -> bool:
        for index, ref in enumerate(calls):
            if index in seen or not fits(expected[item], ref):
                continue
            seen.add(index)
            if index not in owner or place(owner[index], seen):
                owner[index] = item
                return True
        return False

    for item in range(len(expected)):
        place(item, set())
    return {item: call for call, item in owner.items()}


def _names(calls: Sequence[CallRef]) -> str:
    return "no tool calls" if not calls else "calls made: " + ", ".join(ref.call.name for ref in calls)


def _result(
    spec: AssertionSpec,
    context: CheckContext,
    ok: bool,
    expectation: str,
    observation: str,
    score: float | None = None,
    details: dict[str, Any] | None = None,
) -> CheckResult:
    """The result, worded for a reply or for the whole conversation, with `not-` applied."""
    negated = spec.type.startswith("not-")
    passed = ok != negated
    value = score if score is not None else (1.0 if ok else 0.0)
    subject = "the reply" if context.reply is not None else "the agent"
    reason = f"expected {subject} {'not ' if negated else ''}{expectation}; {observation}"
    return CheckResult(
        spec.name or f"{spec.type}: {_describe(spec.value)}",
        spec.type,
        "passed" if passed else "failed",
        1.0 - value if negated else value,
        spec.weight,
        reason,
        context.turn,
        details or {},
    )


def _describe(value: Any) -> str:
    """A check's value for its display name, e.g. `lookup_user, get_time_off (superset)`."""
    if isinstance(value, ToolCallSpec):
        text = value.describe()
    elif isinstance(value, SequenceSpec):
        text = f"{', '.join(t.describe() for t in value.tools)} ({value.mode})"
    elif isinstance(value, ArgsMatchSpec):
        text = f"{', '.join(t.describe() for t in value.calls)} ({value.mode})"
    else:
        text = ", ".join(t.describe() for t in value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_tool_called(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    tool: ToolCallSpec = spec.value
    calls = conversation_calls(context)
    hits = [ref for ref in calls if _fits(tool, ref, _options(spec))]
    observation = f"call #{hits[0].number} is one" if hits else _names(calls)
    return _result(spec, context, bool(hits), f"to call {tool.describe()}", observation, details={"calls": len(hits)})


def _check_tool_not_called(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    tool: ToolCallSpec = spec.value
    calls = conversation_calls(context)
    hits = [ref for ref in calls if _fits(tool, ref, _options(spec))]
    observation = f"it was called {len(hits)} time(s), first as call #{hits[0].number}" if hits else _names(calls)
    return _result(spec, context, not hits, f"never to call {tool.describe()}", observation)


def _check_tool_sequence(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    sequence: SequenceSpec = spec.value
    calls = conversation_calls(context)
    options = _options(spec)
    tools = sequence.tools
    wanted = ", ".join(t.describe() for t in tools) or "nothing"
    if sequence.mode == "strict":
        ok = len(calls) == len(tools) and all(_fits(t, r, options) for t, r in zip(tools, calls, strict=False))
        expectation = f"to call exactly {' then '.join(t.describe() for t in tools) or 'nothing'}"
    else:
        pairs = _pairs(tools, calls, lambda t, r: _fits(t, r, options))
        if sequence.mode == "unordered":
            ok = len(pairs) == len(tools) == len(calls)
            expectation = f"to call exactly {wanted}, in any order"
        elif sequence.mode == "subset":
            ok = len(pairs) == len(calls)
            expectation = f"to call nothing beyond {wanted}"
        else:
            ok = len(pairs) == len(tools)
            expectation = f"to call at least {wanted}, in any order"
    return _result(spec, context, ok, expectation, _names(calls), details={"mode": sequence.mode})


def _args_fit(spec: ArgsMatchSpec, options: MatchingSpec) -> Callable[[ToolCallSpec, CallRef], bool]:
    def fits(tool: ToolCallSpec, ref: CallRef) -> bool:
        if ref.call.name != tool.name:
            return False
        expected, actual = tool.args or {}, ref.call.arguments
        mode = spec.overrides.get(tool.name, spec.mode)
        if isinstance(mode, list):
            return all(values_equal(expected.get(k), actual.get(k), options) for k in mode)
        if mode == "ignore":
            return True
        if mode == "exact":
            return values_equal(expected, dict(actual), options)
        if mode == "subset":
            return _includes(actual, expected, options)
        return _includes(expected, actual, options)

    return fits


def _check_tool_args_match(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    value: ArgsMatchSpec = spec.value
    calls = conversation_calls(context)
    pairs = _pairs(value.calls, calls, _args_fit(value, _options(spec)))
    missing = [tool.describe() for index, tool in enumerate(value.calls) if index not in pairs]
    matched = {value.calls[i].name + f"#{i + 1}": calls[c].number for i, c in sorted(pairs.items())}
    expectation = f"to call {len(value.calls)} tool(s) with {value.mode} arguments"
    if missing:
        made = "; ".join(f"#{r.number} {r.call.name}({r.call.arguments})" for r in calls) or "none"
        observation = f"no call fits {', '.join(missing)} (calls: {made})"
    else:
        observation = "every expected call was made"
    details = {"matched": matched, "missing": missing, "mode": value.mode}
    return _result(spec, context, not missing, expectation, observation, len(pairs) / len(value.calls), details)


def _check_tool_call_f1(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    expected: list[ToolCallSpec] = spec.value
    calls = conversation_calls(context)
    options = _options(spec)
    matched = len(_pairs(expected, calls, lambda t, r: _fits(t, r, options)))
    precision = matched / len(calls) if calls else (1.0 if not expected else 0.0)
    recall = matched / len(expected) if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    threshold = 1.0 if spec.options.threshold is None else spec.options.threshold
    observation = f"{matched} of {len(calls)} calls expected, {matched} of {len(expected)} expected calls made"
    details = {"precision": precision, "recall": recall, "f1": f1, "threshold": threshold}
    return _result(
        spec,
        context,
        f1 >= threshold,
        f"to score tool-call F1 >= {threshold:.2f} (F1 {f1:.2f})",
        observation,
        f1,
        details,
    )


_TOOL = TypeAdapter(Tool)
_CHECKS: list[tuple[str, Any, str, TypeAdapter[Any], bool]] = [
    (
        "tool-called",
        _check_tool_called,
        "A call to the tool (name, or {name, args} with arguments it must include) was made.",
        _TOOL,
        True,
    ),
    ("tool-not-called", _check_tool_not_called, "No call to the tool (name, or {name, args}) was made.", _TOOL, False),
    (
        "tool-sequence",
        _check_tool_sequence,
        "The calls match a list of tools: {tools, mode: strict | unordered | subset | superset}.",
        TypeAdapter(
            Annotated[SequenceSpec, BeforeValidator(_as_mapping("tools"), json_schema_input_type=SequenceSpec | Tools)]
        ),
        True,
    ),
    (
        "tool-args-match",
        _check_tool_args_match,
        "Expected calls were made with matching arguments: {calls, mode: exact | ignore | subset | superset, "
        "overrides} (partial score).",
        TypeAdapter(
            Annotated[
                ArgsMatchSpec, BeforeValidator(_as_mapping("calls"), json_schema_input_type=ArgsMatchSpec | Tools)
            ]
        ),
        False,
    ),
    (
        "tool-call-f1",
        _check_tool_call_f1,
        "F1 of the calls made against a list of expected calls (partial score; passes at options.threshold, 1.0).",
        TypeAdapter(Annotated[Tools, Field(min_length=1)]),
        False,
    ),
]
for _name, _function, _description, _adapter, _negatable in _CHECKS:
    registry.register(
        CheckType(_name, "trajectory", _description, _function, value=_adapter, negatable=_negatable, scope="any")
    )
