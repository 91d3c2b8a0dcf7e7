"""A trial's JSON form: what Proctor wrote before issue 22's changes, key order included, encoded once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.checks import CheckResult
from proctor.results import TrialResult
from proctor.transcript import Message, Usage


def _reference_dict(trial: TrialResult) -> dict[str, Any]:
    """`TrialResult.to_dict` as it was written before (kept verbatim as the reference)."""
    return {
        "trial": trial.trial,
        "status": trial.status,
        "passed": trial.passed,
        "score": None if trial.score is None else round(trial.score, 6),
        "error": trial.error,
        "error_type": trial.error_type,
        "warnings": trial.warnings,
        "retries": trial.retries,
        "duration_ms": round(trial.duration_ms, 3),
        "tokens": trial.usage.to_dict(),
        "costs": trial.costs(),
        "trace_ids": trial.trace_ids,
        "turns": [m.to_dict() for m in trial.turns],
        "checks": [c.to_dict() for c in trial.checks],
        **({"reason": trial.reason} if trial.reason is not None else {}),
        **({"simulation": trial.simulation} if trial.simulation is not None else {}),
        **({"trace_id": trial.trace_id} if trial.trace_id is not None else {}),
        **({"trace_url": trial.trace_url} if trial.trace_url is not None else {}),
    }


_NUMBERS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.1234567891, 1e-7, 12.3456789, 1e300]),
    st.floats(-1e9, 1e9, allow_nan=False),
    st.integers(0, 10),
)
_OPTIONAL = st.one_of(st.none(), st.text(max_size=5))


@settings(max_examples=100, deadline=None)
@given(
    status=st.sampled_from(["passed", "failed", "error", "inconclusive", "skipped"]),
    score=st.one_of(st.none(), _NUMBERS),
    duration=_NUMBERS,
    reason=_OPTIONAL,
    trace_id=_OPTIONAL,
    trace_url=_OPTIONAL,
    simulation=st.one_of(st.none(), st.just({"arms": {}})),
    text=st.text(max_size=8),
)
def test_a_trial_json_form_is_the_reference_one(
    status: str,
    score: float | None,
    duration: float,
    reason: str | None,
    trace_id: str | None,
    trace_url: str | None,
    simulation: dict[str, Any] | None,
    text: str,
) -> None:
    trial = TrialResult(
        case_key="s.yaml::c",
        trial=1,
        status=status,
        score=score,
        turns=[Message("user", text), Message("assistant", "ok", latency_ms=1.23456)],
        checks=[CheckResult("c", "contains", "passed", 1.0, reason="r", turn=0)],
        duration_ms=duration,
        usage=Usage(3, 4),
        reason=reason,
        simulation=simulation,
        trace_id=trace_id,
        trace_url=trace_url,
    )
    reference = _reference_dict(trial)
    assert json.dumps(trial.to_dict()) == json.dumps(reference)  # keys, order, values (-0.0, ints) alike
    assert json.loads(trial.to_json()) == json.loads(json.dumps(reference))
