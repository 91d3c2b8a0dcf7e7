"""`.env` loading in `main`, before the command line is read: no Typer, no pathlib (the listing loads neither)."""

from __future__ import annotations

import os
import stat

__all__ = ["load_dotenv_upwards"]


def load_dotenv_upwards() -> None:
    """Read the nearest `.env` from the current directory upwards; the environment wins over it.

    The search is python-dotenv's `find_dotenv(usecwd=True)` (a regular file or a FIFO named `.env`);
    python-dotenv itself loads only when there is a file to read.
    """
    path = nearest_dotenv(os.getcwd())
    if path is not None:
        from dotenv import load_dotenv

        load_dotenv(path, override=False)


def nearest_dotenv(start: str) -> str | None:
    """The first `.env` in the directory `start` (absolute) or one above it that is a regular file or a FIFO."""
    directory = start
    while True:
        candidate = os.path.join(directory, ".env")
        try:
            mode = os.stat(candidate).st_mode
        except OSError:
            mode = 0
        if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
