"""Errors Proctor raises.

Every error a user can cause derives from `ProctorError`; the CLI prints these without a traceback and
exits with the error's `exit_code`. Anything else is a bug and keeps its traceback.

```
* ProctorError                 (exit 2 unless stated)
  + SuiteError                 a suite file does not load or validate; carries every `SuiteIssue`
  + ConfigError                a bad option, environment variable or target specification
  + TargetError                the agent under test could not be reached or answered badly
    - TargetTimeout            no reply within the per-turn timeout
    - TargetUnreachable        connection refused, DNS failure, reset
    - TargetHTTPError          the agent answered with a non-success HTTP status
    - TargetProtocolError      the agent answered, but not in the shape the target expects
  + ModelError                 a model Proctor uses (judge, simulated user) failed     (exit 3)
    - ModelUnavailable         the provider's SDK is not installed (names the extra)   (exit 2)
    - ModelTimeout             no reply within the call's timeout
    - ModelHTTPError           the provider answered with a non-success HTTP status; carries `status`
    - ModelOutputError         the output is not valid for the requested type, even after the one
                               repair round; carries every `raw_outputs`
    - BudgetExceeded           the spending limit was reached, so no new model call starts
```

A `TargetError` during a run never aborts the run: it becomes the trial's `error` status with the
error's message as the reason. A `ModelError` in a judge makes that check `error`, never a score.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BudgetExceeded",
    "ConfigError",
    "ModelError",
    "ModelHTTPError",
    "ModelOutputError",
    "ModelTimeout",
    "ModelUnavailable",
    "ProctorError",
    "SuiteError",
    "SuiteIssue",
    "TargetError",
    "TargetHTTPError",
    "TargetProtocolError",
    "TargetTimeout",
    "TargetUnreachable",
]


class ProctorError(Exception):
    """Base class of every error a user can cause; printed without a traceback."""

    exit_code: int = 2
    """The process exit code the CLI uses for this error."""


@dataclass(frozen=True, slots=True)
class SuiteIssue:
    """One problem found in a suite file, with where it is."""

    file: str
    """Path of the file, as given by the user."""
    line: int | None
    """1-based line number, when known."""
    column: int | None
    """1-based column number, when known."""
    field: str
    """Dotted field path, e.g. `turns[0].assert[1].type`; empty for the whole file."""
    message: str
    """What was expected and what was found."""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class SuiteError(ProctorError):
    """One or more suite files do not load; `issues` lists every problem found."""

    def __init__(self, issues: list[SuiteIssue]) -> None:
        self.issues = issues
        count = len(issues)
        lines = "\n".join(f"  {issue}" for issue in issues)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in suite files:\n{lines}")


class ConfigError(ProctorError):
    """A bad option, environment variable or target specification."""


class TargetError(ProctorError):
    """The agent under test could not be reached or answered badly."""

    exit_code = 3
    retryable: bool = False
    """Whether sending the same message again may succeed (connection errors, 5xx)."""


class TargetTimeout(TargetError):
    """The agent did not reply within the per-turn timeout."""


class TargetUnreachable(TargetError):
    """The agent's address refused or dropped the connection."""

    retryable = True


class TargetHTTPError(TargetError):
    """The agent answered with a non-success HTTP status."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = status_code >= 500 or status_code == 429


class TargetProtocolError(TargetError):
    """The agent answered, but the reply is not in the shape the target expects."""


class ModelError(ProctorError):
    """A model Proctor itself uses (judge, simulated user, matcher) failed or answered unusably."""

    exit_code = 3
    retryable: bool = False
    """Whether the same request may succeed if sent again (connection errors, timeouts, 429, 5xx)."""


class ModelUnavailable(ModelError):
    """The provider's SDK is not installed; the message names the extra to install."""

    exit_code = 2


class ModelTimeout(ModelError):
    """The model did not answer within the call's timeout."""

    retryable = True


class ModelHTTPError(ModelError):
    """The provider answered with a non-success HTTP status."""

    def __init__(self, message: str, status: int, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status code."""
        self.retry_after = retry_after
        """Seconds the provider asked to wait (its `Retry-After` header), when given."""
        self.retryable = status in (408, 409, 429) or status >= 500

    @property
    def status_code(self) -> int:
        """The HTTP status code (the name `TargetHTTPError` uses)."""
        return self.status


class ModelOutputError(ModelError):
    """The model's output could not be parsed or validated, even after the one repair round."""

    def __init__(self, message: str, raw_outputs: list[str]) -> None:
        super().__init__(message)
        self.raw_outputs = raw_outputs
        """Every raw output the model gave, in order."""


class BudgetExceeded(ModelError):
    """The spending limit was reached: no new model call is started."""

    exit_code = 3

    def __init__(self, message: str, *, limit_usd: float, spent_usd: float) -> None:
        super().__init__(message)
        self.limit_usd = limit_usd
        """The budget, in USD."""
        self.spent_usd = spent_usd
        """What had been spent when the call was refused, in USD."""
