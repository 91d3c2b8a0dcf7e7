"""Argument matching for tool calls: strict equality after normalisation, and the fuzzy fall-back chain.

Per argument, a strategy decides (`proctor.suite.ArgStrategy`):

- `strict` (default): equal after normalisation. Key order never matters; `1 == 1.0` always; by option,
  `"1" == 1` (`numeric_strings`), case (`case_insensitive`) and list order (`ignore_list_order`).
  `True` is never `1`.
- `optional`: when the call has the argument it must match as `strict`; when absent, no penalty.
- `ignore`: never compared. `args: {"IGNORE": null}` ignores every argument.
- `fuzzy`: the same meaning. Values equal as `strict` match at once; otherwise the first available of
  (1) an LLM judge's semantic-equivalence verdict (when a judge model is configured), (2) the cosine
  similarity of all-MiniLM-L6-v2 sentence embeddings (the `embeddings` extra), (3) rapidfuzz's `WRatio`
  token similarity decides, the last two against `similarity_threshold`. A method that fails (a judge
  error, a missing extra) hands over to the next, and the result records which one decided and why the
  ones before it did not.

A call's extra arguments (not in the expected `args`) fail the match unless their value is `null`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel

from proctor.suite import MatchingSpec, ToolCallGoal

if TYPE_CHECKING:
    from proctor.checks._judging import Judge, JudgeCall

__all__ = [
    "ArgumentVerdict",
    "EquivalenceVerdict",
    "FuzzyMatcher",
    "FuzzyRequest",
    "FuzzyVerdict",
    "compare_arguments",
    "text_form",
    "values_equal",
]

Method = Literal["equal", "judge", "embeddings", "rapidfuzz"]


def values_equal(expected: Any, actual: Any, options: MatchingSpec) -> bool:
    """Whether two JSON values are equal after normalisation (see the module docstring)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if _is_number(expected) or _is_number(actual):
        left, right = _number(expected, options), _number(actual, options)
        return left is not None and right is not None and left == right
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.casefold() == actual.casefold() if options.case_insensitive else expected == actual
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(
            values_equal(value, actual[key], options) for key, value in expected.items()
        )
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        if len(expected) != len(actual):
            return False
        if not options.ignore_list_order:
            return all(values_equal(e, a, options) for e, a in zip(expected, actual, strict=True))
        remaining = list(actual)
        for item in expected:
            found = next((i for i, other in enumerate(remaining) if values_equal(item, other, options)), None)
            if found is None:
                return False
            remaining.pop(found)
        return True
    return bool(expected is None and actual is None)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Any, options: MatchingSpec) -> float | None:
    if _is_number(value):
        return float(value)
    if options.numeric_strings and isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def text_form(value: Any) -> str:
    """A value as text for fuzzy comparison: strings as they are, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(slots=True)
class ArgumentVerdict:
    """How one argument of one call compared with the expected value."""

    name: str
    """The argument."""
    strategy: str
    """`strict`, `optional`, `ignore` or `fuzzy` (`extra` for an argument nobody expected)."""
    ok: bool | None
    """Whether it matched; `None` while a fuzzy comparison is pending."""
    method: str
    """What decided: `equal`, `absent`, `ignored`, `missing`, `unexpected`, `judge`, `embeddings`, `rapidfuzz`."""
    expected: Any = None
    """The expected value (absent for extra arguments)."""
    actual: Any = None
    """The call's value (absent when the call lacks the argument)."""
    similarity: float | None = None
    """For `embeddings` and `rapidfuzz`: the similarity (0..1) compared with the threshold."""
    note: str = ""
    """The judge's reason, or why earlier fuzzy methods were not used."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form in check details."""
        out: dict[str, Any] = {
            "argument": self.name,
            "strategy": self.strategy,
            "ok": self.ok,
            "method": self.method,
            "expected": self.expected,
            "actual": self.actual,
        }
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 4)
        if self.note:
            out["note"] = self.note
        return out

    def describe(self) -> str:
        """One phrase for a failure reason, e.g. `start_date '2026-01-01' (expected '2025-01-01', strict)`."""
        if self.method == "missing":
            return f"{self.name} missing (expected {self.expected!r})"
        if self.method == "unexpected":
            return f"unexpected argument {self.name}={self.actual!r}"
        how = self.strategy
        if self.similarity is not None:
            how += f", {self.method} similarity {self.similarity:.2f}"
        elif self.method == "judge":
            how += ", judge: not equivalent"
        return f"{self.name} {self.actual!r} (expected {self.expected!r}, {how})"


def compare_arguments(goal: ToolCallGoal, actual: Mapping[str, Any], options: MatchingSpec) -> list[ArgumentVerdict]:
    """Compare a call's arguments with a goal's, per argument; fuzzy arguments that are not equal stay pending.

    Returns:
        One verdict per expected argument, then one per unexpected argument, in order. A verdict with
        `ok is None` needs `FuzzyMatcher` to decide.
    """
    if goal.ignores_all_arguments:
        return [ArgumentVerdict("*", "ignore", True, "ignored")]
    verdicts: list[ArgumentVerdict] = []
    for name, expected in goal.args.items():
        strategy = goal.arg_matching.get(name, "strict")
        present = name in actual and actual[name] is not None
        value = actual.get(name)
        if strategy == "ignore":
            verdicts.append(ArgumentVerdict(name, strategy, True, "ignored", expected, value))
        elif not present:
            ok = strategy == "optional" or expected is None
            verdicts.append(ArgumentVerdict(name, strategy, ok, "absent" if ok else "missing", expected, value))
        elif values_equal(expected, value, options):
            verdicts.append(ArgumentVerdict(name, strategy, True, "equal", expected, value))
        elif strategy == "fuzzy":
            verdicts.append(ArgumentVerdict(name, strategy, None, "pending", expected, value))
        else:
            verdicts.append(ArgumentVerdict(name, strategy, False, "equal", expected, value))
    for name, value in actual.items():
        if name not in goal.args and value is not None and goal.arg_matching.get(name) != "ignore":
            verdicts.append(ArgumentVerdict(name, "extra", False, "unexpected", None, value))
    return verdicts


class EquivalenceVerdict(BaseModel):
    """The judge's answer to "do these two values mean the same?"."""

    reason: str
    """One sentence."""
    equivalent: bool
    """Whether the values are interchangeable for the purpose at hand."""


@dataclass(frozen=True, slots=True)
class FuzzyRequest:
    """One fuzzy comparison to decide."""

    expected: str
    """The expected text."""
    actual: str
    """The agent's text."""
    kind: Literal["argument", "response"] = "argument"
    """An argument value, or a text answer against the expected response."""
    tool: str = ""
    """For arguments: the tool."""
    argument: str = ""
    """For arguments: the argument's name."""


@dataclass(slots=True)
class FuzzyVerdict:
    """How a fuzzy comparison was decided."""

    ok: bool
    method: Method
    similarity: float | None = None
    note: str = ""


@dataclass(slots=True)
class FuzzyMatcher:
    """Decides fuzzy comparisons with the first available method: judge, embeddings, token similarity.

    Args:
        judge: The judge model, when one is configured.
        threshold: The similarity the embedding and token methods need.
    """

    judge: Judge | None
    threshold: float
    methods: dict[str, int] = field(default_factory=dict)
    """How many comparisons each method decided."""
    fallbacks: list[str] = field(default_factory=list)
    """Why a method was passed over (distinct reasons, in order)."""
    judge_calls: list[JudgeCall] = field(default_factory=list)
    """The judge calls made."""
    embedding_model: str | None = None
    """The embedding model, once it was used."""

    async def resolve(self, requests: Sequence[FuzzyRequest]) -> dict[FuzzyRequest, FuzzyVerdict]:
        """Decide every request (duplicates once)."""
        pending = list(dict.fromkeys(requests))
        verdicts: dict[FuzzyRequest, FuzzyVerdict] = {}
        notes: dict[FuzzyRequest, str] = {}
        if self.judge is not None and pending:
            await self._judge_all(pending, verdicts, notes)
            pending = [r for r in pending if r not in verdicts]
        elif pending:
            self._fallback("no judge model configured", pending, notes)
        if pending:
            # on first use: importing `proctor.models` would make `import proctor.checks` heavier
            from proctor.models._embeddings import EMBEDDING_MODEL, EmbeddingsUnavailable, cosine, embed

            texts = list(dict.fromkeys(t for r in pending for t in (r.expected, r.actual)))
            try:
                vectors = dict(zip(texts, await anyio.to_thread.run_sync(embed, texts), strict=True))
            except EmbeddingsUnavailable as exc:
                self._fallback(f"embeddings unavailable: {exc}", pending, notes)
            else:
                for request in pending:
                    score = cosine(vectors[request.expected], vectors[request.actual])
                    verdicts[request] = self._scored("embeddings", score, notes.get(request, ""))
                self.embedding_model = EMBEDDING_MODEL
                pending = []
        for request in pending:
            verdicts[request] = self._scored("rapidfuzz", _token_similarity(request), notes.get(request, ""))
        return verdicts

    async def _judge_all(
        self, pending: list[FuzzyRequest], verdicts: dict[FuzzyRequest, FuzzyVerdict], notes: dict[FuzzyRequest, str]
    ) -> None:
        judge = self.judge
        assert judge is not None

        async def one(request: FuzzyRequest) -> None:
            template = f"{request.kind}-equivalence"
            variables = {
                "tool": request.tool,
                "argument": request.argument,
                "expected": request.expected,
                "actual": request.actual,
            }
            try:
                verdict, call = await judge.structured(template, variables, EquivalenceVerdict)
            except Exception as exc:  # a judge failure hands over to the next method, recorded
                self._fallback(f"judge failed: {type(exc).__name__}: {exc}", [request], notes)
                return
            self.judge_calls.append(call)
            self.methods["judge"] = self.methods.get("judge", 0) + 1
            verdicts[request] = FuzzyVerdict(verdict.equivalent, "judge", None, verdict.reason)

        async with anyio.create_task_group() as group:
            for request in pending:
                group.start_soon(one, request)

    def _fallback(self, reason: str, requests: Sequence[FuzzyRequest], notes: dict[FuzzyRequest, str]) -> None:
        if reason not in self.fallbacks:
            self.fallbacks.append(reason)
        for request in requests:
            notes[request] = f"{notes[request]}; {reason}" if request in notes else reason

    def _scored(self, method: Method, score: float, note: str) -> FuzzyVerdict:
        self.methods[method] = self.methods.get(method, 0) + 1
        return FuzzyVerdict(score >= self.threshold, method, score, note)

    def details(self) -> dict[str, Any]:
        """What the matcher did, for check details."""
        out: dict[str, Any] = {"threshold": self.threshold, "methods": dict(self.methods)}
        if self.fallbacks:
            out["fallbacks"] = list(self.fallbacks)
        if self.embedding_model:
            out["embedding_model"] = self.embedding_model
        if self.judge_calls:
            first = self.judge_calls[0]
            costs = [c.cost_usd for c in self.judge_calls if c.cost_usd is not None]
            out["judge"] = {
                "model": first.model,
                "templates": sorted({c.template for c in self.judge_calls}),
                "calls": len(self.judge_calls),
                "cached": sum(1 for c in self.judge_calls if c.cached),
                "usage": {
                    "prompt": sum(c.prompt_tokens for c in self.judge_calls),
                    "completion": sum(c.completion_tokens for c in self.judge_calls),
                },
                "cost_usd": sum(costs) if costs else None,
            }
        return out


def _token_similarity(request: FuzzyRequest) -> float:
    """Token similarity: rapidfuzz `WRatio` on lower-cased, punctuation-stripped text, scaled to 0..1."""
    from rapidfuzz import fuzz, utils

    return float(fuzz.WRatio(request.expected, request.actual, processor=utils.default_process)) / 100.0
