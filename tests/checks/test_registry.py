from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import jsonschema
import pytest

from proctor.checks import CheckContext, CheckResult, CheckType, Outcome, registry, run_check_now, suite_json_schema
from proctor.checks._registry import BUILTINS, CheckRegistry
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply


def test_names_include_negations_and_exclude_conversation_checks() -> None:
    names = registry.names()
    assert {"contains", "not-contains", "regex", "not-regex", "llm-rubric", "latency"} <= set(names)
    assert "not-llm-rubric" not in names and "rubric" not in names


def test_unknown_type_suggests_the_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown check type 'regx'; did you mean 'regex'\?"):
        registry.check_type("regx")


def test_an_exception_inside_a_check_is_an_error_result_not_a_score() -> None:
    local = CheckRegistry()

    def boom(spec: AssertionSpec, context: CheckContext) -> Outcome:
        raise KeyError("nope")

    local.register(CheckType("boom", "test", "raises", boom))
    with pytest.raises(ValueError, match="already registered"):
        local.register(CheckType("boom", "test", "raises", boom))
    with pytest.raises(ValueError, match="may not start with"):
        local.register(CheckType("not-x", "test", "x", boom))
    registry.register(CheckType("test-boom", "test", "raises", boom))
    try:
        spec = AssertionSpec(type="test-boom")
        result = run_check_now(spec, CheckContext(AgentReply("x"), 0, [], "c"))
        assert isinstance(result, CheckResult)
        assert (result.status, result.score) == ("error", None)
        assert result.reason == "check could not run: KeyError: 'nope'"
    finally:
        registry._types.pop("test-boom")


def test_suite_schema_is_valid_and_validates_examples() -> None:
    schema = suite_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"name": "x", "turns": [{"content": "hi", "assert": [{"type": "latency", "value": 100}]}]}
    assert not list(validator.iter_errors(good))
    bad_type = {"name": "x", "turns": [{"content": "hi", "assert": [{"type": "containz", "value": "a"}]}]}
    assert list(validator.iter_errors(bad_type))
    bad_value = {"name": "x", "turns": [{"content": "hi", "assert": [{"type": "latency", "value": "fast"}]}]}
    assert list(validator.iter_errors(bad_value))
    assert json.dumps(schema)  # serialisable


def test_the_builtins_table_names_each_check_by_the_module_that_registers_it() -> None:
    registered = {check.name: check.function.__module__ for check in registry if check.family != "test"}
    builtins = {name: module for name, module in registered.items() if registry.plugin_of(name) is None}
    assert builtins == dict(BUILTINS)


def _fresh(code: str) -> str:
    """Run `code` in a new interpreter (nothing loaded yet) and return what it prints."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_a_check_module_loads_the_first_time_a_suite_names_its_type() -> None:
    out = _fresh(
        "import sys\n"
        "from proctor.checks import registry\n"
        "families = set(registry._pending.values())\n"
        "loaded = lambda: sorted(m for m in sys.modules if m in families)\n"
        "before = loaded()\n"
        "registry.check_type('not-contains')\n"
        "print(before, loaded(), registry.resolve('contains')[0].family)"
    )
    assert out == "[] ['proctor.checks._text'] text"


def test_listing_the_types_loads_every_builtin_and_the_schema_has_them_all() -> None:
    out = _fresh(
        "from proctor.checks import registry, suite_json_schema\n"
        "names = registry.names()\n"
        "schema = suite_json_schema()\n"
        "print(len(registry._pending), 'not-tool-called' in names, 'rubric' in names, len(schema['$defs']) > 0)"
    )
    assert out == "0 True False True"


def test_a_builtin_name_stays_taken_before_its_module_loads() -> None:
    out = _fresh(
        "from proctor.checks import CheckType, Outcome, registry\n"
        "def mine(spec, context):\n"
        "    return Outcome(True, 'x', 'y')\n"
        "try:\n"
        "    registry.register(CheckType('regex', 'custom', 'Mine.', mine))\n"
        "except ValueError as exc:\n"
        "    print(exc, registry.resolve('regex')[0].family)"
    )
    assert out == "check type 'regex' is already registered text"


def test_a_registry_of_its_own_loads_its_modules_lazily_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazy_family_probe.py").write_text(
        "from proctor.checks import CheckType, Outcome\n"
        "from tests_lazy_registry import local\n"
        "def _shout(spec, context):\n"
        "    return Outcome(context.reply.text.isupper(), 'to shout', context.reply.text)\n"
        "local.register(CheckType('shouts', 'probe', 'Reply is upper case.', _shout, value=None))\n"
    )
    local = CheckRegistry({"shouts": "lazy_family_probe"})
    holder = types.ModuleType("tests_lazy_registry")
    holder.local = local  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tests_lazy_registry", holder)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_family_probe", raising=False)
    assert "lazy_family_probe" not in sys.modules
    check, negated = local.resolve("not-shouts")
    assert (check.name, check.family, negated) == ("shouts", "probe", True)
    assert local.names() == ["not-shouts", "shouts"]
    with pytest.raises(ValueError, match="unknown check type 'shout'; did you mean 'shouts'"):
        local.resolve("shout")
    monkeypatch.delitem(sys.modules, "lazy_family_probe")


def test_load_time_answers_are_the_same_when_asked_again() -> None:
    """`check_type` and `check_scope` keep their answers per name: a refusal is given again, every time."""
    local = CheckRegistry()

    def ok(spec: AssertionSpec, context: CheckContext) -> Outcome:
        return Outcome(True, "x", "y")

    local.register(CheckType("turnly", "test", "one reply", ok))
    local.register(CheckType("whole", "test", "the conversation", ok, scope="conversation"))
    local.register(CheckType("set-by-field", "test", "internal", ok, internal=True))
    for _ in range(2):
        local.check_type("turnly")
        local.check_type("not-turnly")
        local.check_scope("turnly", "turn")
        local.check_scope("whole", "case")
        local.check_scope("nope", "turn")  # unknown: check_type reports it
        with pytest.raises(ValueError, match="unknown check type 'turnl'"):
            local.check_type("turnl")
        with pytest.raises(ValueError, match="is set by the case's 'set-by-field:' field"):
            local.check_type("set-by-field")
        with pytest.raises(ValueError, match="checks one reply: put it in a turn's 'assert'"):
            local.check_scope("turnly", "case")
        with pytest.raises(ValueError, match="checks the whole conversation"):
            local.check_scope("whole", "turn")
    local.register(CheckType("turnl", "test", "registered later", ok))
    local.check_type("turnl")  # a refusal is not kept: a type registered since is known


def test_values_are_validated_by_the_check_types_adapter_for_its_negation_too() -> None:
    assert registry.check_value("contains", "x") == "x"
    assert registry.check_value("not-contains-any", "a, b") == ["a", "b"]
    with pytest.raises(ValueError, match=r"bad value for check type 'not-contains': .*; found 3"):
        registry.check_value("not-contains", 3)
    with pytest.raises(ValueError, match="needs a value"):
        registry.check_value("contains", None)


def test_a_text_value_is_validated_by_any_adapter_that_is_more_than_a_bare_str() -> None:
    from typing import Annotated

    from pydantic import ConfigDict, Field, TypeAdapter

    local = CheckRegistry()

    def ok(spec: AssertionSpec, context: CheckContext) -> Outcome:
        return Outcome(True, "x", "y")

    local.register(CheckType("bare", "test", "any text", ok, value=TypeAdapter(str)))
    local.register(
        CheckType("lower", "test", "lowered", ok, value=TypeAdapter(str, config=ConfigDict(str_to_lower=True)))
    )
    local.register(CheckType("short", "test", "short", ok, value=TypeAdapter(Annotated[str, Field(max_length=3)])))
    text = "ABCD"
    assert local.check_value("bare", text) is text and local.check_value("not-bare", text) is text
    assert local.check_value("lower", text) == "abcd"
    with pytest.raises(ValueError, match="bad value for check type 'short'"):
        local.check_value("short", text)
    with pytest.raises(ValueError, match="bad value for check type 'bare'"):
        local.check_value("bare", 3)


def test_contexts_and_outcomes_are_built_as_the_frozen_dataclasses_build_them() -> None:
    import dataclasses

    reply = AgentReply(text="hi")
    context = CheckContext(reply, 0, [], "case", judge=None)
    assert (context.reply, context.turn, context.transcript, context.case) == (reply, 0, [], "case")
    assert context.rubric is None and context.object_context is None and context.state is None
    assert type(context) is CheckContext and dataclasses.replace(context, turn=1).turn == 1
    outcome = Outcome(True, "to say hi", "it did")
    assert outcome.score is None and outcome.details == {} and outcome.details is not Outcome(False, "", "").details
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.case = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.ok = False  # type: ignore[misc]
