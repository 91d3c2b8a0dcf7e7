"""Embabel jobs and the `embabel` target: the seed's job loads unchanged; the target speaks the protocol to the
demo agent and to a loopback server that injects failures (counted in the composite's penalty)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from demo_helpers import EXAMPLES, RunningServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor.checks import registry
from proctor.drivers.simulator import Simulator
from proctor.errors import SuiteError
from proctor.models import ModelSettings, get_model
from proctor.run import RunOptions, run_sync
from proctor.run.arms import run_simulated_trial
from proctor.suite import EmbabelTargetSpec, load_suite_file, load_suites, parse_target_string
from proctor.targets import SessionContext, build_target
from servers._serve import serve_app
from servers.model_server import Reply

SEED_JOB = """\
evaluator:
  name: Socrates
  voice: "You speak like a friendly, relaxed human"
  signoff: "So Long, and Thanks for All the Fish"
  temperature: 0.5

target:
  user: test-user
  chatbot: my-agent

aspirationalAverage: 3000  # milliseconds

greetings:
  - Hello
  - Hi
  - Hey

tasks:
  - type: task
    task: "Ask the assistant to create a reminder for tomorrow at 9am"
    acceptanceCriteria: "A reminder entity is created with the correct date and time"
  - type: question
    task: "Ask what the capital of France is"
    acceptanceCriteria: "The assistant correctly answers Paris"

facts:
  - "The user's timezone is Australia/Sydney"
  - "The user prefers formal language"

assertions:
  - expression: "objectContext.resources.size == 1"
    weight: 2
  - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
    expected: 1
    weight: 3
"""


def test_the_seeds_job_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "agent.yml"
    path.write_text(SEED_JOB, encoding="utf-8")
    suite = load_suite_file(path, registry)
    (case,) = suite.cases
    assert case.name == "agent" and case.trials == 1
    spec = case.simulate
    assert spec is not None
    assert spec.persona.name == "Socrates" and spec.persona.temperature == 0.5
    assert spec.greetings == ["Hello", "Hi", "Hey"] and spec.aspirational_average == 3000
    assert [t.type for t in spec.tasks] == ["task", "question"]
    assert spec.tasks[1].acceptance_criteria == "The assistant correctly answers Paris"
    assert spec.facts[0] == "The user's timezone is Australia/Sydney" and spec.arms == ["withheld", "supplied"]
    assert isinstance(case.target, EmbabelTargetSpec)
    assert (case.target.user, case.target.chatbot, str(case.target.base_url)) == (
        "test-user",
        "my-agent",
        "http://localhost:8081/",
    )
    assert [(a.type, a.weight) for a in case.assert_] == [("expression", 2), ("cypher", 3)]
    assert case.assert_[1].value.expected == 1


def test_defaults_and_unsupported_seeds_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "minimal.yml"
    path.write_text("tasks:\n  - task: Say hi\n", encoding="utf-8")
    spec = load_suite_file(path, registry).cases[0].simulate
    assert spec is not None and spec.persona.signoff == "So Long, and Thanks for All the Fish"
    assert spec.greetings == ["Hello", "Hi", "Greetings", "Yo", "Hey"] and spec.max_turns == 20
    assert spec.tasks[0].type == "task"
    job = "target: {user: u, chatbot: c}\ntasks:\n  - task: Say hi\nseeds:\n  - text: Alice lives in Sydney\n"
    path.write_text(job, encoding="utf-8")
    with pytest.raises(SuiteError, match="text seeds need an ingestion request") as caught:
        load_suite_file(path, registry)
    assert caught.value.issues[0].line == 5  # the first seed
    path.write_text(job.replace("chatbot: c}", "chatbot: c, ingest_url: http://x/ingest}"), encoding="utf-8")
    assert load_suite_file(path, registry).cases[0].seeds[0].text == "Alice lives in Sydney"
    path.write_text("evaluator: {nmae: Bob}\ntasks: [{task: hi}]\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="nmae") as caught:
        load_suite_file(path, registry)
    assert caught.value.issues[0].line == 1


def test_target_string() -> None:
    assert parse_target_string("embabel:http://127.0.0.1:9") == {"type": "embabel", "base_url": "http://127.0.0.1:9"}
    assert parse_target_string("embabel") == {"type": "embabel"}


@pytest.mark.anyio
async def test_embabel_target_against_the_demo_agent(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="proctor.targets.embabel")
    with RunningServer() as server:
        target = build_target({"type": "embabel", "base_url": server.url, "user": "Alice Chen"})
        try:
            session = await target.open_session(SessionContext(case="c", trial=1, model="gpt-4.1-mini"))
            reply = await session.send("Remind me to submit my timesheet on Friday")
            assert reply.tool_calls and reply.tool_calls[0].name == "create_reminder"
            assert reply.tool_calls[0].result is not None and reply.retries == 0
            events = [r.getMessage() for r in caplog.records if r.name == "proctor.targets.embabel"]
            assert any('"request"' in e and "create_reminder" in e for e in events)  # what -v shows
            context = await session.object_context()  # type: ignore[attr-defined]
            assert len(context["resources"]) == 1
            await session.aclose()
        finally:
            await target.aclose()


class FlakyAgent:
    """An Embabel-protocol agent whose first `failures` message posts answer 503."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.bodies: list[Any] = []
        self.ingested: list[Any] = []
        self.sessions = 0

    def app(self) -> Starlette:
        async def sessions(request: Request) -> Response:
            self.sessions += 1
            return JSONResponse({"sessionId": f"s{self.sessions}"})

        async def messages(request: Request) -> Response:
            body = await request.json()
            self.bodies.append(body)
            if self.failures > 0:
                self.failures -= 1
                return JSONResponse({"error": "busy"}, status_code=503)
            events = [
                {"type": "function_call", "id": "1", "name": "lookup", "arguments": json.dumps({"q": "x"})},
                {"type": "function_response", "id": "1", "name": "lookup", "result": "ok"},
            ]
            message = {"role": "assistant", "content": "Paris."}
            return JSONResponse({"sessionId": body["sessionId"], "message": message, "history": [], "events": events})

        async def contexts(request: Request) -> Response:
            return JSONResponse({"resources": [1]})

        async def ingest(request: Request) -> Response:
            self.ingested.append(await request.json())
            return JSONResponse({"ok": True})

        return Starlette(
            routes=[
                Route("/api/v1/chat/sessions", sessions, methods=["POST"]),
                Route("/api/v1/chat/messages", messages, methods=["POST"]),
                Route("/api/v1/chat/objectContexts/{sid}", contexts, methods=["GET"]),
                Route("/ingest", ingest, methods=["POST"]),
            ]
        )


def test_failed_attempts_are_retried_and_penalised(
    model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = FlakyAgent(failures=2)
    signoff = "Thanks! So long, and thanks for all the fish"
    sim = model_server.script(*[Reply("What is the capital of France?"), Reply(signoff)] * 2)
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = tmp_path / "job.yml"
    path.write_text(SEED_JOB.split("  - cypher")[0], encoding="utf-8")  # the object-context assertion only
    suites = load_suites([path], registry)
    with serve_app(agent.app()) as url:
        options = RunOptions(
            target=parse_target_string(f"embabel:{url}"),
            write_results=False,
            handle_sigint=False,
            model="m",
            simulator="openai/sim",
        )
        outcome = run_sync(suites, options)
    sessions = {body["sessionId"] for body in agent.bodies}
    assert len(sessions) == 2  # one fresh session per arm
    assert agent.bodies[0]["model"] == "m" and agent.bodies[0]["message"]["role"] == "user"
    trial = outcome.data["cases"][0]["trials"][0]
    arms = trial["simulation"]["arms"]
    withheld = arms["withheld"]
    assert withheld["retries"] == 2 and withheld["composite"]["failures"] == 2
    assert withheld["composite"]["penalty"] == 0.5  # min(0.3 x 2, 0.5)
    assert withheld["composite"]["assertions"] == 1.0  # objectContext.resources.size == 1
    tool_calls = [c for t in withheld["turns"] for c in t.get("tool_calls", [])]
    assert tool_calls[0] == {"name": "lookup", "arguments": {"q": "x"}, "id": "1", "result": "ok"}
    # timing 1 (fast replies), assertions 1, no judge (tasks left out): (1 + 4) / 5 - 0.5 = 0.5
    assert withheld["composite"]["overall"] == 0.5 and arms["supplied"]["composite"]["overall"] == 1.0
    assert trial["simulation"]["difference"]["overall"] == 0.5


def test_example_job_and_story_are_skipped_without_a_model() -> None:
    suites = load_suites([EXAMPLES / "embabel", EXAMPLES / "simulated"], registry)
    outcome = run_sync(suites, RunOptions(write_results=False, handle_sigint=False))
    # the Embabel job, the watsonx story and the scenario script with a simulated stretch
    assert [case["status"] for case in outcome.data["cases"]] == ["skipped", "skipped", "skipped"]
    assert all("--simulator" in case["trials"][0]["reason"] for case in outcome.data["cases"])
    assert outcome.data["summary"]["skipped"] == 3


@pytest.mark.anyio
async def test_session_settings_are_sent(model_server: Any) -> None:
    agent = FlakyAgent(failures=0)
    with serve_app(agent.app()) as url:
        target = build_target({"type": "embabel", "base_url": url, "user": "u", "chatbot": "b"})
        sim = model_server.script(default=Reply("So long, and thanks for all the fish"))
        settings = ModelSettings(base_url=sim.base_url, api_key="k", cache=None)
        suite_path = EXAMPLES / "embabel" / "hr-reminders.yml"
        case = load_suite_file(suite_path, registry).cases[0]
        context = SessionContext(case=case.name, trial=1, model="gpt-4.1-mini", variables={"seed": 1})
        simulator = Simulator(get_model("openai/sim", settings=settings))
        try:
            result = await run_simulated_trial(case, 1, target, context, None, simulator)
        finally:
            await target.aclose()
            await simulator.model.aclose()
    assert agent.bodies[0]["model"] == "gpt-4.1-mini" and agent.bodies[0]["message"]["role"] == "user"
    assert result.status == "inconclusive"  # signed off before attempting a task: the simulator's fault


def test_seeds_are_delivered_before_the_conversation(
    model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = FlakyAgent(failures=0)
    sim = model_server.script(
        *[Reply("What is the capital of France?"), Reply("So long, and thanks for all the fish")] * 2
    )
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with serve_app(agent.app()) as url:
        job_path = tmp_path / "seeded.yml"
        job_path.write_text(
            f"target: {{base_url: '{url}', user: u, chatbot: c, ingest_url: '{url}/ingest'}}\n"
            "tasks: [{task: Ask the capital of France}]\n"
            "seeds:\n  - text: Alice lives in Sydney\n"
            "  - conversation: [{role: user, content: My name is Alice}, {role: assistant, content: Hi}]\n",
            encoding="utf-8",
        )
        suites = load_suites([job_path], registry)
        options = RunOptions(write_results=False, handle_sigint=False, simulator="openai/sim")
        data = run_sync(suites, options).data
    assert agent.ingested == [{"text": "Alice lives in Sydney", "user": "u", "chatbot": "c"}] * 2  # once per arm
    first, second = agent.bodies[0], agent.bodies[1]
    assert first["message"]["content"] == "My name is Alice"  # the seed conversation, user side only
    assert first["sessionId"] != second["sessionId"]  # replayed in a prior session of its own
    trial = data["cases"][0]["trials"][0]
    assert trial["status"] == "skipped"  # no judge and no timing target: nothing was scored, never "passed"
    assert trial["turns"][0]["content"] in ("Hello", "Hi", "Greetings", "Yo", "Hey")  # seeds not in the transcript


def test_the_seeds_job_reads_the_agents_own_graph(
    model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bolt_graph_uri: tuple[str, str]
) -> None:
    """NEO_URI names the agent's graph (here FalkorDB's Bolt listener standing in for Neo4j): the Cypher
    assertion reads what the agent wrote there, and Proctor deletes nothing (isolation `keep`)."""
    from falkordb import FalkorDB

    bolt, native = bolt_graph_uri
    db = FalkorDB.from_url(native.replace("falkordb://", "redis://", 1))
    db.select_graph("falkordb").query("CREATE (:Reminder {text: 'written by the agent'})")  # what the agent did
    db.close()
    monkeypatch.setenv("NEO_URI", bolt)
    monkeypatch.setenv("NEO_USERNAME", "falkordb")
    monkeypatch.setenv("NEO_PASSWORD", "")
    agent = FlakyAgent(failures=0)  # answers and reports one resource
    bye = "So long, and thanks for all the fish"
    sim = model_server.script(*[Reply("What is the capital of France?"), Reply(bye)] * 2)
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = tmp_path / "agent.yml"
    path.write_text(SEED_JOB, encoding="utf-8")
    with serve_app(agent.app()) as url:
        options = RunOptions(
            target=parse_target_string(f"embabel:{url}"),
            write_results=False,
            handle_sigint=False,
            simulator="openai/sim",
        )
        data = run_sync(load_suites([path], registry), options).data
    trial = data["cases"][0]["trials"][0]
    for arm in trial["simulation"]["arms"].values():
        checks = {c["type"]: c["status"] for c in arm["checks"]}
        # one Reminder in the agent's graph; no judge configured, so tasks are not scored (left out, not 0)
        assert checks == {"expression": "passed", "cypher": "passed", "transcript": "skipped"}
        composite = arm["composite"]
        assert composite["assertions"] == 1.0 and composite["timing"] == 1.0 and composite["tasks"] is None
        assert composite["overall"] == 1.0
    assert trial["status"] == "passed"


def test_the_seeds_job_without_a_named_graph_is_an_error_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing names the agent's graph: Embabel's default address is used; nothing answers there."""
    from proctor.state import StateUnavailable
    from servers._serve import closed_port

    monkeypatch.delenv("NEO_URI", raising=False)
    path = tmp_path / "agent.yml"
    path.write_text(SEED_JOB, encoding="utf-8")
    (case,) = load_suites([path], registry)[0].cases
    from proctor.state import plan_state

    plan = plan_state(case)
    assert plan.source == "embabel" and plan.spec is not None
    assert (plan.spec.uri, plan.spec.isolation) == ("bolt://localhost:7687", "keep")
    port = closed_port()
    monkeypatch.setenv("NEO_URI", f"bolt://neo4j@127.0.0.1:{port}")
    options = RunOptions(target=parse_target_string("embabel:http://127.0.0.1:9"), write_results=False,
                         handle_sigint=False, simulator="openai/sim")  # fmt: skip
    with pytest.raises(StateUnavailable, match=rf"(?s)cannot reach Neo4j at bolt://127.0.0.1:{port}.*named by NEO_URI"):
        run_sync(load_suites([path], registry), options)
