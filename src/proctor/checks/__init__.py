"""Checks: every check type, a registry by name, and the one `CheckResult` shape."""

# importing the family modules registers the built-in checks
from proctor.checks import (  # noqa: F401
    _agent_scorers,
    _expression,
    _format,
    _geval,
    _judges,
    _prechecks,
    _state,
    _text,
    _timing,
    _tool_checks,
    _trajectory,
)
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
