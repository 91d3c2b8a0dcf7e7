"""Helpers shared by commands: `.env` loading, user-error printing, suite loading."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

import typer

from proctor._redact import redact
from proctor.errors import ProctorError

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["K_HELP", "fail", "guard", "load_dotenv_upwards", "load_suites_or_exit"]

T = TypeVar("T")

K_HELP = (
    "k of pass@k (at least one of k trials passes) and pass^k (all k pass), estimated without bias from "
    "each case's n scored trials (default k = n; a case with fewer than k scored trials shows '-')."
)


def load_dotenv_upwards() -> None:
    """Read the nearest `.env` from the current directory upwards; the environment wins over it."""
    from dotenv import find_dotenv, load_dotenv

    path = find_dotenv(usecwd=True)
    if path:
        load_dotenv(path, override=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a user error (no traceback, URLs' passwords and keys masked) to stderr and exit."""
    typer.echo(f"error: {redact(message)}", err=True)
    raise typer.Exit(code)


def guard(action: Callable[[], T]) -> T:
    """Run `action`, turning a `ProctorError` into a clean message and its exit code."""
    try:
        return action()
    except ProctorError as exc:
        fail(str(exc), exc.exit_code)


def load_suites_or_exit(
    paths: Sequence[Path],
    *,
    trusted: bool = False,
    target_from_command_line: bool = False,
    simulate: bool | None = None,
) -> list[object]:
    """Load suites with check validation and the trust policy; exit 2 with every problem on a bad file.

    Args:
        paths: Suite files and directories (default: the current directory).
        trusted: `--trust`: the suites may name code to run (python targets, hooks, plugin checks).
        target_from_command_line: `--target` replaces the suites' targets (their code never runs).
        simulate: `--simulate` (play watsonx datasets' stories with a simulated user); `None` when not given.
    """
    from proctor.checks import registry
    from proctor.suite import Trust, load_suites

    trust = Trust(trusted=trusted, target_from_command_line=target_from_command_line)
    return list(guard(lambda: load_suites(paths or [Path(".")], registry, trust=trust, simulate=simulate)))


def is_terminal() -> bool:
    """Whether stdout is an interactive terminal."""
    return sys.stdout.isatty()
