"""A run's aggregates, computed once from its typed trials: each case's figures and the run's summary.

The JSON writer, the console, the `--ci` summary and the exit code all read these objects; none of them
re-derives a figure. Readers of results *files* (`report --k`, `compare`) recompute the pass statistics
with `with_k`, through the same functions.
"""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict

from proctor.scoring import CaseOutcome, PassStatistics, case_outcome, pass_statistics, percentile, wilson_interval
from proctor.transcript import Usage

if TYPE_CHECKING:
    from proctor.results._model import TrialResult

__all__ = [
    "CASE_STATUSES",
    "TRIAL_STATUSES",
    "CaseAggregate",
    "FailingCheck",
    "RoleCosts",
    "RunAggregate",
    "TrialCounts",
    "add_costs",
    "aggregate_case",
    "aggregate_one",
    "aggregate_run",
    "incomplete_case",
    "mean_statistics",
    "sum_costs",
    "zero_costs",
]

TRIAL_STATUSES = ("passed", "failed", "error", "inconclusive", "skipped")
"""Every trial status (each is a case status too)."""
CASE_STATUSES = (*TRIAL_STATUSES, "incomplete")
"""Every case status: a trial's, or `incomplete` (the run stopped before all the case's planned trials ran)."""


class RoleCosts(TypedDict):
    """What one role (agent, judge, simulator) used: calls, tokens and USD (`None`: no price known)."""

    calls: int
    cached_calls: int
    prompt: int
    completion: int
    cost_usd: float | None


def zero_costs() -> RoleCosts:
    """Nothing used yet."""
    return {"calls": 0, "cached_calls": 0, "prompt": 0, "completion": 0, "cost_usd": None}


def add_costs(total: RoleCosts, part: RoleCosts | dict[str, Any]) -> None:
    """Add `part` into `total`; an unknown price stays unknown (`None`), never a silent 0."""
    total["calls"] += part.get("calls", 0)
    total["cached_calls"] += part.get("cached_calls", 0)
    total["prompt"] += part.get("prompt", 0)
    total["completion"] += part.get("completion", 0)
    cost = part.get("cost_usd")
    if cost is not None:
        total["cost_usd"] = round((total["cost_usd"] or 0.0) + cost, 8)


def _copied_costs(part: RoleCosts | dict[str, Any]) -> RoleCosts:
    """`part` added to `zero_costs()` (what `add_costs` makes of it), in one step."""
    cost = part.get("cost_usd")
    return {
        "calls": 0 + part.get("calls", 0),
        "cached_calls": 0 + part.get("cached_calls", 0),
        "prompt": 0 + part.get("prompt", 0),
        "completion": 0 + part.get("completion", 0),
        "cost_usd": None if cost is None else round(0.0 + cost, 8),
    }


def _copied_role(part: RoleCosts) -> RoleCosts:
    """`_copied_costs` of a complete `RoleCosts` (as `TrialResult.costs` gives), by subscript (~2x sooner)."""
    cost = part["cost_usd"]
    return {
        "calls": 0 + part["calls"],
        "cached_calls": 0 + part["cached_calls"],
        "prompt": 0 + part["prompt"],
        "completion": 0 + part["completion"],
        "cost_usd": None if cost is None else round(0.0 + cost, 8),
    }


def _whole(value: Any) -> bool:
    """Whether `0 + value` is `value` itself: an `int` (not a bool, not a float: `0 + -0.0` is `0.0`)."""
    return value.__class__ is int


def _one_trial_costs(costs: dict[str, RoleCosts]) -> dict[str, RoleCosts]:
    """`sum_costs([costs])`: a case's costs of its one trial's, the trial's own dict when the copy would equal it.

    It does whenever each count is an `int` and each price is `None` or a positive (or zero) float rounded
    to 8 digits, which is how `TrialResult.costs` counts them (rounding a rounded float again gives it
    back; only `-0.0` would come back as `0.0`). The dict is then shared by the trial and its case, read-only
    for both (as every aggregate is).
    """
    for part in costs.values():
        cost = part["cost_usd"]
        if not (  # each count `_whole`, written out (a call each: once per case)
            part["calls"].__class__ is int
            and part["cached_calls"].__class__ is int
            and part["prompt"].__class__ is int
            and part["completion"].__class__ is int
            and (cost is None or (cost.__class__ is float and cost > 0.0 and cost == round(cost, 8)))
        ):
            return {role: _copied_role(part) for role, part in costs.items()}
    return costs


def sum_costs(items: Iterable[dict[str, RoleCosts]]) -> dict[str, RoleCosts]:
    """Costs by role summed over trials or cases (agent and judge always present).

    What `add_costs` makes of them on `zero_costs()` one after the other, to the bit: the counts of a
    role are summed by `sum` when they are all integers (an exact sum in any order), else one by one;
    its prices one by one, each rounded.
    """
    listed = list(items)
    if listed and listed[0] and _same_roles(listed):  # the common case: every item has the first one's roles
        return {role: _summed([costs[role] for costs in listed]) for role in listed[0]}
    by_role: dict[str, list[RoleCosts | dict[str, Any]]] = {}
    for costs in listed:
        for role, part in costs.items():
            parts = by_role.get(role)
            if parts is None:
                by_role[role] = [part]
            else:
                parts.append(part)
    if not by_role:
        return {"agent": zero_costs(), "judge": zero_costs()}
    return {role: _summed(parts) for role, parts in by_role.items()}


def _same_roles(items: list[dict[str, RoleCosts]]) -> bool:
    """Whether every item has the first item's roles (then `sum_costs` groups them by role in that order)."""
    roles = items[0].keys()
    return all(costs.keys() == roles for costs in items)


_COUNTS = ("calls", "cached_calls", "prompt", "completion")


def _summed(parts: list[RoleCosts | dict[str, Any]]) -> RoleCosts:
    """One role's costs summed over `parts` (see `sum_costs`)."""
    try:
        columns = list(zip(*map(_ROLE_FIELDS, parts), strict=True))
    except KeyError:  # a part without some field (an arm's simulator usage): the general way
        total = _copied_costs(parts[0])
        for part in parts[1:]:
            add_costs(total, part)
        return total
    summed: dict[str, Any] = {}
    for name, column in zip(_COUNTS, columns, strict=False):
        value = sum(column)
        if value.__class__ is not int:  # a float among them: added in order, as `add_costs` does
            value = 0
            for item in column:
                value += item
        summed[name] = value
    cost = None
    for item in columns[4]:
        if item is not None:
            cost = round((cost or 0.0) + item, 8)
    summed["cost_usd"] = cost
    return summed  # type: ignore[return-value]


_ROLE_FIELDS = operator.itemgetter(*_COUNTS, "cost_usd")


@dataclass(frozen=True, slots=True)
class FailingCheck:
    """A check that failed in at least one trial of a case."""

    name: str
    type: str
    turn: int | None
    """0-based turn the check is on; `None` for whole-conversation checks."""
    failed: int
    """Trials it failed in."""
    ran: int
    """Trials it was scored in (passed or failed)."""
    reason: str | None
    """Its first failure's reason."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a case's `failing_checks` entry)."""
        return {
            "name": self.name,
            "type": self.type,
            "turn": self.turn,
            "failed": self.failed,
            "ran": self.ran,
            "reason": self.reason,
        }


def failing_checks(trials: Sequence[TrialResult]) -> tuple[FailingCheck, ...]:
    """Every check that failed in at least one trial, in check order (so a passing case still shows them)."""
    found: dict[tuple[str, str, int | None], list[Any]] = {}
    for trial in trials:
        for check in trial.checks:
            entry = found.setdefault((check.name, check.type, check.turn), [0, 0, None])
            if check.status == "failed":
                entry[0] += 1
                entry[1] += 1
                entry[2] = entry[2] or check.reason
            elif check.status == "passed":
                entry[1] += 1
    return tuple(FailingCheck(n, t, turn, f, r, why) for (n, t, turn), (f, r, why) in found.items() if f)


@dataclass(slots=True)
class CaseAggregate:
    """A case's figures over its trials (read-only by convention: `CaseResult.summarize` shares one).

    Not a frozen dataclass: a frozen one's `__init__` costs ~7 µs for these twelve fields, against
    ~0.6 µs, for every case of a run (and its dicts never made it hashable).
    """

    status: str
    """`passed`, `failed`, `error`, `inconclusive` or `skipped` (see `scoring.case_outcome`), or `incomplete`
    (the run stopped before all its planned trials ran: see `incomplete_case`)."""
    reason: str | None
    """Why every trial was skipped (a `skipped` case), or how many trials ran (an `incomplete` one)."""
    pass_rate: float | None
    """Passed / scored trials; `None` when none was scored."""
    statistics: PassStatistics
    """pass@k, pass^k and the Wilson interval of the trial pass rate."""
    avg_score: float | None
    """Mean score of the trials that were scored and did not error."""
    trial_counts: dict[str, int]
    """Trials by status (`passed`, `failed` and `error` always present)."""
    p50_ms: float | None
    """Median reply latency over every trial."""
    p95_ms: float | None
    """95th percentile reply latency."""
    tokens: Usage
    """Agent tokens over every trial."""
    costs: dict[str, RoleCosts]
    """Costs by role over every trial."""
    retries: int
    """Agent calls re-sent after retryable failures."""
    failing_checks: tuple[FailingCheck, ...]
    """Checks that failed in at least one trial."""
    statistics_fields: StatisticsFields | None = field(default=None, repr=False, compare=False)
    """`statistics` as the JSON has them (`_statistics_fields`), when the caller has them (made once per
    distinct set of trial statuses)."""
    planned: int | None = None
    """The trials the case planned, for an `incomplete` case (in its JSON as `planned_trials`); `None`
    otherwise (every planned trial ran)."""

    @property
    def passed(self) -> bool:
        """Whether the case passed."""
        return self.status == "passed"

    @property
    def known_cost(self) -> float | None:
        """USD over every role whose price is known; `None` when none is."""
        known = [part["cost_usd"] for part in self.costs.values() if part["cost_usd"] is not None]
        return sum(known) if known else None

    def to_dict(self) -> dict[str, Any]:
        """The case's aggregate fields of the results JSON (between its identity and its trials)."""
        fields = self.case_fields("", "", "", None, [], 0.0)
        for key in _CASE_IDENTITY:
            del fields[key]
        del fields["min_pass_rate"]
        return fields

    def case_fields(
        self, name: str, suite: str, file: str, description: str | None, tags: list[str], min_pass_rate: float
    ) -> dict[str, Any]:
        """A case's fields of the results JSON before its trials: its identity, `to_dict()`, its `min_pass_rate`.

        One dict, made at its size (a `**` spread inside the literal would split it into three dicts merged
        one into the next); a skipped case's `reason` follows its `status` (`_with_reason`).
        """
        k, at_k, hat_k, interval, pass_k = self.statistics_fields or _statistics_fields(self.statistics)
        status, p50 = self.status, _round(self.p50_ms, 3)
        fields: dict[str, Any] = {
            "name": name,
            "suite": suite,
            "file": file,
            "description": description,
            "tags": tags,
            "status": status,
            "passed": status == "passed",
            "pass_rate": _round(self.pass_rate),
            "k": k,
            "pass_at_k": at_k,
            "pass_hat_k": hat_k,
            "pass_rate_ci": None if interval is None else list(interval),
            "pass_k": pass_k,
            "avg_score": _round(self.avg_score),
            "trial_counts": self.trial_counts,
        }  # 15 keys: a longer literal is built by growing an empty dict (~20 % slower); the rest assigned
        if self.planned is not None:  # an incomplete case: how many trials it planned (`trial_counts`: that ran)
            fields["planned_trials"] = self.planned
        # one latency: its p95 is its p50 (the same float), rounded once
        fields["latency_ms"] = {"p50": p50, "p95": p50 if self.p95_ms is self.p50_ms else _round(self.p95_ms, 3)}
        fields["tokens"] = self.tokens.to_dict()
        fields["costs"] = self.costs
        fields["retries"] = self.retries
        fields["failing_checks"] = [check.to_dict() for check in self.failing_checks] if self.failing_checks else []
        fields["min_pass_rate"] = min_pass_rate
        return fields if self.reason is None else _with_reason(fields, self.reason)


def _with_reason(fields: dict[str, Any], reason: str) -> dict[str, Any]:
    """`fields` with `reason` after `status` (where a skipped or incomplete case says why)."""
    items = list(fields.items())
    at = list(fields).index("status") + 1
    return dict([*items[:at], ("reason", reason), *items[at:]])


_CASE_IDENTITY = ("name", "suite", "file", "description", "tags")
"""The keys of a case's identity in its results JSON (`CaseAggregate.case_fields`)."""


StatisticsFields = tuple[Any, float | None, float | None, tuple[float, ...] | None, float | None]
"""A case's `k`, `pass_at_k`, `pass_hat_k`, `pass_rate_ci` and `pass_k` as its JSON has them."""


@functools.lru_cache(maxsize=1024)
def _statistics_fields(statistics: PassStatistics) -> StatisticsFields:
    """`k`, `pass_at_k`, `pass_hat_k`, `pass_rate_ci` and `pass_k` as the JSON has them (rounded once per value)."""
    fields = statistics.to_dict()
    interval = fields["pass_rate_ci"]
    return (
        fields["k"],
        fields["pass_at_k"],  # type: ignore[return-value]
        fields["pass_hat_k"],
        None if interval is None else tuple(interval),  # type: ignore[arg-type]
        _round(statistics.pass_hat_k),
    )


@functools.lru_cache(maxsize=1024)
def _by_statuses(
    statuses: tuple[str, ...], min_pass_rate: float, k: int | None
) -> tuple[CaseOutcome, PassStatistics, tuple[tuple[str, int], ...], StatisticsFields]:
    """What a case's trial statuses decide: its outcome, pass statistics (and their JSON fields) and counts by status.

    Pure functions of the statuses, so computed once per distinct tuple (a large run has few): ~20 µs a
    case otherwise, most of a one-trial case's aggregate.
    """
    counts = {status: statuses.count(status) for status in TRIAL_STATUSES}
    statistics = pass_statistics(statuses, k)
    return (
        case_outcome(statuses, min_pass_rate=min_pass_rate),
        statistics,
        tuple((s, n) for s, n in counts.items() if n or s in ("passed", "failed", "error")),
        _statistics_fields(statistics),
    )


def aggregate_case(trials: Sequence[TrialResult], *, min_pass_rate: float, k: int | None) -> CaseAggregate:
    """Compute a case's figures from its trials (sorted by trial number)."""
    if len(trials) == 1:
        return aggregate_one(trials[0], min_pass_rate, k)
    return _aggregate_trials(trials, min_pass_rate, k)


def _aggregate_trials(trials: Sequence[TrialResult], min_pass_rate: float, k: int | None) -> CaseAggregate:
    """`aggregate_case` for any number of trials."""
    statuses = tuple([t.status for t in trials])
    outcome, statistics, counts, statistics_fields = _by_statuses(statuses, min_pass_rate, k)
    scores = [t.score for t in trials if t.score is not None and t.status != "error"]
    latencies = [lat for t in trials for lat in t.latencies()]
    p50 = percentile(latencies, 50)
    skipped = None
    if outcome.status == "skipped":
        skipped = "; ".join(dict.fromkeys(t.reason or "no reason given" for t in trials if t.status == "skipped"))
    return CaseAggregate(
        status=outcome.status,
        reason=skipped,
        pass_rate=outcome.pass_rate,
        statistics=statistics,
        avg_score=sum(scores) / len(scores) if scores else None,
        trial_counts=dict(counts),
        p50_ms=p50,
        p95_ms=p50 if len(latencies) == 1 else percentile(latencies, 95),  # one value: every percentile is it
        tokens=sum((t.usage for t in trials), Usage()),
        costs=sum_costs([t.costs() for t in trials]),
        retries=sum(t.retries for t in trials),
        failing_checks=failing_checks(trials),
        statistics_fields=statistics_fields,
    )


def aggregate_one(trial: TrialResult, min_pass_rate: float, k: int | None) -> CaseAggregate:
    """`aggregate_case` of a case's one trial (the common case: ~3x sooner), the same figures to the bit.

    Each sum of the general path is written out for one term (`0 + x`, `(0 + x) / 1`), so that even a
    `-0.0` or an integer comes out as it does there.
    """
    status = trial.status
    outcome, statistics, counts, statistics_fields = _by_statuses((status,), min_pass_rate, k)
    score = trial.score
    latencies = []  # `trial.latencies()`, without a list comprehension's call
    for message in trial.turns:
        if message.role == "assistant" and message.latency_ms is not None:
            latencies.append(message.latency_ms)
    p50 = percentile(latencies, 50)
    usage = trial.usage
    checks = trial.checks
    failing: tuple[FailingCheck, ...] = ()
    for check in checks:
        if check.status == "failed":  # any failed check: they are listed (else none is, without a pass over them)
            failing = failing_checks((trial,))
            break
    return CaseAggregate(
        outcome.status,
        (trial.reason or "no reason given") if outcome.status == "skipped" else None,
        outcome.pass_rate,
        statistics,
        (0 + score) / 1 if score is not None and status != "error" else None,
        dict(counts),
        p50,
        p50 if len(latencies) == 1 else percentile(latencies, 95),
        usage
        if usage.prompt_tokens.__class__ is int and usage.completion_tokens.__class__ is int  # both `_whole`
        else Usage(0 + usage.prompt_tokens, 0 + usage.completion_tokens),
        _one_trial_costs(trial.costs()),
        0 + trial.retries,
        failing,
        statistics_fields,
    )


def incomplete_case(aggregate: CaseAggregate, ran: int, planned: int, stopped: str | None) -> CaseAggregate:
    """`aggregate` of a case of which only `ran` of its `planned` trials ran: `incomplete`, saying so.

    Neither passed nor errored: the trials that did not run checked nothing, and the run, not the agent,
    stopped them. The figures of the trials that ran are kept as they are (pass rate, scores, counts);
    the reason says how the run ended (`stopped`: `interrupted`, `aborted`; `None` while it runs) and how
    many trials ran, e.g. `interrupted: 1 of 3 trials ran`.
    """
    noun = "trial" if planned == 1 else "trials"
    reason = f"{ran} of {planned} {noun} ran" if stopped is None else f"{stopped}: {ran} of {planned} {noun} ran"
    return replace(aggregate, status="incomplete", reason=reason, planned=planned)


@dataclass(frozen=True, slots=True)
class TrialCounts:
    """A run's trials by status."""

    planned: int
    run: int
    passed: int
    failed: int
    errored: int
    inconclusive: int = 0
    skipped: int = 0

    def to_dict(self) -> dict[str, int]:
        """The JSON form (inconclusive and skipped only when there are some)."""
        return {
            "planned": self.planned,
            "run": self.run,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            **({"inconclusive": self.inconclusive} if self.inconclusive else {}),
            **({"skipped": self.skipped} if self.skipped else {}),
        }


@dataclass(frozen=True, slots=True)
class RunAggregate:
    """A run's summary: the figures its results JSON (`summary`), the console and the exit code show."""

    cases: int
    passed: int
    failed: int
    errored: int
    inconclusive: int
    skipped: int
    pass_rate: float | None
    """Passed / cases not skipped (skipped cases checked nothing; incomplete ones count, as not passed)."""
    k: int | None
    """The run's `--k`; `None`: each case's number of scored trials."""
    pass_at_k: float | None
    """Mean pass@k over the cases that have it."""
    pass_hat_k: float | None
    """Mean pass^k over the cases that have it."""
    pass_rate_ci: tuple[float, float] | None
    """95 % Wilson interval of the case pass rate."""
    trials: TrialCounts
    trial_pass_rate_ci: tuple[float, float] | None
    """95 % Wilson interval of passed / (passed + failed) trials."""
    checks: dict[str, int]
    """Check results by status (`passed`, `failed`, `error`, `skipped`)."""
    skipped_check_reasons: tuple[str, ...]
    """The distinct reasons of skipped checks, sorted."""
    tokens: Usage
    retries: int
    costs: dict[str, RoleCosts]
    incomplete: int = 0
    """Cases the run stopped before all their planned trials ran (neither passed nor errored)."""

    def to_dict(self) -> dict[str, Any]:
        """The results JSON's `summary`."""
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            **({"inconclusive": self.inconclusive} if self.inconclusive else {}),
            **({"skipped": self.skipped} if self.skipped else {}),
            **({"incomplete": self.incomplete} if self.incomplete else {}),
            "pass_rate": _round(self.pass_rate),
            "k": self.k,
            "pass_at_k": _round(self.pass_at_k),
            "pass_hat_k": _round(self.pass_hat_k),
            "pass_rate_ci": _interval(self.pass_rate_ci),
            "trials": self.trials.to_dict(),
            "trial_pass_rate_ci": _interval(self.trial_pass_rate_ci),
            "checks": self.checks,
            "tokens": self.tokens.to_dict(),
            "retries": self.retries,
            "costs": self.costs,
        }


def mean_statistics(
    statuses: Sequence[str], at_k: Iterable[float | None], hat_k: Iterable[float | None]
) -> tuple[float | None, float | None, tuple[float, float] | None]:
    """Over cases: mean pass@k, mean pass^k (each over the cases that have it) and the case pass rate's interval."""
    passed = statuses.count("passed")
    return (
        _mean([v for v in at_k if v is not None]),
        _mean([v for v in hat_k if v is not None]),
        wilson_interval(passed, len(statuses) - statuses.count("skipped")),
    )


def aggregate_run(
    trials: Sequence[Sequence[TrialResult]], cases: Sequence[CaseAggregate], *, k: int | None, planned: int
) -> RunAggregate:
    """Compute a run's summary from each case's trials and aggregate (in the same order)."""
    statuses = [c.status for c in cases]
    every = [t for case_trials in trials for t in case_trials]
    by_status = [t.status for t in every]
    checks = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    skipped_reasons: set[str] = set()
    for trial in every:
        for check in trial.checks:
            if check.status in checks:
                checks[check.status] += 1
            if check.status == "skipped":
                skipped_reasons.add(check.reason)
    by_case, by_trial = Counter(statuses), Counter(by_status)  # one pass each, not one `count` a status
    count, skipped = len(cases), by_case["skipped"]
    figures = [c.statistics_fields or _statistics_fields(c.statistics) for c in cases]
    at_k, hat_k = _mean([f[1] for f in figures if f[1] is not None]), _mean([f[2] for f in figures if f[2] is not None])
    # the cases' rounded figures, as `with_k` reads them from a results file (`mean_statistics`)
    interval = wilson_interval(by_case["passed"], count - skipped)
    passed_trials, failed_trials = by_trial["passed"], by_trial["failed"]
    return RunAggregate(
        cases=count,
        passed=by_case["passed"],
        failed=by_case["failed"],
        errored=by_case["error"],
        inconclusive=by_case["inconclusive"],
        skipped=skipped,
        pass_rate=by_case["passed"] / (count - skipped) if count > skipped else None,
        k=k,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        pass_rate_ci=interval,
        trials=TrialCounts(
            planned=planned,
            run=len(every),
            passed=passed_trials,
            failed=failed_trials,
            errored=by_trial["error"],
            inconclusive=by_trial["inconclusive"],
            skipped=by_trial["skipped"],
        ),
        trial_pass_rate_ci=wilson_interval(passed_trials, passed_trials + failed_trials),
        checks=checks,
        skipped_check_reasons=tuple(sorted(skipped_reasons)),
        tokens=Usage(sum([c.tokens.prompt_tokens for c in cases]), sum([c.tokens.completion_tokens for c in cases])),
        retries=sum([c.retries for c in cases]),
        costs=sum_costs(c.costs for c in cases),
        incomplete=by_case["incomplete"],
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: float | None, digits: int = 6) -> float | None:
    """`round(value, digits)`; a whole number is returned as it is (what `round` returns, ~10x sooner)."""
    if value is None or (value.__class__ is float and value.is_integer()):
        return value
    return round(value, digits)


def _interval(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [round(v, 6) for v in interval]
