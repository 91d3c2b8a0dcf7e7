"""A trial's JSON form: what Proctor wrote before issue 22's changes, key order included, encoded once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.checks import CheckResult
from proctor.results import TrialResult
from proctor.results._json import dumps
from proctor.transcript import Message, ToolCall, Usage


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
    latency=st.one_of(st.none(), _NUMBERS),
    calls=st.lists(st.sampled_from([ToolCall("f"), ToolCall("g", {"a": 1}, "id", {"r": 2}, "tools", 2.34567, True)])),
    details=st.sampled_from([{}, {"judge": {"usage": {"prompt": 1, "completion": 2}}}, {"x": [1, "y"]}]),
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
    latency: float | None,
    calls: list[ToolCall],
    details: dict[str, Any],
) -> None:
    trial = TrialResult(
        case_key="s.yaml::c",
        trial=1,
        status=status,
        score=score,
        turns=[Message("user", text), Message("assistant", "ok", calls, latency), Message("assistant", "b", [], 1.5)],
        checks=[
            CheckResult("c", "contains", "passed", 1.0, reason="r", turn=0),
            CheckResult("d", "llm-rubric", "skipped", None, 0.5, "no judge", None, details),
        ],
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
    name, file = f"c {text}", "s.yaml"  # the journal line: its head and the trial's own bytes, spliced
    head = dumps({"kind": "trial", "case": "s.yaml::c", "name": name, "file": file})
    assert trial.journal_line(name, file) == head[:-1] + b"," + dumps(reference)[1:] + b"\n"
    assert trial.to_json() == dumps(reference)


@pytest.mark.parametrize(
    ("name", "details"),
    [("ascii", {"big": 2**70}), ("é 中", {"big": 2**70}), ("lone \ud800", {}), ("lone \ud800", {"big": 2**70})],
)
def test_a_journal_line_orjson_refuses_is_spliced_from_its_parts_as_before(name: str, details: dict[str, Any]) -> None:
    # orjson refuses a 65-bit integer and a lone surrogate: each part is then encoded by `dumps` on its own
    # (the standard library for the part that has the value, escaped to ASCII), as the line always was
    trial = TrialResult("s.yaml::c", 1, "passed", 1.0, checks=[CheckResult("c", "t", "passed", 1.0, details=details)])
    head = dumps({"kind": "trial", "case": "s.yaml::c", "name": name, "file": "s.yaml"})
    line = trial.journal_line(name, "s.yaml")
    assert line == head[:-1] + b"," + dumps(trial.to_dict())[1:] + b"\n"
    assert line.endswith(trial.json_tail() + b"\n") and json.loads(line)["checks"][0].get("details", {}) == details


def test_encoding_a_trial_keeps_its_bytes_not_its_dict() -> None:
    trial = TrialResult("s.yaml::c", 1, "passed", 1.0, turns=[Message("assistant", "ok", latency_ms=1.23456)])
    line = trial.journal_line("c", "s.yaml")
    assert trial._json is None and line.endswith(trial.json_tail() + b"\n")  # ~3 KB a trial not kept
    assert trial.rounded() == (0.0, [1.235]) and trial.figures()[3:] == (0.0, 0, trial.costs(), [1.235])
    trial._tail = None  # as `RunResult.release_encoded` leaves it: encoded anew, the same bytes, no dict kept
    assert trial.to_json() == b"{" + line[line.index(b',"trial":') + 1 : -1] and trial._json is None
