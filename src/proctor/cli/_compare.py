"""`proctor compare RUN_A RUN_B`: per-case and overall differences, with paired tests.

Exit codes: 0; with `--fail-on-regression` 1 when B is significantly worse than A, 5 when the comparison is
undecided (B has no pass/fail outcome to compare where A had one: errored, skipped or inconclusive); 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from proctor.cli._common import fail, guard, plural
from proctor.cli._help import PANEL_STATS, epilog
from proctor.cli._history import HISTORY, console, stored_cases
from proctor.cli._options import JSON

if TYPE_CHECKING:
    from proctor.results import Comparison

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "EXIT_REGRESSION", "EXIT_UNDECIDED", "compare_command"]

EXIT_REGRESSION = 1
"""With `--fail-on-regression`: B is significantly worse than A."""
EXIT_UNDECIDED = 5
"""With `--fail-on-regression`: no regression found, but the comparison is undecided (as `proctor run`'s 5,
"none failed, but a case errored": an outcome is missing, so nothing says B is no worse)."""

EPILOG = epilog(
    [
        (
            "Candidate against baseline, by run id (a prefix will do):",
            "proctor compare gpt-4-1-mini_20261101 gpt-4-1_20261102",
        ),
        ("In CI: fail only on a significant regression:", "proctor compare base.json new.json --fail-on-regression"),
        ("Every case, unchanged ones too, as JSON:", "proctor compare RUN_A RUN_B --all --json"),
    ],
    [
        (0, "compared (a regression or undecided too, without --fail-on-regression)"),
        (1, "with --fail-on-regression: B is significantly worse than A"),
        (2, "a run not found, the same run twice, or bad usage"),
        (5, "with --fail-on-regression: undecided (B has no outcome where A had one)"),
    ],
)

_CHANGE_STYLE = {
    "regressed": "red",
    "fixed": "green",
    "added": "cyan",
    "removed": "yellow",
    "unchanged": "",
    "errored": "yellow",
    "skipped": "dim",
    "inconclusive": "magenta",
    "incomplete": "cyan",
    "recovered": "cyan",
}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None, signed: bool = False) -> str:
    return "-" if value is None else format(value, "+.2f" if signed else ".2f")


def _signed(value: float) -> str:
    return f"{round(value, 3) + 0.0:+.3f}"  # + 0.0: no "-0.000"


def print_comparison(comparison: Comparison, *, show_all: bool) -> None:
    """Print the per-case table and the overall verdict."""
    from rich.table import Table

    out = console()
    table = Table(title=f"A = {comparison.a}   B = {comparison.b}", title_justify="left")
    for column, justify in [
        ("case", "left"),
        ("change", "left"),
        ("status A → B", "left"),
        ("pass rate A → B", "right"),
        ("Δ", "right"),
        ("score A → B", "right"),
        ("Δ score", "right"),
        ("flaky", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    hidden = 0
    for case in comparison.cases:
        (rate_a, rate_b), (score_a, score_b) = case.pass_rates, case.scores
        moved = case.change != "unchanged" or case.flaky or rate_a != rate_b or score_a != score_b
        moved = moved or bool(case.check_changes)
        if not moved and not show_all:
            hidden += 1
            continue
        style = _CHANGE_STYLE[case.change]
        table.add_row(
            case.name,
            f"[{style}]{case.change}[/{style}]" if style else case.change,
            f"{case.a.status if case.a else '-'} → {case.b.status if case.b else '-'}",
            f"{_pct(rate_a)} → {_pct(rate_b)}",
            "-" if rate_a is None or rate_b is None else f"{(rate_b - rate_a) * 100:+.0f}",
            f"{_num(score_a)} → {_num(score_b)}",
            "-" if score_a is None or score_b is None else _num(score_b - score_a, signed=True),
            ", ".join(case.flaky),
        )
    out.print(table)
    if hidden:
        out.print(f"{plural(hidden, 'unchanged case')} not shown (--all shows them)")
    if comparison.coverage_note:
        out.print(f"[yellow]note:[/yellow] {comparison.coverage_note}", markup=True, highlight=False)
    for case in comparison.cases:
        for change in case.check_regressions:  # visible even when the case passed in both runs
            (failed_a, scored_a), (failed_b, scored_b) = change["a"], change["b"]
            out.print(
                f"[red]check regressed[/red] {case.name}: {change['check']}: failed in {failed_a} of {scored_a} "
                f"trials in A, {failed_b} of {scored_b} in B",
                markup=True,
                highlight=False,
            )
    pairing = comparison.pairing
    worse, better = pairing.discordant
    half = comparison.alpha / 2
    out.print(
        f"pass/fail: {plural(len(pairing.pairs), 'trial pair')}; A passed and B failed {worse}, "
        f"A failed and B passed {better}; "
        f"McNemar exact p = {comparison.mcnemar_p:.4g} (significant below {half:g})"
    )
    left_out = pairing.left_out_note("trial pair")
    if left_out:  # an errored, skipped or inconclusive trial is not an outcome: never counted as a failure
        out.print(f"{left_out} (not passed or failed in both runs)", highlight=False)
    interval = comparison.score_interval
    if interval is None:
        out.print("scores: no case was scored in both runs")
    else:
        note = "" if comparison.score_decides else f" (too few cases to decide: {interval.n})"
        out.print(
            f"scores: mean per-case difference B - A = {_signed(interval.mean)}, {interval.confidence:.1%} bootstrap "
            f"interval [{_signed(interval.low)}, {_signed(interval.high)}] over {plural(interval.n, 'case')}{note}"
        )
    flaky = [case.name for case in comparison.cases if case.flaky]
    if flaky:
        out.print(f"flaky (mixed outcomes across trials): {', '.join(flaky)}")
    reason = comparison.undecided_reason
    if reason:  # said beside a regression too (a note then: the regression decides)
        label = "undecided" if comparison.undecided else "note"
        out.print(f"[yellow]{label}:[/yellow] {reason}", markup=True, highlight=False)
    style = {"regression": "red", "improvement": "green", "undecided": "yellow"}.get(comparison.verdict, "")
    verdict = f"[{style}]{comparison.verdict}[/{style}]" if style else comparison.verdict
    out.print(f"verdict: {verdict} (alpha {comparison.alpha:g}, each test at {half:g})")


def compare_command(
    run_a: str = typer.Argument(..., help="The baseline: a run id or results file."),
    run_b: str = typer.Argument(..., help="The candidate: a run id or results file."),
    history: Path | None = HISTORY,
    alpha: float = typer.Option(
        0.05,
        "--alpha",
        envvar="PROCTOR_ALPHA",
        min=0.0001,
        max=0.5,
        metavar="P",
        rich_help_panel=PANEL_STATS,
        help="Significance level for a regression.",
    ),
    resamples: int = typer.Option(
        2000,
        "--resamples",
        envvar="PROCTOR_RESAMPLES",
        min=100,
        metavar="N",
        rich_help_panel=PANEL_STATS,
        help="Bootstrap resamples for the score interval.",
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        envvar="PROCTOR_SEED",
        metavar="N",
        rich_help_panel=PANEL_STATS,
        help="Bootstrap seed (same seed, same interval).",
    ),
    fail_on_regression: bool = typer.Option(
        False,
        "--fail-on-regression",
        envvar="PROCTOR_FAIL_ON_REGRESSION",
        help="Exit 1 when B is significantly worse than A; 5 when undecided (B has no outcome where A had one).",
    ),
    show_all: bool = typer.Option(False, "--all", help="Show unchanged cases too."),
    as_json: bool = JSON,
) -> None:
    """Compare run B against run A: per-case changes, McNemar's exact test, a paired bootstrap on scores."""
    from proctor.results import compare_runs

    a_id, a_cases = guard(lambda: stored_cases(run_a, history))
    b_id, b_cases = guard(lambda: stored_cases(run_b, history))
    if a_id == b_id and a_cases == b_cases:
        fail(f"RUN_A and RUN_B are the same run ({a_id})")
    comparison = compare_runs(a_id, a_cases, b_id, b_cases, alpha=alpha, resamples=resamples, seed=seed)
    if as_json:
        typer.echo(json.dumps(comparison.to_dict(), indent=2))
    else:
        print_comparison(comparison, show_all=show_all)
    if fail_on_regression and comparison.regression:
        raise typer.Exit(EXIT_REGRESSION)
    if fail_on_regression and comparison.undecided:  # nothing unchecked passes the gate
        raise typer.Exit(EXIT_UNDECIDED)
