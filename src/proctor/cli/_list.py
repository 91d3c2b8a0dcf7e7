"""`proctor list`: list cases (with tags and trials) or check types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import load_suites_or_exit
from proctor.cli._help import epilog
from proctor.cli._options import JSON

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "cases_json", "checks_json", "list_command", "print_cases"]


EPILOG = epilog(
    [
        ("The cases under evals/ with their tags, trials, turns and checks:", "proctor list evals/"),
        ("Only the cases tagged smoke, as JSON:", "proctor list evals/ --tag smoke --json"),
        ("Every check type a suite can use:", "proctor list --checks"),
    ],
    [(0, "listed"), (2, "a suite file does not load, or bad usage")],
)


def _selected(suites: list[object], tags: list[str] | None) -> list[Any]:
    """The cases of `suites`, those with one of `tags` when tags are given."""
    from proctor.suite import Suite

    cases = []
    for suite in suites:
        assert isinstance(suite, Suite)
        cases += [case for case in suite.cases if not tags or set(tags) & set(case.tags)]
    return cases


def cases_json(suites: list[object], tags: list[str] | None = None) -> list[dict[str, Any]]:
    """The cases `print_cases` lists, as JSON-ready dicts (`list --json`, `run --list --json`)."""
    return [
        {
            "name": case.name,
            "file": str(case.file),
            "tags": list(case.tags),
            "trials": case.trials,
            "turns": len(case.turns),
            "simulated": case.simulate is not None,
            "checks": case.check_count,
        }
        for case in _selected(suites, tags)
    ]


def checks_json() -> list[dict[str, Any]]:
    """The registered check types, as JSON-ready dicts (`list --checks --json`)."""
    from proctor.checks import registry

    return [
        {
            "type": check.name,
            "family": check.family,
            "value": None if check.value is None else check.value.json_schema().get("type", "any"),
            "negatable": check.negatable,
            "needs_model": check.needs_model,
            "description": check.description,
        }
        for check in registry
    ]


def print_cases(suites: list[object], tags: list[str] | None = None) -> None:
    """Print a table of cases."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Cases", title_justify="left")
    for column in ("case", "suite file", "tags", "trials", "turns", "checks"):
        table.add_column(column)
    cases = _selected(suites, tags)
    count = len(cases)
    for case in cases:
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
    as_json: bool = JSON,
) -> None:
    """List cases with their tags and trials, or the available check types."""
    if checks and as_json:
        typer.echo(json.dumps(checks_json(), indent=2))
        return
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
    suites = load_suites_or_exit(paths or [], trusted=True, simulate=simulate or None)
    if as_json:
        typer.echo(json.dumps(cases_json(suites, tag), indent=2))
    else:
        print_cases(suites, tag)
