"""The canonical suite model, loading with located errors, and JSON Schema export."""

from proctor.suite._loader import discover_suite_files, load_suite_file, load_suites
from proctor.suite._model import (
    AssertionOptions,
    AssertionSpec,
    CaseSpec,
    CheckCatalog,
    JudgeSpec,
    ScoringSpec,
    SuiteFileSpec,
    TurnSpec,
)
from proctor.suite._suite import DEFAULT_TIMEOUT, DEFAULT_TRIALS, Case, Rubric, Suite
from proctor.suite._targets import (
    HttpRequestSpec,
    HttpSessionSpec,
    HttpTargetSpec,
    LobuTargetSpec,
    OpenAITargetSpec,
    PythonTargetSpec,
    TargetSpec,
    parse_target_string,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_TRIALS",
    "AssertionOptions",
    "AssertionSpec",
    "Case",
    "CaseSpec",
    "CheckCatalog",
    "HttpRequestSpec",
    "HttpSessionSpec",
    "HttpTargetSpec",
    "JudgeSpec",
    "LobuTargetSpec",
    "OpenAITargetSpec",
    "PythonTargetSpec",
    "Rubric",
    "ScoringSpec",
    "Suite",
    "SuiteFileSpec",
    "TargetSpec",
    "TurnSpec",
    "discover_suite_files",
    "load_suite_file",
    "load_suites",
    "parse_target_string",
]
