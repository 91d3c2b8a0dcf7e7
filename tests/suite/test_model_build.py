"""The suite model's one-time build: the nested models are deferred, built inside the whole file's validator."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from pydantic import BaseModel, HttpUrl

from proctor.suite._defaults import new_list
from proctor.suite._model import SuiteFileSpec, TurnSpec, suite_file_spec
from proctor.suite._targets import EmbabelTargetSpec


def test_the_suite_model_validates_once_built() -> None:
    spec = suite_file_spec()
    assert spec is SuiteFileSpec
    assert SuiteFileSpec.__pydantic_complete__
    suite = spec.model_validate(
        {"name": "one", "turns": [{"content": "hi", "assert": [{"type": "contains", "value": "x"}]}]}
    )
    assert suite.turns is not None and suite.turns[0].content == "hi"


def test_nested_models_are_built_only_when_used_alone() -> None:
    from proctor.suite._model import JudgeSpec

    suite_file_spec()
    # JudgeSpec's schema lives inside the suite model's validator; its own builds at its first use
    spec = JudgeSpec.model_validate({"model": "openai/gpt-4o-mini", "concurrency": 2})
    assert JudgeSpec.__pydantic_complete__
    assert spec.model_dump()["concurrency"] == 2
    with pytest.raises(ValueError, match="concurrency"):
        JudgeSpec.model_validate({"model": "openai/gpt-4o-mini", "concurrency": 0})


def test_loading_builds_the_whole_files_validator_not_each_models() -> None:
    # a fresh interpreter: other tests may have validated the nested models on their own
    code = (
        "from pathlib import Path; import sys, tempfile\n"
        "from proctor.suite import load_suite_file\n"
        "from proctor.suite._model import CaseSpec, SuiteFileSpec, TurnSpec\n"
        "d = Path(tempfile.mkdtemp()); f = d / 's.yaml'\n"
        "f.write_text('name: s\\ncases:\\n  - name: a\\n    turns: [{content: hi}]\\n')\n"
        "assert load_suite_file(f).cases[0].name == 'a'\n"
        "print(SuiteFileSpec.__pydantic_complete__, CaseSpec.__pydantic_complete__, TurnSpec.__pydantic_complete__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "False"]


def _suite_models() -> list[type[BaseModel]]:
    """Every pydantic model of the suite package (its modules are imported by `proctor.suite` and watsonx's)."""
    importlib.import_module("proctor.suite.formats.watsonx")
    found, stack = [], [BaseModel]
    while stack:
        for model in stack.pop().__subclasses__():
            stack.append(model)
            if model.__module__.startswith("proctor.suite."):
                found.append(model)
    assert len(found) > 40
    return found


def test_no_list_field_has_the_builtin_list_as_its_factory() -> None:
    # pydantic reads each factory's signature at the build, and a builtin's is parsed with `tokenize`
    builtin = [
        f"{model.__name__}.{name}"
        for model in _suite_models()
        for name, field in model.model_fields.items()
        if field.default_factory is list
    ]
    assert builtin == []


def test_list_fields_default_to_a_new_empty_list_each() -> None:
    first, second = TurnSpec(content="a"), TurnSpec(content="b")
    assert first.assert_ == [] and second.assert_ == [] and first.assert_ is not second.assert_
    assert new_list() == [] and new_list() is not new_list()


def test_the_embabel_target_defaults_to_embabels_url_validated() -> None:
    spec = EmbabelTargetSpec()
    assert isinstance(spec.base_url, HttpUrl) and spec.base_url == HttpUrl("http://localhost:8081")
    assert str(spec.base_url) == "http://localhost:8081/"
    assert EmbabelTargetSpec(base_url="http://agent:9000").base_url == HttpUrl("http://agent:9000/")


def test_importing_the_suite_builds_no_validator() -> None:
    # a fresh interpreter: the first validator built runs pydantic's plugin scan (every installed distribution)
    code = (
        "import pydantic.networks as networks, proctor.suite\n"
        "from proctor.suite._model import _NO_OPTIONS, AssertionOptions\n"
        "print(networks._build_type_adapter.cache_info().currsize, AssertionOptions.__pydantic_complete__)\n"
        "assert _NO_OPTIONS == AssertionOptions() and _NO_OPTIONS.model_fields_set == set()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False"]
