"""`proctor list`: list cases (with tags and trials) or check types."""

from __future__ import annotations

from pathlib import Path

import typer

from proctor.cli._common import load_suites_or_exit

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["list_command", "print_cases"]


def print_cases(suites: list[object], tags: list[str] | None = None) -> None:
    """Print a table of cases."""
    from rich.console import Console
    from rich.table import Table

    from proctor.suite import Suite

    table = Table(title="Cases", title_justify="left")
    for column in ("case", "suite file", "tags", "trials", "turns", "checks"):
        table.add_column(column)
    count = 0
    for suite in suites:
        assert isinstance(suite, Suite)
        for case in suite.cases:
            if tags and not set(tags) & set(case.tags):
                continue
            count += 1
            table.add_row(
                case.name,
                str(case.file),
                ", ".join(case.tags),
                str(case.trials),
                str(len(case.turns)) + (" + simulated" if case.simulate is not None else ""),
                str(case.check_count),
            )
    console = Console(soft_wrap=True)
    console.print(table)
    console.print(f"{count} case{'s' if count != 1 else ''}")


def list_command(
    paths: list[Path] = typer.Argument(None, help="Suite files or directories (default: current directory)."),
    tag: list[str] = typer.Option([], "--tag", "-t", envvar="PROCTOR_TAG", help="Only cases with this tag."),
    checks: bool = typer.Option(False, "--checks", help="List the check types instead of cases."),
    simulate: bool = typer.Option(
        False, "--simulate", envvar="PROCTOR_SIMULATE", help="As `proctor run --simulate` (watsonx stories)."
    ),
) -> None:
    """List cases with their tags and trials, or the available check types."""
    if checks:
        from rich.console import Console
        from rich.table import Table

        from proctor.checks import registry

        table = Table(title="Check types", title_justify="left")
        for column in ("type", "family", "value", "negatable", "LLM", "description"):
            table.add_column(column)
        for check in registry:
            value = "-" if check.value is None else str(check.value.json_schema().get("type", "any"))
            table.add_row(
                check.name,
                check.family,
                value,
                "not-" if check.negatable else "",
                "yes" if check.needs_model else "",
                check.description,
            )
        Console(soft_wrap=True).print(table)
        return
    # listing runs no code a suite names
    print_cases(load_suites_or_exit(paths or [], trusted=True, simulate=simulate or None), tag)
