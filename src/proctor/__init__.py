"""Proctor: evaluate LLM agents by their behaviour.

Proctor holds real conversations with a live agent and checks what it said and what it did.

Example:
    ```python
    import proctor

    suites = proctor.load_suites(["evals/"], proctor.checks.registry)
    outcome = proctor.run_sync(suites, proctor.RunOptions(target={"type": "python", "callable": "app:agent"}))
    print(outcome.data["summary"])
    ```
"""

from proctor import checks
from proctor.checks import CheckContext, CheckResult, CheckType, Outcome, register_check
from proctor.errors import (
    ConfigError,
    ProctorError,
    SuiteError,
    TargetError,
    TargetHTTPError,
    TargetProtocolError,
    TargetTimeout,
    TargetUnreachable,
)
from proctor.results import CaseResult, RunResult, TrialResult
from proctor.runner import RunObserver, RunOptions, RunOutcome, filter_cases, run, run_sync
from proctor.suite import Case, Suite, load_suite_file, load_suites
from proctor.targets import Session, SessionContext, Target, build_target, register_target
from proctor.transcript import AgentReply, Message, ToolCall, Usage

__version__ = "0.1.0"

__all__ = [
    "AgentReply",
    "Case",
    "CaseResult",
    "CheckContext",
    "CheckResult",
    "CheckType",
    "ConfigError",
    "Message",
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
