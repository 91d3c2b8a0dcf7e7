"""What failed and why: a run's failed checks grouped by check, then by case, then trial.

The HTML report and `proctor view` both lead with this summary. A trial can fail without a failed check
(its weighted score fell below the threshold) or error before any check ran (the target did not reply):
such trials get a group of their own, named by what happened, so that nothing that failed is left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FailedCase", "FailedTrial", "FailureGroup", "failure_groups"]

_BAD = ("failed", "error")


@dataclass(slots=True)
class FailedTrial:
    """One trial in which the group's check failed (or the trial errored)."""

    run: str
    """The run's label (its model, else its id)."""
    trial: int
    status: str
    """The check's status (`failed`, `error`), or the trial's for the trial-level groups."""
    reason: str
    turn: int | None = None
    """The turn the check was on (0-based), if any."""


@dataclass(slots=True)
class FailedCase:
    """A case with the trials in which the group's check failed."""

    index: int
    """The case's position in its run's `cases`."""
    name: str
    suite: str
    trials: list[FailedTrial] = field(default_factory=list)


@dataclass(slots=True)
class FailureGroup:
    """One check (by name and type) and every case and trial where it failed or errored."""

    check: str
    type: str
    """The check's type, or `trial error` / `below threshold` for trial-level groups."""
    cases: list[FailedCase] = field(default_factory=list)

    @property
    def trials(self) -> int:
        """How many trials the group holds."""
        return sum(len(case.trials) for case in self.cases)

    @property
    def errored(self) -> bool:
        """Whether every entry is an error rather than a failure."""
        return all(t.status == "error" for case in self.cases for t in case.trials)


def _case_entry(group: FailureGroup, index: int, case: dict[str, Any]) -> FailedCase:
    """The group's entry for a case (matched by suite and name, so one case of several runs is one entry)."""
    suite = case.get("suite") or ""
    for entry in group.cases:
        if entry.name == case["name"] and entry.suite == suite:
            return entry
    group.cases.append(FailedCase(index, case["name"], suite))
    return group.cases[-1]


def _trial_level(trial: dict[str, Any]) -> tuple[str, str, str] | None:
    """`(group name, type, reason)` for a bad trial that no failed check explains."""
    if trial.get("status") == "error":
        kind = trial.get("error_type") or "error"
        return f"trial error: {kind}", "trial error", trial.get("error") or trial.get("reason") or "errored"
    if trial.get("status") == "failed":
        score = trial.get("score")
        shown = "-" if score is None else f"{score:.2f}"
        return "score below the threshold", "below threshold", trial.get("reason") or f"score {shown}"
    return None


def failure_groups(runs: Iterable[tuple[str, dict[str, Any]]]) -> list[FailureGroup]:
    """Every failed or errored check of the runs, grouped by check then case; the largest groups first.

    Args:
        runs: `(label, results JSON)` per run (one run for a run page, several for a report).

    Returns:
        The groups, ordered by how many trials they hold (then by name); within a group cases and trials
        keep the runs' order.
    """
    groups: dict[tuple[str, str], FailureGroup] = {}
    for label, data in runs:
        for index, case in enumerate(data.get("cases") or []):
            for trial in case.get("trials") or []:
                bad = [c for c in trial.get("checks") or [] if c.get("status") in _BAD]
                for check in bad:
                    key = (check["name"], check.get("type") or "")
                    group = groups.setdefault(key, FailureGroup(*key))
                    _case_entry(group, index, case).trials.append(
                        FailedTrial(
                            label, trial["trial"], check["status"], check.get("reason") or "", check.get("turn")
                        )
                    )
                # a trial errored by a check is explained by it; one that errored on its own (no reply) is not
                explained = bad and not (trial.get("status") == "error" and trial.get("error"))
                level = None if explained else _trial_level(trial)
                if level is not None:
                    name, kind, reason = level
                    group = groups.setdefault((name, kind), FailureGroup(name, kind))
                    _case_entry(group, index, case).trials.append(
                        FailedTrial(label, trial["trial"], trial["status"], reason)
                    )
    return sorted(groups.values(), key=lambda g: (-g.trials, g.check))
