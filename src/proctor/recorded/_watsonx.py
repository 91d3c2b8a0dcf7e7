"""Score a recorded watsonx Orchestrate run (an ADK `*.messages.json`) against its dataset, offline.

The ADK's evaluation framework (`agentops`, PyPI `ibm-watsonx-orchestrate-evaluation-framework`) writes
each simulated conversation as `<dataset>[.runN].messages.json` (a list of `{role, content, type,
event}`; a tool call's `content` is JSON text `{"type": "tool_call", "name", "args", "id"}`) and the
journey metrics it computed as `*.metrics.json`. This module computes the same metrics from the same
two files, with the framework's semantics (read from its `EvaluationPackage.traverse` and
`generate_summary`, re-implemented here, not copied):

- every assistant `tool_call` counts in `total_tool_calls`; one whose tool a goal names is *relevant*; it
  is *correct* for the first goal of that tool whose arguments match, else it counts once in
  `tool_calls_with_incorrect_parameter`; `correct_tool_calls` is the number of distinct goals matched.
  Dependency order does not matter here (only journey success checks it).
- arguments match per field: `strict` (default) compares normalised values (numbers as `10` whatever
  their spelling, other scalars lower-cased, lists sorted); `optional` only when present; `ignore` and
  the `<IGNORE>` value never; `fuzzy` equal as numbers or dates, else the same meaning (the judge, else
  embeddings, else token similarity, at the dataset's `similarity_threshold`). Extra actual arguments
  are allowed; `{"IGNORE": null}` accepts any arguments.
- a text goal matches the first assistant text that holds every keyword and means the expected
  `response`. Keywords are compared in normalised forms (case, spacing, thousands separators, and dates
  in any common spelling: `20250105`, `2025-01-05` and `January 5, 2025` are one date). IBM asks an LLM
  for both parts; here the keyword part is deterministic and the meaning part goes to the judge
  (`response-equivalence`). With no judge, the meaning part is *not judged*: `text_match` is
  `Not Judged` and `is_success` is `None` unless it is decided without the text goals.
- `is_success`: the matched goals, in the order they matched, form a valid order of the goal graph (a
  goal's latest match comes before each of its dependants' latest match, every goal present).
- `precision = correct / total` and `recall = correct / expected`, rounded to 2 places as IBM does.

Routing metrics need the deployed agents' tool lists (IBM's resource map), which a recorded file does not
hold: routing calls are counted only with `agents` given. `avg_resp_time` is `-1` (the file has no
times), as in IBM's own `*.metrics.json`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.checks._arguments import EquivalenceVerdict, FuzzyMatcher, FuzzyRequest
from proctor.checks._judging import Judge
from proctor.checks._keywords import keyword_found, parse_date
from proctor.errors import ProctorError
from proctor.suite import TextGoal, ToolCallGoal
from proctor.suite.formats.watsonx import WatsonxDataset

__all__ = [
    "METRIC_KEYS",
    "AdkMessage",
    "WatsonxRunError",
    "WatsonxRunResult",
    "dataset_for",
    "is_messages_file",
    "keyword_found",
    "read_dataset",
    "read_messages",
    "score_run",
]

IGNORE_VALUE = "<IGNORE>"
"""A ground-truth argument value that is never compared (IBM's reserved keyword)."""
NOT_JUDGED = "Not Judged"
"""`text_match` when a text goal's keywords matched but no judge could decide its meaning."""
METRIC_KEYS = (
    "dataset_name",
    "total_steps",
    "llm_step",
    "total_tool_calls",
    "expected_tool_calls",
    "correct_tool_calls",
    "relevant_tool_calls",
    "total_routing_calls",
    "relevant_routing_calls",
    "tool_calls_with_incorrect_parameter",
    "text_match",
    "is_success",
    "avg_resp_time",
    "tool_call_recall",
    "tool_call_precision",
    "agent_routing_accuracy",
)
"""The columns of IBM's `summary_metrics.csv`, in its order."""
_COMBINATIONS = 4096
_RUN_SUFFIX = re.compile(r"(\.run\d+)?\.messages\.json$")
_LLM_TYPES = frozenset({"text", "conversational_search", "tool_call"})


class WatsonxRunError(ProctorError):
    """A messages file or dataset that cannot be read (the message names the file and the place)."""


@dataclass(frozen=True, slots=True)
class AdkMessage:
    """One message of an ADK messages file."""

    role: str
    content: str
    type: str
    index: int

    def tool_call(self, path: Path) -> tuple[str, dict[str, Any]]:
        """The `(name, args)` of a `tool_call` message (its content is JSON text)."""
        where = f"{path}: message [{self.index}]"
        try:
            call = json.loads(self.content)
        except ValueError as exc:
            raise WatsonxRunError(f"{where}: a tool_call's content must be JSON text ({exc})") from exc
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise WatsonxRunError(f"{where}: a tool_call's content needs a 'name'; found {self.content[:80]!r}")
        args = call.get("args", call.get("arguments", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError as exc:
                raise WatsonxRunError(f"{where}: the tool_call's args are not JSON ({exc})") from exc
        if not isinstance(args, dict):
            raise WatsonxRunError(f"{where}: the tool_call's args must be an object; found {type(args).__name__}")
        return call["name"], args


@dataclass(slots=True)
class TextOutcome:
    """How a text goal fared against one assistant text."""

    goal: str
    message: int
    missing_keywords: list[str]
    semantic: bool | None
    """The judge's verdict on meaning; `None` when not judged."""
    reason: str = ""


@dataclass(slots=True)
class CallOutcome:
    """How one tool call was classified."""

    message: int
    tool: str
    verdict: str
    """`correct`, `incorrect parameter` or `irrelevant tool call`."""
    goal: str | None = None
    expected: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class WatsonxRunResult:
    """The journey metrics of one recorded run, in IBM's names, with how each call and text fared."""

    metrics: dict[str, Any]
    calls: list[CallOutcome]
    texts: list[TextOutcome]
    matched_goals: list[str]
    judge_calls: int = 0
    source: str = ""
    """The messages file's name."""

    def to_dict(self) -> dict[str, Any]:
        """The metrics plus `calls`, `texts` and `matched_goals`, JSON-ready."""
        return {
            "source": self.source,
            **self.metrics,
            "matched_goals": self.matched_goals,
            "calls": [asdict(c) for c in self.calls],
            "texts": [asdict(t) for t in self.texts],
        }


def is_messages_file(path: Path) -> bool:
    """Whether `path` is named like an ADK messages file (`*.messages.json`, not `*.messages.analyze.json`)."""
    return path.name.endswith(".messages.json")


def dataset_for(messages_path: Path, dataset: Path) -> Path:
    """The dataset of a messages file: `dataset` itself, or `<name>.json` inside the folder `dataset`."""
    if dataset.is_file():
        return dataset
    name = _RUN_SUFFIX.sub("", messages_path.name) + ".json"
    candidate = dataset / name
    if not candidate.is_file():
        raise WatsonxRunError(f"{messages_path}: its dataset {name} is not in {dataset}")
    return candidate


def read_messages(path: Path) -> list[AdkMessage]:
    """Read an ADK messages file.

    Raises:
        WatsonxRunError: Not a JSON list of messages; the error names the message and field.
    """
    data = _json(path)
    if not isinstance(data, list):
        raise WatsonxRunError(f"{path}: expected a JSON list of messages; found {type(data).__name__}")
    out: list[AdkMessage] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise WatsonxRunError(f"{path}: message [{index}]: expected an object; found {type(item).__name__}")
        for key in ("role", "type"):
            if not isinstance(item.get(key), str):
                raise WatsonxRunError(f"{path}: message [{index}]: '{key}' must be a string; found {item.get(key)!r}")
        content = item.get("content")
        if not isinstance(content, str):
            content = json.dumps(content) if content is not None else ""
        out.append(AdkMessage(item["role"], content, item["type"], index))
    return out


def read_dataset(path: Path) -> WatsonxDataset:
    """Read a watsonx dataset (quick-eval datasets, whose `goal_details` are empty, cannot be scored).

    Raises:
        WatsonxRunError: Unreadable or invalid, naming the field.
    """
    data = _json(path)
    if isinstance(data, dict) and not data.get("goal_details"):
        raise WatsonxRunError(
            f"{path}: 'goal_details' is empty: a quick-eval dataset has no expected journey to score a "
            "recorded run against (run it live: proctor run)"
        )
    try:
        return WatsonxDataset.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise WatsonxRunError(f"{path}: {where}: {first['msg']}") from exc


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WatsonxRunError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise WatsonxRunError(f"{path}: line {exc.lineno}, column {exc.colno}: not JSON: {exc.msg}") from exc


# ---------------------------------------------------------------- argument matching (IBM's semantics)


def normalise_arg(value: Any) -> Any:
    """IBM's argument normalisation: numbers as their shortest text, scalars lower-cased, lists sorted."""
    if isinstance(value, dict):
        return {str(k): normalise_arg(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((normalise_arg(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if str(value) == IGNORE_VALUE:
        return IGNORE_VALUE
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number_text(float(value))
    if isinstance(value, str):
        try:
            return _number_text(float(value))
        except ValueError:
            pass
    return str(value).lower()


def _number_text(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)


def _as_number_or_date(actual: Any, expected: Any) -> bool | None:
    """Whether two values are the same number or date; `None` when they are neither."""
    try:
        return abs(float(actual) - float(expected)) <= 0.001
    except (TypeError, ValueError):
        pass
    first, second = parse_date(str(actual)), parse_date(str(expected))
    if first is None or second is None:
        return None
    return first == second


async def _arguments_match(goal: ToolCallGoal, actual: Mapping[str, Any], fuzzy: FuzzyMatcher) -> bool:
    if goal.ignores_all_arguments:
        return True
    for name, expected in goal.args.items():
        strategy = goal.arg_matching.get(name, "strict")
        want, got = normalise_arg(expected), normalise_arg(actual.get(name))
        if strategy == "ignore" or want == IGNORE_VALUE:
            continue
        if name not in actual:
            if strategy == "optional":
                continue
            return False
        if strategy == "fuzzy":
            same = _as_number_or_date(got, want)
            if same is None:
                request = FuzzyRequest(str(expected), str(actual[name]), "argument", goal.tool_name, name)
                same = (await fuzzy.resolve([request]))[request].ok
            if not same:
                return False
        elif got != want:
            return False
    return True


# ---------------------------------------------------------------- the traversal


@dataclass(slots=True)
class _Traversal:
    dataset: WatsonxDataset
    messages: list[AdkMessage]
    path: Path
    judge: Judge | None
    fuzzy: FuzzyMatcher
    agents: Mapping[str, Sequence[str]]
    metrics: dict[str, Any] = field(default_factory=dict)
    calls: list[CallOutcome] = field(default_factory=list)
    texts: list[TextOutcome] = field(default_factory=list)
    matched_at: list[tuple[int, str]] = field(default_factory=list)
    """(message index, goal) for each match, in order."""
    unjudged: list[str] = field(default_factory=list)
    judge_calls: int = 0

    @property
    def tool_goals(self) -> list[ToolCallGoal]:
        return [g for g in self.dataset.goal_details if isinstance(g, ToolCallGoal)]

    @property
    def text_goals(self) -> list[TextGoal]:
        return [g for g in self.dataset.goal_details if isinstance(g, TextGoal)]

    async def run(self) -> None:
        correct: set[str] = set()
        counts = dict.fromkeys(
            ("total", "relevant", "incorrect", "routing", "relevant_routing"),
            0,
        )
        done_texts: set[str] = set()
        expected_tools = {g.tool_name for g in self.tool_goals}
        for message in self.messages:
            if message.type == "tool_call":
                name, args = message.tool_call(self.path)
                if name in self.agents:
                    counts["routing"] += 1
                    if expected_tools & set(self.agents[name]) or name in expected_tools:
                        counts["relevant_routing"] += 1
                    continue
                counts["total"] += 1
                await self._call(message, name, args, counts, correct)
            elif message.type == "text" and message.role == "assistant":
                await self._text(message, done_texts)
        self._summarise(counts, correct, done_texts)

    async def _call(
        self, message: AdkMessage, name: str, args: dict[str, Any], counts: dict[str, int], correct: set[str]
    ) -> None:
        goals = [g for g in self.tool_goals if g.tool_name == name]
        if not goals:
            self.calls.append(CallOutcome(message.index, name, "irrelevant tool call"))
            return
        counts["relevant"] += 1
        for goal in goals:
            if await _arguments_match(goal, args, self.fuzzy):
                correct.add(goal.name)
                self.matched_at.append((message.index, goal.name))
                self.calls.append(CallOutcome(message.index, name, "correct", goal.name))
                return
        counts["incorrect"] += 1
        self.calls.append(CallOutcome(message.index, name, "incorrect parameter", expected=[g.args for g in goals]))

    async def _text(self, message: AdkMessage, done: set[str]) -> None:
        for goal in self.text_goals:
            if goal.name in done:
                continue
            missing = [k for k in goal.keywords if not keyword_found(k, message.content)]
            outcome = TextOutcome(goal.name, message.index, missing, None)
            self.texts.append(outcome)
            if missing:
                continue
            await self._semantic(goal, message, outcome)
            if outcome.semantic:
                self.matched_at.append((message.index, goal.name))
                done.add(goal.name)
                return  # IBM: one text goal per message
            if outcome.semantic is None and goal.name not in self.unjudged:
                self.unjudged.append(goal.name)

    async def _semantic(self, goal: TextGoal, message: AdkMessage, outcome: TextOutcome) -> None:
        expected = goal.response.strip()
        if not expected:
            outcome.semantic, outcome.reason = True, "no expected response: keywords decide"
            return
        if " ".join(expected.casefold().split()) == " ".join(message.content.casefold().split()):
            outcome.semantic, outcome.reason = True, "equal to the expected response"
            return
        if self.judge is None:
            outcome.reason = "not judged: no judge model configured (pass --judge)"
            return
        verdict, _ = await self.judge.structured(
            "response-equivalence", {"expected": expected, "actual": message.content}, EquivalenceVerdict
        )
        self.judge_calls += 1
        outcome.semantic, outcome.reason = verdict.equivalent, verdict.reason

    def _summarise(self, counts: dict[str, int], correct: set[str], done: set[str]) -> None:
        expected = len(self.tool_goals)
        text_goals = self.text_goals
        undecided = [g for g in self.unjudged if g not in done]
        if not text_goals:
            text_match = "NA"
        elif len(done) == len(text_goals):
            text_match = "Summary Matched"
        elif undecided:
            text_match = NOT_JUDGED
        else:
            text_match = "Summary MisMatched"
        success: bool | None = is_valid_order(self.dataset.goals, [goal for _, goal in self.matched_at])
        if undecided and not success:
            # would the undecided goals, matched at their first candidate, make it succeed?
            success = None if _could_succeed(self, undecided) else False
        routing = counts["routing"]
        self.metrics = {
            "dataset_name": "",
            "total_steps": len(self.messages),
            "llm_step": sum(1 for m in self.messages if m.role == "assistant" and m.type in _LLM_TYPES),
            "total_tool_calls": counts["total"],
            "expected_tool_calls": expected,
            "correct_tool_calls": len(correct),
            "relevant_tool_calls": counts["relevant"],
            "total_routing_calls": routing,
            "relevant_routing_calls": counts["relevant_routing"],
            "tool_calls_with_incorrect_parameter": counts["incorrect"],
            "text_match": text_match,
            "is_success": success,
            "avg_resp_time": -1,
            "tool_call_recall": round(len(correct) / expected, 2) if expected else math.nan,
            "tool_call_precision": (round(len(correct) / counts["total"], 2) if counts["total"] else 0.0)
            if expected
            else math.nan,
            "agent_routing_accuracy": round(counts["relevant_routing"] / routing, 2) if routing else 0.0,
        }


def _could_succeed(traversal: _Traversal, undecided: Sequence[str]) -> bool:
    """Whether some verdicts of the judge on the undecided texts would make the journey succeed.

    Each undecided text goal could match at any of its unjudged candidate texts (the judge accepting that
    one and rejecting the earlier ones); every combination is tried, up to `_COMBINATIONS`.
    """
    options = [
        [t.message for t in traversal.texts if t.goal == goal and t.semantic is None and not t.missing_keywords]
        for goal in undecided
    ]
    for count, choice in enumerate(itertools.product(*options)):
        if count >= _COMBINATIONS:
            return True  # too many to try: say undecided rather than failed
        order = list(traversal.matched_at) + list(zip(choice, undecided, strict=True))
        if is_valid_order(traversal.dataset.goals, [goal for _, goal in sorted(order)]):
            return True
    return False


def is_valid_order(graph: Mapping[str, Sequence[str]], ordering: Sequence[str]) -> bool:
    """IBM's journey success: every goal of `graph` in `ordering`, each (latest) before its dependants'.

    Args:
        graph: Goal -> the goals that depend on it.
        ordering: The goals matched, in the order they matched (a goal may repeat).
    """
    if not ordering:
        return False
    position = {goal: index for index, goal in enumerate(ordering)}
    nodes = set(graph) | {child for children in graph.values() for child in children}
    if any(node not in position for node in nodes):
        return False
    return all(position[node] < position[child] for node, children in graph.items() for child in children)


async def score_run(
    messages_path: Path,
    dataset_path: Path,
    judge: Judge | None = None,
    *,
    agents: Mapping[str, Sequence[str]] | None = None,
) -> WatsonxRunResult:
    """Compute the journey metrics of one recorded run, as IBM's framework does (see the module docstring).

    Args:
        messages_path: The ADK `*.messages.json`.
        dataset_path: Its dataset (the watsonx ground-truth JSON).
        judge: Decides text goals' meaning and fuzzy arguments; without one those are not judged (text)
            or fall back to embeddings and token similarity (arguments).
        agents: Collaborator agent -> its tools, to count routing calls (IBM's resource map).

    Returns:
        The metrics in IBM's names, with each call's and text's outcome.

    Raises:
        WatsonxRunError: A file cannot be read or is not what it should be.
        proctor.errors.ModelError: The judge failed.
    """
    dataset = read_dataset(dataset_path)
    messages = read_messages(messages_path)
    fuzzy = FuzzyMatcher(judge, dataset_threshold(dataset))
    traversal = _Traversal(dataset, messages, messages_path, judge, fuzzy, agents or {})
    await traversal.run()
    traversal.metrics["dataset_name"] = _RUN_SUFFIX.sub("", messages_path.name)
    return WatsonxRunResult(
        traversal.metrics,
        traversal.calls,
        traversal.texts,
        [goal for _, goal in traversal.matched_at],
        traversal.judge_calls + len(fuzzy.judge_calls),
        messages_path.name,
    )


def dataset_threshold(dataset: WatsonxDataset) -> float:
    """The fuzzy-argument similarity threshold (IBM's default 0.8; a dataset may carry its own)."""
    extra = dataset.model_extra or {}
    value = extra.get("similarity_threshold", 0.8)
    return float(value) if isinstance(value, int | float) else 0.8


def summary_rows(results: Iterable[WatsonxRunResult]) -> list[dict[str, Any]]:
    """Rows in IBM's `summary_metrics.csv` layout (`METRIC_KEYS`), one per run."""
    return [{key: result.metrics[key] for key in METRIC_KEYS} for result in results]


def grouped(results: Iterable[WatsonxRunResult]) -> dict[str, list[WatsonxRunResult]]:
    """Runs grouped by dataset name (the runs of a multi-run evaluation together)."""
    out: dict[str, list[WatsonxRunResult]] = defaultdict(list)
    for result in results:
        out[result.metrics["dataset_name"]].append(result)
    return dict(out)
