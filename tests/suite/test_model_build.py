"""The suite model's one-time build: deferred models, no pydantic plugin scan, the environment restored."""

from __future__ import annotations

import os

import pytest

from proctor.suite import _model
from proctor.suite._model import SuiteFileSpec, suite_file_spec


def test_the_suite_model_validates_once_built() -> None:
    spec = suite_file_spec()
    assert spec is SuiteFileSpec
    assert SuiteFileSpec.__pydantic_complete__
    suite = spec.model_validate(
        {"name": "one", "turns": [{"content": "hi", "assert": [{"type": "contains", "value": "x"}]}]}
    )
    assert suite.turns is not None and suite.turns[0].content == "hi"


def test_the_plugin_scan_is_off_only_while_building(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    with _model._no_plugin_scan():
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "1"
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ


def test_a_users_plugin_setting_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "logfire-plugin")
    with _model._no_plugin_scan():
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "1"
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "logfire-plugin"


def test_the_setting_is_restored_when_the_build_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    with pytest.raises(RuntimeError), _model._no_plugin_scan():
        raise RuntimeError("build failed")
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ


def test_nested_models_are_built_only_when_used_alone() -> None:
    from proctor.suite._model import JudgeSpec

    suite_file_spec()
    # JudgeSpec's schema lives inside the suite model's validator; its own builds at its first use
    spec = JudgeSpec.model_validate({"model": "openai/gpt-4o-mini", "concurrency": 2})
    assert JudgeSpec.__pydantic_complete__
    assert spec.model_dump()["concurrency"] == 2
    with pytest.raises(ValueError, match="concurrency"):
        JudgeSpec.model_validate({"model": "openai/gpt-4o-mini", "concurrency": 0})
