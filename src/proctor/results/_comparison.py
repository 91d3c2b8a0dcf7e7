"""Paired comparison of two runs: which cases changed, and whether the change is more than noise.

Trials are paired by case (`<file>::<name>`, else suite and name when the files moved) and trial number.

* Pairing (`pair_outcomes`, the rule the matrix's comparison against its baseline shares): only a passed
  or failed trial has an outcome. A pair with an errored, skipped (nothing scored) or inconclusive (the
  simulated user misbehaved) trial on either side is left out and counted, never scored as a failure.
* Pass/fail: McNemar's exact test on the discordant trial pairs (A passed and B failed, or the reverse).
* Undecided: when no trial pair has an outcome on both sides, or a case that had an outcome in A has no
  pair to compare in B (B errored, was skipped or was inconclusive there, or its trials never ran), the
  comparison cannot say that B is no worse: its verdict is `undecided` (unless it found a regression anyway).
* Incomplete: a case the run stopped before all its planned trials ran has no case outcome (it is neither
  passed nor errored), but the trials that did run pair as any others; the ones that never ran are absent,
  so they pair with nothing.
* Scores: a seeded paired bootstrap over cases of the difference of the case's mean trial score (B - A),
  over the passed and failed trials.
* A regression is significant when either test says B is worse. Each test is made at `alpha / 2`
  (Bonferroni), so noise alone flags a regression at most `alpha` of the time.
* Checks: a check that failed in a larger share of its trials in B than in A is a check regression, listed
  even when its case passed in both runs (a `contains-all` that starts missing a name in a case that still
  passes on its weighted score). They are reported, not tested for significance (when the results files
  are at hand: the history index keeps no checks).

Caveat: trials of one case are not independent pairs (they share the case), so McNemar's p is somewhat
optimistic when a case has many trials; the bootstrap resamples whole cases and has no such bias.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from proctor.results._stats import BootstrapInterval, mcnemar_exact, paired_bootstrap
from proctor.results._summary import StoredCase, case_identity

__all__ = [
    "MIN_BOOTSTRAP_CASES",
    "OUTCOMES",
    "CaseChange",
    "CaseComparison",
    "Comparison",
    "Pairing",
    "compare_runs",
    "pair_outcomes",
    "restrict_run",
    "shared_case_keys",
]

MIN_BOOTSTRAP_CASES = 5
"""Fewer paired cases than this and the score interval is shown but decides nothing: a bootstrap over
one to four cases cannot see how much scores vary, and would call any drop significant."""

OUTCOMES = ("passed", "failed")
"""The statuses that are outcomes. `error`, `skipped` and `inconclusive` are not: such a trial (or case) is
left out of the pairs and counted, never scored as a pass or a failure. Nor is a case's `incomplete` (the
run stopped before all its planned trials ran): a case pair with it is left out (the matrix pairs cases);
its trials that ran pair by their own status (`proctor compare` pairs trials)."""

CaseChange = Literal[
    "regressed",
    "fixed",
    "unchanged",
    "added",
    "removed",
    "errored",
    "skipped",
    "inconclusive",
    "incomplete",
    "recovered",
]
"""How a case moved from A to B. `regressed` (passed, then failed) and `fixed` (failed, then passed) are
between outcomes only. When B's case has no outcome and A's had another status it is `errored`, `skipped`,
`inconclusive` or `incomplete` (B's status); when B's case has an outcome and A's had none it is `recovered`.
Neither is a pass/fail change: an incomplete case's trials that ran still pair, and say it if they regressed."""

_NO_OUTCOME_WORDS: dict[str, CaseChange] = {
    "error": "errored",
    "skipped": "skipped",
    "inconclusive": "inconclusive",
    "incomplete": "incomplete",
}
"""A status without an outcome, as the change to it and in the left-out note."""


@dataclass(slots=True)
class Pairing:
    """The pass/fail pairs of run A and run B, and what was left out.

    Built by `pair_outcomes`: trial pairs in `proctor compare`, case pairs in the matrix's comparison
    against its baseline.
    """

    pairs: list[tuple[bool, bool]] = field(default_factory=list)
    """`(A passed, B passed)` per pair with an outcome (passed or failed) on both sides."""
    left_out: int = 0
    """Pairs left out: not passed or failed on one side or both."""
    left_out_a: dict[str, int] = field(default_factory=dict)
    """Of those, by A's status (`error`, `skipped`, `inconclusive`), when A's side had no outcome."""
    left_out_b: dict[str, int] = field(default_factory=dict)
    """Of those, by B's status, when B's side had no outcome (a pair with neither counts on both sides)."""

    def add(self, status_a: str, status_b: str) -> None:
        """Pair A's and B's status of one trial (or case), or count it as left out."""
        if status_a in OUTCOMES and status_b in OUTCOMES:
            self.pairs.append((status_a == "passed", status_b == "passed"))
            return
        self.left_out += 1
        for side, status in ((self.left_out_a, status_a), (self.left_out_b, status_b)):
            if status not in OUTCOMES:
                side[status] = side.get(status, 0) + 1

    def merge(self, other: Pairing) -> None:
        """Add another pairing's pairs and left-out counts to this one."""
        self.pairs.extend(other.pairs)
        self.left_out += other.left_out
        for mine, theirs in ((self.left_out_a, other.left_out_a), (self.left_out_b, other.left_out_b)):
            for status, count in theirs.items():
                mine[status] = mine.get(status, 0) + count

    @property
    def discordant(self) -> tuple[int, int]:
        """`(A passed and B failed, A failed and B passed)` pairs."""
        return sum(1 for a, b in self.pairs if a and not b), sum(1 for a, b in self.pairs if b and not a)

    def left_out_dict(self) -> dict[str, Any]:
        """The JSON form of what was left out: `{"pairs": n, "a": {status: n}, "b": {status: n}}`."""
        return {
            "pairs": self.left_out,
            "a": dict(sorted(self.left_out_a.items())),
            "b": dict(sorted(self.left_out_b.items())),
        }

    def left_out_note(self, unit: str) -> str | None:
        """`"18 trial pairs left out: B skipped 18"` (`unit`: what a pair is); `None` when none was."""
        if not self.left_out:
            return None
        reasons = [
            f"{side} {_NO_OUTCOME_WORDS.get(status, status)} {count}"
            for side, counts in (("A", self.left_out_a), ("B", self.left_out_b))
            for status, count in sorted(counts.items())
        ]
        return f"{_plural(self.left_out, unit)} left out: {', '.join(reasons)}"


def pair_outcomes(statuses: Iterable[tuple[str, str]]) -> Pairing:
    """Pair `(A's status, B's status)` of each trial (or case): only passed and failed ones pair.

    The one pairing rule of `proctor compare` and of the matrix's comparison against its baseline: an
    errored, skipped or inconclusive side is not an outcome, so its pair is left out and counted.
    """
    pairing = Pairing()
    for status_a, status_b in statuses:
        pairing.add(status_a, status_b)
    return pairing


def _has_outcome(case: StoredCase) -> bool:
    return any(status in OUTCOMES for status, _ in case.trials.values())


def _rate(case: StoredCase | None) -> float | None:
    if case is None:
        return None
    outcomes = [status for status, _ in case.trials.values() if status in OUTCOMES]
    return outcomes.count("passed") / len(outcomes) if outcomes else None


def _score(case: StoredCase | None) -> float | None:
    if case is None:
        return None
    scores = [score for status, score in case.trials.values() if status in OUTCOMES and score is not None]
    return sum(scores) / len(scores) if scores else None


def _flaky(case: StoredCase | None) -> bool:
    if case is None:
        return False
    statuses = {status for status, _ in case.trials.values()}
    return "passed" in statuses and "failed" in statuses


@dataclass(slots=True)
class CaseComparison:
    """One case in both runs."""

    name: str
    suite: str
    a: StoredCase | None
    b: StoredCase | None
    pairing: Pairing = field(default_factory=Pairing)
    """The trial pairs (by trial number) and the trials left out (not passed or failed on a side)."""

    @property
    def pairs(self) -> list[tuple[bool, bool]]:
        """`(A passed, B passed)` per trial number that passed or failed in both runs."""
        return self.pairing.pairs

    @property
    def unpaired(self) -> bool:
        """Whether the case had an outcome in A and has no trial pair to compare in B."""
        return self.a is not None and self.b is not None and _has_outcome(self.a) and not self.pairs

    @property
    def key(self) -> str:
        """The case key (B's when both have it)."""
        return (self.b or self.a).key  # type: ignore[union-attr]

    @property
    def change(self) -> CaseChange:
        """How the case's outcome moved from A to B."""
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        status_a, status_b = self.a.status, self.b.status
        if status_a == status_b:
            return "unchanged"
        if status_a in OUTCOMES and status_b in OUTCOMES:
            return "regressed" if status_a == "passed" else "fixed"
        if status_b not in OUTCOMES:  # B has no outcome (errored, skipped, inconclusive, incomplete): not a failure
            return _NO_OUTCOME_WORDS.get(status_b, "errored")
        return "recovered"  # B has an outcome where A had none: not a fix

    @property
    def check_changes(self) -> list[dict[str, Any]]:
        """Checks whose failure share moved between A and B (both scored them): `regressed` or `fixed`."""
        if self.a is None or self.b is None:
            return []
        changes = []
        for label, (failed_b, scored_b) in self.b.checks.items():
            failed_a, scored_a = self.a.checks.get(label, (0, 0))
            if not scored_a or not scored_b or failed_a / scored_a == failed_b / scored_b:
                continue
            change = "regressed" if failed_b / scored_b > failed_a / scored_a else "fixed"
            changes.append({"check": label, "change": change, "a": [failed_a, scored_a], "b": [failed_b, scored_b]})
        return changes

    @property
    def check_regressions(self) -> list[dict[str, Any]]:
        """The checks that fail more often in B than in A."""
        return [c for c in self.check_changes if c["change"] == "regressed"]

    @property
    def flaky(self) -> list[str]:
        """The runs (`A`, `B`) in which the case had both passed and failed trials."""
        return [side for side, case in (("A", self.a), ("B", self.b)) if _flaky(case)]

    @property
    def pass_rates(self) -> tuple[float | None, float | None]:
        """Trial pass rate in A and in B (errored trials left out)."""
        return _rate(self.a), _rate(self.b)

    @property
    def scores(self) -> tuple[float | None, float | None]:
        """Mean trial score in A and in B."""
        return _score(self.a), _score(self.b)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`proctor compare --json`)."""
        (rate_a, rate_b), (score_a, score_b) = self.pass_rates, self.scores
        return {
            "case": self.name,
            "suite": self.suite,
            "key": self.key,
            "change": self.change,
            "status": [None if self.a is None else self.a.status, None if self.b is None else self.b.status],
            "pass_rate": [rate_a, rate_b],
            "pass_rate_diff": None if rate_a is None or rate_b is None else round(rate_b - rate_a, 6),
            "score": [_round(score_a), _round(score_b)],
            "score_diff": None if score_a is None or score_b is None else round(score_b - score_a, 6),
            "pairs": {
                "both_passed": sum(1 for a, b in self.pairs if a and b),
                "a_only": sum(1 for a, b in self.pairs if a and not b),
                "b_only": sum(1 for a, b in self.pairs if b and not a),
                "both_failed": sum(1 for a, b in self.pairs if not a and not b),
            },
            "left_out": self.pairing.left_out_dict(),
            "flaky": self.flaky,
            "checks": self.check_changes,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(slots=True)
class Comparison:
    """Run B against run A."""

    a: str
    """Run A's id."""
    b: str
    """Run B's id."""
    cases: list[CaseComparison]
    alpha: float
    """The overall significance level (each of the two tests uses `alpha / 2`)."""
    mcnemar_p: float
    """McNemar's exact two-sided p-value over every trial pair."""
    score_interval: BootstrapInterval | None
    """Bootstrap interval of the mean per-case score difference (B - A), at confidence `1 - alpha / 2`."""

    @property
    def coverage(self) -> dict[str, int]:
        """How many cases each run covered and how many both did (the tests compare only those)."""
        return {
            "a": sum(1 for case in self.cases if case.a is not None),
            "b": sum(1 for case in self.cases if case.b is not None),
            "shared": sum(1 for case in self.cases if case.a is not None and case.b is not None),
        }

    @property
    def same_cases(self) -> bool:
        """Whether both runs covered the same cases."""
        return all(case.a is not None and case.b is not None for case in self.cases)

    @property
    def coverage_note(self) -> str | None:
        """What was compared when the runs covered different cases (`None` when they covered the same)."""
        if self.same_cases:
            return None
        counts = self.coverage
        return (
            f"the runs covered different cases (A {_plural(counts['a'], 'case')}, B {counts['b']}): the tests "
            f"compare the {_plural(counts['shared'], 'case')} both ran; "
            f"{counts['a'] - counts['shared']} only in A (removed), {counts['b'] - counts['shared']} only in B (added)"
        )

    @property
    def pairing(self) -> Pairing:
        """Every case's trial pairs and left-out trials, together."""
        total = Pairing()
        for case in self.cases:
            total.merge(case.pairing)
        return total

    @property
    def discordant(self) -> tuple[int, int]:
        """`(A passed and B failed, A failed and B passed)` trial pairs."""
        return self.pairing.discordant

    @property
    def pairs(self) -> int:
        """Trial pairs compared."""
        return sum(len(case.pairs) for case in self.cases)

    @property
    def unpaired_cases(self) -> list[CaseComparison]:
        """The cases that had an outcome in A and have no trial pair to compare in B."""
        return [case for case in self.cases if case.unpaired]

    @property
    def undecided_reason(self) -> str | None:
        """Why the comparison cannot say B is no worse than A (`None` when it can).

        No trial pair had an outcome on both sides, or a case that had an outcome in A has no trial pair
        to compare in B (B errored, was skipped or was inconclusive there).
        """
        if not self.pairs:
            return "no trial pair passed or failed in both runs"
        unpaired = self.unpaired_cases
        if not unpaired:
            return None
        names = ", ".join(case.name for case in unpaired[:5]) + (
            f" and {len(unpaired) - 5} more" if len(unpaired) > 5 else ""
        )
        return f"{_plural(len(unpaired), 'case')} with an outcome in A had no trial pair to compare in B: {names}"

    @property
    def undecided(self) -> bool:
        """Whether the verdict is `undecided`: it cannot say that B is no worse (and found no regression)."""
        return self.undecided_reason is not None and not self.regression

    @property
    def pass_fail_regression(self) -> bool:
        """B fails significantly more trial pairs than A."""
        worse, better = self.discordant
        return worse > better and self.mcnemar_p < self.alpha / 2

    @property
    def score_decides(self) -> bool:
        """Whether enough cases were paired for the score interval to count (`MIN_BOOTSTRAP_CASES`)."""
        return self.score_interval is not None and self.score_interval.n >= MIN_BOOTSTRAP_CASES

    @property
    def score_regression(self) -> bool:
        """B's case scores are significantly lower (the whole interval is below zero)."""
        return self.score_decides and self.score_interval is not None and self.score_interval.high < 0

    @property
    def regression(self) -> bool:
        """Whether B is significantly worse than A by either test."""
        return self.pass_fail_regression or self.score_regression

    @property
    def improvement(self) -> bool:
        """Whether B is significantly better than A by either test (and worse by neither)."""
        worse, better = self.discordant
        significant = (better > worse and self.mcnemar_p < self.alpha / 2) or (
            self.score_decides and self.score_interval is not None and self.score_interval.low > 0
        )
        return significant and not self.regression

    @property
    def verdict(self) -> str:
        """`regression`, `undecided`, `improvement` or `no significant difference` (the first that holds)."""
        if self.regression:
            return "regression"
        if self.undecided:
            return "undecided"
        return "improvement" if self.improvement else "no significant difference"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`proctor compare --json`)."""
        pairing = self.pairing
        worse, better = pairing.discordant
        interval = self.score_interval
        return {
            "a": self.a,
            "b": self.b,
            "verdict": self.verdict,
            "regression": self.regression,
            "undecided": self.undecided,
            "undecided_reason": self.undecided_reason,
            "unpaired_cases": [case.name for case in self.unpaired_cases],
            "alpha": self.alpha,
            "coverage": {**self.coverage, "same": self.same_cases},
            "pass_fail": {
                "pairs": len(pairing.pairs),
                "left_out": pairing.left_out_dict(),
                "a_only_passed": worse,
                "b_only_passed": better,
                "mcnemar_p": round(self.mcnemar_p, 6),
                "significant": self.mcnemar_p < self.alpha / 2 and worse != better,
            },
            "score": None
            if interval is None
            else {
                "mean_diff": round(interval.mean, 6),
                "low": round(interval.low, 6),
                "high": round(interval.high, 6),
                "confidence": interval.confidence,
                "cases": interval.n,
                "resamples": interval.resamples,
                "significant": self.score_decides and (interval.high < 0 or interval.low > 0),
            },
            "flaky": [c.name for c in self.cases if c.flaky],
            "check_regressions": [{"case": c.name, **change} for c in self.cases for change in c.check_regressions],
            "cases": [c.to_dict() for c in self.cases],
        }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def shared_case_keys(runs: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The cases (`case_identity` keys) every one of these results JSONs covered."""
    sets = [frozenset(case_identity(case) for case in data["cases"]) for data in runs]
    return frozenset.intersection(*sets) if sets else frozenset()


def restrict_run(data: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """A copy of a results JSON holding only the cases in `keys`, its summary figures recomputed over them.

    For laying runs that covered different cases side by side on the cases they share. The pass
    statistics (pass@k, intervals) are recomputed by the report; the counts (inconclusive, skipped and
    incomplete cases too, present only when some are, as in a results file), pass rate, trial counts (the
    planned ones: the kept cases'), tokens and known costs here. The input is not changed.
    """
    cases = [case for case in data["cases"] if case_identity(case) in keys]
    statuses = [case.get("status") for case in cases]
    trials = [trial for case in cases for trial in case.get("trials") or []]
    trial_statuses = [trial.get("status") for trial in trials]
    skipped = statuses.count("skipped")
    summary = {k: v for k, v in (data.get("summary") or {}).items() if k not in _OPTIONAL_COUNTS}
    summary.update(
        cases=len(cases),
        passed=statuses.count("passed"),
        failed=statuses.count("failed"),
        errored=statuses.count("error"),
        **{status: n for status in _OPTIONAL_COUNTS if (n := statuses.count(status))},
        pass_rate=round(statuses.count("passed") / (len(cases) - skipped), 6) if len(cases) > skipped else None,
        trials={
            **{k: v for k, v in (summary.get("trials") or {}).items() if k not in _OPTIONAL_TRIAL_COUNTS},
            "planned": sum(case.get("planned_trials") or len(case.get("trials") or []) for case in cases),
            "run": len(trials),
            "passed": trial_statuses.count("passed"),
            "failed": trial_statuses.count("failed"),
            "errored": trial_statuses.count("error"),
            **{status: n for status in _OPTIONAL_TRIAL_COUNTS if (n := trial_statuses.count(status))},
        },
        tokens={
            part: sum((case.get("tokens") or {}).get(part, 0) for case in cases)
            for part in ("prompt", "completion", "total")
        },
        costs=_costs(case.get("costs") or {} for case in cases),
        cases_of_run=len(data["cases"]),
    )
    return {**data, "summary": summary, "cases": cases}


_OPTIONAL_COUNTS = ("inconclusive", "skipped", "incomplete")
"""The case counts a results file's summary has only when some case has the status."""
_OPTIONAL_TRIAL_COUNTS = ("inconclusive", "skipped")
"""Likewise for its trial counts (a trial is never incomplete: it ran, or it is absent)."""


def _costs(parts: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Known USD cost per role summed over cases (`cost_usd` stays `None` for a role with no known cost)."""
    totals: dict[str, dict[str, Any]] = {}
    for costs in parts:
        for role, part in costs.items():
            total = totals.setdefault(role, {"cost_usd": None})
            if part.get("cost_usd") is not None:
                total["cost_usd"] = round((total["cost_usd"] or 0.0) + part["cost_usd"], 8)
    return totals


def _pair_cases(
    a_cases: Sequence[StoredCase], b_cases: Sequence[StoredCase]
) -> list[tuple[StoredCase | None, StoredCase | None]]:
    """Match cases by key, then unmatched ones by (suite, name) when that is unique on both sides."""
    b_by_key = {c.key: c for c in b_cases}
    matched: list[tuple[StoredCase | None, StoredCase | None]] = []
    used: set[str] = set()
    leftover_a: list[StoredCase] = []
    for case in a_cases:
        other = b_by_key.get(case.key)
        if other is not None:
            matched.append((case, other))
            used.add(other.key)
        else:
            leftover_a.append(case)
    leftover_b = [c for c in b_cases if c.key not in used]

    def by_name(cases: list[StoredCase]) -> dict[tuple[str, str], StoredCase]:
        counts: dict[tuple[str, str], int] = {}
        for c in cases:
            counts[(c.suite, c.name)] = counts.get((c.suite, c.name), 0) + 1
        return {(c.suite, c.name): c for c in cases if counts[(c.suite, c.name)] == 1}

    b_by_name = by_name(leftover_b)
    unique_a = by_name(leftover_a)
    for case in leftover_a:
        other = b_by_name.get((case.suite, case.name)) if (case.suite, case.name) in unique_a else None
        matched.append((case, other))
        if other is not None:
            used.add(other.key)
    matched.extend((None, c) for c in leftover_b if c.key not in used)
    return matched


def compare_runs(
    a_id: str,
    a_cases: Sequence[StoredCase],
    b_id: str,
    b_cases: Sequence[StoredCase],
    *,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare run B against run A.

    Args:
        a_id: Run A's id (the baseline).
        a_cases: Its cases.
        b_id: Run B's id (the candidate).
        b_cases: Its cases.
        alpha: Overall significance level for calling a regression.
        resamples: Bootstrap resamples.
        seed: Bootstrap seed (the same seed gives the same interval).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    cases: list[CaseComparison] = []
    differences: list[float] = []
    for a, b in _pair_cases(a_cases, b_cases):
        reference = a if a is not None else b
        assert reference is not None
        comparison = CaseComparison(reference.name, reference.suite, a, b)
        if a is not None and b is not None:
            numbers = sorted(set(a.trials) & set(b.trials))
            comparison.pairing = pair_outcomes((a.trials[n][0], b.trials[n][0]) for n in numbers)
            score_a, score_b = comparison.scores
            if score_a is not None and score_b is not None:
                differences.append(score_b - score_a)
        cases.append(comparison)
    result = Comparison(a_id, b_id, cases, alpha, 1.0, None)
    worse, better = result.discordant
    result.mcnemar_p = mcnemar_exact(worse, better)
    result.score_interval = paired_bootstrap(differences, confidence=1 - alpha / 2, resamples=resamples, seed=seed)
    return result
