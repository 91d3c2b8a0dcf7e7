"""`proctor.checks._judging.unjudged_checks`: every LLM-judged check a case holds, wherever it sits.

`proctor run --ci` (and `rescore --ci`) refuse at start a case whose judged check no judge model would
grade: these tests load real suite files and ask which check each case is refused for.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic import BaseModel

from proctor.checks import registry
from proctor.checks._judging import TRANSCRIPT_JUDGE, judged_checks, unjudged_checks
from proctor.checks._transcript import NAME
from proctor.suite import AssertionSpec, Case, load_suite_file
from proctor.suite._model import ScriptStep, StretchSpec, TurnSpec
from proctor.suite._simulate import SimulatedTask, SimulateSpec

TARGET = "target: http://127.0.0.1:9/v1\n"  # never called: the suites are only loaded


def load(tmp_path: Path, body: str, *, files: dict[str, str] | None = None) -> list[Case]:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "suite.yaml"
    path.write_text(TARGET + body)
    return list(load_suite_file(path, registry).cases)


def refused(cases: list[Case], judge: str | None = None) -> dict[str, str]:
    return {case.name: check for case, check in unjudged_checks(cases, judge)}


# Each place a case can hold a judged check: (suite body, the check the case is refused for).
PLACES = {
    "turn assert": (
        "name: c\nturns:\n  - content: hi\n"
        "    assert: [{type: contains, value: a}, {type: llm-rubric, value: polite}]\n",
        "llm-rubric: polite",
    ),
    "case assert": (
        "name: c\nturns: [{content: hi}]\nassert: [{type: goal-achievement}]\n",
        "goal-achievement",
    ),
    "embabel assertions": (
        "name: c\nturns: [{content: hi}]\nassertions: [{type: conversation-coherence}]\n",
        "conversation-coherence",
    ),
    "file-level assert of a case in cases": (
        "assert: [{type: tasks, value: {tasks: [{task: Greet, acceptanceCriteria: Says hi}]}, name: greeted}]\n"
        "cases:\n  - name: c\n    turns: [{content: hi}]\n",
        "greeted",
    ),
    "rubric file": (
        "name: c\nrubric: tone.md\nturns: [{content: hi, assert: [{type: contains, value: a}]}]\n",
        "rubric: tone.md",
    ),
    "g-eval": (
        "name: c\nturns: [{content: hi, assert: [{type: g-eval, value: Accurate, name: accurate}]}]\n",
        "accurate",
    ),
    "pointwise judge": ("name: c\nturns: [{content: hi, assert: [{type: relevance}]}]\n", "relevance"),
    "judged agent scorer": ("name: c\nturns: [{content: hi, assert: [{type: tool-relevancy}]}]\n", "tool-relevancy"),
    "script user step assert": (
        "name: c\nscript:\n  - user: hi\n    assert: [{type: contains, value: a}, {type: llm-rubric, value: kind}]\n",
        "llm-rubric: kind",
    ),
    "script check on the reply": (
        "name: c\nscript:\n  - user: hi\n  - check: [{type: llm-rubric, value: polite}]\n",
        "llm-rubric: polite",
    ),
    "script check on the conversation": (
        "name: c\nscript:\n  - user: hi\n  - check: [{type: goal-achievement}]\n    on: conversation\n",
        "goal-achievement",
    ),
    "script judge checkpoint": (
        "name: c\nscript:\n  - user: hi\n    assert: [{type: contains, value: a}]\n  - judge: The agent was polite\n",
        "step 2 judge checkpoint: The agent was polite",
    ),
    "script stretch until": (
        "name: c\nscript:\n  - user: hi\n  - simulate: {goal: ask for a refund, until: The refund is made}\n",
        "step 2 judge checkpoint: The refund is made",
    ),
    "simulated user's tasks": (
        "name: c\nsimulate:\n  tasks: [{task: Book a room, acceptanceCriteria: A room is booked}]\n",
        "transcript: tasks",
    ),
}


def test_the_transcript_judge_is_named_as_its_result() -> None:
    assert TRANSCRIPT_JUDGE == NAME


@pytest.mark.parametrize("place", list(PLACES))
def test_a_judged_check_is_found_wherever_the_case_holds_it(tmp_path: Path, place: str) -> None:
    body, check = PLACES[place]
    cases = load(tmp_path, body, files={"tone.md": "# Tone\n- Polite\n"})
    assert refused(cases) == {"c": check}
    assert refused(cases, "openai/gpt-4.1-mini") == {}  # a judge for the run grades it
    judged = load(tmp_path, "judge: ollama/llama3.1\n" + body)
    assert refused(judged) == {}  # so does the suite's


def test_the_issue_s_scenario_script_is_refused_for_both_judged_checks(tmp_path: Path) -> None:
    body = (
        "name: c\nscript:\n  - user: hi\n    assert: [{type: contains, value: alice}]\n"
        "  - judge: The agent was polite\n  - check: [{type: llm-rubric, value: polite}]\n"
    )
    (case,) = load(tmp_path, body)
    names = [spec.display_name() for spec in judged_checks(case)]
    assert names == ["llm-rubric: polite", "step 2 judge checkpoint: The agent was polite"]
    assert refused([case]) == {"c": "llm-rubric: polite"}


@pytest.mark.parametrize("judge", [None, "", "  ", "\t\n"])
def test_an_empty_or_blank_judge_is_no_judge(tmp_path: Path, judge: str | None) -> None:
    cases = load(tmp_path, PLACES["turn assert"][0])
    assert refused(cases, judge) == {"c": "llm-rubric: polite"}


NOT_JUDGED = {
    "deterministic checks": "name: c\nturns: [{content: hi, assert: [{type: contains, value: a}]}]\n",
    "a journey (fuzzy matches fall back without a judge)": (
        "name: c\nturns: [{content: hi}]\nexpect:\n  enable_fuzzy_matching: true\n  goal_details:\n"
        "    - {type: text, name: answer, response: Hello there}\n"
    ),
    "the exact tool-correctness scorer": (
        "name: c\nturns: [{content: hi, assert: [{type: tool-correctness-exact}]}]\n"
    ),
    "a simulated user without tasks": "name: c\nsimulate: {facts: [The user is Ada]}\n",
    "a script's stretch without until (its simulate: tasks are not judged in a script)": (
        "name: c\nsimulate:\n  tasks: [{task: Book, acceptanceCriteria: Booked}]\n"
        "script:\n  - user: hi\n  - simulate: {goal: book a room}\n"
    ),
}


@pytest.mark.parametrize("what", list(NOT_JUDGED))
def test_a_case_without_judged_checks_is_not_refused(tmp_path: Path, what: str) -> None:
    assert refused(load(tmp_path, NOT_JUDGED[what])) == {}


def test_only_the_selected_checks_count(tmp_path: Path) -> None:
    cases = load(tmp_path, PLACES["rubric file"][0], files={"tone.md": "# Tone\n- Polite\n"})
    (case,) = cases
    only_contains = unjudged_checks(cases, None, selected=lambda spec: spec.type == "contains")
    assert only_contains == []  # `rescore --checks contains`: the rubric keeps its stored verdict
    only_rubric = unjudged_checks(cases, None, selected=lambda spec: spec.type == "rubric")
    assert only_rubric == [(case, "rubric: tone.md")]


def test_an_assertion_anywhere_in_the_case_is_found(tmp_path: Path) -> None:
    """The walk reaches any assertion the case holds, not only the places it knows of today."""
    (case,) = load(tmp_path, NOT_JUDGED["deterministic checks"])
    hidden = AssertionSpec(type="coherence", name="hidden")
    for moved in (
        dataclasses.replace(case, metadata={"somewhere": [{"deeper": (hidden,)}]}),
        dataclasses.replace(case, turns=(TurnSpec(content="hi", assert_=[hidden]),)),
        dataclasses.replace(case, assert_=(AssertionSpec(type="contains", value=hidden),)),  # inside a value
    ):
        assert refused([moved]) == {"c": "hidden"}


class LaterStep(BaseModel):
    """A shape of a later release: a model holding assertions, in a place no code names."""

    title: str
    checks: list[AssertionSpec]


@dataclasses.dataclass(frozen=True)
class LaterCase(Case):
    """A case with a field of a later release."""

    extra: tuple[LaterStep, ...] = ()


def test_a_new_place_holding_assertions_is_walked(tmp_path: Path) -> None:
    (case,) = load(tmp_path, NOT_JUDGED["deterministic checks"])
    step = LaterStep(title="t", checks=[AssertionSpec(type="contains", value="a"), AssertionSpec(type="relevance")])
    later = LaterCase(**{item.name: getattr(case, item.name) for item in dataclasses.fields(case)}, extra=(step,))
    assert refused([later]) == {"c": "relevance"}
    assert refused([dataclasses.replace(case, metadata={"later": step})]) == {"c": "relevance"}


def test_a_cycle_in_free_form_data_is_walked_once(tmp_path: Path) -> None:
    (case,) = load(tmp_path, NOT_JUDGED["deterministic checks"])
    loop: list[object] = [AssertionSpec(type="completeness")]
    loop.append(loop)  # as a recursive YAML alias would make
    assert refused([dataclasses.replace(case, vars={"loop": loop})]) == {"c": "completeness"}


def test_many_cases_one_line_each_and_only_the_unjudged(tmp_path: Path) -> None:
    body = (
        "cases:\n"
        "  - {name: judged, turns: [{content: hi, assert: [{type: llm-rubric, value: kind}]}]}\n"
        "  - {name: plain, turns: [{content: hi, assert: [{type: contains, value: a}]}]}\n"
        "  - {name: scripted, script: [{user: hi}, {judge: Polite}]}\n"
    )
    assert refused(load(tmp_path, body)) == {
        "judged": "llm-rubric: kind",
        "scripted": "step 2 judge checkpoint: Polite",
    }


# The fields of the models a conversation is made of, and whether `judged_checks` must know of them: an
# assertion anywhere is found by its walk, but a judge criterion held in another shape (`judge: str`) is
# not. A new field fails this test until it is classified here (and, if judged, added to `_stand_ins`).
KNOWN_FIELDS = {
    Case: {
        "name", "file", "suite", "turns", "trials", "timeout", "tags", "scoring", "description", "rubric", "target",
        "judge", "assert_", "metadata", "setups", "state", "simulate", "simulator", "seeds", "seed_session", "tools",
        "vars", "script",
    },
    TurnSpec: {"content", "assert_"},
    ScriptStep: {"user", "assert_", "simulate", "check", "on", "judge"},
    StretchSpec: {"goal", "max_turns", "until"},
    SimulateSpec: {
        "persona", "greetings", "tasks", "facts", "story", "starting_sentence", "max_turns", "arms", "prompt",
        "reruns", "aspirational_average", "scoring",
    },
    SimulatedTask: {"type", "task", "acceptance_criteria"},
}  # fmt: skip


@pytest.mark.parametrize("model", list(KNOWN_FIELDS), ids=lambda model: model.__name__)
def test_every_field_of_a_conversation_is_classified(model: type) -> None:
    found = (
        {item.name for item in dataclasses.fields(model)}
        if dataclasses.is_dataclass(model)
        else set(model.model_fields)  # type: ignore[attr-defined]
    )
    assert found == KNOWN_FIELDS[model], (
        f"{model.__name__}'s fields changed: does a new one hold a judge criterion? (see judged_checks)"
    )
