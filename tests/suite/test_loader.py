from __future__ import annotations

from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import load_suite_file, load_suites

LOBU_FILE = """\
name: follows-instructions
description: Agent follows formatting instructions without adding unrequested content
trials: 3
timeout: 60
tags: [behavioral]
rubric: follows-instructions.rubric.md

scoring:
  pass_threshold: 0.8

turns:
  - content: "List exactly 3 benefits of remote work. Use bullet points."
    assert:
      - type: regex
        value: "^[\\\\s\\\\S]*[-•].*[-•].*[-•]"
        weight: 0.5
      - type: llm-rubric
        value: "Lists exactly 3 benefits (not 2, not 4+), uses bullet points"
        weight: 0.5
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_lobu_file_loads_as_is_with_lobu_defaults(tmp_path: Path) -> None:
    write(tmp_path, "follows-instructions.rubric.md", "# Instruction Following\n- exact count\n")
    suite = load_suite_file(write(tmp_path, "follows.yaml", LOBU_FILE), registry)
    (case,) = suite.cases
    assert case.name == "follows-instructions"
    assert case.trials == 3 and case.timeout == 60
    assert case.tags == ("behavioral",)
    assert case.scoring.pass_threshold == 0.8 and case.scoring.min_pass_rate == 0.8
    assert case.rubric is not None and "exact count" in case.rubric.text
    regex, rubric = case.turns[0].assert_
    assert (regex.type, regex.weight, rubric.type, rubric.weight) == ("regex", 0.5, "llm-rubric", 0.5)


def test_minimal_lobu_file_gets_default_trials_and_timeout(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "ping.yaml",
        "name: ping\nturns:\n  - content: hi\n    assert:\n      - type: contains\n        value: hello\n"
        "        options: { case_insensitive: true }\n",
    )
    (case,) = load_suite_file(path, registry).cases
    assert (case.trials, case.timeout) == (3, 120.0)
    assert case.turns[0].assert_[0].options.case_insensitive is True


def test_multi_case_file_inherits_file_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "multi.yml",
        """\
name: hr
trials: 2
tags: [hr]
scoring: {pass_threshold: 0.5, min_pass_rate: 1.0}
target: http://127.0.0.1:9/v1
cases:
  - name: one
    turns: [{content: a}]
  - name: two
    trials: 5
    tags: [extra]
    scoring: {pass_threshold: 0.9}
    turns: [{content: b}, {content: c}]
""",
    )
    suite = load_suite_file(path, registry)
    one, two = suite.cases
    assert (one.trials, one.tags, one.scoring.pass_threshold, one.scoring.min_pass_rate) == (2, ("hr",), 0.5, 1.0)
    assert (two.trials, two.tags, two.scoring.pass_threshold) == (5, ("hr", "extra"), 0.9)
    assert suite.target is not None and suite.target.type == "openai"
    assert str(suite.target.base_url) == "http://127.0.0.1:9/v1"


def test_directory_search_skips_results(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "name: a\nturns: [{content: x}]\n")
    write(tmp_path, "sub/b.yml", "name: b\nturns: [{content: x}]\n")
    write(tmp_path, ".results/old.yaml", "this: is not a suite\n")
    write(tmp_path, "notes.md", "# not yaml")
    names = [s.name for s in load_suites([tmp_path], registry)]
    assert names == ["a", "b"]


def test_directory_search_skips_hidden_folders_but_a_named_file_loads(tmp_path: Path) -> None:
    """A project root holds `.github/workflows/ci.yml` and the like: never suites, never load errors."""
    write(tmp_path, "a.yaml", "name: a\nturns: [{content: x}]\n")
    write(tmp_path, ".github/workflows/ci.yml", "on: [push]\njobs: {test: {runs-on: ubuntu-latest}}\n")
    write(tmp_path, ".hidden/c.yaml", "name: c\nturns: [{content: x}]\n")
    assert [s.name for s in load_suites([tmp_path], registry)] == ["a"]
    assert [s.name for s in load_suites([tmp_path / ".hidden" / "c.yaml"], registry)] == ["c"]


BAD_FILE = """\
name: bad
trials: 0
scoring:
  pass_treshold: 0.8
turns:
  - content: "hi"
    assert:
      - type: containz
        value: "x"
      - type: regex
        value: "([a-z"
      - type: contains-all
        value: []
      - type: is-json
        value: 3
      - type: contains
  - content: "x"
    asert: []
target: {type: openai, base_urll: "x"}
"""


def test_every_error_of_a_file_is_reported_with_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot: object
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.yaml", BAD_FILE)
    with pytest.raises(SuiteError) as info:
        load_suites(["bad.yaml"], registry)
    assert len(info.value.issues) == 10
    assert str(info.value) == snapshot


def test_errors_of_several_files_are_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot: object
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "s/broken.yaml", "name: x\nturns: [content: a\n")
    write(tmp_path, "s/list.yaml", "- a\n- b\n")
    write(tmp_path, "s/empty.yaml", "")
    write(tmp_path, "s/both.yaml", "name: x\nturns: [{content: a}]\ncases: [{name: y, turns: [{content: b}]}]\n")
    write(tmp_path, "s/dupe.yaml", "name: x\nname: y\nturns: [{content: a}]\n")
    write(tmp_path, "s/rubric.yaml", "name: x\nrubric: missing.md\nturns: [{content: a}]\n")
    write(tmp_path, "s/target.yaml", "name: x\ntarget: {type: grpc}\nturns: [{content: a}]\n")
    write(tmp_path, "s/dupcase.yaml", "cases: [{name: y, turns: [{content: b}]}, {name: y, turns: [{content: c}]}]\n")
    write(tmp_path, "s/rubriccheck.yaml", "name: x\nturns: [{content: a, assert: [{type: rubric}]}]\n")
    with pytest.raises(SuiteError) as info:
        load_suites(["s", "nowhere"], registry)
    assert str(info.value) == snapshot


def test_unknown_field_suggestion_in_nested_target(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        "name: x\ntarget:\n  type: http\n  request: {url: 'http://x', methd: POST}\nturns: [{content: a}]\n",
    )
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, registry)
    (issue,) = info.value.issues
    assert (issue.line, issue.column, issue.field) == (4, 30, "target.request.methd")
    assert "did you mean 'method'?" in issue.message
    assert "Valid fields: body, headers, method, url" in issue.message


def test_without_catalog_any_type_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "name: x\nturns: [{content: a, assert: [{type: my-custom}]}]\n")
    assert load_suite_file(path).cases[0].turns[0].assert_[0].type == "my-custom"


def test_case_level_assert_rejects_single_reply_checks(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", "name: x\nassert: [{type: contains, value: a}]\nturns: [{content: a}]\n")
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, registry)
    (issue,) = info.value.issues
    assert issue.field == "assert" and "'contains' checks one reply: put it in a turn's 'assert'" in issue.message


def test_file_level_assert_applies_to_every_case(tmp_path: Path) -> None:
    from proctor.checks import CheckType, Outcome

    registry.register(CheckType("test-whole", "test", "x", lambda s, c: Outcome(True, "x", "y"), scope="conversation"))
    try:
        path = write(
            tmp_path,
            "c.yaml",
            "assert: [{type: test-whole}]\ncases:\n  - {name: a, turns: [{content: a}]}\n"
            "  - {name: b, turns: [{content: b}], assert: [{type: test-whole, weight: 2}]}\n",
        )
        a, b = load_suite_file(path, registry).cases
        assert [s.weight for s in a.assert_] == [1.0] and [s.weight for s in b.assert_] == [1.0, 2.0]
        bad = write(tmp_path, "t.yaml", "name: x\nturns: [{content: a, assert: [{type: test-whole}]}]\n")
        with pytest.raises(SuiteError, match="checks the whole conversation: put it in the case's 'assert'"):
            load_suite_file(bad, registry)
    finally:
        registry._types.pop("test-whole")


def test_a_directory_search_loads_only_suites(tmp_path: Path) -> None:
    write(tmp_path, "evals/quiz.yaml", "name: quiz\ncases: [{name: a, turns: [{content: hi}]}]\n")
    write(tmp_path, "evals/lobu.yaml", "name: one\nturns: [{content: hi}]\n")
    write(tmp_path, "evals/scene.yaml", "name: scene\nscript: [{user: hi}]\n")  # a scenario script at the top
    write(tmp_path, "docker-compose.yml", "version: '3'\nservices: {agent: {image: x}}\n")
    write(tmp_path, ".github/workflows/ci.yml", "on: push\njobs: {}\n")
    write(tmp_path, "evals/.results/old.yaml", "name: old\nturns: [{content: hi}]\n")
    write(tmp_path, "notes/empty.yaml", "")
    skipped: list[Path] = []
    suites = load_suites([tmp_path], registry, on_skip=skipped.append)
    assert sorted(suite.name for suite in suites) == ["one", "quiz", "scene"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in skipped) == ["docker-compose.yml", "notes/empty.yaml"]


def test_a_named_file_that_is_not_a_suite_is_an_error(tmp_path: Path) -> None:
    compose = write(tmp_path, "docker-compose.yml", "version: '3'\nservices: {agent: {image: x}}\n")
    with pytest.raises(SuiteError) as info:
        load_suites([compose], registry)
    (issue,) = info.value.issues
    assert (issue.file, issue.line) == (str(compose), 1)
    assert issue.message.startswith("not a suite file") and "services, version" in issue.message
    broken = write(tmp_path, "typo.yaml", "name: x\ncase: []\n")  # a suite with a typo still says what is wrong
    with pytest.raises(SuiteError, match="unknown field 'case'"):
        load_suites([broken], registry)


def test_a_directory_with_no_suite_says_what_a_suite_is(tmp_path: Path) -> None:
    write(tmp_path, "ci.yml", "on: push\n")
    with pytest.raises(SuiteError, match="no suite files found \\(YAML files with 'cases:' or 'turns:'"):
        load_suites([tmp_path], registry)


def test_a_go_judges_file_is_passed_over_in_a_folder_and_an_error_when_named(tmp_path: Path) -> None:
    write(tmp_path, "suite.yaml", "target: python:agent:respond\ncases:\n  - {name: a, turns: [{content: hi}]}\n")
    judges = write(tmp_path, "configs/judges.yaml", "judges:\n  evaluators:\n    - {name: tone}\n")
    assert [s.path.name for s in load_suites([tmp_path], registry)] == ["suite.yaml"]  # passed over
    with pytest.raises(SuiteError, match="Go Eval Agent judges configuration"):
        load_suites([judges], registry)


EVERY_FIELD = """\
name: every-field
trials: 4
timeout: 30
tags: [file-tag]
scoring: {pass_threshold: 0.5}
target: {type: openai, base_url: "http://127.0.0.1:1/v1", model: m}
judge: openai/gpt-4o-mini
simulator: openai/gpt-4o
seed_session: same
seeds: [{conversation: [{role: user, content: hello}]}]
tools: {lookup: {description: Look up, mock: found}}
setups: [{cypher: "CREATE (:A)"}]
assert: [{type: tool-called, value: lookup}]
cases:
  - name: first
    description: the first
    turns: [{content: hi, assert: [{type: contains, value: hi}]}]
  - name: second
    trials: 2
    timeout: 5
    tags: [case-tag, file-tag]
    scoring: {pass_threshold: 0.9}
    seeds: [{conversation: [{role: user, content: again}]}]
    seed_session: prior
    tools: {other: {description: Other, mock: x}}
    setups: [{cypher: "CREATE (:B)"}]
    assert: [{type: tool-not-called, value: other}]
    script:
      - user: hi
      - simulate: {goal: finish}
"""


def test_every_case_field_takes_its_own_value_or_the_files(tmp_path: Path) -> None:
    """Each of a `Case`'s fields from where it belongs: the case's value, else the file's, else the default."""
    from proctor.suite import Case
    from proctor.suite._model import JudgeSpec, ScoringSpec, SuiteFileSpec
    from proctor.suite._yaml import fast_load

    path = write(tmp_path, "every.yaml", EVERY_FIELD)
    first, second = load_suite_file(path, registry).cases
    spec = SuiteFileSpec.model_validate(fast_load(EVERY_FIELD), context={"checks": registry})
    assert spec.cases is not None
    file_check = spec.assert_[0]
    expected_first = {
        "name": "first",
        "file": path,
        "suite": "every-field",
        "turns": tuple(spec.cases[0].turns),
        "trials": 4,
        "timeout": 30.0,
        "tags": ("file-tag",),
        "scoring": ScoringSpec(pass_threshold=0.5),
        "description": "the first",
        "rubric": None,
        "target": spec.target,
        "judge": JudgeSpec(model="openai/gpt-4o-mini"),
        "assert_": (file_check,),
        "metadata": {},
        "state": None,
        "simulate": None,
        "simulator": "openai/gpt-4o",
        "seeds": tuple(spec.seeds),
        "seed_session": "same",
        "tools": dict(spec.tools),
        "vars": {},
        "script": (),
    }
    for field, value in expected_first.items():
        assert getattr(first, field) == value, field
    assert [step.statement for step in first.setups] == ["CREATE (:A)"]
    assert isinstance(first, Case) and type(first.trials) is int and type(first.timeout) is float
    expected_second = {
        "name": "second",
        "suite": "every-field",
        "turns": (),
        "trials": 2,
        "timeout": 5.0,
        "tags": ("file-tag", "case-tag"),
        "scoring": ScoringSpec(pass_threshold=0.9),
        "description": None,
        "assert_": (file_check, spec.cases[1].assert_[0]),
        "seeds": (*spec.seeds, *spec.cases[1].seeds),
        "seed_session": "prior",
        "tools": {**spec.tools, **spec.cases[1].tools},
        "script": tuple(spec.cases[1].script or ()),
    }
    for field, value in expected_second.items():
        assert getattr(second, field) == value, field
    assert [step.statement for step in second.setups] == ["CREATE (:A)", "CREATE (:B)"]
    assert second.simulate is not None and second.simulate.arms == ["supplied"]  # the script's stretch
    assert first.tools is not second.tools and first.metadata is not second.metadata  # each case its own
