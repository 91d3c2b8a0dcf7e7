"""`proctor schema`: print the suite file JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from proctor.cli._common import fail
from proctor.cli._help import epilog

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "schema_command"]

EPILOG = epilog(
    [
        ("Print the schema (it is JSON: no --json needed):", "proctor schema"),
        ("Save it for an editor's yaml-language-server:", "proctor schema -o .proctor/suite.schema.json"),
    ],
    [(0, "printed or written"), (2, "bad usage")],
)


def schema_command(
    output: Path | None = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Write to this file instead of stdout."
    ),
) -> None:
    """Print the JSON Schema of suite files (for editors: `# yaml-language-server: $schema=...`)."""
    from proctor.checks import suite_json_schema

    text = json.dumps(suite_json_schema(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}")
        typer.echo(f"wrote {output}", err=True)
