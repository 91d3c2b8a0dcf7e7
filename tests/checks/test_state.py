"""Cypher assertions against a real graph (the embedded FalkorDB), and how Embabel's shapes load."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check
from proctor.checks._state import CypherAssertion, match_rows, values_equal
from proctor.errors import SuiteError
from proctor.state import FalkorDBBackend, Graph
from proctor.suite import AssertionSpec, load_suite_file

pytestmark = pytest.mark.anyio

SEED = """
CREATE (:Reminder {title: 'call mum', at: 9, done: false, code: '7', day: date('2025-01-05')}),
       (:Reminder {title: 'pay rent', at: 10.5, done: true, code: '8', day: date('2025-01-06')}),
       (:Person {name: 'Alice'})-[:KNOWS]->(:Person {name: 'Bob'})
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def graph(falkordb_uri: str) -> AsyncIterator[Graph]:
    backend = FalkorDBBackend(falkordb_uri)
    await backend.start()
    handle = backend.graph("check-state", owned=True)
    await handle.reset()
    await handle.run(SEED)
    yield handle
    await handle.close()
    await backend.aclose()


async def cypher(graph: Graph | None, **value: Any) -> CheckResult:
    spec = AssertionSpec.model_validate(value, context={"checks": registry})
    result = run_check(spec, CheckContext(None, None, [], "case", state=graph))
    assert not isinstance(result, CheckResult)  # a query: always awaited
    return await result


async def test_embabels_count_assertion_passes_and_a_wrong_count_fails_with_both_values(graph: Graph) -> None:
    passed = await cypher(graph, cypher="MATCH (r:Reminder) RETURN count(r) AS count", expected=2, weight=3)
    assert (passed.status, passed.score, passed.weight, passed.type) == ("passed", 1.0, 3.0, "cypher")
    assert passed.name == "cypher: MATCH (r:Reminder) RETURN count(r) AS count"
    assert passed.details["rows"] == [{"count": 2}] and passed.details["query_ms"] >= 0
    failed = await cypher(graph, cypher="MATCH (r:Reminder) RETURN count(r) AS count", expected=1)
    assert (failed.status, failed.score) == ("failed", 0.0)
    assert failed.reason == "expected count = 1; found 2"


async def test_a_broken_query_is_an_error_with_the_database_message_never_a_zero(graph: Graph) -> None:
    result = await cypher(graph, cypher="MATCH (r:Reminder RETURN r", expected=1)
    assert (result.status, result.score) == ("error", None)
    assert result.reason.startswith("query failed: errMsg: Invalid input")


async def test_values_compare_by_type_not_as_strings(graph: Graph) -> None:
    total = "MATCH (r:Reminder) RETURN sum(r.at) AS total"  # FalkorDB's sum() is a float
    assert (await cypher(graph, cypher=total, expected=19.5)).status == "passed"
    ints = "MATCH (r:Reminder) RETURN sum(toInteger(r.at)) AS total"
    assert (await cypher(graph, cypher=ints, expected=19)).status == "passed"  # 19.0 == 19
    code = "MATCH (r:Reminder {title: 'call mum'}) RETURN r.code AS code"
    assert (await cypher(graph, cypher=code, expected=7)).status == "failed"  # "7" is not 7 ...
    assert (await cypher(graph, cypher=code, expected=7, string_numbers=True)).status == "passed"  # ... unless asked
    assert (await cypher(graph, cypher=code, expected="7")).status == "passed"
    done = "MATCH (r:Reminder {title: 'call mum'}) RETURN r.done AS done"
    assert (await cypher(graph, cypher=done, expected=False)).status == "passed"
    assert (await cypher(graph, cypher=done, expected=0)).status == "failed"  # false is not 0
    near = "RETURN 1.0 / 3 AS x"
    assert (await cypher(graph, cypher=near, expected=0.333)).status == "failed"
    assert (await cypher(graph, cypher=near, expected=0.333, tolerance=0.001)).status == "passed"
    absent = "MATCH (r:Reminder {title: 'call mum'}) RETURN r.missing AS missing"
    assert (await cypher(graph, cypher=absent, expected=None)).status == "passed"
    listed = "MATCH (r:Reminder) WITH r ORDER BY r.title RETURN collect(r.title) AS titles"
    assert (await cypher(graph, cypher=listed, expected=["call mum", "pay rent"])).status == "passed"
    day = "MATCH (r:Reminder {title: 'call mum'}) RETURN r.day AS day"
    assert (await cypher(graph, cypher=day, expected="2025-01-05")).status == "passed"
    assert (await cypher(graph, cypher=day, expected=dt.date(2025, 1, 5))).status == "passed"


async def test_expected_rows_in_any_order_or_in_order(graph: Graph) -> None:
    query = "MATCH (r:Reminder) RETURN r.title AS title, r.done AS done"
    rows = [{"title": "pay rent", "done": True}, {"title": "call mum", "done": False}]
    assert (await cypher(graph, cypher=query, expected_rows=rows)).status == "passed"
    ordered = query + " ORDER BY title"
    assert (await cypher(graph, cypher=ordered, expected_rows=rows, ordered=True)).status == "failed"
    assert (await cypher(graph, cypher=ordered, expected_rows=rows[::-1], ordered=True)).status == "passed"
    wrong = await cypher(graph, cypher=query, expected_rows=[rows[0], {"title": "walk dog", "done": False}])
    assert wrong.status == "failed"
    assert 'missing [{"title": "walk dog", "done": false}]' in wrong.reason
    assert 'unexpected [{"title": "call mum", "done": false}]' in wrong.reason
    columns = await cypher(graph, cypher=query, expected_rows=[{"title": "call mum"}])
    assert (
        columns.status == "error"
        and "names columns ['title'], but the query returns ['done', 'title']" in columns.reason
    )


async def test_row_counts_parameters_and_the_bare_form(graph: Graph) -> None:
    params = {
        "cypher": "MATCH (p:Person {name: $name})-[:KNOWS]->(q) RETURN q.name AS name",
        "params": {"name": "Alice"},
    }
    assert (await cypher(graph, **params, expected="Bob")).status == "passed"
    none = await cypher(graph, cypher="MATCH (r:Reminder {title: 'x'}) RETURN r.title AS t", expected="x")
    assert none.status == "failed" and none.reason == 'expected "x"; the query returned no rows'
    many = await cypher(graph, cypher="MATCH (r:Reminder) RETURN r.title AS t", expected="call mum")
    assert many.status == "failed" and "the query returned 2 rows" in many.reason
    columns = await cypher(graph, cypher="MATCH (r:Reminder) RETURN r.title AS t, r.at AS at LIMIT 1", expected=1)
    assert columns.status == "error" and "use expected_rows" in columns.reason
    exists = await cypher(graph, type="cypher", value="MATCH (p:Person {name: 'Alice'}) RETURN p")
    assert exists.status == "passed" and exists.reason == "expected at least one row; found 1"
    absent = await cypher(graph, type="cypher", value={"cypher": "MATCH (p:Person {name: 'Zed'}) RETURN p"})
    assert absent.status == "failed"


async def test_no_graph_is_an_error() -> None:
    result = await cypher(None, cypher="RETURN 1 AS x", expected=1)
    assert result.status == "error" and "no graph" in result.reason


def test_registered_as_a_conversation_state_check() -> None:
    check, _ = registry.resolve("cypher")
    assert (check.family, check.scope, check.needs_state, check.negatable) == ("state", "conversation", True, False)
    assert "not-cypher" not in registry.names()


def test_the_value_model_rejects_contradictions() -> None:
    with pytest.raises(ValueError, match="not both"):
        CypherAssertion(cypher="RETURN 1", expected=1, expected_rows=[])
    with pytest.raises(ValueError, match="'ordered' applies"):
        CypherAssertion(cypher="RETURN 1", ordered=True)
    with pytest.raises(ValueError, match="exactly one statement"):
        CypherAssertion(cypher="CREATE (:A); CREATE (:B)")


def test_values_equal_and_match_rows() -> None:
    assert values_equal(1, 1.0) and values_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not values_equal(True, 1) and not values_equal(1, True) and not values_equal("1", 1)
    assert values_equal(" 1.50 ", 1.5, string_numbers=True) and not values_equal("x", 1, string_numbers=True)
    assert not values_equal({"a": 1}, {"a": 1, "b": 2}) and not values_equal([1], [1, 2]) and not values_equal(None, 0)
    nine = dt.datetime(2025, 1, 5, 9, tzinfo=dt.UTC)
    assert values_equal(nine, "2025-01-05T09:00:00+00:00") and not values_equal(dt.date(2025, 1, 5), "soon")
    # rows match one to one (the matching moves an earlier choice to fit a later row)
    assert match_rows([{"x": 1.0}, {"x": 1.2}], [{"x": 1.1}, {"x": 1.0}], tolerance=0.15) == ([], [])
    assert match_rows([{"x": 1}, {"x": 1}], [{"x": 1}]) == ([], [1])
    assert match_rows([{"x": 1}], [{"x": 1}, {"x": 2}], ordered=True) == ([1], [])


SUITE = """
name: reminders
target: python:helpers.graph_agents:reminders
setups:
  - cypher: "CREATE (:Person {name: 'Alice'}); CREATE (:Person {name: 'Bob'})"
  - file: people.cypher
assertions:
  - expression: "objectContext.resources.size == 1"
    weight: 2
  - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
    expected: 1
    weight: 3
cases:
  - name: one
    turns: [{content: Remind me to call mum.}]
    setups: [{cypher: "CREATE (:Pet {name: $name})", params: {name: Rex}}]
    assert:
      - {type: cypher, value: "MATCH (p:Pet) RETURN p"}
      - {type: expression, expression: 'objectContext.entities.any { it.type == "Reminder" }'}
"""


def test_embabel_shapes_load_into_case_assertions_and_setups(tmp_path: Path) -> None:
    (tmp_path / "people.cypher").write_text("// fixtures\nCREATE (:Person {name: 'a;b'});\n/* two */ CREATE (:X)\n")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    case = load_suite_file(path, registry).cases[0]
    assert [(spec.type, spec.weight) for spec in case.assert_] == [
        ("expression", 2.0),
        ("cypher", 3.0),
        ("cypher", 1.0),
        ("expression", 1.0),
    ]
    assert isinstance(case.assert_[1].value, CypherAssertion) and case.assert_[1].value.expected == 1
    assert case.assert_[0].display_name() == "expression: objectContext.resources.size == 1"
    assert [step.statement for step in case.setups] == [
        "CREATE (:Person {name: 'Alice'})",
        "CREATE (:Person {name: 'Bob'})",
        "CREATE (:Person {name: 'a;b'})",
        "CREATE (:X)",
        "CREATE (:Pet {name: $name})",
    ]
    assert case.setups[-1].params == {"name": "Rex"} and case.setups[2].source == str(tmp_path / "people.cypher")
    assert case.state is None


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        ("assertions: [{cypher: 'RETURN 1', expected: 1, expected_rows: []}]", "not both"),
        ("assertions: [{cypher: 'RETURN 1', expect: 1}]", "expect"),
        ("assertions: [{expression: 'objectContext.x.any { }'}]", "the lambda has no body"),
        ("setups: [{file: missing.cypher}]", "cannot read setup script"),
        ("setups: [{cypher: '// nothing'}]", "holds no statement"),
        ("state: {isolation: parallel}", "'graph', 'label', 'serial', 'shared' or 'keep'"),
    ],
)
def test_bad_state_fields_are_located_load_errors(tmp_path: Path, fragment: str, message: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: s\nturns: [{{content: hi}}]\n{fragment}\n")
    with pytest.raises(SuiteError) as caught:
        load_suite_file(path, registry)
    issue = caught.value.issues[0]
    assert message in issue.message and issue.line == 3


def test_state_checks_belong_to_the_whole_conversation(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\nturns:\n  - content: hi\n    assert: [{cypher: 'RETURN 1', expected: 1}]\n")
    with pytest.raises(SuiteError, match="checks the whole conversation"):
        load_suite_file(path, registry)


def test_the_json_schema_accepts_embabels_shapes() -> None:
    import jsonschema

    from proctor.checks import suite_json_schema

    schema = suite_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    def errors(*entries: Any) -> int:
        suite = {
            "name": "x",
            "turns": [{"content": "hi"}],
            "assertions": list(entries),
            "setups": [{"cypher": "RETURN 1"}],
        }
        return len(list(validator.iter_errors(suite)))

    assert (
        errors(
            {"cypher": "MATCH (r:Reminder) RETURN count(r) AS count", "expected": 1, "weight": 3},
            {"expression": "objectContext.resources.size == 1", "weight": 2},
            {"type": "cypher", "value": "MATCH (n) RETURN n"},
            {"type": "cypher", "value": {"cypher": "RETURN 1 AS x", "expected_rows": [{"x": 1}], "ordered": True}},
        )
        == 0
    )
    assert errors({"cypher": "RETURN 1", "expcted": 1}) == 1
    assert errors({"type": "cypher", "value": {"cyper": "RETURN 1"}}) == 1
