from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import Trust, load_suite_file

TEMPLATE = """\
name: capitals
vars: {greeting: Hello}
cases:
  - name: capital-of-{{ country }}
    dataset: DATASET
    turns:
      - content: "{{ greeting }}! What is the capital of {{ country }}?"
        assert:
          - {type: contains, value: "{{ city }}"}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def suite_with(tmp_path: Path, dataset: str, text: str = TEMPLATE) -> Path:
    return write(tmp_path, "capitals.yaml", text.replace("DATASET", dataset))


def problems(path: Path, trust: Trust | None = None) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, registry, trust=trust)
    return [str(issue) for issue in info.value.issues]


def test_a_200_row_csv_expands_into_200_cases(tmp_path: Path) -> None:
    rows = [f"Country {i},City {i}" for i in range(200)]
    write(tmp_path, "cities.csv", "country,city\n" + "\n".join(rows) + "\n")
    suite = load_suite_file(suite_with(tmp_path, "cities.csv"), registry)
    assert len(suite.cases) == 200
    case = suite.cases[199]
    assert case.name == "capital-of-Country 199"
    assert case.turns[0].content == "Hello! What is the capital of Country 199?"
    assert case.turns[0].assert_[0].value == "City 199"
    assert case.vars == {"greeting": "Hello", "country": "Country 199", "city": "City 199"}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("rows.csv", 'country,city\nFrance,Paris\n"Côte d\'Ivoire, the",Yamoussoukro\n'),
        (
            "rows.jsonl",
            '{"country": "France", "city": "Paris"}\n\n{"country": "Côte d\'Ivoire, the", "city": "Yamoussoukro"}\n',
        ),
        (
            "rows.json",
            json.dumps(
                [{"country": "France", "city": "Paris"}, {"country": "Côte d'Ivoire, the", "city": "Yamoussoukro"}]
            ),
        ),
        ("rows.yaml", '- {country: France, city: Paris}\n- country: "Côte d\'Ivoire, the"\n  city: Yamoussoukro\n'),
    ],
)
def test_every_dataset_format_gives_the_same_cases(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path, name, text)
    suite = load_suite_file(suite_with(tmp_path, name), registry)
    assert [c.name for c in suite.cases] == ["capital-of-France", "capital-of-Côte d'Ivoire, the"]
    assert [c.turns[0].assert_[0].value for c in suite.cases] == ["Paris", "Yamoussoukro"]


def test_inline_rows_and_names_from_a_column_or_the_row_number(tmp_path: Path) -> None:
    text = """\
cases:
  - name: by-column
    dataset: {rows: [{city: Paris}, {city: Tokyo}], name_from: city}
    turns: [{content: "{{ city }}"}]
  - name: by-number
    dataset: [{city: Paris}, {city: Tokyo}]
    turns: [{content: "{{ city }}"}]
  - name: plain
    turns: [{content: "no variables: {{ '{{' }} stays"}]
    vars: {unused: 1}
"""
    suite = load_suite_file(write(tmp_path, "s.yaml", text), registry)
    names = [c.name for c in suite.cases]
    assert names == ["by-column[Paris]", "by-column[Tokyo]", "by-number[1]", "by-number[2]", "plain"]
    assert suite.cases[-1].turns[0].content == "no variables: {{ stays"


def test_a_whole_string_expression_keeps_the_values_type(tmp_path: Path) -> None:
    text = """\
name: typed
vars: {words: [alpha, beta], limit: 2}
turns:
  - content: "say {{ words | join(' or ') }}"
    assert:
      - {type: contains-any, value: "{{ words }}"}
"""
    (case,) = load_suite_file(write(tmp_path, "s.yaml", text), registry).cases
    assert case.turns[0].content == "say alpha or beta"
    assert case.turns[0].assert_[0].value == ["alpha", "beta"]


def test_a_single_case_file_with_a_dataset_becomes_one_case_per_row(tmp_path: Path) -> None:
    text = """\
name: greet
dataset: [{who: Ada}, {who: Alan}]
trials: 2
turns:
  - content: "Hi, I am {{ who }}"
"""
    suite = load_suite_file(write(tmp_path, "s.yaml", text), registry)
    assert suite.name == "greet"
    got = [(c.name, c.trials, c.turns[0].content) for c in suite.cases]
    assert got == [("greet[1]", 2, "Hi, I am Ada"), ("greet[2]", 2, "Hi, I am Alan")]


def test_a_file_without_vars_is_not_rendered(tmp_path: Path) -> None:
    text = "name: raw\nturns:\n  - content: 'keep {{ this }} as written'\n"
    (case,) = load_suite_file(write(tmp_path, "s.yaml", text), registry).cases
    assert case.turns[0].content == "keep {{ this }} as written"


def test_an_unknown_variable_is_located_at_the_template(tmp_path: Path) -> None:
    write(tmp_path, "cities.csv", "country,city\nFrance,Paris\nJapan,Tokyo\n")
    path = suite_with(tmp_path, "cities.csv", TEMPLATE.replace("{{ city }}", "{{ ctiy }}"))
    (issue,) = problems(path)
    assert issue.startswith(f"{path}:9:37: cases[0].turns[0].assert[0].value: undefined variable 'ctiy'")
    assert "variables: city, country, greeting" in issue


def test_a_row_that_lacks_a_column_others_have_is_located_at_the_row(tmp_path: Path) -> None:
    data = write(tmp_path, "rows.jsonl", '{"country": "France", "city": "Paris"}\n{"country": "Japan"}\n')
    (issue,) = problems(suite_with(tmp_path, "rows.jsonl"))
    assert (
        issue
        == f"{data}:2:1: row 2: no variable 'city', which cases[0].turns[0].assert[0].value uses ('{{{{ city }}}}')"
    )


@pytest.mark.parametrize(
    ("name", "text", "where", "message"),
    [
        ("rows.csv", "country,city\nFrance,Paris\nJapan\n", ":3:2: row 2:", "row has 1 fields; the header has 2"),
        (
            "rows.csv",
            "country,first city\nFrance,Paris\n",
            ":1:2: header:",
            "column 'first city' is not a variable name",
        ),
        ("rows.csv", "country,country\nFrance,Paris\n", ":1:2: header:", "column 'country' appears twice"),
        (
            "rows.jsonl",
            '{"country": "France", "city": "Paris"}\n{"country": "Japan", city}\n',
            ":2:22: row 2:",
            "invalid JSON",
        ),
        ("rows.jsonl", '["France", "Paris"]\n', ":1:1: row 1:", "a row is a JSON object of variables; found list"),
        (
            "rows.json",
            '[{"country": "France",\n  "city": "Paris"},\n  7]\n',
            ":3:3: row 2:",
            "a row is a mapping of variables; found int",
        ),
        ("rows.json", '[{"country": "France",\n  "city": "Paris",}]\n', ":2:19:", "invalid JSON"),
        ("rows.yaml", "- {country: France, city: Paris}\n- [Japan, Tokyo]\n", ":2:3: row 2:", "found list"),
        ("rows.yaml", "- &a {country: France, city: !!python/name:os.system x}\n", ":1:", "is not allowed"),
    ],
)
def test_dataset_file_problems_are_located_as_file_row_column(
    tmp_path: Path, name: str, text: str, where: str, message: str
) -> None:
    data = write(tmp_path, name, text)
    (issue,) = problems(suite_with(tmp_path, name))
    assert issue.startswith(f"{data}{where}"), issue
    assert message in issue


def test_a_check_value_a_row_makes_invalid_is_located_at_the_template_and_names_the_row(tmp_path: Path) -> None:
    data = write(tmp_path, "rows.csv", "country,city\nFrance,Paris\nJapan,(Tokyo\nPeru,(Lima\n")
    path = suite_with(tmp_path, "rows.csv", TEMPLATE.replace("type: contains", "type: regex"))
    first, second = problems(path)
    assert first.startswith(f"{path}:9:34: cases[0].turns[0].assert[0].value (row 2, {data}:3): bad value")
    assert second.startswith(f"{path}:9:34: cases[0].turns[0].assert[0].value (row 3, {data}:4): bad value")


def test_unknown_format_missing_file_and_duplicate_names(tmp_path: Path) -> None:
    assert "unknown format '.txt'" in problems(suite_with(tmp_path, "rows.txt"))[0]
    assert "cannot read dataset 'none.csv'" in problems(suite_with(tmp_path, "none.csv"))[0]
    data = write(tmp_path, "rows.csv", "country,city\nFrance,Paris\nFrance,Lyon\n")
    (issue,) = problems(suite_with(tmp_path, "rows.csv"))
    assert issue.startswith(f"{data}:3:1: row 2: case name 'capital-of-France' is used twice (first by row 1")


def test_a_dataset_outside_the_project_root_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "outside.csv", "country,city\nFrance,Paris\n")
    project = tmp_path / "project"
    write(project, "proctor.yaml", "{}\n")
    path = suite_with(project, "../outside.csv")
    (issue,) = problems(path, Trust())
    assert "outside the project root" in issue
    assert load_suite_file(path, registry).cases  # a library caller without a Trust chose the files


def test_templates_are_sandboxed(tmp_path: Path) -> None:
    text = 'name: s\nvars: {x: 1}\nturns:\n  - content: "{{ x.__class__.__mro__ }}"\n'
    (issue,) = problems(write(tmp_path, "s.yaml", text))
    assert "s.yaml:4:14: turns[0].content:" in issue
    assert "not allowed" in issue or "undefined" in issue


@pytest.mark.parametrize(
    "template, words",
    [
        ("{{ 10 ** 10000000 }}", "larger than 100,000 bits"),  # QA: 14.8 s, then an unlocated ValueError
        ("{{ 'a' * 4000000000 }}", "more than 10,000,000"),  # QA: a 4 GB allocation
        ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "steps"),
        ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", "steps"),
    ],
)
def test_a_template_asking_for_unbounded_work_or_memory_is_located_and_refused(
    tmp_path: Path, template: str, words: str
) -> None:
    text = f'name: s\nvars: {{x: 1}}\nturns:\n  - content: "{template}"\n'
    (issue,) = problems(write(tmp_path, "s.yaml", text))
    assert "s.yaml:4:14: turns[0].content:" in issue and "not allowed" in issue and words in issue


def test_target_strings_render_only_their_own_variables(tmp_path: Path) -> None:
    text = """\
name: t
vars: {port: 8123}
target:
  type: http
  request: {url: "http://127.0.0.1:{{ port }}/chat", body: {text: "{{ message }}"}}
turns: [{content: hi}]
"""
    (case,) = load_suite_file(write(tmp_path, "s.yaml", text), registry).cases
    assert case.target is not None
    request = case.target.request  # type: ignore[union-attr]
    assert (request.url, request.body) == ("http://127.0.0.1:8123/chat", {"text": "{{ message }}"})
    mixed = text.replace("/chat", "/{{ session_id }}")
    (issue,) = problems(write(tmp_path, "m.yaml", mixed))
    assert "target.request.url:" in issue and "mixes suite variables (port)" in issue


def test_a_simulate_prompt_and_the_judge_are_left_for_their_own_templates(tmp_path: Path) -> None:
    text = """\
name: sim
vars: {goal: book a flight}
judge: {model: openai/x, prompts: {llm-rubric: "Rubric {{ rubric }}"}}
simulate:
  persona: {voice: "a traveller who wants to {{ goal }}"}
  prompt: "You are {{ persona.voice }}"
  tasks: [{task: "{{ goal }}"}]
"""
    (case,) = load_suite_file(write(tmp_path, "s.yaml", text), registry).cases
    assert case.simulate is not None
    assert case.simulate.prompt == "You are {{ persona.voice }}"
    assert case.simulate.persona.voice == "a traveller who wants to book a flight"
    assert case.simulate.tasks[0].task == "book a flight"
    assert case.judge is not None and case.judge.prompts == {"llm-rubric": "Rubric {{ rubric }}"}


def test_bad_vars_and_dataset_shapes_are_located(tmp_path: Path) -> None:
    text = "name: s\nvars: [1]\ncases:\n  - name: c\n    dataset: {path: a.csv, rows: []}\n    turns: [{content: hi}]\n"
    issues = problems(write(tmp_path, "s.yaml", text))
    assert any(":2:7: vars: 'vars' is a mapping" in i for i in issues)
    assert any(":5:14: cases[0].dataset: a dataset mapping has either 'path'" in i for i in issues)


def test_a_case_target_can_differ_per_row_and_a_python_one_needs_trust(tmp_path: Path) -> None:
    text = """\
cases:
  - name: agent
    dataset: {rows: [{port: 8001, agent: a}, {port: 8002, agent: b}], name_from: agent}
    target: {type: openai, base_url: "http://127.0.0.1:{{ port }}/v1", model: "{{ agent }}"}
    turns: [{content: hi}]
  - name: local
    target: "python:helpers.agents:echo"
    turns: [{content: hi}]
"""
    path = write(tmp_path, "s.yaml", text)
    first, second, local = load_suite_file(path, registry).cases
    assert (str(first.target.base_url), first.target.model) == ("http://127.0.0.1:8001/v1", "a")  # type: ignore[union-attr]
    assert (str(second.target.base_url), second.target.model) == ("http://127.0.0.1:8002/v1", "b")  # type: ignore[union-attr]
    assert local.target is not None and local.target.type == "python"
    (issue,) = problems(path, Trust())
    assert ":7:13: cases[1].target.callable: the suite names Python code to run (helpers.agents:echo)" in issue
