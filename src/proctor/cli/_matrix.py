"""`proctor run` with several `--model` or `--target` values: one run per combination, then a comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import fail, guard

# Proctor's own modules are imported inside the body: `proctor --help` imports every command module and
# must stay fast (tests/test_public_api.py).
__all__ = ["run_matrix_command"]


def run_matrix_command(
    suites: Any,
    cases: Any,
    options: Any,
    models: list[str],
    targets: list[tuple[str, Any]],
    *,
    observer: Any,
    results_dir: Path,
    ci: bool,
    fail_on_skipped: bool,
    output: Path | None = None,
) -> int:
    """Run every model x target combination, print each run's summary and the comparison; return the exit code.

    The exit code is the most severe of the runs' (`proctor run`'s codes). The group is written beside the
    results as `<group>.matrix.json`.
    """
    if output is not None or options.resume is not None:
        fail("--output and --resume take one run: give one --model and one --target with them")
    import anyio  # the run's event loop (must stay fast: loaded only when a matrix runs)

    from proctor.cli._console import exit_code, summary_json
    from proctor.run.matrix import combinations, run_matrix

    cells = combinations(models, targets)

    async def main() -> Any:
        return await run_matrix(suites, options, cells, cases=cases, observer=observer)

    matrix = guard(lambda: anyio.run(main))
    directory = options.results_dir or results_dir
    path = matrix.write(directory)
    reports = _write_reports(matrix, directory)
    codes = [exit_code(outcome.result, fail_on_skipped=fail_on_skipped) for _, outcome in matrix.runs]
    if ci:  # one JSON document: each run's --ci summary, the comparison, where the group was written
        summaries = [
            {"label": cell.label, **summary_json(outcome.result, outcome.path, fail_on_skipped=fail_on_skipped)}
            for cell, outcome in matrix.runs
        ]
        document = {"matrix": str(path), "reports": [str(p) for p in reports], "exit_code": max(codes, default=0)}
        document.update(matrix.to_dict())
        typer.echo(json.dumps({**document, "summaries": summaries}))
        return max(codes, default=0)
    for cell, outcome in matrix.runs:
        summary = outcome.result.summary
        typer.echo(
            f"{cell.label}: {summary.passed} passed, {summary.failed} failed, {summary.errored} errored; "
            f"results: {outcome.path}"
        )
    typer.echo("")
    typer.echo(matrix.table())
    typer.echo(f"matrix: {path}")
    typer.echo(f"reports: {', '.join(str(p) for p in reports)}")
    return max(codes, default=0)


def _write_reports(matrix: Any, directory: Path) -> list[Path]:
    """`<group>.md` and `<group>.html`: the runs side by side, and the paired comparison as a section."""
    from proctor.results import build_report, write_report  # must stay fast: the report code loads only here

    report = build_report([(outcome.data, outcome.path) for _, outcome in matrix.runs])
    report.notes.append(
        ("Matrix: paired comparison against the first combination (McNemar's exact test)", matrix.table())
    )
    group = directory / matrix.group
    return write_report(report, markdown=group.with_suffix(".md"), html=group.with_suffix(".html"))
