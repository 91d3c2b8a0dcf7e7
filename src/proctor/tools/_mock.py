"""Mocked tools: fixed or templated results, sequences, tables keyed by argument match, injected errors.

Strings in a mock's results are Jinja templates rendered in a sandbox (suite files are data) with the
call's arguments as variables, plus `args` (all of them) and `call` (the call's number within the
trial, from 1). A table row matches when each argument it names matches under its strategy (the
journey's matchers: `strict`, `optional`, `ignore`, `fuzzy` by token similarity against the mock's
`matching.similarity_threshold`); arguments a row does not name are not compared. A `cypher` mock runs
its statement on the trial's graph with the arguments as parameters and answers with the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import jinja2
from rapidfuzz import fuzz, utils

from proctor._jinja import LimitedSandbox, render
from proctor.checks._arguments import compare_arguments, text_form
from proctor.errors import ConfigError
from proctor.state import StateError
from proctor.suite import MatchingSpec, ToolCallGoal
from proctor.suite._tools import MockRow, MockSpec
from proctor.tools._answer import ToolAnswer

__all__ = ["MockTool"]

_Render = Callable[[Mapping[str, Any]], Any]
_MARKERS = ("{{", "{%", "{#")


class _Templates:
    def __init__(self) -> None:
        # Sandboxed and bounded (`proctor._jinja`): mocks come from suite files, which are data.
        self.env = LimitedSandbox(undefined=jinja2.StrictUndefined, autoescape=False)

    def compile(self, value: Any, where: str) -> _Render:
        """A render function for a JSON value whose strings are templates."""
        if isinstance(value, str):
            if not any(marker in value for marker in _MARKERS):
                return lambda variables: value
            try:
                template = self.env.from_string(value)
            except jinja2.TemplateSyntaxError as exc:
                raise ConfigError(f"bad template in {where}: {exc.message} in {value!r}") from None
            return lambda variables: render(template, variables)
        if isinstance(value, dict):
            parts = [(key, self.compile(item, f"{where}.{key}")) for key, item in value.items()]
            return lambda variables: {key: render(variables) for key, render in parts}
        if isinstance(value, list):
            items = [self.compile(item, f"{where}[{index}]") for index, item in enumerate(value)]
            return lambda variables: [render(variables) for render in items]
        return lambda variables: value


class _Row:
    def __init__(self, tool: str, row: MockRow, templates: _Templates, where: str) -> None:
        self.goal = ToolCallGoal(name=where, tool_name=tool, args=row.args, arg_matching=row.arg_matching)
        self.result = templates.compile(row.result, f"{where}.result")
        self.error = templates.compile(row.error, f"{where}.error") if row.error is not None else None

    def matches(self, arguments: Mapping[str, Any], options: MatchingSpec) -> bool:
        for verdict in compare_arguments(self.goal, arguments, options):
            if verdict.strategy == "extra":  # arguments a row does not name are not compared
                continue
            if verdict.ok is None:  # fuzzy and not equal: token similarity decides
                score = fuzz.WRatio(
                    text_form(verdict.expected), text_form(verdict.actual), processor=utils.default_process
                )
                if score / 100.0 < options.similarity_threshold:
                    return False
            elif not verdict.ok:
                return False
        return True


class MockTool:
    """Answers calls to one mocked tool (see the module's docstring); templates are compiled once."""

    kind = "mock"

    def __init__(self, name: str, spec: MockSpec) -> None:
        """Compile the mock's templates.

        Raises:
            ConfigError: A template does not compile.
        """
        where = f"tools.{name}.mock"
        templates = _Templates()
        self.name = name
        self.spec = spec
        self._result = templates.compile(spec.result, f"{where}.result") if spec.result is not None else None
        self._results = [templates.compile(r, f"{where}.results[{i}]") for i, r in enumerate(spec.results or [])]
        self._rows = [_Row(name, row, templates, f"{where}.table[{i}]") for i, row in enumerate(spec.table)]
        self._error = templates.compile(spec.error, f"{where}.error") if spec.error is not None else None

    async def answer(self, arguments: dict[str, Any], number: int, graph: Any = None) -> ToolAnswer:
        """Answer call number `number` (1-based within the trial) with these arguments.

        Args:
            arguments: The call's arguments.
            number: The call's number within the trial.
            graph: The trial's graph (a `proctor.state.Graph`), for `cypher` mocks.
        """
        if self.spec.latency_ms:
            await anyio.sleep(self.spec.latency_ms / 1000)
        variables = {**arguments, "args": arguments, "call": number}
        if self.spec.cypher is not None and not self._injected_error(number):
            return await self._cypher(arguments, graph)
        try:
            return self._answer(arguments, number, variables)
        except jinja2.TemplateError as exc:
            return ToolAnswer.error(f"the mock of {self.name} cannot answer these arguments: {exc}")

    def _injected_error(self, number: int) -> bool:
        return self._error is not None and (not self.spec.error_on or number in self.spec.error_on)

    async def _cypher(self, arguments: dict[str, Any], graph: Any) -> ToolAnswer:
        if graph is None:
            return ToolAnswer.error(f"the mock of {self.name} runs Cypher, but the trial has no graph")
        try:
            rows = await graph.run(self.spec.cypher, arguments)
        except StateError as exc:
            return ToolAnswer.error(f"{self.name} failed: {exc}")
        return ToolAnswer.of(rows)

    def _answer(self, arguments: dict[str, Any], number: int, variables: dict[str, Any]) -> ToolAnswer:
        if self._error is not None and self._injected_error(number):
            return ToolAnswer.error(str(self._error(variables)))
        for row in self._rows:
            if row.matches(arguments, self.spec.matching):
                if row.error is not None:
                    return ToolAnswer.error(str(row.error(variables)))
                return ToolAnswer.of(row.result(variables))
        if self._results:
            index = number - 1
            index = index % len(self._results) if self.spec.cycle else min(index, len(self._results) - 1)
            return ToolAnswer.of(self._results[index](variables))
        if self._result is not None:
            return ToolAnswer.of(self._result(variables))
        return ToolAnswer.error(f"no row of the mock of {self.name} matches the arguments {arguments}")
