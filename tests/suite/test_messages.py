"""Error messages say what is wrong where: file, line, field, what was expected, what was found."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.errors import SuiteError
from proctor.suite import load_project, load_suite_file


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
