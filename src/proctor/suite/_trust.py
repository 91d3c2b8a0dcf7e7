"""What a suite file may make Proctor do: the trust policy and the files a suite may name.

A suite file is data. Code it names (a python target's `callable`, its `object_context` and `seed`
hooks, check types that come from plugin packages) runs only when the code comes from the command line
or the project config, or when the user trusts the suite (`proctor run --trust`, or `trusted: true` in
the project's `proctor.yaml`). Files a suite names (rubrics, setup scripts, prompt templates) must lie
inside the suite's project root, be regular files and be at most `MAX_FILE_BYTES` long.

The project root is the directory of the nearest `proctor.yaml` above a suite path, else the directory
given on the command line (for a file: the file's directory).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from proctor.suite._project import PROJECT_FILE, read_project_config

__all__ = ["MAX_FILE_BYTES", "PROJECT_FILE", "FileRefError", "Project", "Trust", "find_project", "read_named_file"]

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Largest file a suite may name (a rubric, a setup script, a prompt)."""
HOW_TO_TRUST = (
    "a suite file is data: to run code it names, pass --trust (or PROCTOR_TRUST=1), set 'trusted: true' "
    f"in the project's {PROJECT_FILE}, or name the code on the command line"
)


@dataclass(frozen=True, slots=True)
class Trust:
    """How far the suites being loaded are trusted.

    Library callers that pass no `Trust` load as before (code allowed, files anywhere): they chose the
    files. The CLI always passes one.
    """

    trusted: bool = False
    """The user trusts these suites (`--trust`): code they name may run."""
    target_from_command_line: bool = False
    """`--target` replaces every suite's target: a suite's python target never runs, so it is no error."""
    root: Path | None = None
    """The project root every named file must lie in; `None`: found per path (see the module doc)."""


@dataclass(frozen=True, slots=True)
class Project:
    """A project root and whether its suites are trusted."""

    root: Path
    trusted: bool
    config: Path | None


class FileRefError(ValueError):
    """A file a suite names is outside the project, not a regular file, too large or unreadable."""


def find_project(path: Path) -> Project:
    """The project a suite path belongs to: the nearest `proctor.yaml` above it, else the path itself.

    Raises:
        SuiteError: The `proctor.yaml` found cannot be read or is invalid (located: file, line, field).
    """
    start = path.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        config = candidate / PROJECT_FILE
        if config.is_file():
            return Project(candidate, read_project_config(config).trusted, config)
    return Project(directory, False, None)


def read_named_file(value: str, base: Path, root: Path | None, what: str) -> bytes:
    """Read a file a suite names, relative to `base`, confined to `root`.

    Args:
        value: The path as written in the suite.
        base: The suite file's directory.
        root: The project root; `None` means no confinement (a library caller's choice).
        what: What the file is, for messages (`rubric`, `setup script`).

    Returns:
        The file's bytes.

    Raises:
        FileRefError: The file is outside `root`, not a regular file, larger than `MAX_FILE_BYTES` or
            cannot be read.
    """
    path = base / value
    resolved = path.resolve()
    if root is not None and not resolved.is_relative_to(root.resolve()):
        raise FileRefError(
            f"{what} {value!r} resolves to {resolved}, outside the project root {root}; files a suite names "
            f"must be inside it (or put a {PROJECT_FILE} in a directory above both)"
        )
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileRefError(f"cannot read {what} {value!r} ({resolved}): {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefError(f"{what} {value!r}: {resolved} is not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise FileRefError(f"{what} {value!r}: {resolved} is larger than {MAX_FILE_BYTES // 2**20} MiB")
    return b"".join(chunks)


def read_named_text(value: str, base: Path, root: Path | None, what: str) -> str:
    """`read_named_file` decoded as UTF-8.

    Raises:
        FileRefError: As `read_named_file`, or the file is not UTF-8.
    """
    data = read_named_file(value, base, root, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefError(f"{what} {value!r} is not UTF-8 (byte {exc.start})") from None
