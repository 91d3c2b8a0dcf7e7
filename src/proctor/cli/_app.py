"""The Typer application: the root options and the commands, each from its own module.

`build_app` registers the commands it is given, in `COMMANDS` order. `proctor.cli.main` builds the app
with the one command the command line names, so `proctor run` neither imports nor declares the other
thirteen; `proctor --help` (or an unknown command) builds them all, as `proctor.cli.app` does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

import typer

from proctor import __version__
from proctor.cli import resume_gc
from proctor.cli._listing import HELP, SUMMARIES, VERSION_HELP

__all__ = ["COMMANDS", "build_app"]

COMMANDS = tuple(SUMMARIES)
"""Every command, in the order `proctor --help` lists them; `proctor.cli._<name>` defines `<name>_command`
and its `EPILOG`."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"proctor {__version__}")
        raise typer.Exit()


def _root(
    context: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help=VERSION_HELP),
) -> None:
    """Evaluate LLM agents by their behaviour."""
    # runs before the command's options are read; `run` turns collection on itself, once its suites are loaded
    if context.invoked_subcommand != "run":
        resume_gc()


def _listed(command: Callable[..., Any]) -> Callable[[], None]:
    """A stand-in with `command`'s help and no options, for the list of commands `proctor --help` prints."""

    def listed() -> None:
        raise RuntimeError("a listed command only shows its help")  # `--help` ends the process first

    listed.__doc__ = command.__doc__
    return listed


def build_app(commands: Iterable[str] = COMMANDS, *, listing: bool = False) -> typer.Typer:
    """The `proctor` application with the given commands (all by default).

    Args:
        commands: Names from `COMMANDS`; each one's module is imported here.
        listing: Register each command's help only, without its options: the app can print
            `proctor --help` (the same text, built without reading ~200 option declarations) and run nothing.

    Returns:
        The app; call it to run the command line.
    """
    app = typer.Typer(
        name="proctor",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    wanted = set(commands)
    for name in COMMANDS:
        if name in wanted:
            module = importlib.import_module(f"proctor.cli._{name}")
            command = getattr(module, f"{name}_command")
            app.command(name, epilog=module.EPILOG)(_listed(command) if listing else command)
    return app
