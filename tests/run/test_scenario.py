"""Scenario scripts end to end: a suite file's `script:` played against real loopback servers (the scripted
OpenAI-compatible server plays the agent, the simulated user and the judge, each from its own script)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.checks._judging import Judge
from proctor.drivers.simulator import NO_SIMULATOR_HINT, Simulator
from proctor.errors import SuiteError
from proctor.models import ModelSettings, get_model
from proctor.run.arms import run_simulated_trial
from proctor.run.trial import run_trial
from proctor.suite import Case, load_suite_file
from proctor.targets import SessionContext, build_target
from servers.model_server import Reply, Script

SCENARIO = """\
name: rebooking
cases:
  - name: rebook
    script:
      - user: I need to change my flight.
        assert: [{type: contains, value: booking reference}]
      - simulate: {goal: give the booking reference ABC123 when asked, max_turns: 3,
                   until: The agent found the booking}
      - check: [{type: python, value: "len(transcript) == 4"}]
        on: conversation
      - judge: The agent offered a new flight
      - user: Book the first one.
        assert: [{type: contains, value: booked}]
      - check: [{type: tool-called, value: book_flight, name: books a flight}]
        on: conversation
"""


def model(script: Script, name: str) -> Any:
    settings = ModelSettings(
        base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02
    )
    return get_model(f"openai/{name}", settings=settings)


def verdict(passed: bool, reason: str) -> Reply:
    return Reply(json.dumps({"reason": reason, "pass": passed, "score": 1.0 if passed else 0.0}))


def load(tmp_path: Path, text: str = SCENARIO) -> Case:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return load_suite_file(path, registry).cases[0]


async def play(case: Case, agent: Script, simulator: Simulator | None, judge: Judge | None) -> Any:
    target = build_target({"type": "openai", "base_url": agent.base_url})
    try:
        context = SessionContext(case=case.name, trial=1, variables={"seed": 3})
        if case.simulate is not None:
            return await run_simulated_trial(case, 1, target, context, judge, simulator)
        return await run_trial(case, 1, target, context, judge)
    finally:
        await target.aclose()
        for used in (simulator, judge):
            if used is not None:
                await used.model.aclose()


@pytest.mark.anyio
async def test_a_judge_checkpoint_ends_the_conversation_when_its_criterion_is_met(
    tmp_path: Path, model_server: Any
) -> None:
    case = load(tmp_path)
    assert case.simulate is not None and case.simulate.arms == ["supplied"]  # a stretch gets a simulator
    agent = model_server.script(
        Reply("Sure. What is your booking reference?"),
        Reply("Found booking ABC123. I can offer the 9:00 or the 14:00 flight."),
        Reply("This should never be asked for."),
    )
    sim = model_server.script(Reply("It is ABC123."))
    judge = model_server.script(
        verdict(True, "the agent names booking ABC123"),  # the stretch's `until`: met, the conversation ends
    )
    result = await play(case, agent, Simulator(model(sim, "sim")), Judge(model(judge, "judge")))
    assert [m.content for m in result.turns] == [
        "I need to change my flight.",
        "Sure. What is your booking reference?",
        "It is ABC123.",
        "Found booking ABC123. I can offer the 9:00 or the 14:00 flight.",
    ]
    assert len(agent.requests) == 2 and len(sim.requests) == 1 and len(judge.requests) == 1
    statuses = {c.name: (c.status, c.turn) for c in result.checks}
    assert statuses["contains: booking reference"] == ("passed", 0)
    assert statuses["step 2 judge checkpoint: The agent found the booking"] == ("passed", 1)
    for name in ("python: len(transcript) == 4", "step 4 judge checkpoint: The agent offered a new flight",
                 "contains: booked", "books a flight"):  # fmt: skip
        assert statuses[name] == ("skipped", None)
    skipped = next(c for c in result.checks if c.name == "contains: booked")
    assert skipped.reason == "not run: the conversation ended at step 2 (its judge checkpoint was met)"
    assert result.status == "passed" and result.score == 1.0
    assert any("judge checkpoint of step 2 found its criterion met" in w for w in result.warnings)
    # the simulated user was told the stretch's goal, and the judge saw the conversation so far
    assert "give the booking reference ABC123" in sim.bodies[0]["messages"][0]["content"]
    assert "It is ABC123." in judge.bodies[0]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_unmet_checkpoints_fail_and_the_script_goes_on_with_checks_on_the_conversation_so_far(
    tmp_path: Path, model_server: Any
) -> None:
    case = load(tmp_path)
    agent = model_server.script(
        Reply("Sure. What is your booking reference?"),
        Reply("Found booking ABC123."),
        Reply("Done: booked on the 9:00 flight."),
    )
    sim = model_server.script(Reply("It is ABC123."), Reply(f"thanks, {case.simulate.persona.signoff}"))  # type: ignore[union-attr]
    judge = model_server.script(
        verdict(False, "not yet"),  # after the simulated turn: the stretch goes on
        verdict(False, "no flight was offered"),  # step 4's checkpoint: failed, the script goes on
    )
    result = await play(case, agent, Simulator(model(sim, "sim")), Judge(model(judge, "judge")))
    assert [m.role for m in result.turns] == ["user", "assistant", "user", "assistant", "user", "user", "assistant"]
    assert result.turns[4].content.endswith(case.simulate.persona.signoff)  # type: ignore[union-attr]
    by_name = {c.name: c for c in result.checks}
    assert by_name["python: len(transcript) == 4"].status == "failed"  # 5 messages at that point: sign-off kept
    assert by_name["step 2 judge checkpoint: The agent found the booking"].status == "failed"
    assert by_name["step 4 judge checkpoint: The agent offered a new flight"].status == "failed"
    assert (by_name["contains: booked"].status, by_name["contains: booked"].turn) == ("passed", 2)
    assert by_name["books a flight"].status == "failed"
    assert result.status == "failed"


@pytest.mark.anyio
async def test_without_a_judge_checkpoints_are_skipped_and_without_a_simulator_the_trial_is(
    tmp_path: Path, model_server: Any
) -> None:
    scripted = SCENARIO.replace(
        "      - simulate: {goal: give the booking reference ABC123 when asked, max_turns: 3,\n"
        "                   until: The agent found the booking}\n",
        "      - user: It is ABC123.\n",
    )
    case = load(tmp_path, scripted)
    assert case.simulate is None
    agent = model_server.script(Reply("What is your booking reference?"), Reply("Found it."), Reply("booked."))
    result = await play(case, agent, None, None)
    by_name = {c.name: c for c in result.checks}
    assert by_name["python: len(transcript) == 4"].status == "passed"  # the conversation so far: 4 messages
    assert by_name["step 4 judge checkpoint: The agent offered a new flight"].status == "skipped"
    assert by_name["contains: booked"].status == "passed"
    assert len(result.turns) == 6
    simulated = load(tmp_path)
    skipped = await play(simulated, model_server.script(), None, None)
    assert (skipped.status, skipped.reason) == ("skipped", NO_SIMULATOR_HINT)


@pytest.mark.anyio
async def test_an_agent_failure_skips_the_steps_after_it(tmp_path: Path, model_server: Any) -> None:
    text = """\
name: broken
script:
  - user: hello
  - user: again
    assert: [{type: contains, value: x}]
  - judge: anything
"""
    case = load(tmp_path, text)
    agent = model_server.script(Reply("hi"), Reply("", status=400))
    result = await play(case, agent, None, None)
    assert result.status == "error" and result.error.startswith("turn 2:")
    assert [(c.name, c.status) for c in result.checks] == [
        ("contains: x", "skipped"),
        ("step 3 judge checkpoint: anything", "skipped"),
    ]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("{user: hi, judge: done}", "exactly one of user, simulate, check, judge; found user, judge"),
        ("{check: [{type: contains, value: a}], assert: [{type: contains, value: b}]}", "'assert' goes with a 'user'"),
        ("{check: [{type: expression, value: 'true'}]}", "checks the whole conversation"),
        ("{check: [{type: contains, value: a}], on: conversation}", "checks one reply"),
        ("{simulate: {goal: x, max_turns: 0}}", "greater than or equal to 1"),
    ],
)
def test_bad_script_steps_are_located(tmp_path: Path, step: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: bad\nscript:\n  - {step}\n", encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, registry)
    text = str(info.value)
    assert "bad.yaml:3:" in text and "script[0]" in text and message in text, text
