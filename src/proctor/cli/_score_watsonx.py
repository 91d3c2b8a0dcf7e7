"""`proctor score RUN.messages.json --dataset DATA.json`: IBM watsonx recorded runs, scored offline.

`DATA` is one ADK messages file or a folder of them (`*.messages.json`, as the ADK's `analysis/` folders
hold them, single- or multi-run); `--dataset` is the dataset file, or a folder holding `<name>.json` for
each `<name>[.runN].messages.json`. Each run's metrics are printed in IBM's names and layout; `--output`
writes them as IBM's `summary_metrics.csv` (`.csv`) or as JSON with every call's and text's outcome.

Exit codes: 0 every run scored (whatever its journey's outcome, as IBM's `analyze` does); 1 a journey
outcome could not be decided (a text goal not judged: pass `--judge`) or the judge failed; 2 a file cannot
be read.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import anyio
import typer

from proctor.checks._judging import Judge
from proctor.cli._common import fail, guard
from proctor.cli._console import _console
from proctor.errors import ModelError
from proctor.recorded._watsonx import (
    METRIC_KEYS,
    NOT_JUDGED,
    WatsonxRunError,
    WatsonxRunResult,
    dataset_for,
    is_messages_file,
    score_run,
    summary_rows,
)

__all__ = ["messages_files", "score_watsonx"]


def messages_files(data: Path) -> list[Path]:
    """The ADK messages files `data` names: itself, or those in the folder (not `*.analyze.json`)."""
    if data.is_dir():
        return sorted(p for p in data.rglob("*.messages.json") if is_messages_file(p))
    return [data]


def score_watsonx(
    data: Path, dataset: Path | None, model: Any, output: Path | None, quiet: bool, *, as_json: bool = False
) -> int:
    """Score every messages file of `data` and print (and write) IBM's metrics; return the exit code.

    With `as_json`, stdout holds only the runs' metrics as a JSON array; notes go to stderr.
    """
    files = messages_files(data)
    if not files:
        fail(f"{data}: no *.messages.json files (ADK recorded runs) in this folder")
    if dataset is None:
        fail(
            f"{files[0]}: an ADK messages file is scored against its dataset: pass --dataset DATA.json "
            "(or a folder holding <name>.json for each <name>[.runN].messages.json)"
        )
    if not dataset.exists():
        fail(f"--dataset {dataset}: no such file or folder")
    pairs = [(path, _dataset_of(path, dataset)) for path in files]
    results = guard(lambda: anyio.run(_score_all, pairs, model))
    if isinstance(results, str):
        fail(results, 1)
    if output is not None:
        _write(output, results)
    if as_json:
        typer.echo(json.dumps([_json_safe(r.to_dict()) for r in results], indent=2, ensure_ascii=False))
    elif not quiet:
        _print(results)
    undecided = [r for r in results if r.metrics["text_match"] == NOT_JUDGED]
    if undecided:
        names = ", ".join(r.metrics["dataset_name"] for r in undecided)
        typer.echo(f"text goals not judged (no judge model; pass --judge) in: {names}", err=as_json)
        return 1
    return 0


def _dataset_of(messages: Path, dataset: Path) -> Path:
    return guard(lambda: dataset_for(messages, dataset))


async def _score_all(pairs: list[tuple[Path, Path]], model: Any) -> list[WatsonxRunResult] | str:

    judge = Judge(model) if model is not None else None
    results: list[WatsonxRunResult] = []
    try:
        for messages, dataset in pairs:
            try:
                results.append(await score_run(messages, dataset, judge))
            except ModelError as exc:
                return f"{messages}: the judge failed: {exc}"
    finally:
        if model is not None:
            await model.aclose()
    return results


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "NA"
    return "" if value is None else str(value)


def _write(output: Path, results: list[WatsonxRunResult]) -> None:
    try:
        if output.suffix.lower() == ".csv":
            with output.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(METRIC_KEYS))
                writer.writeheader()
                for row in summary_rows(results):
                    writer.writerow({key: _cell(value) for key, value in row.items()})
        else:
            rows = [_json_safe(r.to_dict()) for r in results]
            output.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise WatsonxRunError(f"--output {output}: cannot write: {exc.strerror or exc}") from exc


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def _print(results: list[WatsonxRunResult]) -> None:
    from rich.table import Table

    shown = (
        "correct_tool_calls",
        "expected_tool_calls",
        "total_tool_calls",
        "tool_call_precision",
        "tool_call_recall",
        "tool_calls_with_incorrect_parameter",
        "text_match",
        "is_success",
    )
    table = Table(title="watsonx journey metrics (IBM's definitions)", title_justify="left")
    table.add_column("run")
    for key in shown:
        table.add_column(key.replace("_", " "), justify="right")
    for result in results:
        cells = [_cell(result.metrics[key]) if result.metrics[key] is not None else "undecided" for key in shown]
        table.add_row(result.source.removesuffix(".messages.json"), *cells)
    _console().print(table)
