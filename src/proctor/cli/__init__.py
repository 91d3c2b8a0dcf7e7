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
    _init,
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


app.command("run", epilog=_run.EPILOG)(_run.run_command)
app.command("list", epilog=_list.EPILOG)(_list.list_command)
app.command("schema", epilog=_schema.EPILOG)(_schema.schema_command)
app.command("runs", epilog=_runs.EPILOG)(_runs.runs_command)
app.command("report", epilog=_report.EPILOG)(_report.report_command)
app.command("compare", epilog=_compare.EPILOG)(_compare.compare_command)
app.command("rescore", epilog=_rescore.EPILOG)(_rescore.rescore_command)
app.command("serve", epilog=_serve.EPILOG)(_serve.serve_command)
app.command("consume", epilog=_consume.EPILOG)(_consume.consume_command)
app.command("produce", epilog=_produce.EPILOG)(_produce.produce_command)
app.command("calibrate", epilog=_calibrate.EPILOG)(_calibrate.calibrate_command)
app.command("score", epilog=_score.EPILOG)(_score.score_command)
app.command("init", epilog=_init.EPILOG)(_init.init_command)
app.command("view", epilog=_view.EPILOG)(_view.view_command)


def main() -> None:
    """Entry point of the `proctor` script: reads `.env` (cwd upwards), then runs the command."""
    load_dotenv_upwards()
    sys.exit(app(standalone_mode=True))
