"""Console output for `proctor run`: progress, the results table, the CI summary and the exit code.

Exit codes (`exit_code`), most serious first: 130 interrupted; 3 the run could not complete (every trial
failed to reach the target, or the budget was spent); 1 a case failed; 5 a case errored (a check or the
conversation could not run, or `--max-errors` stopped the run); 4 a case was inconclusive (its simulated
user misbehaved); 6 a case was skipped (nothing scored, e.g. no judge model) under `--ci` without
`--allow-skipped`; 0 otherwise. 2 is bad input or usage, before any trial runs.

A case the run stopped before all its planned trials ran is `incomplete` (never passed, never errored):
the stop decides the code (130, 3, or 5 for `--max-errors`); a run that says it completed yet holds an
incomplete case (only a hand-made result can) could not complete: 3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.cli._trajectory import journey_lines
from proctor.results import RESULTS_VERSION, CaseResult, RunResult, TrialResult
from proctor.results._aggregate import TRIAL_STATUSES, CaseAggregate, RunAggregate
from proctor.results._json import dumps
from proctor.scoring import ERROR_BUDGET_EXCEEDED

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from proctor.suite import Case


def escape(text: str) -> str:
    """Rich markup escaped (rich's own `escape`, imported on first use: --ci output never needs it)."""
    from rich.markup import escape as rich_escape  # must stay fast: as _console

    return rich_escape(text)


__all__ = [
    "EXIT_ERRORED",
    "EXIT_FAILED",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERRUPTED",
    "EXIT_PASSED",
    "EXIT_SKIPPED",
    "EXIT_UNREACHABLE",
    "Observer",
    "exit_code",
    "print_results",
    "summary_json",
    "summary_text",
]

STATUS_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "yellow",
    "skipped": "dim",
    "inconclusive": "magenta",
    "incomplete": "cyan",
}
EXIT_PASSED, EXIT_FAILED, EXIT_UNREACHABLE, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED = 0, 1, 3, 4, 130
EXIT_ERRORED = 5
"""No case failed, but one errored (a check or the conversation could not run), or `--max-errors` stopped the run."""
EXIT_SKIPPED = 6
"""Nothing failed or errored, but a case was skipped (nothing scored) under `--ci` without `--allow-skipped`."""
TARGET_ERRORS = {
    "TargetUnreachable",
    "TargetTimeout",
    "TargetHTTPError",
    "TargetProtocolError",
    "TargetError",
}


class Observer:
    """Progress: a bar with a tally of statuses and an ETA on a terminal; a line per trial otherwise."""

    def __init__(self, *, verbose: bool, live: bool) -> None:
        self.verbose = verbose
        self.console = _console()
        self.progress: Progress | None = None
        self.task: Any = None
        self.live = live
        self.done = 0
        self.total = 0
        self.tally = dict.fromkeys(TRIAL_STATUSES, 0)

    def started(self, total: int, skipped: int) -> None:
        """Start the bar (or print the plan)."""
        self.total = total
        kept = f" ({skipped} kept from the resumed run)" if skipped else ""
        if self.live:
            # must stay fast: rich's progress bar loads only for a person watching (not under --ci/--json)
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("[bold]running"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("trials {task.fields[tally]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("run", total=total, tally="")
        if kept or not self.live:
            self.console.print(f"running {_count(total, 'trial')}{kept}")

    def _tally(self) -> str:
        """`[green]3 passed[/green] [red]1 failed[/red] ...`: the statuses seen so far."""
        parts = [
            f"[{STATUS_STYLE[status]}]{n} {'errored' if status == 'error' else status}[/{STATUS_STYLE[status]}]"
            for status, n in self.tally.items()
            if n
        ]
        return " ".join(parts)

    def trial_finished(self, case: Case, trial: TrialResult) -> None:
        """Advance the bar; print the trial's line when not on a terminal or when verbose."""
        self.done += 1
        self.tally[trial.status] = self.tally.get(trial.status, 0) + 1
        if self.progress is not None:
            self.progress.update(self.task, advance=1, tally=self._tally())
        if not self.live or self.verbose:
            score = "-" if trial.score is None else f"{trial.score:.2f}"
            style = STATUS_STYLE.get(trial.status, "")
            self.console.print(
                f"[{self.done}/{self.total}] {escape(case.name)} trial {trial.trial}: "
                f"[{style}]{trial.status}[/{style}] score {score} ({trial.duration_ms:.0f} ms)"
                + (f" - {escape(trial.error)}" if trial.error else "")
            )
        if self.verbose:
            for check in trial.checks:
                style = STATUS_STYLE.get(check.status, "")
                self.console.print(
                    f"    [{style}]{check.status:7}[/{style}] {escape(check.name)}: {escape(check.reason)}"
                )

    def close(self) -> None:
        """Stop the bar."""
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _console() -> Console:
    """A console that does not squeeze the table to 80 columns when output goes to a file or pipe."""
    from rich.console import Console  # must stay fast: rich loads only for output to a person, not --ci

    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True, width=max(console.width, 160))
    return console


def _usd(value: float | None) -> str:
    return "cost unknown (no price for the model)" if value is None else f"${value:.4f}"


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


LIST_EVERY_CASE_UP_TO = 100
"""The results table lists every case of a run of up to this many cases; in a larger one, every case that did
not pass, and how many passed ones it leaves out (`--verbose`: every case). Rich renders ~0.8 ms a row: 4 s
for 5,000 cases, three times W2's whole run."""


def print_results(result: RunResult, path: Path | None, output: Path | None, *, verbose: bool) -> None:
    """Print the results table, the reasons of failed and errored cases, and where results went."""
    console = _console()
    listed = _listed(result, verbose=verbose)
    if listed or not result.cases:
        console.print(_table(result, listed))
    else:  # a large run where every case passed
        console.print(f"Results: {result.run_id}: {_count(len(result.cases), 'case')} passed (not listed one by one)")
    for line in journey_lines(result.cases):  # tool-call trajectories (cases with `journey` checks)
        console.print(line, markup=False)
    for case in result.cases:
        _print_case(console, case, case.summarize(result.k), verbose=verbose)
    console.print(_summary_line(result))
    if path is not None:
        console.print(f"results: {path}")
    if output is not None:
        console.print(f"output: {output}")


def _listed(result: RunResult, *, verbose: bool) -> list[CaseResult]:
    """The cases the results table lists: all of them, or in a large run without `verbose` those that did not pass."""
    cases = result.cases
    if verbose or len(cases) <= LIST_EVERY_CASE_UP_TO:
        return cases
    return [case for case in cases if case.summarize(result.k).status != "passed"]


def _table(result: RunResult, cases: list[CaseResult]) -> Table:
    from rich.table import Table  # must stay fast: as _console

    table = Table(title=f"Results: {result.run_id}", title_justify="left")
    left_out = len(result.cases) - len(cases)
    if left_out:
        table.caption = f"{_count(left_out, 'passed case')} not listed: the results file has every case"
        table.caption_justify = "left"
    k = _k_label(result)
    for column, justify in [
        ("case", "left"),
        ("status", "left"),
        ("pass rate", "right"),
        ("95% CI", "right"),
        (f"pass@{k}", "right"),
        (f"pass^{k}", "right"),
        ("avg score", "right"),
        ("trials P/F/E", "right"),
        ("p50 ms", "right"),
        ("p95 ms", "right"),
        ("tokens", "right"),
        ("cost $", "right"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for case in cases:
        agg = case.summarize(result.k)
        stats, counts = agg.statistics, agg.trial_counts
        style = STATUS_STYLE.get(agg.status, "")
        own_k = "" if stats.k is None or str(stats.k) == k else f" (k={stats.k})"
        table.add_row(
            escape(case.name),
            f"[{style}]{agg.status}[/{style}]",
            "-" if agg.pass_rate is None else f"{agg.pass_rate * 100:.0f}%",
            _ci(agg.statistics.interval),
            _fmt(stats.pass_at_k) + own_k,
            _fmt(stats.pass_hat_k) + own_k,
            _fmt(agg.avg_score),
            f"{counts['passed']}/{counts['failed']}/{counts['error']}"
            + ("" if agg.planned is None else f" of {agg.planned}"),  # incomplete: of the trials it planned
            _fmt(agg.p50_ms, ".0f"),
            _fmt(agg.p95_ms, ".0f"),
            str(agg.tokens.total_tokens),
            _fmt(agg.known_cost, ".4f"),
        )
    return table


def _print_case(console: Console, case: CaseResult, agg: CaseAggregate, *, verbose: bool) -> None:
    """A case's failing checks (every one, passing cases included) and its notes."""
    failing = _failing_check_lines(agg)
    if agg.status == "passed" and not verbose and not failing:
        return
    notes = _case_notes(case)
    if agg.status == "incomplete" and agg.reason:  # how many of its trials ran before the run stopped
        notes.insert(0, agg.reason)
    if not notes and not failing:
        return
    style = STATUS_STYLE.get(agg.status, "")
    status = f"[{style}]{agg.status}[/{style}]"
    if agg.status == "passed" and failing:
        status += f", with {_count(len(failing), 'failing check')}"
    console.print(f"{status} [bold]{escape(case.name)}[/bold] ({escape(case.file)})")
    for line in failing:  # every failed check, never cut
        console.print(f"  {line}", markup=False)
    for note in notes:
        console.print(f"  {note}", markup=False)


def _summary_line(result: RunResult) -> str:
    summary = result.summary
    trials, checks = summary.trials, summary.checks
    extra = [(summary.inconclusive, "inconclusive"), (summary.skipped, "skipped"), (summary.incomplete, "incomplete")]
    line = (
        f"{_count(summary.cases, 'case')}: [green]{summary.passed} passed[/green], "
        f"[red]{summary.failed} failed[/red], [yellow]{summary.errored} errored[/yellow]"
        + "".join(f", {n} {label}" for n, label in extra if n)
        + f"; {_ran(trials.run, trials.planned)} "
        f"({trials.passed} passed, {trials.failed} failed, {trials.errored} errored)"
        f"; checks: {checks['passed']} passed, {checks['failed']} failed, {checks['error']} errors"
    )
    if checks["skipped"]:
        reasons = "; ".join(escape(reason) for reason in summary.skipped_check_reasons[:3])
        line += f", {checks['skipped']} skipped ({reasons})"
    line += _statistics_line(summary, _k_label(result))
    if summary.retries:
        line += f"; {_count(summary.retries, 'agent call')} retried"
    for role in ("judge", "simulator"):
        used = summary.costs.get(role)
        if used and used["calls"]:
            line += (
                f"; {role}: {_count(used['calls'], 'call')} ({used['cached_calls']} cached), "
                f"{used['prompt'] + used['completion']} tokens, {_usd(used['cost_usd'])}"
            )
    agent = summary.costs.get("agent")
    if agent and agent["cost_usd"] is not None:
        line += f"; agent: {_usd(agent['cost_usd'])}"
    if result.status != "complete":
        why = f": {escape(result.reason)}" if result.reason else ""
        line += f" [yellow]- run {result.status}{why}[/yellow]"
    return line


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _ran(run: int, planned: int) -> str:
    """`4 trials`, or `4 of 12 trials` when fewer ran than were planned."""
    return _count(run, "trial") if run >= planned else f"{run} of {_count(planned, 'trial')}"


def _failing_check_lines(agg: CaseAggregate) -> list[str]:
    """One line per check that failed in any trial: which, where, in how many trials, and why."""
    lines = []
    for check in agg.failing_checks:
        where = "" if check.turn is None else f"turn {check.turn + 1} "
        lines.append(
            f"[failed] {where}{check.name}: failed in {check.failed} of {_count(check.ran, 'trial')} - {check.reason}"
        )
    return lines


def _k_label(result: RunResult) -> str:
    """The k the table headers show: the run's `--k`, the cases' common trial count, else `k`."""
    if result.k is not None:
        return str(result.k)
    ks = {k for case in result.cases if (k := case.summarize(None).statistics.k) is not None}
    return str(ks.pop()) if len(ks) == 1 else "k"


def _ci(interval: tuple[float, float] | list[float] | None) -> str:
    """A 95 % interval as `21-94%`; `-` when there is none."""
    return "-" if interval is None else f"{interval[0] * 100:.0f}-{interval[1] * 100:.0f}%"


def _statistics_line(summary: RunAggregate, k: str) -> str:
    """`; case pass rate 67% (95% CI 21-94%), pass@3 0.83, pass^3 0.50` for the summary line."""
    if summary.pass_rate is None:
        return ""
    text = f"; case pass rate {summary.pass_rate * 100:.0f}% (95% CI {_ci(summary.pass_rate_ci)})"
    if summary.pass_at_k is not None:
        text += f", mean pass@{k} {summary.pass_at_k:.2f}, pass^{k} {_fmt(summary.pass_hat_k)}"
    return text


def _case_notes(case: CaseResult) -> list[str]:
    """Errors, skip and inconclusive reasons, simulated arms, errored checks and warnings: each once."""
    notes: dict[str, None] = {}
    for trial in sorted(case.trials, key=lambda t: t.trial):
        if trial.error:
            notes[f"trial {trial.trial} error: {trial.error}"] = None
        if trial.reason:  # why it was skipped or inconclusive
            notes[f"trial {trial.trial} {trial.status}: {trial.reason}"] = None
        for name, arm in (trial.simulation or {}).get("arms", {}).items():
            composite = arm["composite"]
            parts = ", ".join(f"{k} {_fmt(composite[k])}" for k in ("overall", "timing", "tasks", "assertions"))
            notes[f"trial {trial.trial} arm {name}: {arm['status']} ({parts}, penalty {composite['penalty']})"] = None
        for check in trial.checks:
            if check.status == "error":  # failed checks are listed, all of them, by _failing_check_lines
                notes[f"[error] turn {_turn(check.turn)} {check.name}: {check.reason}"] = None
        for warning in trial.warnings:
            notes[f"warning: {warning}"] = None
    skipped = {c.reason for t in case.trials for c in t.checks if c.status == "skipped"}
    return [*notes, *(f"[skipped] {reason}" for reason in sorted(skipped))][:12]


def _turn(index: int | None) -> str:
    return "-" if index is None else str(index + 1)


def summary_json(result: RunResult, path: Path | None, *, fail_on_skipped: bool = False) -> dict[str, Any]:
    """The `--ci` JSON: the run summary, each case's outcome and where the results file is.

    Each case says why it was skipped and which checks failed. Its figures are the ones the results file
    has (`CaseResult.aggregate_fields`, computed once), not computed again.

    Args:
        result: The run.
        path: Where its results JSON was written.
        fail_on_skipped: Whether a skipped case makes the exit code `EXIT_SKIPPED` (`--ci` without
            `--allow-skipped`).
    """
    return {
        "version": RESULTS_VERSION,
        "run_id": result.run_id,
        "status": result.status,
        "model": result.model,
        "target": result.target,
        "results_file": None if path is None else str(path),
        "exit_code": exit_code(result, fail_on_skipped=fail_on_skipped),
        "summary": result.summary_fields(),
        "cases": [_case_json(case, case.summarize(result.k), case.aggregate_fields(result.k)) for case in result.cases],
    }


def summary_text(result: RunResult, path: Path | None, *, fail_on_skipped: bool = False) -> str:
    """`summary_json` as the `--ci` output prints it: `json.dumps(..., indent=2)`, ~20x sooner.

    The same text as `json.dumps(summary_json(...), indent=2)` but for float spelling (`1e-5`, not
    `1e-05`); non-ASCII text is escaped as `json.dumps` escapes it.
    """
    data = summary_json(result, path, fail_on_skipped=fail_on_skipped)
    encoded = dumps(data, indent=True)
    if not encoded.isascii():  # json.dumps writes \uXXXX escapes: the same text, whatever the terminal
        return json.dumps(data, indent=2)
    return encoded.decode("ascii")


def _case_json(case: CaseResult, agg: CaseAggregate, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": case.name,
        "file": case.file,
        "status": agg.status,
        "pass_rate": data["pass_rate"],
        "pass_k": data["pass_k"],
        "k": data["k"],
        "pass_at_k": data["pass_at_k"],
        "pass_hat_k": data["pass_hat_k"],
        "pass_rate_ci": data["pass_rate_ci"],
        "avg_score": data["avg_score"],
        "trial_counts": agg.trial_counts,
        **({"planned_trials": agg.planned} if agg.planned is not None else {}),
        **({"reason": agg.reason} if agg.reason else {}),
        "failing_checks": [
            {"name": f.name, "turn": f.turn, "failed": f.failed, "ran": f.ran} for f in agg.failing_checks
        ],
    }


def exit_code(run: RunResult | dict[str, Any], *, fail_on_skipped: bool = False) -> int:
    """The exit code a run calls for (see the module docstring): from a run, or a results file's JSON.

    Args:
        run: The run, or its results JSON (both give the same code: the file is the run serialised).
        fail_on_skipped: Whether a skipped case exits `EXIT_SKIPPED` (`--ci` without `--allow-skipped`);
            otherwise skipped cases are listed with their reason and do not change the code.
    """
    if isinstance(run, RunResult):
        summary = run.summary
        status, reason = run.status, run.reason
        counts = (summary.failed, summary.errored, summary.inconclusive, summary.skipped, summary.incomplete)
        trials = [(t.status, t.error_type) for case in run.cases for t in case.trials]
    else:
        data = run.get("summary") or {}
        status, reason = run["status"], run.get("reason")
        counts = (
            data["failed"],
            data["errored"],
            data.get("inconclusive", 0),
            data.get("skipped", 0),
            data.get("incomplete", 0),
        )
        trials = [(t["status"], t.get("error_type")) for c in run["cases"] for t in c["trials"]]
    if status == "interrupted":
        return EXIT_INTERRUPTED
    if status == "aborted":
        if str(reason or "").startswith(ERROR_BUDGET_EXCEEDED):  # --max-errors stopped it
            return EXIT_ERRORED
        return EXIT_UNREACHABLE  # e.g. the budget was reached: the run could not complete
    if trials and all(s == "error" and kind in TARGET_ERRORS for s, kind in trials):
        return EXIT_UNREACHABLE
    return _exit_for_counts(*counts, fail_on_skipped=fail_on_skipped)


def _exit_for_counts(
    failed: int, errored: int, inconclusive: int, skipped: int, incomplete: int, *, fail_on_skipped: bool
) -> int:
    if incomplete:  # planned trials never ran, yet the run says it completed: it could not complete
        return EXIT_UNREACHABLE
    if failed:
        return EXIT_FAILED
    if errored:
        return EXIT_ERRORED
    if inconclusive:  # the simulated user misbehaved: not the agent's failure, not a pass
        return EXIT_INCONCLUSIVE
    if skipped and fail_on_skipped:  # nothing was checked: not a pass in CI
        return EXIT_SKIPPED
    return EXIT_PASSED
