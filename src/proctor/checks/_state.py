"""State checks: Cypher assertions against the graph the agent wrote to (Embabel's `{cypher, expected}`).

Values are compared by type and value, never as strings: `1 == 1.0` (FalkorDB's `sum()` returns
floats where Neo4j returns integers), `"1" != 1` unless `string_numbers: true`, `true != 1`, and
numbers within `tolerance` are equal. A query that fails is an `error` with the database's message.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, model_validator

from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult, CheckStatus
from proctor.state import QueryError
from proctor.suite import AssertionSpec, split_statements

__all__ = ["CypherAssertion", "match_rows", "values_equal"]

_SHOWN_ROWS = 20


class CypherAssertion(BaseModel):
    """The value of a `cypher` check.

    Example:
        ```yaml
        - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
          expected: 1
        - cypher: "MATCH (p:Person)-[:KNOWS]->(q) WHERE p.name = $name RETURN q.name AS name"
          params: {name: Alice}
          expected_rows: [{name: Bob}, {name: Carol}]      # any order unless ordered: true
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    cypher: str = Field(min_length=1)
    """One Cypher statement; `{{ graph_label }}` and `{{ graph_name }}` are replaced with the trial's."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Query parameters (`$name`)."""
    expected: Any = None
    """The single value the query must return (one row, one column). Without `expected` or
    `expected_rows` the check passes when the query returns at least one row."""
    expected_rows: list[dict[str, Any]] | None = None
    """Every row the query must return, as `{column: value}`, in any order unless `ordered`."""
    ordered: bool = False
    """Compare `expected_rows` in order."""
    tolerance: float = Field(default=0.0, ge=0)
    """Numbers within this absolute difference are equal."""
    string_numbers: bool = False
    """Let a numeric string equal its number (`"1" == 1`); off by default."""

    @model_validator(mode="after")
    def _consistent(self) -> CypherAssertion:
        if "expected" in self.model_fields_set and self.expected_rows is not None:
            raise ValueError("give 'expected' (one value) or 'expected_rows', not both")
        if self.ordered and self.expected_rows is None:
            raise ValueError("'ordered' applies to 'expected_rows'")
        if len(split_statements(self.cypher)) != 1:
            raise ValueError("a Cypher assertion runs exactly one statement")
        return self

    @property
    def has_expected(self) -> bool:
        """Whether `expected` was given (it may be `null`)."""
        return "expected" in self.model_fields_set

    def __repr__(self) -> str:  # the check's display name: `cypher: MATCH ...`
        return " ".join(self.cypher.split())


_VALUE: TypeAdapter[CypherAssertion] = TypeAdapter(
    Annotated[
        CypherAssertion,
        BeforeValidator(
            lambda v: {"cypher": v} if isinstance(v, str) else v, json_schema_input_type=str | CypherAssertion
        ),
    ]
)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_number(text: str) -> float | None:
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def values_equal(actual: Any, expected: Any, *, tolerance: float = 0.0, string_numbers: bool = False) -> bool:
    """Compare a value from the graph with an expected one, by type and value.

    Args:
        actual: From the query (plain data: dicts, lists, scalars, `datetime` values).
        expected: From the suite.
        tolerance: Numbers within this absolute difference are equal.
        string_numbers: A numeric string equals its number.

    Returns:
        Whether they are equal. Booleans equal only booleans; `1 == 1.0`; a date equals its ISO text.
    """
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if _number(actual) and _number(expected):
        return bool(actual == expected or abs(actual - expected) <= tolerance)
    if string_numbers and (
        (_number(actual) and isinstance(expected, str)) or (_number(expected) and isinstance(actual, str))
    ):
        parsed = _parse_number(expected if isinstance(expected, str) else actual)
        number = actual if _number(actual) else expected
        return parsed is not None and abs(parsed - number) <= tolerance
    if isinstance(actual, _dt.date | _dt.time) and isinstance(expected, str):
        return _same_time(actual, expected)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return actual.keys() == expected.keys() and all(
            values_equal(actual[key], expected[key], tolerance=tolerance, string_numbers=string_numbers)
            for key in actual
        )
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(
            values_equal(a, e, tolerance=tolerance, string_numbers=string_numbers)
            for a, e in zip(actual, expected, strict=True)
        )
    if actual is None or expected is None:
        return actual is None and expected is None
    if type(actual) is not type(expected) and not isinstance(actual, type(expected)):
        return False
    return bool(actual == expected)


def _same_time(actual: _dt.date | _dt.time, text: str) -> bool:
    try:
        if isinstance(actual, _dt.datetime):
            return actual == _dt.datetime.fromisoformat(text)
        if isinstance(actual, _dt.date):
            return actual == _dt.date.fromisoformat(text)
        return actual == _dt.time.fromisoformat(text)
    except (ValueError, TypeError):
        return False


def match_rows(
    actual: Sequence[Mapping[str, Any]],
    expected: Sequence[Mapping[str, Any]],
    *,
    ordered: bool = False,
    tolerance: float = 0.0,
    string_numbers: bool = False,
) -> tuple[list[int], list[int]]:
    """Match expected rows to actual rows one to one.

    Returns:
        The indices of expected rows left unmatched and of actual rows left unmatched (both empty when
        the rows are the same).
    """

    def equal(a: Mapping[str, Any], e: Mapping[str, Any]) -> bool:
        return values_equal(a, e, tolerance=tolerance, string_numbers=string_numbers)

    if ordered:
        bad = [i for i, (a, e) in enumerate(zip(actual, expected, strict=False)) if not equal(a, e)]
        common = min(len(actual), len(expected))
        return [*bad, *range(common, len(expected))], [*bad, *range(common, len(actual))]
    candidates = [[j for j, row in enumerate(actual) if equal(row, wanted)] for wanted in expected]
    owner: dict[int, int] = {}  # actual row -> expected row (bipartite matching by augmenting paths)

    def assign(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or assign(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    missing = [i for i in range(len(expected)) if not assign(i, set())]
    extra = [j for j in range(len(actual)) if j not in owner]
    return missing, extra


def _show(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _result(spec: AssertionSpec, status: CheckStatus, reason: str, details: dict[str, Any]) -> CheckResult:
    score = {"passed": 1.0, "failed": 0.0}.get(status)
    return CheckResult(spec.display_name(), spec.type, status, score, spec.weight, reason, None, details)


def _judge(value: CypherAssertion, rows: list[dict[str, Any]]) -> tuple[CheckStatus, str]:
    """Return the status (`passed`, `failed` or `error`) and the reason."""
    tolerance, string_numbers = value.tolerance, value.string_numbers
    if value.expected_rows is not None:
        columns = set(rows[0]) if rows else None
        for index, row in enumerate(value.expected_rows):
            if columns is not None and set(row) != columns:
                return "error", (
                    f"expected_rows[{index}] names columns {sorted(row)}, but the query returns {sorted(columns)}"
                )
        missing, extra = match_rows(
            rows, value.expected_rows, ordered=value.ordered, tolerance=tolerance, string_numbers=string_numbers
        )
        how = "in this order" if value.ordered else "in any order"
        if not missing and not extra:
            count = len(value.expected_rows)
            return "passed", f"expected {count} row{'s' if count != 1 else ''} {how}; found them"
        parts = [f"expected rows {_show(value.expected_rows)} {how}; found {_show(rows[:_SHOWN_ROWS])}"]
        if missing:
            parts.append(f"missing {_show([value.expected_rows[i] for i in missing])}")
        if extra:
            parts.append(f"unexpected {_show([rows[j] for j in extra])}")
        return "failed", "; ".join(parts)
    if not value.has_expected:
        if rows:
            return "passed", f"expected at least one row; found {len(rows)}"
        return "failed", "expected at least one row; the query returned none"
    if rows and len(rows[0]) != 1:
        return "error", (
            f"'expected' compares one value, but the query returns {len(rows[0])} columns ({', '.join(rows[0])}); "
            "return one column or use expected_rows"
        )
    if not rows:
        return "failed", f"expected {_show(value.expected)}; the query returned no rows"
    if len(rows) > 1:
        return (
            "failed",
            f"expected one row with {_show(value.expected)}; the query returned {len(rows)} rows: "
            + _show(rows[:_SHOWN_ROWS]),
        )
    column, actual = next(iter(rows[0].items()))
    if values_equal(actual, value.expected, tolerance=tolerance, string_numbers=string_numbers):
        return "passed", f"expected {column} = {_show(value.expected)}; found {_show(actual)}"
    return "failed", f"expected {column} = {_show(value.expected)}; found {_show(actual)}"


async def _check_cypher(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    value = spec.value if isinstance(spec.value, CypherAssertion) else _VALUE.validate_python(spec.value)
    details: dict[str, Any] = {"cypher": value.cypher}
    if value.params:
        details["params"] = value.params
    graph = context.state
    if graph is None or not hasattr(graph, "run"):
        return _result(spec, "error", "no graph to query: the trial has no state backend", details)
    started = time.perf_counter()
    try:
        rows = await graph.run(value.cypher, value.params)
    except QueryError as exc:
        details["query_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return _result(spec, "error", f"query failed: {exc.message}", details)
    details["query_ms"] = round((time.perf_counter() - started) * 1000, 3)
    details["rows"] = rows[:_SHOWN_ROWS]
    if len(rows) > _SHOWN_ROWS:
        details["row_count"] = len(rows)
    status, reason = _judge(value, rows)
    return _result(spec, status, reason, details)


registry.register(
    CheckType(
        "cypher",
        "state",
        "A Cypher query against the agent's graph returns the expected value or rows "
        "({cypher, expected} as Embabel, plus params, expected_rows, ordered, tolerance).",
        _check_cypher,
        value=_VALUE,
        negatable=False,
        scope="conversation",
        needs_state=True,
    )
)
