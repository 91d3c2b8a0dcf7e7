"""Proctor: evaluate LLM agents by their behaviour.

Proctor holds real conversations with a live agent and checks what it said and what it did.

Example:
    ```python
    import proctor

    suites = proctor.load_suites(["evals/"], proctor.checks.registry)
    outcome = proctor.run_sync(suites, proctor.RunOptions(target={"type": "python", "callable": "app:agent"}))
    summary = outcome.result.summary  # typed: computed once, the same figures the results JSON holds
    print(summary.passed, summary.failed, summary.pass_rate)
    ```
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (and re): `proctor --version` needs neither
if TYPE_CHECKING:  # the real imports, for type checkers; at run time names load on first use
    from typing import Any

    from proctor import checks, run
    from proctor.checks import CheckContext, CheckResult, CheckType, Outcome, register_check
    from proctor.errors import (
        BudgetExceeded,
        ConfigError,
        ModelError,
        ModelOutputError,
        ProctorError,
        SuiteError,
        TargetError,
        TargetHTTPError,
        TargetProtocolError,
        TargetTimeout,
        TargetUnreachable,
    )
    from proctor.recorded import AgentData, AgentDataset, AgentScorers
    from proctor.results import CaseResult, RunResult, TrialResult
    from proctor.run import RunObserver, RunOptions, RunOutcome, filter_cases, run_sync
    from proctor.suite import Case, Suite, load_suite_file, load_suites
    from proctor.targets import Session, SessionContext, Target, build_target, register_target
    from proctor.transcript import AgentReply, Message, ToolCall, Usage

__version__ = "0.1.0"

# Importing `proctor` (or `proctor.cli` for `proctor --help`) must stay fast: public names are
# resolved on first access (PEP 562), so HTTP clients, templates and schemas load only when used.
_LAZY = {
    "BudgetExceeded": "proctor.errors",
    "ModelError": "proctor.errors",
    "ModelOutputError": "proctor.errors",
    "AgentReply": "proctor.transcript",
    "AgentData": "proctor.recorded",
    "AgentDataset": "proctor.recorded",
    "AgentScorers": "proctor.recorded",
    "Case": "proctor.suite",
    "CaseResult": "proctor.results",
    "CheckContext": "proctor.checks",
    "CheckResult": "proctor.checks",
    "CheckType": "proctor.checks",
    "ConfigError": "proctor.errors",
    "Message": "proctor.transcript",
    "Outcome": "proctor.checks",
    "ProctorError": "proctor.errors",
    "RunObserver": "proctor.run",
    "RunOptions": "proctor.run",
    "RunOutcome": "proctor.run",
    "RunResult": "proctor.results",
    "Session": "proctor.targets",
    "SessionContext": "proctor.targets",
    "Suite": "proctor.suite",
    "SuiteError": "proctor.errors",
    "Target": "proctor.targets",
    "TargetError": "proctor.errors",
    "TargetHTTPError": "proctor.errors",
    "TargetProtocolError": "proctor.errors",
    "TargetTimeout": "proctor.errors",
    "TargetUnreachable": "proctor.errors",
    "ToolCall": "proctor.transcript",
    "TrialResult": "proctor.results",
    "Usage": "proctor.transcript",
    "build_target": "proctor.targets",
    "checks": "proctor.checks",
    "filter_cases": "proctor.run",
    "load_suite_file": "proctor.suite",
    "load_suites": "proctor.suite",
    "register_check": "proctor.checks",
    "register_target": "proctor.targets",
    "run": "proctor.run",
    "run_sync": "proctor.run",
}


_PACKAGES = frozenset({"checks", "run"})
"""Names that are subpackages (the package itself is the value)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'proctor' has no attribute {name!r}")
    value = importlib.import_module(module) if name in _PACKAGES else getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AgentData",
    "AgentDataset",
    "AgentReply",
    "AgentScorers",
    "BudgetExceeded",
    "Case",
    "CaseResult",
    "CheckContext",
    "CheckResult",
    "CheckType",
    "ConfigError",
    "Message",
    "ModelError",
    "ModelOutputError",
    "Outcome",
    "ProctorError",
    "RunObserver",
    "RunOptions",
    "RunOutcome",
    "RunResult",
    "Session",
    "SessionContext",
    "Suite",
    "SuiteError",
    "Target",
    "TargetError",
    "TargetHTTPError",
    "TargetProtocolError",
    "TargetTimeout",
    "TargetUnreachable",
    "ToolCall",
    "TrialResult",
    "Usage",
    "__version__",
    "build_target",
    "checks",
    "filter_cases",
    "load_suite_file",
    "load_suites",
    "register_check",
    "register_target",
    "run",
    "run_sync",
]
