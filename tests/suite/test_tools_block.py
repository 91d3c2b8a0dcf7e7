"""The `tools:` block of a suite: shapes it accepts, and located errors for the ones it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import Trust, load_suites
from proctor.suite._tools import MockSpec, ToolSpec

HEAD = 'name: t\ntarget: "python:helpers.agents:echo"\nturns: [{content: hi}]\n'


def load_error(tmp_path: Path, tools: str) -> tuple[str, int | None, str]:
    path = tmp_path / "suite.yaml"
    path.write_text(HEAD + tools, encoding="utf-8")
    with pytest.raises(SuiteError) as error:
        load_suites([path], registry)
    issue = error.value.issues[0]
    return issue.field, issue.line, issue.message


def test_the_short_forms() -> None:
    assert ToolSpec.model_validate("Sunny").mock_spec == MockSpec(result="Sunny")
    assert ToolSpec.model_validate({"mock": {"results": ["a", "b"]}}).mock_spec == MockSpec(results=["a", "b"])
    assert ToolSpec.model_validate({"replay": "c.json"}).replay == "c.json"


@pytest.mark.parametrize(
    ("tools", "field", "message"),
    [
        (
            "tools:\n  x: {mock: a, replay: c.json}\n",
            "tools.x",
            "exactly one of 'mock', 'proxy', 'replay' or 'simulate'; found mock, replay",
        ),
        ("tools:\n  x: {description: d}\n", "tools.x", "found none"),
        (
            "tools:\n  x: {mock: {latency_ms: 5}}\n",
            "tools.x.mock",  # located at the mock itself
            "a mock needs a 'result', 'results', a 'table', an 'error' or a 'cypher' statement",
        ),
        (
            "tools:\n  x: {proxy: {url: 'http://h/mcp', command: [a]}}\n",
            "tools.x.proxy",
            "exactly one of 'command' (stdio) or 'url'",
        ),
        (
            "tools:\n  x: {replay: c.json, record: new}\n",
            "tools.x",
            "'record: new' needs a 'replay' cassette and a 'proxy'",
        ),
        ("tools:\n  x: {mock: a, cassette: c.json}\n", "tools.x", "'cassette' records a 'proxy'"),
        ("tools:\n  'bad name': {mock: a}\n", "tools", "must be 1-128 letters"),
        (
            "tools:\n  x: {replay: c.json, schema_from: c.json}\n",
            "tools.x",
            "'schema_from' is for 'mock' and 'simulate'",
        ),
        ("tools:\n  x: {mock: a, colour: red}\n", "tools.x.colour", "unknown field 'colour'"),
    ],
)
def test_bad_blocks_are_located(tmp_path: Path, tools: str, field: str, message: str) -> None:
    found_field, line, found_message = load_error(tmp_path, tools)
    assert found_field == field and message in found_message
    assert line is not None and line >= 4  # the tools block starts on line 4


def test_programs_a_suite_starts_need_trust(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: t\ntarget: {type: mcp, command: [my-agent, --stdio], tool: ask}\nturns: [{content: hi}]\n"
        "tools:\n  x: {mock: a, schema_from: {command: [my-tools]}}\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteError) as error:
        load_suites([path], registry, trust=Trust(trusted=False, root=tmp_path))
    issues = {issue.field: issue.message for issue in error.value.issues}
    assert set(issues) == {"target.command", "tools.x.schema_from.command"}
    assert "my-agent --stdio" in issues["target.command"] and "--trust" in issues["target.command"]
    assert load_suites([path], registry, trust=Trust(trusted=True, root=tmp_path))  # trusted: loads
