"""State per trial on remote workers: each worker starts its own embedded graph, hands it to the agent and
checks what the agent wrote there (Embabel's protocol over REST, as in `tests/run/test_state_trials.py`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from proctor.checks import registry
from proctor.cluster import ClusterSettings, remote_trials
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suite_file
from run.test_state_trials import EmbabelAgent
from servers._serve import serve_app

pytestmark = pytest.mark.usefixtures("ray_local")

SUITE = """\
name: reminders
trials: 4
target:
  type: http
  session:
    open:
      url: "AGENT/api/v1/chat/sessions"
      body: {user: u, chatbot: c, graphUri: "{{ graph_uri }}", graphName: "{{ graph_name }}"}
    id_path: $.sessionId
  request:
    url: "AGENT/api/v1/chat/messages"
    body: {sessionId: "{{ session_id }}", message: {role: user, content: "{{ message }}"}}
  reply_path: $.message.content
  tool_calls_path: $.events
setups:
  - cypher: "CREATE (:Person {name: 'Alice'})"
turns:
  - content: Remind me to water the plants.
assertions:
  - cypher: "MATCH (r:Reminder) RETURN r.title AS title"
    expected: water the plants
  - cypher: "MATCH (p:Person) RETURN p.name AS name"
    expected_rows: [{name: Alice}]
"""


@pytest.fixture
def embabel_agent() -> Iterator[tuple[str, EmbabelAgent]]:
    agent = EmbabelAgent()
    routes = [
        Route("/api/v1/chat/sessions", agent.open, methods=["POST"]),
        Route("/api/v1/chat/messages", agent.message, methods=["POST"]),
    ]
    with serve_app(Starlette(routes=routes)) as base_url:
        yield base_url, agent


def test_each_trial_gets_its_own_graph_on_the_worker_that_runs_it(
    tmp_path: Path, embabel_agent: tuple[str, EmbabelAgent]
) -> None:
    url, agent = embabel_agent
    path = tmp_path / "reminders.yaml"
    path.write_text(SUITE.replace("AGENT", url))
    options = RunOptions(write_results=False, handle_sigint=False, concurrency=4)
    cluster = remote_trials(ClusterSettings("auto", workers=2, cpus_per_worker=0.5))
    data = run_sync([load_suite_file(path, registry)], options, remote=cluster).data
    case = data["cases"][0]
    assert case["status"] == "passed" and case["pass_rate"] == 1.0, json.dumps(case["trials"][0]["checks"])
    graphs = {(s["graph_uri"], s["graph_name"]) for s in agent.sessions.values()}
    assert len(graphs) == 4  # one graph per trial (a Reminder from another trial would fail `expected`)
    assert len({uri for uri, _ in graphs}) == 2  # each of the two workers started its own embedded graph
