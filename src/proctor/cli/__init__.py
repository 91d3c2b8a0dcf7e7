"""The `proctor` command line. One module per command; nothing imports this package.

`main` builds the application with only the command the command line names (`proctor run ...` imports
and declares `run` alone) and answers `proctor --version` before importing Typer. `app`, every command
registered, is built on first access (`from proctor.cli import app`), as tests and `proctor --help` need.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from proctor import __version__

if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `proctor` script: reads `.env` (cwd upwards), then runs the command."""
    arguments = sys.argv[1:]
    if arguments == ["--version"]:  # what Typer's eager `--version` prints, without loading Typer
        sys.stdout.write(f"proctor {__version__}\n")
        sys.exit(0)
    # must stay fast: Typer and the command modules load only once the command line asks for them
    from proctor._redact import install_log_redaction
    from proctor.cli._app import COMMANDS, build_app
    from proctor.cli._common import load_dotenv_upwards

    install_log_redaction()  # httpx logs request URLs, errors quote them: no password or key in any log line
    load_dotenv_upwards()
    named = arguments[0] if arguments and arguments[0] in COMMANDS else None
    application = build_app([named] if named is not None else COMMANDS)
    sys.exit(application(standalone_mode=True))


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # must stay fast: importing this package (the `proctor` script does) builds no application
    from proctor._redact import install_log_redaction
    from proctor.cli._app import build_app

    install_log_redaction()
    application: typer.Typer = build_app()
    globals()["app"] = application
    return application
