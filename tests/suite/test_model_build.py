"""The suite model's one-time build: the nested models are deferred, built inside the whole file's validator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from proctor.suite._model import SuiteFileSpec, suite_file_spec


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
