"""State through tools: a mocked tool whose mock is Cypher reads and writes the trial's graph, and the
case's state assertions check what the agent did through it (an embedded FalkorDB per trial)."""

from __future__ import annotations

from pathlib import Path

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites

SUITE = """\
name: state-tools
target: "python:helpers.mcp_agents:desk"
trials: 2
setups:
  - cypher: "CREATE (:Room {name: 'A1', booked: false})"
tools:
  book_room:
    description: Book a meeting room for a day
    input: {type: object, properties: {room: {type: string}, date: {type: string}}, required: [room, date]}
    mock:
      cypher: >-
        MATCH (r:Room {name: $room}) SET r.booked = true
        CREATE (b:Booking {room: $room, date: $date}) RETURN b.room AS room, b.date AS date
turns:
  - content: "Book A1 on 2026-12-01"
    assert: [{type: contains, value: '"room": "A1"'}]
assert:
  - {cypher: "MATCH (b:Booking {room: 'A1', date: '2026-12-01'}) RETURN count(b) AS count", expected: 1}
  - {cypher: "MATCH (r:Room {name: 'A1'}) RETURN r.booked AS booked", expected_rows: [{booked: true}]}
"""


def test_a_cypher_mock_writes_the_state_the_assertions_read(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    data = run_sync(load_suites([path], registry), RunOptions(write_results=False)).data
    case = data["cases"][0]
    assert case["status"] == "passed", case["trials"][0]
    for trial in case["trials"]:  # each trial's own clean graph: one booking each, never two
        (call,) = trial["turns"][1]["tool_calls"]
        assert call["result"] == [{"room": "A1", "date": "2026-12-01"}]
        assert [c["status"] for c in trial["checks"]] == ["passed", "passed", "passed"]
