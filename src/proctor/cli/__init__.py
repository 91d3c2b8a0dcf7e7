"""The `proctor` command line. One module per command; nothing imports this package."""

from __future__ import annotations

import sys

import typer

from proctor import __version__
from proctor._redact import install_log_redaction
from proctor.cli import (
    _calibrate,
    _compare,
    _consume,
    _list,
    _produce,
    _report,
    _rescore,
    _run,
    _runs,
    _schema,
    _score,
    _serve,
    _view,
)
from proctor.cli._common import load_dotenv_upwards

__all__ = ["app", "main"]

install_log_redaction()  # httpx logs request URLs, errors quote them: no password or key in any log line

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
app.command("runs")(_runs.runs_command)
app.command("report")(_report.report_command)
app.command("compare")(_compare.compare_command)
app.command("rescore")(_rescore.rescore_command)
app.command("serve")(_serve.serve_command)
app.command("consume")(_consume.consume_command)
app.command("produce")(_produce.produce_command)
app.command("calibrate")(_calibrate.calibrate_command)
app.command("score")(_score.score_command)
app.command("view")(_view.view_command)


def main() -> None:
    """Entry point of the `proctor` script: reads `.env` (cwd upwards), then runs the command."""
    load_dotenv_upwards()
    sys.exit(app(standalone_mode=True))
