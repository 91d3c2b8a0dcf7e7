"""The `proctor` command line. One module per command; nothing imports this package.

`main` builds the application with only the command the command line names (`proctor run ...` imports
and declares `run` alone) and answers `proctor --version` before importing Typer, and `proctor --help`
(`-h`, no arguments) too where `proctor.cli._listing` reproduces Typer's rendering. `app`, every command
registered, is built on first access (`from proctor.cli import app`), as tests need.
"""

from __future__ import annotations

import gc
import sys

from proctor import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (and re): `--version` and `--help` need neither
if TYPE_CHECKING:
    from typing import Any

    import typer

__all__ = ["app", "main", "script"]

_gc_paused = False
_LISTING: tuple[list[str], ...] = ([], ["--help"], ["-h"])
"""The command lines `proctor --help` answers from `proctor.cli._listing`, without Typer."""


def main() -> None:
    """Entry point of the `proctor` script: reads `.env` (cwd upwards), then runs the command."""
    arguments = sys.argv[1:]
    if arguments == ["--version"]:  # what Typer's eager `--version` prints, without loading Typer
        sys.stdout.write(f"proctor {__version__}\n")
        sys.exit(0)
    if arguments in _LISTING:
        _print_listing(no_arguments=not arguments)  # exits, unless only Typer can print it here
    _pause_gc()
    try:
        # must stay fast: Typer and the command modules load only once the command line asks for them
        from proctor._redact import install_log_redaction
        from proctor.cli._app import COMMANDS, build_app
        from proctor.cli._dotenv import load_dotenv_upwards

        install_log_redaction()  # httpx logs request URLs, errors quote them: no password or key in any log line
        load_dotenv_upwards()
        if not arguments or "--help" in arguments or "-h" in arguments:
            from proctor.cli._render import import_help_renderer

            import_help_renderer()
        named = arguments[0] if arguments and arguments[0] in COMMANDS else None
        # `proctor --help` lists the commands: their help, not their options, is all it needs to build
        listing = arguments in _LISTING
        application = build_app([named] if named is not None else COMMANDS, listing=listing)
        sys.exit(application(standalone_mode=True))
    finally:
        resume_gc()  # a usage error or `--help` ends before any command starts


def script() -> None:
    """The `proctor` script and `python -m proctor`: `main`, then the process ends without a teardown.

    `proctor.cli._exit.end_process` runs the `atexit` handlers and flushes, but does not free the objects a
    command leaves (a tenth of a 5,000-case run's time). An exception other than `SystemExit` ends the
    process the normal way, with its traceback. Every command but `--version` and the listing of commands
    compiles its dataclasses' methods through `proctor._codecache` (a quarter of an empty run's instructions).
    """
    if sys.argv[1:] != ["--version"] and sys.argv[1:] not in _LISTING:
        from proctor._codecache import install_code_cache  # must stay fast: neither needs dataclasses nor typing

        install_code_cache()
    try:
        main()
    except SystemExit as exc:
        code: object = exc.code
    else:
        code = None
    from proctor.cli._exit import end_process  # must stay fast: `--version` and `--help` load no more than needed

    end_process(code)


def _print_listing(*, no_arguments: bool) -> None:
    """`proctor --help`, `-h` or no arguments: print the list of commands as Typer would, without Typer, and exit.

    Returns only where `proctor.cli._listing` does not reproduce Typer's rendering (a narrow or dumb
    terminal, ...): Typer prints the listing then. No log redaction is installed: the listing logs nothing.
    """
    # must stay fast: neither Typer nor rich loads here (nor pathlib or logging, unless there is a .env)
    from proctor.cli._dotenv import load_dotenv_upwards
    from proctor.cli._listing import print_listing

    load_dotenv_upwards()  # its variables (COLUMNS, NO_COLOR, ...) shape the listing as they shape Typer's
    code = print_listing(no_arguments=no_arguments)
    if code is not None:
        sys.exit(code)


def _pause_gc() -> None:
    """Turn cyclic garbage collection off until a command starts (`resume_gc`; `run`: once its suites are loaded).

    Start-up (Typer, pydantic, the command's modules) builds long-lived objects and no garbage cycles:
    the collections it triggers found nothing and cost ~2 % of a one-case `proctor run`.
    """
    global _gc_paused
    if gc.isenabled():
        gc.disable()
        _gc_paused = True


def resume_gc() -> None:
    """Turn garbage collection back on if `main` turned it off (a command calls it as it starts)."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.enable()


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
