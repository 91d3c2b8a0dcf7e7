"""Which graph a case's state assertions read, and what the run says about it at start."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.state import StateManager, graph_override, plan_state, start_states, state_notices
from proctor.suite import Case, StateSpec, load_suite_file

pytestmark = pytest.mark.anyio

JOB = """\
target: {user: u, chatbot: c}
tasks: [{task: Ask for a reminder}]
assertions:
  - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
    expected: 1
"""
SUITE = """\
name: NAME
target: {target}
turns: [{{content: Remind me}}]
assert:
  - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
    expected: 1
"""


def _case(tmp_path: Path, text: str, name: str = "suite.yml") -> Case:
    path = tmp_path / name
    path.write_text(text.replace("name: NAME", f"name: {Path(name).stem}"), encoding="utf-8")
    (case,) = load_suite_file(path, registry).cases
    return case


def test_the_order_in_which_a_graph_is_named(tmp_path: Path) -> None:
    job = _case(tmp_path, JOB, "job.yml")
    native = _case(tmp_path, SUITE.format(target="embabel:http://127.0.0.1:9"))
    no_cypher = _case(tmp_path, "target: {user: u, chatbot: c}\ntasks: [{task: Say hi}]\n", "plain.yml")
    chosen = _case(tmp_path, JOB + "state: {backend: falkordb}\n", "chosen.yml")
    env: dict[str, str] = {}
    assert plan_state(job, environ=env).source == "embabel"
    spec = plan_state(job, environ=env).spec
    assert spec is not None and (spec.backend, spec.uri, spec.isolation) == ("neo4j", "bolt://localhost:7687", "keep")
    assert plan_state(native, environ=env).source == "embedded" and plan_state(native, environ=env).spec is None
    assert plan_state(no_cypher, environ=env).source == "embedded"  # an Embabel job without Cypher needs no Neo4j
    assert plan_state(chosen, environ=env).source == "suite"  # the job asks for the embedded graph
    env = {"NEO_URI": "bolt://neo4j@db.internal:7687"}
    for case in (job, native):
        plan = plan_state(case, environ=env)
        assert plan.source == "environment" and plan.spec is not None
        assert (plan.spec.uri, plan.spec.user, plan.spec.isolation) == ("bolt://db.internal:7687", "neo4j", "keep")
    plan = plan_state(job, environ={**env, "NEO_USERNAME": "ops"})
    assert plan.spec is not None and plan.spec.user == "ops"
    override = StateSpec(uri="falkordb://127.0.0.1:1")
    assert plan_state(job, override, environ=env) == type(plan)(override, "override")


def test_notices_say_where_assertions_read_and_whether_the_agent_was_told(tmp_path: Path) -> None:
    job = _case(tmp_path, JOB, "job.yml")
    told = _case(
        tmp_path,
        SUITE.format(target="{type: http, request: {url: 'http://127.0.0.1:9/chat', body: {g: '{{ graph_uri }}'}}}"),
        "told.yml",
    )
    untold = _case(
        tmp_path, SUITE.format(target="{type: http, request: {url: 'http://127.0.0.1:9/chat'}}"), "untold.yml"
    )
    headers = _case(tmp_path, SUITE.format(target="embabel:http://127.0.0.1:9"), "headers.yml")
    env: dict[str, str] = {}
    lines = state_notices(
        (case, plan_state(case, environ=env), "falkordb://127.0.0.1:5", case.target)
        for case in (job, told, untold, headers)
    )
    assert lines == [
        "state: these Embabel jobs' Cypher setups and assertions run on the agent's Neo4j at falkordb://127.0.0.1:5, "
        "Embabel's default (set NEO_URI, NEO_USERNAME and NEO_PASSWORD, or the suite's state:, to name another); "
        "trials run one at a time and Proctor deletes nothing there (cases: job)",
        "state: assertions read Proctor's embedded graph at falkordb://127.0.0.1:5, which the agent may not know "
        "about: the http target's requests use none of the graph_* variables; an agent writing elsewhere fails "
        "them (cases: untold)",
        "state: assertions read Proctor's embedded graph at falkordb://127.0.0.1:5, which the agent may not know "
        "about: the embabel target tells the agent only through X-Proctor-Graph-* headers, which it must read; an "
        "agent writing elsewhere fails them (cases: headers)",
    ]


async def test_a_run_says_at_start_where_assertions_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, bolt_graph_uri: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="proctor.state")
    bolt, _ = bolt_graph_uri
    monkeypatch.setenv("NEO_URI", bolt)
    monkeypatch.setenv("NEO_USERNAME", "falkordb")
    monkeypatch.setenv("NEO_PASSWORD", "")
    job = _case(tmp_path, JOB, "job.yml")
    manager = await start_states([job])
    try:
        async with manager.trial(job) as lease:
            await lease.graph.run("CREATE (:Reminder)")
        async with manager.trial(job) as lease:  # isolation 'keep': nothing was deleted between trials
            assert await lease.graph.run("MATCH (r:Reminder) RETURN count(r) AS count") == [{"count": 1}]
            assert lease.variables["graph_uri"] == bolt and lease.variables["graph_label"] is None
    finally:
        await manager.aclose()
    (record,) = [r for r in caplog.records if r.name == "proctor.state" and r.levelno == logging.WARNING]
    assert record.getMessage() == (
        f"state: Cypher setups and assertions run on the agent's Neo4j at {bolt} (named by NEO_URI); trials run one "
        "at a time and Proctor deletes nothing there (isolation 'keep') (cases: job)"
    )


async def test_built_targets_decide_whether_the_agent_was_told(tmp_path: Path, falkordb_uri: str) -> None:
    from proctor.targets import build_target

    case = _case(tmp_path, SUITE.format(target="python:helpers.graph_agents:reminders"))
    manager = StateManager(StateSpec(uri=falkordb_uri))
    manager.add(case)
    assert manager.plan(case).source == "override" and manager.notices() == []  # an override is the user's word
    manager = StateManager(environ={})
    manager.add(case)
    target = build_target(case.target)
    try:
        # helpers.graph_agents.reminders takes `context`: it is told; before start the address is unknown
        assert manager.notices({case.name: target}) == []
        assert "no way to tell" in manager.notices({case.name: object()})[0]
    finally:
        await target.aclose()


def test_graph_option_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEO_USERNAME", raising=False)
    assert graph_override("embedded") == StateSpec(backend="falkordb")
    assert graph_override("bolt://neo4j@db:7687") == StateSpec(
        backend="neo4j", uri="bolt://db:7687", user="neo4j", isolation="keep"
    )
    assert graph_override("falkordb://127.0.0.1:6379") == StateSpec(uri="falkordb://127.0.0.1:6379", isolation="keep")
    with pytest.raises(ValueError, match="expected a bolt://"):
        graph_override("localhost:7687")


def test_graph_option_runs_an_embabel_job_on_the_embedded_graph(
    tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`--graph embedded`: no Neo4j is looked for; the count is read where Proctor's graph is, and the run says
    the agent only learns that graph through headers."""
    from typer.testing import CliRunner

    from proctor.cli import app
    from servers._serve import serve_app
    from servers.embabel import EmbabelAgent, build_app
    from servers.model_server import Reply

    caplog.set_level(logging.WARNING, logger="proctor.state")
    monkeypatch.delenv("NEO_URI", raising=False)
    monkeypatch.setenv("EMBABEL_API_KEY", "treehorn")
    sim = model_server.script(
        *[Reply("What is the capital of France?"), Reply("So long, and thanks for all the fish")] * 2
    )
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    job = tmp_path / "job.yml"
    job.write_text(JOB, encoding="utf-8")
    agent = EmbabelAgent()
    with serve_app(build_app(agent)) as url:
        args = [
            "run",
            str(job),
            "--target",
            f"embabel:{url}",
            "--graph",
            "embedded",
            "--simulator",
            "openai/sim",
            "--ci",
            "--allow-skipped",  # the job's tasks are judged: with no judge, --ci alone refuses the run at start
        ]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # the agent wrote no Reminder where the assertion reads
    assert any("X-Proctor-Graph-* headers" in r.getMessage() for r in caplog.records)
    assert all("x-proctor-graph-uri" in headers for _, _, headers, _ in agent.requests)
    summary = json.loads(result.stdout)
    assert summary["summary"]["failed"] == 1 and summary["summary"]["errored"] == 0
