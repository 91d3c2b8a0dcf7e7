"""watsonx ground-truth datasets load as cases as they are; broken goal graphs are located errors; the
native `expect:` block adds the same journey check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.run import RunOptions, run_sync
from proctor.suite import JourneySpec, load_suite_file, load_suites
from proctor.suite.formats.watsonx import is_watsonx_dataset

# The watsonx ADK documentation's example dataset, byte for byte.
SEED = """\
{
    "agent": "hr_agent",
    "goals": {
        "get_assignment_id_hr_agent-1": [
            "get_timeoff_schedule_hr_agent-1"
        ],
        "get_timeoff_schedule_hr_agent-1": [
            "summarize"
        ]
    },
    "goal_details": [
        {
            "type": "tool_call",
            "name": "get_assignment_id_hr_agent-1",
            "tool_name": "get_assignment_id_hr_agent",
            "args": {
                "username": "nwaters"
            }
        },
        {
            "type": "tool_call",
            "name": "get_timeoff_schedule_hr_agent-1",
            "tool_name": "get_timeoff_schedule_hr_agent",
            "args": {
                "assignment_id": "15778303",
                "end_date": "2025-01-30",
                "start_date": "2025-01-01"
            }
        },
        {
            "name": "summarize",
            "type": "text",
            "response": "Your time off schedule is on January 5, 2025.",
            "keywords": [
                "January 5, 2025"
            ]
        }
    ],
    "story": "You want to know your time off schedule. Your username is nwaters. The start date is 2025-01-01. The end date is 2025-01-30.",
    "starting_sentence": "I want to know my time off schedule"
}
"""  # noqa: E501


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def dataset(**changes: Any) -> str:
    data = json.loads(SEED)
    data.update(changes)
    return json.dumps(data, indent=2)


def problems(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, registry)
    return [str(issue) for issue in info.value.issues]


def test_the_seed_dataset_is_a_case_as_it_is(tmp_path: Path) -> None:
    suite = load_suite_file(write(tmp_path, "timeoff.json", SEED), registry)
    (case,) = suite.cases
    assert (suite.name, case.name, case.suite) == ("timeoff", "timeoff", "timeoff")
    assert [turn.content for turn in case.turns] == ["I want to know my time off schedule"]
    assert case.tags == ("watsonx", "hr_agent")
    assert case.description is not None and case.description.startswith("You want to know your time off")
    assert case.metadata == {
        "format": "watsonx",
        "agent": "hr_agent",
        "story": json.loads(SEED)["story"],
        "starting_sentence": "I want to know my time off schedule",
    }
    (journey,) = case.assert_
    assert (journey.type, journey.name) == ("journey", "journey")
    value: JourneySpec = journey.value
    assert [g.name for g in value.order()] == [
        "get_assignment_id_hr_agent-1",
        "get_timeoff_schedule_hr_agent-1",
        "summarize",
    ]
    assert (value.similarity_threshold, value.enable_fuzzy_matching) == (0.8, False)


def test_optional_fields_and_unknown_keys_are_kept(tmp_path: Path) -> None:
    text = dataset(runtime_context={"user": "nwaters"}, max_user_turns=5, mine_fields=["x"])
    (case,) = load_suite_file(write(tmp_path, "d.json", text), registry).cases
    assert case.metadata["runtime_context"] == {"user": "nwaters"}
    assert case.metadata["max_user_turns"] == 5 and case.metadata["extra"] == {"mine_fields": ["x"]}


def test_the_seed_runs_unchanged_against_an_agent_that_makes_those_calls(tmp_path: Path) -> None:
    suites = load_suites([write(tmp_path, "timeoff.json", SEED)], registry)
    target = {"type": "python", "callable": "helpers.agents:watsonx_hr_agent"}
    outcome = run_sync(suites, RunOptions(target=target, trials=2, write_results=False))
    (case,) = outcome.data["cases"]
    assert case["status"] == "passed" and case["pass_rate"] == 1.0 and case["pass_k"] == 1.0
    (check,) = case["trials"][0]["checks"]
    assert check["type"] == "journey" and check["turn"] is None
    metrics = check["details"]["metrics"]
    assert metrics["journey_success"] is True and metrics["tool_call_precision"] == 1.0
    assert metrics["correct_tool_calls"] == metrics["expected_tool_calls"] == 2
    assert metrics["avg_response_time_ms"] > 0


def test_a_directory_of_datasets_is_a_suite_and_other_json_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "data/a.json", SEED)
    write(tmp_path, "data/nested/b.json", dataset(starting_sentence="Hi"))
    write(tmp_path, "data/package.json", '{"name": "not a dataset"}')
    write(tmp_path, "data/results.json", "[1, 2]")
    write(tmp_path, "data/suite.yaml", "name: native\nturns: [{content: hi}]\n")
    write(tmp_path, "data/config.yaml", "similarity_threshold: 0.9\nenable_fuzzy_matching: true\ntest_paths: [x]\n")
    write(tmp_path, "data/.results/run.json", SEED)
    suites = load_suites([tmp_path / "data"], registry)
    assert sorted(s.path.name for s in suites) == ["a.json", "b.json", "suite.yaml"]
    by_name = {s.name: s for s in suites}
    near: JourneySpec = by_name["a"].cases[0].assert_[0].value
    assert (near.similarity_threshold, near.enable_fuzzy_matching) == (0.9, True)  # the config beside it
    far: JourneySpec = by_name["b"].cases[0].assert_[0].value
    assert (far.similarity_threshold, far.enable_fuzzy_matching) == (0.8, False)  # none beside it


def test_a_config_yaml_without_datasets_beside_it_is_still_a_suite(tmp_path: Path) -> None:
    write(tmp_path, "config.yaml", "name: config\nturns: [{content: hi}]\n")
    (suite,) = load_suites([tmp_path], registry)
    assert suite.name == "config"


def test_bad_config_values_are_reported(tmp_path: Path) -> None:
    write(tmp_path, "config.yml", "similarity_threshold: 1.5\n")
    expected = [f"{tmp_path / 'config.yml'}: similarity_threshold: input should be less than or equal to 1; found 1.5"]
    assert problems(write(tmp_path, "d.json", SEED)) == expected
    broken = SEED.replace('"summarize"\n        ]', '"sumarize"\n        ]')
    assert len(problems(write(tmp_path, "e.json", broken))) == 3  # the config's problem and the file's two
    assert problems(write(tmp_path, "f.json", SEED)) == expected  # reported again, not accumulated


def test_unknown_goal_names_are_located(tmp_path: Path) -> None:
    text = SEED.replace('"summarize"\n        ]', '"sumarize"\n        ]')
    path = write(tmp_path, "d.json", text)
    assert problems(path) == [
        f"{path}:8:13: goals.get_timeoff_schedule_hr_agent-1[0]: unknown goal 'sumarize': no goal_details entry has "
        "this name; did you mean 'summarize'?",
        f"{path}:31:21: goal_details[2].name: goal 'summarize' is not in the 'goals' graph, so no path reaches "
        "it: add it as a key (with [] when nothing depends on it) or as a dependent of another goal",
    ]


def test_cycles_are_errors(tmp_path: Path) -> None:
    goals = {
        "get_assignment_id_hr_agent-1": ["get_timeoff_schedule_hr_agent-1"],
        "get_timeoff_schedule_hr_agent-1": ["summarize", "get_assignment_id_hr_agent-1"],
    }
    path = write(tmp_path, "d.json", dataset(goals=goals))
    (problem,) = problems(path)
    assert problem == (
        f"{path}:4:37: goals.get_assignment_id_hr_agent-1: the goals form a cycle: get_assignment_id_hr_agent-1 -> "
        "get_timeoff_schedule_hr_agent-1 -> get_assignment_id_hr_agent-1; no order can satisfy it"
    )


def test_self_dependency_duplicates_and_arg_matching_problems(tmp_path: Path) -> None:
    data = json.loads(SEED)
    data["goals"]["summarize"] = ["summarize"]
    data["goal_details"].append(dict(data["goal_details"][0]))
    data["goal_details"][1]["arg_matching"] = {"start_date": "optional", "query": "fuzzy"}
    data["goal_details"][0]["args"] = {"IGNORE": None, "username": "x"}
    path = write(tmp_path, "d.json", json.dumps(data, indent=2))
    found = problems(path)
    assert [p.split(": ", 2)[1:] for p in found] == [
        ["goal_details[0].args", "{'IGNORE': null} ignores every argument: it must stand alone"],
        ["goal_details[1].arg_matching.query", "argument 'query' has strategy 'fuzzy' but no expected value in 'args'"],
        ["goal_details[3].name", "goal name 'get_assignment_id_hr_agent-1' is used twice"],
        ["goals.summarize[0]", "goal 'summarize' depends on itself"],
    ]
    assert all(p.startswith(f"{path}:") and p.split(":")[1].isdigit() for p in found)  # each has a line number


def test_schema_problems_are_located(tmp_path: Path) -> None:
    data = json.loads(SEED)
    data["goal_details"][1]["arg_matching"] = {"start_date": "sometimes"}
    data["goal_details"][0]["tool"] = "x"
    del data["starting_sentence"]
    path = write(tmp_path, "d.json", json.dumps(data, indent=2))
    found = problems(path)
    assert f"{path}:1:1: starting_sentence: required field is missing" in found
    assert any(
        p.startswith(f"{path}:") and "goal_details[1].arg_matching.start_date: input should be 'strict'" in p
        for p in found
    )
    assert any("goal_details[0].tool: extra inputs are not permitted" in p for p in found)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "d.json", SEED.replace('"agent": "hr_agent",', '"agent": "hr_agent"'))
    assert problems(path) == [f"{path}:3:5: invalid JSON: Expecting ',' delimiter"]
    message = "not a watsonx dataset (a JSON object with 'goal_details'); Proctor's own suites are YAML"
    not_an_object = write(tmp_path, "list.json", '[{"goal_details": []}]')
    assert problems(not_an_object) == [f"{not_an_object}:1:1: {message}"]
    other = write(tmp_path, "package.json", '{"name": "x"}')
    assert problems(other) == [f"{other}:1:1: {message}"]


# The same journey in a native suite: `expect:` on a case or on the file.

NATIVE = """\
name: native
expect:
  goal_details:
    - {type: tool_call, name: lookup, tool_name: lookup_user, args: {name: Dave}}
    - {type: text, name: answer, keywords: [Dave]}
cases:
  - name: inherits
    turns: [{content: Who is Dave?}]
  - name: own
    turns: [{content: Who is Dave?}, {content: And his manager?}]
    expect:
      goals: {a: [b], b: []}
      goal_details:
        - {type: tool_call, name: a, tool_name: lookup_user, args: {IGNORE: null}}
        - {name: b, tool_name: lookup_user, args: {user_id: u6}, arg_matching: {user_id: fuzzy}}
      similarity_threshold: 0.9
    assert:
      - type: tool-called
        value: lookup_user
"""


def test_native_expect_block_adds_a_journey_check(tmp_path: Path) -> None:
    inherits, own = load_suite_file(write(tmp_path, "native.yaml", NATIVE), registry).cases
    (journey,) = inherits.assert_
    assert journey.type == "journey" and [g.name for g in journey.value.goal_details] == ["lookup", "answer"]
    assert journey.value.prerequisites() == {"lookup": [], "answer": ["lookup"]}  # no `goals`: listed order
    called, own_journey = own.assert_
    assert called.type == "tool-called" and own_journey.type == "journey"
    value: JourneySpec = own_journey.value
    assert value.similarity_threshold == 0.9 and value.goal_details[1].type == "tool_call"  # type inferred


def test_native_expect_graph_errors_are_located(tmp_path: Path) -> None:
    text = NATIVE.replace("goals: {a: [b], b: []}", "goals: {a: [b], b: [a]}")
    path = write(tmp_path, "native.yaml", text)
    assert problems(path) == [
        f"{path}:12:7: cases[1].expect: the goals form a cycle: a -> b -> a; no order can satisfy it"
    ]
    typo = write(tmp_path, "typo.yaml", NATIVE.replace("similarity_threshold", "similarity_treshold"))
    (problem,) = problems(typo)
    assert "cases[1].expect.similarity_treshold: unknown field 'similarity_treshold'; did you mean " in problem
    on_turn = write(
        tmp_path,
        "turn.yaml",
        "name: t\nturns:\n  - content: hi\n"
        "    assert: [{type: journey, value: {goal_details: [{name: a, tool_name: x}]}}]\n",
    )
    (problem,) = problems(on_turn)
    assert "'journey' checks the whole conversation: put it in the case's 'assert', not a turn's" in problem


def test_a_directory_search_tells_datasets_from_other_json_by_their_bytes(tmp_path: Path) -> None:
    dataset = tmp_path / "story.json"
    dataset.write_text(json.dumps({"agent": "hr", "goals": {}, "goal_details": [], "story": "s"}), encoding="utf-8")
    results = tmp_path / "run.json"  # a results file beside the suites: not a dataset, never decoded
    results.write_bytes(b'{"version": 1, "run_id": "r", "cases": [' + b'{"name": "\xc3\xa9"},' * 1000 + b"{}]}")
    broken = tmp_path / "broken.json"  # mentions the key, is not JSON: kept, so that loading reports it
    broken.write_text('{"goal_details": [', encoding="utf-8")
    not_utf8 = tmp_path / "latin.json"
    not_utf8.write_bytes(b'{"goal_details": [], "story": "caf\xe9"}')
    found = [is_watsonx_dataset(p) for p in (dataset, results, broken, not_utf8)]
    assert found == [True, False, True, False]
