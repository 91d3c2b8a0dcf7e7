"""Build the fixed results files under `tests/results/data/` with Proctor's own result model.

Run `python tests/results/make_fixtures.py` (from the repository root) to regenerate them after a change
of the results format; the report snapshots are then updated with `pytest --snapshot-update`.
The runs are deterministic: two models over the same suites, with flaky, failed and errored trials,
judge verdicts, rubric criteria, tool calls, trace ids, trajectory metrics and costs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from proctor.checks import CheckResult
from proctor.results import CaseResult, RunResult, TrialResult, write_json
from proctor.transcript import Message, ToolCall, Usage

DATA = Path(__file__).parent / "data"

JUDGE = {
    "model": "openai/gpt-4.1-mini",
    "template": "llm-rubric",
    "template_sha": "3f1c2a9b7d4e5f60718293a4b5c6d7e8f9012345",
    "usage": {"prompt": 412, "completion": 38},
    "cost_usd": 0.0002256,
    "cached": False,
    "calls": 1,
    "attempts": 1,
}


def _judged(name: str, passed: bool, score: float, reason: str, turn: int | None = 0) -> CheckResult:
    return CheckResult(
        name,
        "llm-rubric",
        "passed" if passed else "failed",
        score,
        1.0,
        f"judge: {reason}",
        turn,
        {"judge": dict(JUDGE), "verdict": {"pass": passed, "score": score}},
    )


def _rubric(criteria: list[tuple[str, bool, str]]) -> CheckResult:
    met = sum(1 for _, ok, _ in criteria if ok)
    unmet = [(n, e) for n, ok, e in criteria if not ok]
    reason = f"{met} of {len(criteria)} rubric criteria met"
    if unmet:
        reason += "; not met: " + "; ".join(f"{n} ({e})" for n, e in unmet)
    return CheckResult(
        "rubric: hr-tone.rubric.md",
        "rubric",
        "passed" if not unmet else "failed",
        met / len(criteria),
        1.0,
        reason,
        None,
        {
            "judge": {**JUDGE, "template": "rubric", "usage": {"prompt": 655, "completion": 91}, "cost_usd": 0.0004076},
            "criteria": [{"name": n, "passed": ok, "explanation": e} for n, ok, e in criteria],
            "judge_score": met / len(criteria),
        },
    )


def _contains(value: str, found: bool, turn: int = 0, weight: float = 1.0) -> CheckResult:
    observation = f"found {value!r}" if found else f"{value!r} not found in the reply"
    return CheckResult(
        f"contains {value!r}",
        "contains",
        "passed" if found else "failed",
        1.0 if found else 0.0,
        weight,
        f"expected reply to contain {value!r}; {observation}",
        turn,
    )


def _trial(
    key: str,
    number: int,
    status: str,
    score: float | None,
    turns: list[Message],
    checks: list[CheckResult],
    *,
    duration: float,
    usage: tuple[int, int] = (0, 0),
    trace: bool = True,
    error: str | None = None,
    error_type: str | None = None,
    agent_cost: float | None = None,
) -> TrialResult:
    replies = sum(1 for m in turns if m.role == "assistant")
    return TrialResult(
        case_key=key,
        trial=number,
        status=status,
        score=score,
        turns=turns,
        checks=checks,
        error=error,
        error_type=error_type,
        duration_ms=duration,
        usage=Usage(*usage),
        trace_ids=[f"trace-{key.split('::')[1]}-{number}-{i}" for i in range(1, replies + 1)] if trace else [],
        agent_cost_usd=agent_cost,
    )


def vacation(model: str, outcomes: list[bool]) -> CaseResult:
    key = "examples/suites/time-off.yaml::vacation-dates"
    trials = []
    for number, ok in enumerate(outcomes, 1):
        reply = (
            "Dave is on vacation from 2025-06-09 to 2025-06-13 and from 2025-08-18 to 2025-08-22."
            if ok
            else "Dave has some time off in June, I think."
        )
        turns = [
            Message("user", "When is Dave on vacation?"),
            Message(
                "assistant",
                reply,
                [ToolCall("get_time_off", {"name": "Dave"}, f"call_{number}", [{"from": "2025-06-09"}])],
                210.0 + 40 * number + (0 if ok else 300),
            ),
        ]
        checks = [
            _contains("2025-06-09", ok, weight=2.0),
            _judged(
                "llm-rubric: concrete dates",
                ok,
                0.95 if ok else 0.2,
                "Gives both vacations with start and end dates." if ok else "No concrete dates are given.",
            ),
            _rubric(
                [
                    ("Polite", True, "Friendly and direct."),
                    ("Precise", ok, "States exact dates." if ok else "Vague about the dates."),
                ]
            ),
        ]
        assertion = (2.0 * (1.0 if ok else 0.0) + (0.95 if ok else 0.2)) / 3
        rubric = 1.0 if ok else 0.5
        score = round(0.5 * assertion + 0.5 * rubric, 6)
        status = "passed" if score >= 0.75 else "failed"
        trials.append(
            _trial(key, number, status, score, turns, checks, duration=300.0 + number, usage=(120, 30 if ok else 12))
        )
    return CaseResult(
        "vacation-dates",
        "time-off",
        "examples/suites/time-off.yaml",
        ["time-off", "smoke"],
        0.8,
        trials,
        "Asked when someone is on vacation, the agent gives the booked dates.",
    )


def out_next_week(model: str, latency: float) -> CaseResult:
    key = "examples/suites/time-off.yaml::out-next-week"
    trials = []
    for number in (1, 2, 3):
        turns = [
            Message("user", "Is Alice out next week?"),
            Message("assistant", "No, Alice is in all of next week.", [], latency + number),
            Message("user", "Is Dave out next week?"),
            Message("assistant", "Yes, Dave is out 2025-06-09 to 2025-06-15.", [], 2 * latency + number),
        ]
        checks = [_contains("No,", True, 0), _contains("2025-06-09 to 2025-06-15", True, 1)]
        trials.append(_trial(key, number, "passed", 1.0, turns, checks, duration=2 * latency + 10, usage=(200, 40)))
    return CaseResult(
        "out-next-week",
        "time-off",
        "examples/suites/time-off.yaml",
        ["time-off"],
        0.8,
        trials,
        "Yes/no questions about next week get the right answer first.",
    )


def lookup(model: str, found: list[bool]) -> CaseResult:
    key = "examples/suites/directory.yaml::lookup-email"
    trials = []
    for number, ok in enumerate(found, 1):
        email = "alice@example.com" if ok else "I could not find her address."
        turns = [
            Message("user", "What is Alice's email address?"),
            Message(
                "assistant",
                email if not ok else f"Alice's email address is {email}.",
                [ToolCall("lookup_user", {"name": "Alice"}, None, {"email": "alice@example.com", "team": "HR"})],
                95.0 + number,
            ),
        ]
        checks = [
            _contains("alice@example.com", ok),
            CheckResult(
                "journey: look up then answer",
                "journey",
                "passed" if ok else "failed",
                1.0 if ok else 0.0,
                1.0,
                "journey succeeded: 1 of 1 tool-call goals matched in dependency order"
                if ok
                else "journey failed: text goal 'email' not matched",
                None,
                {
                    "metrics": {
                        "total_tool_calls": 1,
                        "expected_tool_calls": 1,
                        "correct_tool_calls": 1,
                        "tool_call_precision": 1.0,
                        "tool_call_recall": 1.0,
                        "text_match": ok,
                        "journey_success": ok,
                    },
                    "goals": [{"name": "lookup", "matched": True}, {"name": "email", "matched": ok}],
                },
            ),
        ]
        status = "passed" if ok else "failed"
        trials.append(
            _trial(key, number, status, 1.0 if ok else 0.0, turns, checks, duration=110.0, usage=(80, 20), trace=False)
        )
    return CaseResult("lookup-email", "directory", "examples/suites/directory.yaml", ["directory"], 0.8, trials, None)


def json_reply(model: str, statuses: list[str]) -> CaseResult:
    key = "examples/suites/json-output.yaml::json-reply"
    trials = []
    for number, status in enumerate(statuses, 1):
        if status == "error":
            trials.append(
                _trial(
                    key,
                    number,
                    "error",
                    None,
                    [Message("user", "Give me Bob's team as JSON.")],
                    [
                        CheckResult(
                            "is-json",
                            "is-json",
                            "skipped",
                            None,
                            1.0,
                            "not run: the conversation ended before turn 1",
                            0,
                        )
                    ],
                    duration=15000.0,
                    trace=False,
                    error="turn 1: no reply within 15 s",
                    error_type="TargetTimeout",
                )
            )
            continue
        ok = status == "passed"
        text = '{"name": "Bob", "team": "Sales"}' if ok else "Bob is in | Sales <b>team</b>"
        turns = [Message("user", "Give me Bob's team as JSON."), Message("assistant", text, [], 180.0 + number)]
        checks = [
            CheckResult(
                "is-json",
                "is-json",
                "passed" if ok else "failed",
                1.0 if ok else 0.0,
                1.0,
                "expected reply to be JSON; " + ("it parses" if ok else "it does not parse: Expecting value"),
                0,
            )
        ]
        trials.append(_trial(key, number, status, 1.0 if ok else 0.0, turns, checks, duration=200.0, usage=(60, 15)))
    return CaseResult("json-reply", "json-output", "examples/suites/json-output.yaml", ["format"], 1.0, trials, None)


def build() -> dict[str, dict[str, Any]]:
    """The fixture runs, by file name."""
    runs = {
        "gpt-4-1-mini_20261101T090000Z.json": RunResult(
            run_id="gpt-4-1-mini_20261101T090000Z",
            started_at="2026-11-01T09:00:00+00:00",
            finished_at="2026-11-01T09:00:42+00:00",
            model="openai/gpt-4.1-mini",
            target="openai http://127.0.0.1:8765/v1",
            cases=[
                vacation("a", [True, True, False]),
                out_next_week("a", 120.0),
                lookup("a", [True, True, True]),
                json_reply("a", ["passed", "error", "failed"]),
            ],
            planned_trials=12,
        ),
        "claude-sonnet-4_20261102T090000Z.json": RunResult(
            run_id="claude-sonnet-4_20261102T090000Z",
            started_at="2026-11-02T09:00:00+00:00",
            finished_at="2026-11-02T09:01:05+00:00",
            model="anthropic/claude-sonnet-4",
            target="openai http://127.0.0.1:8765/v1",
            cases=[
                vacation("b", [False, False, True]),
                out_next_week("b", 260.0),
                lookup("b", [True, False, True]),
                json_reply("b", ["passed", "passed", "passed"]),
            ],
            planned_trials=12,
        ),
    }
    for run in runs.values():
        for case in run.cases:
            for trial in case.trials:
                trial.agent_cost_usd = round(
                    trial.usage.prompt_tokens * 0.4e-6 + trial.usage.completion_tokens * 1.6e-6, 8
                )
    return {name: run.to_dict() for name, run in runs.items()}


def main() -> None:
    DATA.mkdir(exist_ok=True)
    for name, data in build().items():
        write_json(DATA / name, data)
        print(f"wrote {DATA / name}", file=sys.stderr)


if __name__ == "__main__":
    main()
