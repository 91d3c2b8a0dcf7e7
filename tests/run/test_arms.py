"""Simulated users: arms, stops, simulator faults, composite scoring. Everything runs against real loopback
servers: the scripted OpenAI-compatible server plays the agent (through the `openai` target), the
simulated user and the judge, each from its own script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.checks._judging import Judge
from proctor.cli._console import EXIT_INCONCLUSIVE, EXIT_PASSED, exit_code
from proctor.drivers.simulator import NO_SIMULATOR_HINT, Simulator, fact_mentioned
from proctor.models import ModelSettings, get_model
from proctor.run import RunOptions, run_sync
from proctor.run.arms import run_simulated_trial
from proctor.scoring import case_outcome, composite_score, timing_score
from proctor.suite import Case, SimulateSpec, load_suite_file, load_suites
from proctor.targets import SessionContext, build_target
from servers.model_server import Reply, Script

SIGNOFF = "So Long, and Thanks for All the Fish"
FACT = "The user's timezone is Australia/Sydney"


def model(script: Script, name: str) -> Any:
    settings = ModelSettings(
        base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02
    )
    return get_model(f"openai/{name}", settings=settings)


def case_with(spec: dict[str, Any], **fields: Any) -> Case:
    return Case(
        name="sim", file=Path("sim.yaml"), suite="sim", turns=(), simulate=SimulateSpec.model_validate(spec), **fields
    )


def verdict(*scores: float, tone: float = 0.9) -> Reply:
    tasks = [{"task": n, "score": s, "reason": "ok"} for n, s in enumerate(scores, 1)]
    return Reply(json.dumps({"tone": tone, "tone_reason": "polite", "tasks": tasks}))


async def trial(case: Case, agent: Script, simulator: Simulator | None, judge: Judge | None, seed: int = 7) -> Any:
    target = build_target({"type": "openai", "base_url": agent.base_url})
    try:
        context = SessionContext(case=case.name, trial=1, variables={"seed": seed})
        return await run_simulated_trial(case, 1, target, context, judge, simulator)
    finally:
        await target.aclose()
        for used in (simulator, judge):
            if used is not None:
                await used.model.aclose()


def system_prompts(script: Script) -> list[str]:
    return [body["messages"][0]["content"] for body in script.bodies]


SPEC = {
    "tasks": [{"task": "Create a reminder for 9am tomorrow", "acceptanceCriteria": "A reminder is created"}],
    "facts": [FACT],
    "aspirationalAverage": 60000,
}


@pytest.mark.anyio
async def test_two_arms_differ_in_what_the_simulator_knows_and_stop_at_the_signoff(model_server: Any) -> None:
    agent = model_server.script(
        *[Reply("Hi! How can I help?"), Reply("Sure. What is your timezone?"), Reply("Done: reminder at 9am.")] * 2
    )
    sim = model_server.script(
        Reply("Please set a reminder for 9am tomorrow."),
        Reply("Sorry, I don't know my timezone."),
        Reply(f"great, {SIGNOFF.lower()}"),  # the sign-off matches case-insensitively
        Reply("Please set a reminder for 9am tomorrow."),
        Reply("It is Australia/Sydney."),
        Reply(SIGNOFF.upper()),
    )
    judge = model_server.script(verdict(0.5), verdict(1.0))
    case = case_with(SPEC)
    result = await trial(case, agent, Simulator(model(sim, "sim")), Judge(model(judge, "judge")))

    prompts = system_prompts(sim)
    assert len(prompts) == 6, (result.warnings, result.reason)
    assert all(FACT not in p and "do not know" in p for p in prompts[:3])  # withheld: never told the fact
    assert all(FACT in p and "only when the assistant asks" in p for p in prompts[3:])  # supplied
    simulation = result.simulation
    withheld, supplied = simulation["arms"]["withheld"], simulation["arms"]["supplied"]
    for arm in (withheld, supplied):
        assert arm["stop"] == "signoff" and not arm["aborted"] and arm["simulator_faults"] == []
        assert [t["role"] for t in arm["turns"]] == ["user", "assistant"] * 3 + ["user"]
        assert arm["turns"][0]["content"] in ("Hello", "Hi", "Greetings", "Yo", "Hey")
    assert withheld["turns"][0]["content"] == supplied["turns"][0]["content"]  # one seed, one greeting
    assert len(agent.requests) == 6  # the sign-off is never sent to the agent; fresh session per arm
    assert len(agent.bodies[3]["messages"]) == 1  # the supplied arm starts a new conversation
    # timing is 1 (replies are far under 60 s); tasks 0.5 vs 1.0; no assertions: (1*1 + 2*t) / 3
    assert withheld["composite"]["timing"] == 1.0 and withheld["composite"]["assertions"] is None
    assert withheld["composite"]["overall"] == round((1 + 2 * 0.5) / 3, 2) == 0.67
    assert supplied["composite"]["overall"] == 1.0
    assert supplied["composite"]["weights"] == {"timing": pytest.approx(1 / 3), "tasks": pytest.approx(2 / 3)}
    assert simulation["difference"]["tasks"] == 0.5 and simulation["difference"]["overall"] == 0.33
    assert simulation["primary"] == "supplied"
    assert result.status == "passed" and result.score == 1.0  # the primary arm (supplied) decides
    assert result.turns[4].content == "It is Australia/Sydney."
    assert withheld["status"] == "failed"  # 0.67 < 0.8: shown, not hidden
    assert "tone" in result.checks[-1].details and result.checks[-1].type == "transcript"
    costs = result.to_dict()["costs"]  # every arm and every role, not the primary arm's judge alone
    assert (costs["agent"]["calls"], costs["judge"]["calls"], costs["simulator"]["calls"]) == (6, 2, 6)
    assert costs["simulator"]["prompt"] > 0 and costs["agent"]["prompt"] == result.usage.prompt_tokens
    data = result.to_dict()
    assert data["simulation"]["arms"]["withheld"]["composite"]["tasks"] == 0.5


@pytest.mark.anyio
async def test_max_turns_stops_and_marks_the_arm_aborted(model_server: Any) -> None:
    agent = model_server.script(default=Reply("Could you tell me more?"))
    sim = model_server.script(default=Reply("I want a reminder."))
    case = case_with({**SPEC, "max_turns": 4, "arms": ["supplied"]})
    result = await trial(case, agent, Simulator(model(sim, "sim")), None)
    arm = result.simulation["arms"]["supplied"]
    assert arm["stop"] == "max_turns" and arm["aborted"]
    assert len(arm["turns"]) == 4 and len(sim.requests) == 1 and len(agent.requests) == 2
    assert any("aborted: no sign-off within 4 messages" in w for w in result.warnings)
    assert list(result.simulation["arms"]) == ["supplied"] and result.simulation["difference"] is None
    # no judge: tasks left out; timing alone scores
    assert arm["composite"]["tasks"] is None and arm["composite"]["overall"] == 1.0


@pytest.mark.anyio
async def test_leaked_fact_is_inconclusive_after_one_rerun_with_a_new_seed(model_server: Any) -> None:
    agent = model_server.script(default=Reply("What is your timezone?"))
    sim = model_server.script(default=Reply(f"Australia/Sydney, I think. {SIGNOFF}"))
    case = case_with({**SPEC, "arms": ["withheld"]})
    result = await trial(case, agent, Simulator(model(sim, "sim")), None, seed=10)
    assert result.status == "inconclusive" and result.score is None
    assert "withheld fact leaked" in (result.reason or "")
    assert result.simulation["attempts"] == 2 and result.simulation["arms"]["withheld"]["seed"] == 11
    assert len(sim.requests) == 2  # one simulator message per attempt
    assert any("re-run with a new seed" in w for w in result.warnings)


@pytest.mark.anyio
async def test_rerun_that_plays_fair_decides_the_trial(model_server: Any) -> None:
    agent = model_server.script(default=Reply("What is your timezone?"))
    sim = model_server.script(
        Reply(f"Australia/Sydney. {SIGNOFF}"), Reply("A reminder at 9am, please."), Reply(f"I don't know. {SIGNOFF}")
    )
    case = case_with({**SPEC, "arms": ["withheld"]})
    result = await trial(case, agent, Simulator(model(sim, "sim")), None)
    assert result.status == "passed" and result.simulation["attempts"] == 2


@pytest.mark.anyio
async def test_volunteered_fact_and_early_stop_are_simulator_faults(model_server: Any) -> None:
    agent = model_server.script(default=Reply("Noted."))
    sim = model_server.script(Reply("By the way my timezone is Australia/Sydney."), Reply(SIGNOFF))
    case = case_with({**SPEC, "arms": ["supplied"], "reruns": 0})
    result = await trial(case, agent, Simulator(model(sim, "sim")), None)
    assert result.status == "inconclusive" and "volunteered" in (result.reason or "")

    sim2 = model_server.script(Reply(SIGNOFF))
    result = await trial(case, agent, Simulator(model(sim2, "sim")), None)
    assert result.status == "inconclusive" and "before attempting any task" in (result.reason or "")


def test_fact_matching() -> None:
    assert fact_mentioned("my tz is australia/sydney", FACT)
    assert not fact_mentioned("I live in Melbourne", FACT)
    assert fact_mentioned("I prefer formal language, please", "The user prefers formal language")
    assert not fact_mentioned("formal wear only", "The user prefers formal language")


@pytest.mark.anyio
async def test_without_a_simulator_model_the_trial_is_skipped(model_server: Any) -> None:
    agent = model_server.script()
    result = await trial(case_with(SPEC), agent, None, None)
    assert result.status == "skipped" and result.reason == NO_SIMULATOR_HINT
    assert "--simulator" in NO_SIMULATOR_HINT and agent.requests == []  # never a fake conversation


def test_composite_and_timing_arithmetic() -> None:
    full = composite_score(timing=0.5, tasks=0.75, assertions=1.0, failures=1)
    assert full.overall == round((0.5 + 2 * 0.75 + 4 * 1.0) / 7 - 0.3, 2) == 0.56
    no_assertions = composite_score(timing=0.5, tasks=0.75, assertions=None, failures=0)
    assert no_assertions.overall == 0.67 and set(no_assertions.weights) == {"timing", "tasks"}
    assert composite_score(timing=None, tasks=None, assertions=None, failures=2).overall is None
    assert composite_score(timing=1, tasks=1, assertions=1, failures=3).penalty == 0.5
    assert composite_score(timing=0, tasks=0.1, assertions=0, failures=5).overall == 0.0  # clamped
    custom = composite_score(timing=1.0, tasks=0.0, assertions=None, failures=0, weights={"timing": 1, "tasks": 1})
    assert custom.overall == 0.5
    assert timing_score(3000, [1000.0, 5000.0]) == 1.0
    assert timing_score(3000, [6000.0]) == 0.5
    assert timing_score(None, [6000.0]) is None and timing_score(3000, []) is None


def test_case_outcome_keeps_inconclusive_and_skipped_apart() -> None:
    assert case_outcome(["skipped", "skipped"], min_pass_rate=0.8).status == "skipped"
    assert case_outcome(["inconclusive", "inconclusive"], min_pass_rate=0.8).status == "inconclusive"
    assert case_outcome(["passed", "inconclusive"], min_pass_rate=0.8).status == "inconclusive"
    assert case_outcome(["passed", "passed", "skipped"], min_pass_rate=0.8).status == "passed"
    assert case_outcome(["failed", "inconclusive"], min_pass_rate=0.8).status == "failed"
    assert case_outcome(["error", "inconclusive"], min_pass_rate=0.8).status == "error"


SUITE = """\
name: reminders
target: {type: openai, base_url: "AGENT"}
simulator: openai/sim
trials: 1
simulate:
  persona: {name: Ada, voice: "You are terse"}
  greetings: [Howdy]
  tasks:
    - {type: question, task: "Ask the capital of France", acceptanceCriteria: "Says Paris"}
  facts: ["The user's timezone is Australia/Sydney"]
"""


def test_run_reports_arms_and_exit_codes(model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = model_server.script(default=Reply("Paris."))
    sim = model_server.script(*[Reply("What is the capital of France?"), Reply(f"Thanks! {SIGNOFF}")] * 2)
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = tmp_path / "reminders.yaml"
    path.write_text(SUITE.replace("AGENT", agent.base_url), encoding="utf-8")
    suite = load_suite_file(path, registry)
    spec = suite.cases[0].simulate
    assert spec is not None and spec.persona.name == "Ada" and spec.persona.signoff == SIGNOFF
    assert spec.persona.temperature == 0.5 and spec.max_turns == 20 and spec.tasks[0].type == "question"
    assert spec.tasks[0].acceptance_criteria == "Says Paris"
    outcome = run_sync(load_suites([path], registry), RunOptions(write_results=False, handle_sigint=False))
    trial_data = outcome.data["cases"][0]["trials"][0]
    assert set(trial_data["simulation"]["arms"]) == {"withheld", "supplied"}
    assert trial_data["turns"][0]["content"] == "Howdy"
    assert sim.bodies[0]["temperature"] == 0.5 and "You are Ada" in sim.bodies[0]["messages"][0]["content"]
    # no judge, no timing target, no assertions: nothing was scored, so the trial is skipped, never passed
    assert trial_data["status"] == "skipped" and trial_data["reason"].startswith("nothing was scored")
    assert exit_code(outcome.data) == EXIT_PASSED  # a skip fails only under --ci

    monkeypatch.delenv("OPENAI_BASE_URL")
    path.write_text(SUITE.replace("AGENT", agent.base_url).replace("simulator: openai/sim\n", ""), encoding="utf-8")
    skipped = run_sync(load_suites([path], registry), RunOptions(write_results=False, handle_sigint=False))
    assert skipped.data["cases"][0]["status"] == "skipped" and skipped.data["summary"]["skipped"] == 1
    assert skipped.data["cases"][0]["trials"][0]["reason"] == NO_SIMULATOR_HINT
    assert exit_code(skipped.data) == EXIT_PASSED
    inconclusive = {**skipped.data, "summary": {**skipped.data["summary"], "skipped": 0, "inconclusive": 1}}
    assert exit_code(inconclusive) == EXIT_INCONCLUSIVE


def test_suite_validation_of_simulate_blocks(tmp_path: Path) -> None:
    from proctor.errors import SuiteError

    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nsimulate: {arms: [withheld, withheld]}\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="each arm may be listed once"):
        load_suite_file(path, registry)
    path.write_text("name: x\ncases: [{name: a}]\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="needs 'turns', 'simulate' or 'script'"):
        load_suite_file(path, registry)


@pytest.mark.anyio
async def test_story_mode_opens_with_the_starting_sentence_and_follows_the_story(model_server: Any) -> None:
    agent = model_server.script(default=Reply("Your time off is on January 5, 2025."))
    sim = model_server.script(Reply(f"Great, thanks. {SIGNOFF}"))
    story = "You want to know your time off schedule. Your username is nwaters."
    case = case_with(
        {"story": story, "starting_sentence": "I want to know my time off schedule", "arms": ["supplied"],
         "tasks": [{"type": "question", "task": "Find out your time off"}]}
    )  # fmt: skip
    result = await trial(case, agent, Simulator(model(sim, "sim")), None)
    assert result.turns[0].content == "I want to know my time off schedule"
    assert story in system_prompts(sim)[0]
    assert result.simulation["arms"]["supplied"]["stop"] == "signoff"
    assert result.status == "skipped"  # no judge, no timing target, no assertions: nothing was scored


@pytest.mark.anyio
async def test_scripted_turns_come_first_with_their_checks(model_server: Any) -> None:
    from proctor.suite import TurnSpec

    agent = model_server.script(default=Reply("Happy to help."))
    sim = model_server.script(Reply("Set a reminder for 9am."), Reply(SIGNOFF))
    turn = TurnSpec.model_validate({"content": "Hi there", "assert": [{"type": "contains", "value": "help"}]})
    spec = SimulateSpec.model_validate({**SPEC, "arms": ["supplied"]})
    case = Case(name="mixed", file=Path("m.yaml"), suite="m", turns=(turn,), simulate=spec)
    result = await trial(case, agent, Simulator(model(sim, "sim")), None)
    assert [m.content for m in result.turns[:3]] == ["Hi there", "Happy to help.", "Set a reminder for 9am."]
    assert result.checks[0].type == "contains" and result.checks[0].status == "passed"
    assert result.simulation["arms"]["supplied"]["composite"]["assertions"] == 1.0
    assert result.status == "passed"


@pytest.mark.anyio
async def test_a_scripted_turn_before_the_simulator_is_judged(model_server: Any) -> None:
    """The scripted turns of a simulated case go through the same check phase as a scripted case: with a
    judge, their `llm-rubric` is judged (it was `skipped` when the arm built its own context without one)."""
    from proctor.suite import TurnSpec

    agent = model_server.script(default=Reply("Happy to help."))
    sim = model_server.script(Reply("Set a reminder for 9am."), Reply(SIGNOFF))
    rubric = Reply(json.dumps({"reason": "it offers help", "pass": True, "score": 0.9}))
    judge_server = model_server.script(rubric, verdict(1.0))
    turn = TurnSpec.model_validate({"content": "Hi there", "assert": [{"type": "llm-rubric", "value": "Offers help"}]})
    spec = SimulateSpec.model_validate({**SPEC, "arms": ["supplied"]})
    case = Case(name="mixed", file=Path("m.yaml"), suite="m", turns=(turn,), simulate=spec)
    judge = Judge(model(judge_server, "judge"))
    result = await trial(case, agent, Simulator(model(sim, "sim")), judge)
    rubric_check = result.checks[0]
    assert (rubric_check.type, rubric_check.status, rubric_check.score) == ("llm-rubric", "passed", 0.9)
    assert rubric_check.turn == 0
    assert "Happy to help." in json.dumps(judge_server.bodies[0]["messages"])


@pytest.mark.anyio
async def test_rescore_keeps_simulated_trials_as_recorded() -> None:
    from proctor.results import TrialResult
    from proctor.run.rescore import _rescore_trial

    case = case_with(SPEC)
    stored = TrialResult("sim.yaml::sim", 1, "passed", 0.9, simulation={"arms": {}}, warnings=[])
    kept = await _rescore_trial(case, stored, None, lambda spec: True)
    assert kept is stored and kept.score == 0.9 and "not supported yet" in kept.to_dict()["warnings"][0]


@pytest.mark.anyio
async def test_scripted_cases_replay_conversation_seeds_in_the_same_session(model_server: Any) -> None:
    from proctor.run.trial import run_trial
    from proctor.suite import SeedSpec, TurnSpec

    agent = model_server.script(default=Reply("Noted."))
    seed = SeedSpec.model_validate({"conversation": [{"content": "My name is Alice"}]})
    case = Case(
        name="seeded", file=Path("s.yaml"), suite="s", turns=(TurnSpec(content="What is my name?"),),
        seeds=(seed,), seed_session="same",
    )  # fmt: skip
    target = build_target({"type": "openai", "base_url": agent.base_url})
    try:
        result = await run_trial(case, 1, target, SessionContext(case="seeded", trial=1))
    finally:
        await target.aclose()
    # the same session: the evaluated turn is sent with the seed exchange before it
    assert [m["content"] for m in agent.bodies[1]["messages"]] == ["My name is Alice", "Noted.", "What is my name?"]
    assert [m.content for m in result.turns] == ["What is my name?", "Noted."] and result.status == "skipped"


def test_python_target_seed_hook_takes_text_seeds(tmp_path: Path) -> None:
    from helpers import agents

    suite = (
        "name: seeded\ntarget: {type: python, callable: 'helpers.agents:echo', SEED}\ntrials: 1\n"
        "seeds: [{text: Alice lives in Sydney}]\nturns: [{content: hi}]\n"
    )
    path = tmp_path / "seeded.yaml"
    path.write_text(suite.replace(", SEED", ""), encoding="utf-8")
    from proctor.errors import SuiteError

    with pytest.raises(SuiteError, match="text seeds need an ingestion request"):
        load_suite_file(path, registry)
    path.write_text(suite.replace("SEED", "seed: 'helpers.agents:seed'"), encoding="utf-8")
    agents.SEEDED.clear()
    outcome = run_sync(load_suites([path], registry), RunOptions(write_results=False, handle_sigint=False))
    assert agents.SEEDED == [("Alice lives in Sydney", "seeded")]
    assert outcome.data["cases"][0]["trials"][0]["status"] == "skipped"  # no checks: nothing scored (issue 14)


def test_http_target_ingest_request_takes_text_seeds(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from servers._serve import serve_app

    ingested: list[object] = []

    async def ingest(request: Request) -> JSONResponse:
        ingested.append(await request.json())
        return JSONResponse({"ok": True})

    async def chat(request: Request) -> JSONResponse:
        return JSONResponse({"reply": "hello"})

    app = Starlette(routes=[Route("/ingest", ingest, methods=["POST"]), Route("/chat", chat, methods=["POST"])])
    with serve_app(app) as url:
        path = tmp_path / "seeded.yaml"
        suite = """\
name: seeded
trials: 1
target:
  type: http
  request: {url: "URL/chat", body: {m: "{{ message }}"}}
  ingest: {url: "URL/ingest", body: {doc: "{{ text }}", who: "{{ user }}"}}
seeds: [{text: Alice lives in Sydney}]
turns: [{content: hi, assert: [{type: contains, value: hello}]}]
"""
        path.write_text(suite.replace("URL", url), encoding="utf-8")
        outcome = run_sync(load_suites([path], registry), RunOptions(write_results=False, handle_sigint=False))
    assert ingested == [{"doc": "Alice lives in Sydney", "who": "proctor"}]
    assert outcome.data["cases"][0]["trials"][0]["status"] == "passed"


def test_watsonx_datasets_can_be_played_by_a_simulated_user(
    model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples" / "watsonx"
    shutil.copy(examples / "hr_agent_timeoff.json", tmp_path)
    (tmp_path / "config.yaml").write_text("simulate: true\n", encoding="utf-8")
    (suite,) = load_suites([tmp_path], registry)
    case = suite.cases[0]
    assert case.turns == () and case.simulate is not None and case.simulate.arms == ["supplied"]
    assert case.simulate.story and case.simulate.starting_sentence
    sim = model_server.script(default=Reply(f"Thanks. {SIGNOFF}"))
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    options = RunOptions(
        target={"type": "python", "callable": "helpers.agents:watsonx_hr_agent"},
        simulator="openai/sim",
        trials=1,
        write_results=False,
        handle_sigint=False,
    )
    trial = run_sync([suite], options).data["cases"][0]["trials"][0]
    assert trial["turns"][0]["content"] == case.simulate.starting_sentence
    assert case.simulate.story in sim.bodies[0]["messages"][0]["content"]
    journey = [c for c in trial["checks"] if c["type"] == "journey"]
    assert journey and journey[0]["status"] in ("passed", "failed")
    assert trial["simulation"]["arms"]["supplied"]["composite"]["assertions"] == journey[0]["score"]

    (tmp_path / "config.yaml").write_text("simulate: maybe\n", encoding="utf-8")
    from proctor.errors import SuiteError

    with pytest.raises(SuiteError, match="'simulate' must be true or false"):
        load_suites([tmp_path], registry)


@pytest.mark.anyio
async def test_an_agent_error_is_the_agents_not_the_simulators(model_server: Any) -> None:
    agent = model_server.script(default=Reply("bad request", status=400))  # not retried
    sim = model_server.script(default=Reply(SIGNOFF))
    result = await trial(case_with({**SPEC, "arms": ["supplied"]}), agent, Simulator(model(sim, "sim")), None)
    assert result.status == "error" and result.error_type == "TargetHTTPError"
    assert result.error and result.error.startswith("supplied: turn 1:") and sim.requests == []
    assert result.simulation["arms"]["supplied"]["stop"] == "error"
    assert result.simulation["attempts"] == 1  # an agent error is not re-run
