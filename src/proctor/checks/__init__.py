"""Checks: every check type, a registry by name, the one `CheckResult` shape and the one check phase."""

# importing the family modules registers the built-in checks
from proctor.checks import (  # noqa: F401
    _agent_scorers,
    _expression,
    _format,
    _geval,
    _judges,
    _prechecks,
    _python,
    _state,
    _text,
    _timing,
    _tool_checks,
    _trajectory,
)
from proctor.checks._phase import Checklist, PhaseContext, check_transcript, check_transcript_now
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
from proctor.checks._run import run_check, run_check_now
from proctor.checks._schema import suite_json_schema

__all__ = [
    "NEGATION_PREFIX",
    "CheckContext",
    "CheckFunction",
    "CheckRegistry",
    "CheckResult",
    "CheckStatus",
    "CheckType",
    "Checklist",
    "Outcome",
    "PhaseContext",
    "check_transcript",
    "check_transcript_now",
    "register_check",
    "registry",
    "run_check",
    "run_check_now",
    "suite_json_schema",
]
