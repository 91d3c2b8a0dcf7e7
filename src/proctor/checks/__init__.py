"""Checks: every check type, a registry by name, and the one `CheckResult` shape."""

from proctor.checks import _format, _geval, _judges, _text, _timing  # noqa: F401  # register built-ins
from proctor.checks._registry import (
    NEGATION_PREFIX,
    CheckContext,
    CheckFunction,
    CheckRegistry,
    CheckType,
    Outcome,
    register_check,
    registry,
)
from proctor.checks._result import CheckResult, CheckStatus
from proctor.checks._run import run_check
from proctor.checks._schema import suite_json_schema

__all__ = [
    "NEGATION_PREFIX",
    "CheckContext",
    "CheckFunction",
    "CheckRegistry",
    "CheckResult",
    "CheckStatus",
    "CheckType",
    "Outcome",
    "register_check",
    "registry",
    "run_check",
    "suite_json_schema",
]
