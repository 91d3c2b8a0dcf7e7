"""Console output for `proctor run`: progress, the results table, the CI summary and the exit code.

Exit codes (`exit_code`), most serious first: 130 interrupted; 3 the run could not complete (every trial
failed to reach the target, or the budget was spent); 1 a case failed; 5 a case errored (a check or the
conversation could not run, or `--max-errors` stopped the run); 4 a case was inconclusive (its simulated
user misbehaved); 6 a case was skipped (nothing scored, e.g. no judge model) under `--ci` without
`--allow-skipped`; 0 otherwise. 2 is bad input or usage, before any trial runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from proctor.cli._trajectory import journey_lines
from proctor.results import TrialResult
from proctor.scoring import ERROR_BUDGET_EXCEEDED
from proctor.suite import Case

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
]

STATUS_STYLE = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "dim", "inconclusive": "magenta"}
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
    """Progress: a Rich bar on a terminal, one plain line per finished trial otherwise."""

    def __init__(self, *, verbose: bool, live: bool) -> None:
        self.verbose = verbose
        self.console = _console()
        self.progress: Progress | None = None
        self.task: Any = None
        self.live = live
        self.done = 0
        self.total = 0

    def started(self, total: int, skipped: int) -> None:
        """Start the bar (or print the plan)."""
        self.total = total
        kept = f" ({skipped} kept from the resumed run)" if skipped else ""
        if self.live:
            self.progress = Progress(
                TextColumn("[bold]running"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("trials"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("run", total=total)
            if kept:
                self.console.print(f"running {total} trials{kept}")
        else:
            self.console.print(f"running {total} trials{kept}")

    def trial_finished(self, case: Case, trial: TrialResult) -> None:
        """Advance the bar; print the trial's line when not on a terminal or when verbose."""
        self.done += 1
        if self.progress is not None:
            self.progress.advance(self.task)
        if not self.live or self.verbose:
            score = "-" if trial.score is None else f"{trial.score:.2f}"
            style = STATUS_STYLE.get(trial.status, "")
            self.console.print(
                f"[{self.done}/{self.total}] {case.name} trial {trial.trial}: "
                f"[{style}]{trial.status}[/{style}] score {score} ({trial.duration_ms:.0f} ms)"
                + (f" - {trial.error}" if trial.error else "")
            )
        if self.verbose:
            for check in trial.checks:
                style = STATUS_STYLE.get(check.status, "")
                self.console.print(f"    [{style}]{check.status:7}[/{style}] {check.name}: {check.reason}")

    def close(self) -> None:
        """Stop the bar."""
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _console() -> Console:
    """A console that does not squeeze the table to 80 columns when output goes to a file or pipe."""
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True, width=max(console.width, 160))
    return console


def _case_cost(case: dict[str, Any]) -> str:
    """Known cost of a case (agent and judges); `-` when no price is known."""
    known = [part["cost_usd"] for part in (case.get("costs") or {}).values() if part.get("cost_usd") is not None]
    return f"{sum(known):.4f}" if known else "-"


def _usd(value: float | None) -> str:
    return "cost unknown (no price for the model)" if value is None else f"${value:.4f}"


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def print_results(data: dict[str, Any], path: Path | None, output: Path | None, *, verbose: bool) -> None:
    """Print the results table, the reasons of failed and errored cases, and where results went."""
    console = _console()
    console.print(_table(data))
    for line in journey_lines(data["cases"]):  # tool-call trajectories (cases with `journey` checks)
        console.print(line, markup=False)
    for case in data["cases"]:
        _print_case(console, case, verbose=verbose)
    console.print(_summary_line(data))
    if path is not None:
        console.print(f"results: {path}")
    if output is not None:
        console.print(f"output: {output}")


def _table(data: dict[str, Any]) -> Table:
    table = Table(title=f"Results: {data['run_id']}", title_justify="left")
    k = _k_label(data)
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
    for case in data["cases"]:
        counts = case["trial_counts"]
        style = STATUS_STYLE.get(case["status"], "")
        table.add_row(
            case["name"],
            f"[{style}]{case['status']}[/{style}]",
            _fmt(case["pass_rate"] and case["pass_rate"] * 100, ".0f") + ("%" if case["pass_rate"] is not None else ""),
            _ci(case.get("pass_rate_ci")),
            _fmt(case.get("pass_at_k")) + _own_k(case, k),
            _fmt(case["pass_k"]) + _own_k(case, k),
            _fmt(case["avg_score"]),
            f"{counts['passed']}/{counts['failed']}/{counts['error']}",
            _fmt(case["latency_ms"]["p50"], ".0f"),
            _fmt(case["latency_ms"]["p95"], ".0f"),
            str(case["tokens"]["total"]),
            _case_cost(case),
        )
    return table


def _print_case(console: Console, case: dict[str, Any], *, verbose: bool) -> None:
    """A case's failing checks (every one, passing cases included) and its notes."""
    failing = _failing_check_lines(case)
    if case["status"] == "passed" and not verbose and not failing:
        return
    notes = _case_notes(case)
    if not notes and not failing:
        return
    style = STATUS_STYLE.get(case["status"], "")
    status = f"[{style}]{case['status']}[/{style}]"
    if case["status"] == "passed" and failing:
        status += f", with {_count(len(failing), 'failing check')}"
    console.print(f"{status} [bold]{case['name']}[/bold] ({case['file']})")
    for line in failing:  # every failed check, never cut
        console.print(f"  {line}", markup=False)
    for note in notes:
        console.print(f"  {note}", markup=False)


def _summary_line(data: dict[str, Any]) -> str:
    summary = data["summary"]
    trials = summary["trials"]
    line = (
        f"{summary['cases']} cases: [green]{summary['passed']} passed[/green], "
        f"[red]{summary['failed']} failed[/red], [yellow]{summary['errored']} errored[/yellow]"
        + "".join(f", {summary[k]} {k}" for k in ("inconclusive", "skipped") if summary.get(k))
        + "; "
        f"{trials['run']} trials ({trials['passed']} passed, {trials['failed']} failed, "
        f"{trials['errored']} errored)"
    )
    checks = summary["checks"]
    line += f"; checks: {checks['passed']} passed, {checks['failed']} failed, {checks['error']} errors"
    if checks["skipped"]:
        skipped = (c for case in data["cases"] for t in case["trials"] for c in t["checks"] if c["status"] == "skipped")
        reasons = sorted({c["reason"] for c in skipped})
        line += f", {checks['skipped']} skipped ({'; '.join(reasons[:3])})"
    line += _statistics_line(summary, _k_label(data))
    if summary["retries"]:
        line += f"; {summary['retries']} agent calls retried"
    costs = summary.get("costs") or {}
    for role in ("judge", "simulator"):
        used = costs.get(role) or {}
        if used.get("calls"):
            line += (
                f"; {role}: {used['calls']} calls ({used['cached_calls']} cached), "
                f"{used['prompt'] + used['completion']} tokens, {_usd(used['cost_usd'])}"
            )
    agent_cost = (costs.get("agent") or {}).get("cost_usd")
    if agent_cost is not None:
        line += f"; agent: {_usd(agent_cost)}"
    if data["status"] != "complete":
        line += f" [yellow]- run {data['status']}{': ' + data['reason'] if data.get('reason') else ''}[/yellow]"
    return line


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _failing_check_lines(case: dict[str, Any]) -> list[str]:
    """One line per check that failed in any trial: which, where, in how many trials, and why."""
    lines = []
    for check in case.get("failing_checks") or []:
        where = "" if check["turn"] is None else f"turn {check['turn'] + 1} "
        lines.append(
            f"[failed] {where}{check['name']}: failed in {check['failed']} of {_count(check['ran'], 'trial')}"
            f" - {check['reason']}"
        )
    return lines


def _k_label(data: dict[str, Any]) -> str:
    """The k the table headers show: the run's `--k`, the cases' common trial count, else `k`."""
    ks = {case.get("k") for case in data["cases"] if case.get("k") is not None}
    chosen = (data.get("summary") or {}).get("k")
    return str(chosen) if chosen is not None else str(ks.pop()) if len(ks) == 1 else "k"


def _own_k(case: dict[str, Any], label: str) -> str:
    """` (k=3)` after a cell whose case used another k than the header's."""
    return "" if case.get("k") is None or str(case["k"]) == label else f" (k={case['k']})"


def _ci(interval: list[float] | None) -> str:
    """A 95 % interval as `21-94%`; `-` when there is none."""
    return "-" if interval is None else f"{interval[0] * 100:.0f}-{interval[1] * 100:.0f}%"


def _statistics_line(summary: dict[str, Any], k: str) -> str:
    """`; case pass rate 67% (95% CI 21-94%), pass@3 0.83, pass^3 0.50` for the summary line."""
    if summary.get("pass_rate") is None:
        return ""
    text = f"; case pass rate {summary['pass_rate'] * 100:.0f}% (95% CI {_ci(summary.get('pass_rate_ci'))})"
    if summary.get("pass_at_k") is not None:
        text += f", mean pass@{k} {summary['pass_at_k']:.2f}, pass^{k} {_fmt(summary.get('pass_hat_k'))}"
    return text


def _case_notes(case: dict[str, Any]) -> list[str]:
    notes: list[str] = []
    seen: set[str] = set()
    for trial in case["trials"]:
        if trial["error"]:
            note = f"trial {trial['trial']} error: {trial['error']}"
            if note not in seen:
                notes.append(note)
                seen.add(note)
        if trial.get("reason"):  # why it was skipped or inconclusive
            note = f"trial {trial['trial']} {trial['status']}: {trial['reason']}"
            if note not in seen:
                notes.append(note)
                seen.add(note)
        for name, arm in (trial.get("simulation") or {}).get("arms", {}).items():
            parts = ", ".join(f"{k} {_fmt(arm['composite'][k])}" for k in ("overall", "timing", "tasks", "assertions"))
            note = (
                f"trial {trial['trial']} arm {name}: {arm['status']} ({parts}, penalty {arm['composite']['penalty']})"
            )
            notes.append(note)
        for check in trial["checks"]:
            if check["status"] == "error":  # failed checks are listed, all of them, by _failing_check_lines
                note = f"[{check['status']}] turn {_turn(check['turn'])} {check['name']}: {check['reason']}"
                if note not in seen:
                    notes.append(note)
                    seen.add(note)
        for warning in trial["warnings"]:
            note = f"warning: {warning}"
            if note not in seen:
                notes.append(note)
                seen.add(note)
    skipped = {c["reason"] for t in case["trials"] for c in t["checks"] if c["status"] == "skipped"}
    notes.extend(f"[skipped] {reason}" for reason in sorted(skipped))
    return notes[:12]


def _turn(index: int | None) -> str:
    return "-" if index is None else str(index + 1)


def summary_json(data: dict[str, Any], path: Path | None, *, fail_on_skipped: bool = False) -> dict[str, Any]:
    """The `--ci` JSON: the run summary, each case's outcome and where the results file is.

    Each case says why it was skipped and which checks failed.

    Args:
        data: The results JSON.
        path: Where it was written.
        fail_on_skipped: Whether a skipped case makes the exit code `EXIT_SKIPPED` (`--ci` without
            `--allow-skipped`).
    """
    return {
        "version": data["version"],
        "run_id": data["run_id"],
        "status": data["status"],
        "model": data["model"],
        "target": data["target"],
        "results_file": None if path is None else str(path),
        "exit_code": exit_code(data, fail_on_skipped=fail_on_skipped),
        "summary": data["summary"],
        "cases": [
            {
                "name": c["name"],
                "file": c["file"],
                "status": c["status"],
                "pass_rate": c["pass_rate"],
                "pass_k": c["pass_k"],
                **{key: c.get(key) for key in ("k", "pass_at_k", "pass_hat_k", "pass_rate_ci")},
                "avg_score": c["avg_score"],
                "trial_counts": c["trial_counts"],
                **({"reason": c["reason"]} if c.get("reason") else {}),
                "failing_checks": [
                    {k: f[k] for k in ("name", "turn", "failed", "ran")} for f in c.get("failing_checks") or []
                ],
            }
            for c in data["cases"]
        ],
    }


def exit_code(data: dict[str, Any], *, fail_on_skipped: bool = False) -> int:
    """The exit code the results call for (always computed from the written data; see the module docstring).

    Args:
        data: The results JSON.
        fail_on_skipped: Whether a skipped case exits `EXIT_SKIPPED` (`--ci` without `--allow-skipped`);
            otherwise skipped cases are listed with their reason and do not change the code.
    """
    if data["status"] == "interrupted":
        return EXIT_INTERRUPTED
    if data["status"] == "aborted":
        if str(data.get("reason") or "").startswith(ERROR_BUDGET_EXCEEDED):  # --max-errors stopped it
            return EXIT_ERRORED
        return EXIT_UNREACHABLE  # e.g. the budget was reached: the run could not complete
    trials = [t for c in data["cases"] for t in c["trials"]]
    if trials and all(t["status"] == "error" and t.get("error_type") in TARGET_ERRORS for t in trials):
        return EXIT_UNREACHABLE
    summary = data["summary"]
    if summary["failed"]:
        return EXIT_FAILED
    if summary["errored"]:
        return EXIT_ERRORED
    if summary.get("inconclusive"):  # the simulated user misbehaved: not the agent's failure, not a pass
        return EXIT_INCONCLUSIVE
    if summary.get("skipped") and fail_on_skipped:  # nothing was checked: not a pass in CI
        return EXIT_SKIPPED
    return EXIT_PASSED
