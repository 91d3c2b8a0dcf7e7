"""`proctor schema`: print the suite file JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import typer

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["schema_command"]


def schema_command(
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
) -> None:
    """Print the JSON Schema of suite files (for editors: `# yaml-language-server: $schema=...`)."""
    from proctor.checks import suite_json_schema

    text = json.dumps(suite_json_schema(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)
