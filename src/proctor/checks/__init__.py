"""Checks: every check type, a registry by name, the one `CheckResult` shape and the one check phase.

Names load on first use (PEP 562), and the registry imports a built-in check's family module the first
time a suite names its type: a run pays only for the checks it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
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

_LAZY = {
    "Checklist": "_phase",
    "PhaseContext": "_phase",
    "check_transcript": "_phase",
    "check_transcript_now": "_phase",
    "NEGATION_PREFIX": "_registry",
    "CheckContext": "_registry",
    "CheckFunction": "_registry",
    "CheckRegistry": "_registry",
    "CheckType": "_registry",
    "Outcome": "_registry",
    "register_check": "_registry",
    "registry": "_registry",
    "CheckResult": "_result",
    "CheckStatus": "_result",
    "run_check": "_run",
    "run_check_now": "_run",
    "suite_json_schema": "_schema",
}

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

__getattr__ = _lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return list(__all__)
