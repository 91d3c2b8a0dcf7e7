"""The canonical suite model, loading with located errors, and JSON Schema export."""

from proctor.suite._journey import ArgStrategy, JourneySpec, MatchingSpec, TextGoal, ToolCallGoal
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
from proctor.suite._state import Isolation, SetupSpec, SetupStep, StateSpec, split_statements
from proctor.suite._suite import DEFAULT_TIMEOUT, DEFAULT_TRIALS, Case, Rubric, Suite
from proctor.suite._targets import (
    HttpObjectContextSpec,
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
    "ArgStrategy",
    "AssertionOptions",
    "AssertionSpec",
    "Case",
    "CaseSpec",
    "CheckCatalog",
    "HttpObjectContextSpec",
    "HttpRequestSpec",
    "HttpSessionSpec",
    "HttpTargetSpec",
    "Isolation",
    "JourneySpec",
    "JudgeSpec",
    "LobuTargetSpec",
    "MatchingSpec",
    "OpenAITargetSpec",
    "PythonTargetSpec",
    "Rubric",
    "ScoringSpec",
    "SetupSpec",
    "SetupStep",
    "StateSpec",
    "Suite",
    "SuiteFileSpec",
    "TargetSpec",
    "TextGoal",
    "ToolCallGoal",
    "TurnSpec",
    "discover_suite_files",
    "load_suite_file",
    "load_suites",
    "parse_target_string",
    "split_statements",
]
