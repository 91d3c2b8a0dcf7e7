"""The suite model: assertions' shared default options, and the check types a validation collects."""

from __future__ import annotations

import pydantic
import pytest

from proctor.checks import registry
from proctor.suite import AssertionOptions, AssertionSpec
from proctor.suite._model import TYPES_SEEN, SuiteFileSpec
from proctor.suite._policy import assertion_types

DOCUMENT = {
    "name": "s",
    "assert": [{"type": "tool-called", "value": "a"}],
    "cases": [
        {"name": "one", "turns": [{"content": "hi", "assert": [{"type": "contains", "value": "x"}]}]},
        {
            "name": "two",
            "assertions": [{"expression": "true"}],
            "script": [
                {"user": "hi", "assert": [{"type": "not-regex", "value": "x"}]},
                {"check": [{"type": "latency", "value": 100}]},
            ],
        },
    ],
}


def test_an_assertion_without_options_has_the_default_ones_frozen() -> None:
    first, second = AssertionSpec(type="contains", value="a"), AssertionSpec(type="contains", value="b")
    assert first.options == second.options == AssertionOptions()
    assert first.options.case_insensitive is None and first.options.threshold is None
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        first.options.threshold = 0.5  # type: ignore[misc]
    given = AssertionSpec(type="contains", value="a", options={"case_insensitive": True})  # type: ignore[arg-type]
    assert given.options.case_insensitive is True and first.options.case_insensitive is None
    assert "options" not in first.model_fields_set and "options" in given.model_fields_set
    assert first.model_dump()["options"] == {"case_insensitive": None, "threshold": None}


def test_validation_collects_every_assertion_type_the_file_names() -> None:
    seen: set[str] = set()
    spec = SuiteFileSpec.model_validate(DOCUMENT, context={"checks": registry, TYPES_SEEN: seen})
    assert seen == assertion_types(spec) == {"tool-called", "contains", "expression", "not-regex", "latency"}
    single = SuiteFileSpec.model_validate(
        {"name": "s", "turns": [{"content": "hi", "assert": [{"type": "equals", "value": "x"}]}]}
    )
    assert assertion_types(single) == {"equals"}
