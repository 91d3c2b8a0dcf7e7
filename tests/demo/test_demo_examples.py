"""The example suites match the demo agent's real replies: every check passes except `deliberate-failure`.

The checks are evaluated here by a small local evaluator (the demo must not depend on the checks
layer), with the documented semantics: text checks are case-sensitive unless `case_insensitive`,
`regex` is case-insensitive by default, `not-` negates, `llm-rubric` is skipped without a judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import jsonschema
import pytest
from demo_helpers import CASES, EXAMPLES, SUITES
from ruamel.yaml import YAML

from proctor.demo import respond
from proctor.suite import AssertionSpec, Case

TEXT_CHECKS = {"contains", "icontains", "contains-any", "contains-all", "equals", "starts-with", "regex"}
TOOL_CHECKS = {"tool-not-called", "tool-sequence"}
KNOWN = TEXT_CHECKS | TOOL_CHECKS | {"is-json", "json-schema", "latency", "llm-rubric", "python"}


def evaluate(check: AssertionSpec, text: str, tools: Sequence[str] = ()) -> bool | None:
    """Whether the reply passes the check; `None` when it needs a judge."""
    negate = check.type.startswith("not-")
    kind = check.type.removeprefix("not-")
    if kind in ("llm-rubric", "python"):  # a judge; the sandbox of the checks layer (run for real in test_demo_runs)
        return None
    fold = check.options.case_insensitive
    if kind == "icontains":
        fold = True
    if kind == "regex":
        fold = True if fold is None else fold

    def norm(value: str) -> str:
        return value.lower() if fold else value

    value = check.value
    if kind in ("contains", "icontains"):
        passed = norm(value) in norm(text)
    elif kind == "contains-any":
        passed = any(norm(v) in norm(text) for v in value)
    elif kind == "contains-all":
        passed = all(norm(v) in norm(text) for v in value)
    elif kind == "equals":
        passed = norm(text) == norm(value)
    elif kind == "starts-with":
        passed = norm(text).startswith(norm(value))
    elif kind == "regex":
        passed = re.search(value, text, re.IGNORECASE if fold else 0) is not None
    elif kind in ("is-json", "json-schema"):
        try:
            document = json.loads(text)
        except ValueError:
            passed = False
        else:
            passed = kind == "is-json" or not list(jsonschema.Draft202012Validator(value).iter_errors(document))
    elif kind == "latency":
        passed = True  # the in-process agent answers in well under a millisecond
    elif kind in ("tool-called", "tool-not-called"):  # by name: the examples give no arguments on turns
        passed = (value in tools) == (kind == "tool-called")
    elif kind == "tool-sequence":  # a plain list: a strict sequence of names
        passed = list(tools) == value
    else:
        raise AssertionError(f"unknown check type {check.type!r}")
    return passed != negate


def run_case(case: Case) -> list[tuple[str, AssertionSpec, bool | None]]:
    history: list[dict[str, Any]] = []
    results = []
    text, tools, content = "", [], ""
    steps: list[tuple[str | None, list[AssertionSpec]]] = [(turn.content, turn.assert_) for turn in case.turns]
    for step in case.script:  # up to a simulated stretch: that needs a simulator model
        if step.simulate is not None:
            break
        if step.on == "reply":
            steps.append((step.user, [*step.assert_, *(step.check or [])]))
    for message, checks in steps:  # a scenario's reply checks: on the last reply (its judge needs a model)
        if message is not None:
            content = message
            history.append({"role": "user", "content": message})
            reply = respond(history)
            text, tools = reply["text"], [call["name"] for call in reply["tool_calls"]]
            history.append({"role": "assistant", "content": text})
        results.extend((content, check, evaluate(check, text, tools)) for check in checks)
    return results


@pytest.mark.parametrize("case", CASES, ids=[f"{c.suite}/{c.name}" for c in CASES])
def test_example_case_matches_the_agent(case: Case) -> None:
    results = run_case(case)
    failed = [(message, check.display_name()) for message, check, passed in results if passed is False]
    if case.name.startswith("deliberate-failure"):  # examples/suites' and examples/pytest's
        assert failed, "the deliberate failure should fail"
    else:
        assert not failed, f"example checks that the demo agent does not pass: {failed}"


def test_examples_cover_every_check_type_and_target() -> None:
    types = {check.type for case in CASES for turn in case.turns for check in turn.assert_}
    assert {t.removeprefix("not-") for t in types} == KNOWN
    assert {t for t in types if t.startswith("not-")}, "no negated checks"
    assert all(t.removeprefix("not-") in KNOWN for t in types)
    kinds = {suite.target.type if suite.target else None for suite in SUITES}
    assert kinds == {None, "openai", "http", "lobu", "python", "embabel"}
    assert any(case.rubric is not None for case in CASES)
    assert any(check.weight != 1 for case in CASES for turn in case.turns for check in turn.assert_)
    assert [case.name for case in CASES].count("deliberate-failure") == 1
    assert all(1 <= case.trials <= 3 for case in CASES)


def test_lobu_format_file_uses_only_lobu_features() -> None:
    (suite,) = [s for s in SUITES if s.target is None and s.path.suffix == ".yaml"]  # not the watsonx datasets
    document = YAML(typ="safe").load(suite.path.read_text(encoding="utf-8"))
    lobu_keys = {"version", "name", "description", "trials", "timeout", "tags", "rubric", "scoring", "turns"}
    assert set(document) <= lobu_keys
    assert set(document["scoring"]) == {"pass_threshold"}
    types = {check.type for case in suite.cases for turn in case.turns for check in turn.assert_}
    assert types <= {"contains", "regex", "llm-rubric"}


def test_every_example_file_says_what_it_shows() -> None:
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(f"# {path.name}:"), path
