"""Embabel Agent Eval's own example job (its README's), run unchanged against an agent that speaks the real
client protocol and writes to its own graph (FalkorDB's Bolt listener standing in for its Neo4j)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from falkordb import FalkorDB

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.suite import EmbabelTargetSpec, load_suite_file, load_suites, parse_target_string
from servers._serve import serve_app
from servers.embabel import EmbabelAgent, build_app
from servers.model_server import Reply

JOB = Path(__file__).resolve().parents[1] / "seeds" / "embabel" / "agent-eval" / "agent.yml"


def test_the_readme_job_loads_unchanged() -> None:
    (case,) = load_suite_file(JOB, registry).cases
    assert isinstance(case.target, EmbabelTargetSpec) and (case.target.user, case.target.chatbot) == (
        "test-user",
        "my-agent",
    )
    assert case.simulate is not None and case.simulate.aspirational_average == 3000
    assert [(a.type, a.weight) for a in case.assert_] == [("expression", 2), ("cypher", 3)]
    assert case.metadata == {"format": "embabel"}


def test_the_readme_job_runs_unchanged_on_the_agents_own_graph(
    model_server: Any, monkeypatch: pytest.MonkeyPatch, bolt_graph_uri: tuple[str, str]
) -> None:
    bolt, native = bolt_graph_uri
    db = FalkorDB.from_url(native.replace("falkordb://", "redis://", 1))
    graph = db.select_graph("falkordb")  # the graph the Bolt listener serves

    def write(resource: dict[str, Any]) -> None:  # what an Embabel agent does in its Neo4j
        graph.query("CREATE (:Reminder {name: $name})", {"name": resource["name"]})

    agent = EmbabelAgent(api_key="treehorn", on_reminder=write)
    for name, value in {
        "NEO_URI": bolt,
        "NEO_USERNAME": "falkordb",
        "NEO_PASSWORD": "",
        "EMBABEL_API_KEY": "treehorn",
    }.items():
        monkeypatch.setenv(name, value)
    bye = "Thanks! So Long, and Thanks for All the Fish"
    sim = model_server.script(
        *[Reply("Please remind me tomorrow at 9am"), Reply("What is the capital of France?"), Reply(bye)] * 2
    )
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    try:
        with serve_app(build_app(agent)) as url:
            options = RunOptions(
                target=parse_target_string(f"embabel:{url}"),
                model="gpt-4.1-mini",
                simulator="openai/sim",
                write_results=False,
                handle_sigint=False,
            )
            data = run_sync(load_suites([JOB], registry), options).data
    finally:
        db.close()
    assert agent.rejected == []  # only what the real client sends
    trial = data["cases"][0]["trials"][0]
    arms = trial["simulation"]["arms"]
    withheld, supplied = arms["withheld"], arms["supplied"]
    calls = [c["name"] for turn in withheld["turns"] for c in turn.get("tool_calls", [])]
    assert calls == ["createReminder", "lookup"]
    assert {c["type"]: c["status"] for c in withheld["checks"]} == {
        "expression": "passed",
        "cypher": "passed",
        "transcript": "skipped",
    }
    # Proctor deletes nothing in the agent's graph, as Embabel: the second conversation's reminder is the
    # second one there (the job has no setup that clears them)
    cypher = next(c for c in supplied["checks"] if c["type"] == "cypher")
    assert cypher["status"] == "failed" and "expected count = 1; found 2" in cypher["reason"]
