"""The `proctor` command line. One module per command; nothing imports this package."""

from __future__ import annotations

import sys

import typer

from proctor import __version__
from proctor.cli import _list, _run, _schema

__all__ = ["app", "main"]

app = typer.Typer(
    name="proctor",
    help="Evaluate LLM agents by their behaviour: hold real conversations, check what they said and did.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"proctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Evaluate LLM agents by their behaviour."""


app.command("run")(_run.run_command)
app.command("list")(_list.list_command)
app.command("schema")(_schema.schema_command)


def main() -> None:
    """Entry point of the `proctor` script: reads `.env` (cwd upwards), then runs the command."""
    from proctor.cli._common import load_dotenv_upwards

    load_dotenv_upwards()
    sys.exit(app(standalone_mode=True))
