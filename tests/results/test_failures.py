"""What failed: failed checks grouped by check, then case, with the trials nothing else explains."""

from __future__ import annotations

from typing import Any

from proctor.results._failures import failure_groups


def trial(number: int, status: str, checks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"trial": number, "status": status, "score": 0.0, "checks": checks, **extra}


def check(name: str, status: str, reason: str = "why", turn: int | None = 0) -> dict[str, Any]:
    return {"name": name, "type": name.split()[0], "status": status, "reason": reason, "turn": turn}


def case(name: str, *trials: dict[str, Any], suite: str = "s") -> dict[str, Any]:
    return {"name": name, "suite": suite, "trials": list(trials)}


def test_grouped_by_check_then_case_largest_first() -> None:
    run = {
        "cases": [
            case("a", trial(1, "failed", [check("contains x", "failed", "no x"), check("regex y", "passed")])),
            case(
                "b",
                trial(1, "failed", [check("contains x", "failed", "no x either")]),
                trial(2, "failed", [check("contains x", "failed"), check("regex y", "error", "bad pattern", None)]),
            ),
            case("c", trial(1, "passed", [check("contains x", "passed")])),
        ]
    }
    groups = failure_groups([("m", run)])
    assert [(g.check, g.type, g.trials, g.errored) for g in groups] == [
        ("contains x", "contains", 3, False),
        ("regex y", "regex", 1, True),
    ]
    first = groups[0]
    assert [(c.index, c.name, [t.trial for t in c.trials]) for c in first.cases] == [(0, "a", [1]), (1, "b", [1, 2])]
    assert first.cases[0].trials[0].reason == "no x" and first.cases[0].trials[0].turn == 0
    assert groups[1].cases[0].trials[0].turn is None


def test_trials_no_check_explains_get_a_group_of_their_own() -> None:
    run = {
        "cases": [
            case("timeout", trial(1, "error", [], error="no reply within 15 s", error_type="TargetTimeout")),
            case("low", trial(1, "failed", [check("contains x", "passed")], reason="score 0.40 below 0.50")),
            # errored by a check: the check explains it, no second entry
            case("judged", trial(1, "error", [check("llm-rubric", "error", "judge could not run")])),
        ]
    }
    groups = {g.check: g for g in failure_groups([("m", run)])}
    assert set(groups) == {"trial error: TargetTimeout", "score below the threshold", "llm-rubric"}
    assert groups["trial error: TargetTimeout"].cases[0].trials[0].reason == "no reply within 15 s"
    assert groups["score below the threshold"].cases[0].trials[0].reason == "score 0.40 below 0.50"


def test_one_case_of_several_runs_is_one_entry_with_each_runs_trials() -> None:
    a = {"cases": [case("x", trial(1, "failed", [check("contains q", "failed")]))]}
    failing = case("x", trial(2, "failed", [check("contains q", "failed")]))
    b = {"cases": [case("other", trial(1, "passed", [])), failing]}
    (group,) = failure_groups([("A", a), ("B", b)])
    (entry,) = group.cases
    assert entry.name == "x" and [(t.run, t.trial) for t in entry.trials] == [("A", 1), ("B", 2)]


def test_nothing_failed_is_no_group() -> None:
    assert failure_groups([("m", {"cases": [case("ok", trial(1, "passed", [check("contains x", "passed")]))]})]) == []
    assert failure_groups([("m", {"cases": [case("skipped", trial(1, "skipped", [check("judge", "skipped")]))]})]) == []
