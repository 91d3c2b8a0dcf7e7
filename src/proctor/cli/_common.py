"""Helpers shared by commands: `.env` loading, user-error printing, suite loading."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer

from proctor._redact import redact
from proctor.errors import ProctorError

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = [
    "K_HELP",
    "cannot_write",
    "fail",
    "from_project",
    "guard",
    "load_suites_or_exit",
    "plural",
    "project_or_exit",
]

T = TypeVar("T")

K_HELP = (
    "k of pass@k (at least one of k trials passes) and pass^k (all k pass), estimated without bias from "
    "each case's n scored trials (default k = n; a case with fewer than k scored trials shows '-')."
)


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


def cannot_write(directory: Path) -> str | None:
    """Why files cannot be written in `directory` (made first, with its missing parents, as a writer does).

    Tried, not guessed from permissions (which root ignores, and `/proc` does not show): a temporary file
    in `directory`, or a temporary folder in the nearest folder above it that exists; removed at once.

    Returns:
        The reason (naming the place and the operating system's error), or `None` when files can be written.
    """
    import os
    import tempfile

    if directory.is_dir():
        try:
            with tempfile.NamedTemporaryFile(dir=directory, prefix=".proctor-write-check-"):
                return None
        except OSError as exc:
            return f"cannot create a file in {directory} ({exc.strerror or exc})"
    if directory.exists():
        return f"{directory} is not a directory"
    above = directory.absolute().parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"cannot create {directory}: {above} is not a directory"
    try:
        os.rmdir(tempfile.mkdtemp(dir=above, prefix=".proctor-write-check-"))
    except OSError as exc:
        return f"cannot create {directory}: no directory can be made in {above} ({exc.strerror or exc})"
    return None


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 case`, `2 cases` (`many`: the plural when it is not `word + "s"`)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def project_or_exit(start: Path | None = None) -> Any:
    """The project (`proctor.suite.ProjectInfo`) of a path, default the working directory.

    Exits 2 when its `proctor.yaml` is invalid (file, line, field).
    """
    from proctor.suite import load_project

    return guard(lambda: load_project(start))


def from_project(context: typer.Context, name: str, value: T, configured: T | None) -> T:
    """An option's value: the command line's (or its environment variable's), else `proctor.yaml`'s.

    Args:
        context: The command's context (it knows where each value came from).
        name: The command's parameter name (`concurrency`).
        value: The value Typer gave it.
        configured: What the project config says (`None`: nothing).
    """
    if configured is None:
        return value
    source = context.get_parameter_source(name)
    given = source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
    return value if given else configured


def load_suites_or_exit(
    paths: Sequence[Path],
    *,
    trusted: bool = False,
    target_from_command_line: bool = False,
    simulate: bool | None = None,
    verbose: bool = False,
) -> list[object]:
    """Load suites with check validation and the trust policy; exit 2 with every problem on a bad file.

    Args:
        paths: Suite files and directories (default: the `suites:` of the project's `proctor.yaml`, else
            the current directory).
        trusted: `--trust`: the suites may name code to run (python targets, hooks, plugin checks).
        target_from_command_line: `--target` replaces the suites' targets (their code never runs).
        simulate: `--simulate` (play watsonx datasets' stories with a simulated user); `None` when not given.
        verbose: List on stderr the files a directory search passed over (not suites).
    """
    from proctor.checks import registry
    from proctor.suite import Trust, load_suites

    def skipped(path: Path) -> None:
        if verbose:
            typer.echo(f"skipped {path}: not a suite (no 'cases:' or 'turns:' at the top level)", err=True)

    if not paths:
        project = project_or_exit()
        paths = _suite_files(project.suite_paths(), skipped) if project.config.suites else [Path(".")]
        if not paths:
            fail(f"{project.config_file}: suites: {project.config.suites} match no suite file under {project.root}")
    trust = Trust(trusted=trusted, target_from_command_line=target_from_command_line)

    return list(guard(lambda: load_suites(paths, registry, trust=trust, simulate=simulate, on_skip=skipped)))


def _suite_files(paths: list[Path], skipped: Callable[[Path], None]) -> list[Path]:
    """The files `suites:` globs matched that are suites; the others are passed over, like a directory search's."""
    from proctor.suite import is_suite_text

    kept = []
    for path in paths:
        yaml_file = path.suffix in (".yaml", ".yml") and path.is_file()
        if yaml_file and not is_suite_text(path.read_text(encoding="utf-8", errors="replace")):
            skipped(path)
            continue
        kept.append(path)
    return kept


def is_terminal() -> bool:
    """Whether stdout is an interactive terminal."""
    return sys.stdout.isatty()
