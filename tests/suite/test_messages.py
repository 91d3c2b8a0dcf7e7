"""Error messages say what is wrong where: file, line, field, what was expected, what was found."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.errors import SuiteError
from proctor.suite import load_project, load_suite_file
from proctor.suite._tools import MockSpec

CASES = "cases: [{name: a, turns: [{content: hi}]}]\n"
MOCK_FIELDS = "cycle, cypher, error, error_on, latency_ms, matching, result, results, table"


@pytest.fixture(autouse=True)
def _no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROCTOR_HOME", raising=False)


def suite_issues(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite_file(path)
    return [str(issue).removeprefix(str(path)) for issue in info.value.issues]


def test_a_tool_block_missing_its_name_says_so_and_never_suggests_the_same_field(tmp_path: Path) -> None:
    text = "name: s\nturns: [{content: hi}]\ntools:\n  proxy:\n    command: [x]\n"
    (issue,) = suite_issues(tmp_path, text)
    assert issue.startswith(":5:5: tools.proxy.command: unknown field 'command'")
    assert "did you mean 'command'" not in issue
    assert "'proxy' was read as the name of an entry" in issue
    assert "tools: {NAME: {proxy: {command: ...}}}" in issue


def test_a_field_one_level_down_is_said_to_belong_there(tmp_path: Path) -> None:
    text = "name: s\nturns: [{content: hi}]\ntools:\n  t:\n    command: [x]\n"
    (issue,) = suite_issues(tmp_path, text)
    assert "'command' belongs one level down, inside 'proxy' or 'schema_from'" in issue
    assert "did you mean 'command'" not in issue


def test_a_union_field_names_the_shape_it_read_and_drops_the_other_shapes_noise(tmp_path: Path) -> None:
    text = "name: s\nturns: [{content: hi}]\ntools:\n  t: {simulate: {modle: a/b}}\n"
    (issue,) = suite_issues(tmp_path, text)  # not also "should be a valid boolean"
    assert issue.startswith(":4:18: tools.t.simulate.modle: unknown field 'modle'; did you mean 'model'?")
    assert "'simulate' takes several shapes; as a mapping (ToolSimulateSpec) its valid fields are" in issue
    text = "name: s\nturns: [{content: hi}]\ntools:\n  t: {mock: x, schema_from: {comand: [x]}}\n"
    (issue,) = suite_issues(tmp_path, text)
    assert issue.startswith(":4:30: tools.t.schema_from.comand: unknown field 'comand'; did you mean 'command'?")


def test_a_repeated_case_name_is_located_at_its_second_use(tmp_path: Path) -> None:
    text = (
        "name: s\ncases:\n  - name: a\n    turns: [{content: hi}]\n  - name: b\n    turns: [{content: hi}]\n"
        "  - name: a\n    turns: [{content: again}]\n"
    )
    (issue,) = suite_issues(tmp_path, text)
    assert issue == ":7:11: cases[2].name: case name 'a' is used twice; names must be unique"


def project_error(tmp_path: Path, raw: bytes) -> SuiteError:
    (tmp_path / "proctor.yaml").write_bytes(raw)
    with pytest.raises(SuiteError) as info:
        load_project(tmp_path)
    return info.value


def test_a_nested_config_value_is_located_and_shown(tmp_path: Path) -> None:
    (issue,) = project_error(tmp_path, b"matrix:\n  models: 5\n").issues
    assert (issue.line, issue.column, issue.field) == (2, 11, "matrix.models")
    assert issue.message.endswith("(found 5)")


def test_an_unknown_nested_config_field_is_named_with_its_own_fields(tmp_path: Path) -> None:
    (issue,) = project_error(tmp_path, b"matrix:\n  modls: [a]\n").issues
    assert (issue.line, issue.column, issue.field) == (2, 3, "matrix.modls")
    assert issue.message == "unknown field 'modls' in 'matrix'; did you mean 'models'? (known: models, targets)"


def test_a_config_that_is_not_utf8_is_located_and_named_as_the_project_config(tmp_path: Path) -> None:
    error = project_error(tmp_path, b'trusted: true\nmodel: "caf\xe9"\n')
    (issue,) = error.issues
    assert (issue.line, issue.column) == (2, 12)
    assert issue.message == "proctor.yaml is not UTF-8: byte 0xe9 cannot be decoded (invalid continuation byte)"
    assert str(error).startswith("1 problem in the project config proctor.yaml:")


# A mocked tool's `mock:` mapping is validated as a nested model: its errors are located at its own keys.


def test_an_unknown_mock_key_is_located_and_lists_the_mocks_fields(tmp_path: Path) -> None:
    (issue,) = suite_issues(tmp_path, "tools:\n  t:\n    mock: {reslt: 1}\n" + CASES)
    assert issue.startswith(":3:12: tools.t.mock.reslt: unknown field 'reslt'; did you mean 'result'?")
    assert issue.endswith(f"as a mapping (MockSpec) its valid fields are: {MOCK_FIELDS}")
    assert "cassette" not in issue  # the tool's own fields are not the mock's


def test_an_unknown_mock_key_in_block_style_on_a_case_is_located(tmp_path: Path) -> None:
    text = "name: s\ncases:\n  - name: a\n    turns: [{content: hi}]\n    tools:\n      t:\n        mock:\n"
    text += "          latency_ms: 5\n          reslts: [a, b]\n"
    (issue,) = suite_issues(tmp_path, text)
    assert issue.startswith(":9:11: cases[0].tools.t.mock.reslts: unknown field 'reslts'; did you mean 'results'?")
    assert issue.endswith(MOCK_FIELDS)


def test_an_unknown_key_in_a_mock_table_row_lists_the_rows_fields(tmp_path: Path) -> None:
    text = "tools:\n  t:\n    mock:\n      table:\n        - {args: {a: 1}, reslt: 2}\n" + CASES
    (issue,) = suite_issues(tmp_path, text)
    assert issue == (
        ":5:26: tools.t.mock.table[0].reslt: unknown field 'reslt'; did you mean 'result'? "
        "Valid fields: arg_matching, args, error, result"
    )


def test_a_bad_mock_value_is_located_at_its_field_with_what_was_found(tmp_path: Path) -> None:
    (issue,) = suite_issues(tmp_path, "tools:\n  t:\n    mock: {result: x, latency_ms: -1}\n" + CASES)
    assert issue == ":3:35: tools.t.mock.latency_ms: input should be greater than or equal to 0; found -1"


def test_a_mock_with_nothing_to_answer_is_located_at_the_mock(tmp_path: Path) -> None:
    (issue,) = suite_issues(tmp_path, "tools:\n  t:\n    mock: {latency_ms: 5}\n" + CASES)
    assert issue == (
        ":3:11: tools.t.mock: a mock needs a 'result', 'results', a 'table', an 'error' or a 'cypher' statement"
    )


def test_the_readme_mock_shapes_load_as_mock_specs_and_fixed_values_stay_as_written(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        """\
tools:
  get_weather:
    mock:
      results: ["Sunny in {{ city }}", "Rain in {{ city }}"]
      latency_ms: 200
      error: "upstream timeout"
      error_on: [3]
  book_room:
    mock:
      table:
        - {args: {room: A1}, result: {booked: "{{ room }}", on: "{{ date }}"}}
        - {args: {room: Z9}, error: "room {{ room }} does not exist"}
        - {args: {room: "meeting room b"}, arg_matching: {room: fuzzy}, result: "booked B"}
      matching: {similarity_threshold: 0.8, case_insensitive: true}
  add_booking:
    mock:
      cypher: "CREATE (b:Booking {room: $room, date: $date}) RETURN b.room AS room"
  templated: {description: Weather, mock: "Sunny, 21 C in {{ city }}"}
  counted: {mock: 3}
  listed: {mock: [a, {b: 1}]}
"""
        + CASES,
        encoding="utf-8",
    )
    (case,) = load_suite_file(path).cases
    tools = case.tools
    for name in ("get_weather", "book_room", "add_booking"):
        assert isinstance(tools[name].mock, MockSpec)  # validated once, with the tool
        assert tools[name].mock_spec is tools[name].mock
    assert tools["get_weather"].mock.error_on == [3]
    assert tools["book_room"].mock.table[2].arg_matching == {"room": "fuzzy"}
    assert tools["add_booking"].uses_graph
    assert tools["templated"].mock == "Sunny, 21 C in {{ city }}"
    assert tools["counted"].mock_spec == MockSpec(result=3)
    assert tools["listed"].mock_spec == MockSpec(result=["a", {"b": 1}])
