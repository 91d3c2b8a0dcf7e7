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
```

A `TargetError` during a run never aborts the run: it becomes the trial's `error` status with the
error's message as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ConfigError",
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
