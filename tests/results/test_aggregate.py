"""A run's aggregates are computed once, from the typed trials, and agree with what a reader recomputes."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.checks import CheckResult
from proctor.results import CaseResult, RunResult, TrialResult, with_k
from proctor.results._aggregate import (
    TRIAL_STATUSES,
    _aggregate_trials,
    add_costs,
    aggregate_case,
    failing_checks,
    sum_costs,
    zero_costs,
)
from proctor.scoring import case_outcome, pass_statistics, percentile
from proctor.transcript import Message, Usage


def trial(key: str, number: int, status: str, *, latency: float = 5.0) -> TrialResult:
    check_status = {"passed": "passed", "failed": "failed"}.get(status, "skipped" if status == "skipped" else "error")
    return TrialResult(
        case_key=key,
        trial=number,
        status=status,
        score={"passed": 1.0, "failed": 0.0}.get(status),
        turns=[Message("user", "hi"), Message("assistant", "hello", latency_ms=latency)],
        checks=[CheckResult("says hello", "contains", check_status, None, reason=f"reason {number}", turn=0)],
        reason="no judge model" if status == "skipped" else None,
    )


def run_of(statuses: list[list[str]], k: int | None = None) -> RunResult:
    cases = [
        CaseResult(f"c{i}", "s", "s.yaml", [], 0.5, [trial(f"s.yaml::c{i}", n + 1, st) for n, st in enumerate(sts)])
        for i, sts in enumerate(statuses)
    ]
    return RunResult("r", "2026-11-25T00:00:00+00:00", "m", "t", cases, planned_trials=sum(map(len, statuses)), k=k)


def test_summary_is_computed_once_and_again_only_when_trials_change() -> None:
    run = run_of([["passed", "failed"], ["passed"]])
    first = run.summary
    assert run.summary is first  # no second computation for the console, the --ci JSON, the exit code
    assert run.to_dict()["summary"] == first.to_dict()
    case = run.cases[1]
    assert case.summarize() is case.summarize()
    case.trials.append(trial("s.yaml::c1", 2, "failed"))
    assert run.summary is not first and run.summary.trials.run == 4
    assert case.summarize().trial_counts == {"passed": 1, "failed": 1, "error": 0}


def test_attributes_match_the_written_json() -> None:
    run = run_of([["passed", "passed"], ["failed", "error"], ["skipped"]])
    data = json.loads(json.dumps(run.to_dict()))
    summary = run.summary
    assert (summary.cases, summary.passed, summary.failed, summary.errored, summary.skipped) == (3, 1, 0, 1, 1)
    assert data["summary"]["pass_rate"] == summary.pass_rate == 0.5  # skipped cases are not in the rate
    assert summary.skipped_check_reasons == ("reason 1",)
    case = run.cases[2].summarize()
    assert case.status == "skipped" and case.reason == "no judge model" == data["cases"][2]["reason"]
    failing = run.cases[1].summarize().failing_checks
    assert [(f.name, f.failed, f.ran, f.reason) for f in failing] == [("says hello", 1, 1, "reason 1")]
    assert data["cases"][1]["failing_checks"] == [f.to_dict() for f in failing]


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(st.lists(st.sampled_from(TRIAL_STATUSES), min_size=1, max_size=5), min_size=1, max_size=6),
    k=st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
)
def test_a_reader_recomputing_from_the_file_gets_the_same_figures(statuses: list[list[str]], k: int | None) -> None:
    """`with_k` (what `report --k` runs over a results file) and the writer's aggregates agree."""
    written = json.loads(json.dumps(run_of(statuses, k).to_dict()))
    again = with_k(written, k)
    for key in ("k", "pass_at_k", "pass_hat_k", "pass_rate_ci", "trial_pass_rate_ci"):
        assert again["summary"][key] == written["summary"][key], key
    for mine, theirs in zip(written["cases"], again["cases"], strict=True):
        for key in ("k", "pass_at_k", "pass_hat_k", "pass_rate_ci", "pass_k"):
            assert mine[key] == theirs[key], key


# The case aggregate as Proctor computed it before the one-trial path and the memoized statuses (issue
# 22), kept verbatim as the reference: the faster path must give the same figures to the bit.
def _reference_costs(items: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {}
    for costs in items:
        for role, part in costs.items():
            total = totals.setdefault(role, zero_costs())
            total["calls"] += part.get("calls", 0)
            total["cached_calls"] += part.get("cached_calls", 0)
            total["prompt"] += part.get("prompt", 0)
            total["completion"] += part.get("completion", 0)
            cost = part.get("cost_usd")
            if cost is not None:
                total["cost_usd"] = round((total["cost_usd"] or 0.0) + cost, 8)
    return totals or {"agent": zero_costs(), "judge": zero_costs()}


def _reference_round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def _reference_fields(trials: list[TrialResult], *, min_pass_rate: float, k: int | None) -> dict[str, Any]:
    statuses = [t.status for t in trials]
    outcome = case_outcome(statuses, min_pass_rate=min_pass_rate)
    scores = [t.score for t in trials if t.score is not None and t.status != "error"]
    latencies = [lat for t in trials for lat in t.latencies()]
    counts = {status: statuses.count(status) for status in TRIAL_STATUSES}
    skipped = "; ".join(dict.fromkeys(t.reason or "no reason given" for t in trials if t.status == "skipped"))
    stats = pass_statistics(statuses, k)
    tokens = sum((t.usage for t in trials), Usage())
    return {
        "status": outcome.status,
        **({"reason": skipped} if outcome.status == "skipped" else {}),
        "passed": outcome.status == "passed",
        "pass_rate": _reference_round(outcome.pass_rate),
        **stats.to_dict(),
        "pass_k": _reference_round(stats.pass_hat_k),
        "avg_score": _reference_round(sum(scores) / len(scores) if scores else None),
        "trial_counts": {s: n for s, n in counts.items() if n or s in ("passed", "failed", "error")},
        "latency_ms": {
            "p50": _reference_round(percentile(latencies, 50), 3),
            "p95": _reference_round(percentile(latencies, 95), 3),
        },
        "tokens": tokens.to_dict(),
        "costs": _reference_costs([t.costs() for t in trials]),
        "retries": sum(t.retries for t in trials),
        "failing_checks": [check.to_dict() for check in failing_checks(trials)],
    }


_FIELDS = [f.name for f in fields(TrialResult) if not f.name.startswith("_")]
_SCORES = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.0, 0.5, 1 / 3, 0.8000004]), st.integers(0, 1))
_LATENCIES = st.lists(st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False)), max_size=3)
_COSTS = st.one_of(st.none(), st.sampled_from([0.0, 1e-9, 0.000123456789, 2.5, 3]))


@st.composite
def _trials(draw: st.DrawFn, number: int) -> TrialResult:
    status = draw(st.sampled_from(TRIAL_STATUSES))
    turns: list[Message] = []
    for latency in draw(_LATENCIES):
        turns += [Message("user", "hi"), Message("assistant", "hello", latency_ms=latency)]
    check = draw(st.sampled_from(["passed", "failed", "error", "skipped"]))
    judge = {"judge": {"usage": {"prompt": 7, "completion": 2}, "cost_usd": draw(_COSTS), "calls": 1}}
    return TrialResult(
        case_key="s.yaml::c",
        trial=number,
        status=status,
        score=draw(_SCORES),
        turns=turns,
        checks=[CheckResult("says hello", "contains", check, None, reason="why", turn=0, details=judge)],
        retries=draw(st.integers(0, 2)),
        usage=Usage(draw(st.integers(0, 50)), draw(st.integers(0, 50))),
        agent_cost_usd=draw(_COSTS),
        reason=draw(st.sampled_from([None, "no judge model"])),
    )


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 4).flatmap(lambda n: st.tuples(*(_trials(i + 1) for i in range(n)))),
    st.sampled_from([0.5, 0.8, 1.0]),
    st.sampled_from([None, 1, 2]),
)
def test_case_aggregates_are_those_of_the_reference_computation(
    trials: tuple[TrialResult, ...], min_pass_rate: float, k: int | None
) -> None:
    reference = _reference_fields(list(trials), min_pass_rate=min_pass_rate, k=k)
    fast = aggregate_case(list(trials), min_pass_rate=min_pass_rate, k=k).to_dict()
    assert json.dumps(fast) == json.dumps(reference)  # same keys, order and values (-0.0 and ints included)
    if len(trials) == 1:  # the one-trial path and the general one agree
        assert json.dumps(_aggregate_trials(trials, min_pass_rate, k).to_dict()) == json.dumps(reference)
    case = CaseResult("c", "s", "s.yaml", [], min_pass_rate, list(trials))
    assert case.summarize(k) is case.summarize(k)  # computed once
    identity = {"name": "c", "suite": "s", "file": "s.yaml", "description": None, "tags": []}
    expected = {**identity, **reference, "min_pass_rate": min_pass_rate}
    assert json.dumps(case.aggregate_fields(k)) == json.dumps(expected)  # the one-literal case fields
    assert json.loads(case.to_json(k)) == json.loads(json.dumps(case.to_dict(k)))


def _costs_step_by_step(trial: TrialResult) -> dict[str, Any]:
    """A trial's costs summed step by step with `add_costs`, as a run without simulated arms counts them."""
    judge = zero_costs()
    for check in trial.checks:
        call = (check.details or {}).get("judge")
        if call:
            calls = call.get("calls", 1)
            usage = {"prompt": call["usage"]["prompt"], "completion": call["usage"]["completion"]}
            cached = calls if call.get("cached") else 0
            add_costs(judge, {"calls": calls, "cached_calls": cached, **usage, "cost_usd": call.get("cost_usd")})
    agent = zero_costs()
    replies = sum(1 for m in trial.turns if m.role == "assistant")
    tokens = {"prompt": trial.usage.prompt_tokens, "completion": trial.usage.completion_tokens}
    add_costs(agent, {"calls": replies, **tokens, "cost_usd": trial.agent_cost_usd})
    return {"agent": agent, "judge": judge}


@settings(max_examples=100, deadline=None)
@given(_trials(1))
def test_a_scripted_trials_costs_are_those_summed_step_by_step(trial: TrialResult) -> None:
    """A trial without simulated arms counts its costs in one step: the same values, to the bit."""
    no_arms = TrialResult(**{**{f: getattr(trial, f) for f in _FIELDS}, "simulation": {}})
    assert json.dumps(trial.costs()) == json.dumps(no_arms.costs()) == json.dumps(_costs_step_by_step(trial))


_COUNT = st.one_of(st.integers(-3, 1000), st.sampled_from([True, False, 0.0, -0.0, 2.5, 1e-9]))
_PRICE = st.one_of(st.none(), st.sampled_from([0.0, -0.0, -1e-10, 1e-9, 0.000123456789, 2.5, 3, float("inf")]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["agent", "judge", "simulator"]),
            st.one_of(
                st.builds(
                    lambda calls, cached, prompt, completion, cost: {
                        "calls": calls,
                        "cached_calls": cached,
                        "prompt": prompt,
                        "completion": completion,
                        "cost_usd": cost,
                    },
                    _COUNT,
                    _COUNT,
                    _COUNT,
                    _COUNT,
                    _PRICE,
                ),
                st.fixed_dictionaries({"prompt": _COUNT, "completion": _COUNT}, optional={"calls": _COUNT}),
            ),
        ),
        max_size=6,
    )
)
def test_costs_summed_by_column_are_those_added_one_after_the_other(items: list[dict[str, Any]]) -> None:
    """`sum_costs` (integer columns by `sum`) gives what `add_costs` one part after another gives, to the bit."""
    assert json.dumps(sum_costs(items)) == json.dumps(_reference_costs(items))


def test_a_one_trial_case_shares_its_trials_costs_only_when_a_copy_would_equal_them() -> None:
    shared = trial("s.yaml::c", 1, "passed")
    aggregate = aggregate_case([shared], min_pass_rate=0.5, k=None)
    assert aggregate.costs is shared.costs() and aggregate.tokens is shared.usage
    odd = [
        TrialResult(**{**{f: getattr(shared, f) for f in _FIELDS}, "usage": usage, "agent_cost_usd": cost})
        for usage, cost in [
            (Usage(True, 2), None),  # a bool count: the copy makes it 1
            (Usage(1.0, 2), None),  # a float: kept, as `0 + 1.0`
            (Usage(1, 2), -1e-10),  # rounds to -0.0: the copy makes it 0.0
            (Usage(1, 2), 0.0),
            (Usage(1, 2), 0.1 + 0.2),
        ]
    ]
    for one in odd:
        fast = aggregate_case([one], min_pass_rate=0.5, k=None).to_dict()
        assert json.dumps(fast) == json.dumps(_reference_fields([one], min_pass_rate=0.5, k=None))
