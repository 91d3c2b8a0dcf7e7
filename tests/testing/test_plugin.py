"""The pytest plugin and `proctor.testing`, driven through pytest itself (`pytester`), against the demo
agent in process (a `python` target) and Python agents given as functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from proctor.demo import respond
from proctor.errors import ConfigError
from proctor.testing import run_case

SUITE = """\
name: directory
target: {type: python, callable: "proctor.demo:respond"}
trials: 2
tags: [lookup]
cases:
  - name: email
    tags: [smoke]
    turns:
      - content: What is Bob's email?
        assert: [{type: contains, value: bob.smith@acme.example}]
  - name: phone
    turns:
      - content: What is Alice's phone number?
        assert: [{type: regex, value: "\\\\d{3}-\\\\d{4}", name: gives a phone number}]
  - name: manager
    tags: [smoke]
    turns:
      - content: Who manages Carol?
        assert: [{type: contains, value: Frank Okafor}]
"""


@pytest.fixture
def suite_dir(pytester: pytest.Pytester) -> Path:
    pytester.makefile(".yaml", directory=SUITE)
    pytester.makefile(".yaml", proctor="trusted: true\n")  # the project trusts its suites (a python target)
    pytester.makefile(".yaml", notes="just: some data\n")  # not a suite: never collected unless named
    return pytester.path


def test_a_named_suite_file_is_one_test_per_case_and_a_failure_shows_the_checks_reason(
    pytester: pytest.Pytester, suite_dir: Path
) -> None:
    result = pytester.runpytest("directory.yaml", "-p", "no:randomly", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*directory.yaml::email PASSED*",
            "*directory.yaml::phone FAILED*",
            "*proctor case 'phone': failed (pass rate 0%)*",
            "*trial 1: failed gives a phone number: expected reply to match*no match in the reply*",
            "*trial 2: failed gives a phone number*",
            "*transcript of trial 1*",
            "*user: What is Alice's phone number?*",
            "*assistant: Sorry, I don't have access to phone numbers*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_k_m_and_x_select_and_stop_as_for_any_test(pytester: pytest.Pytester, suite_dir: Path) -> None:
    pytester.runpytest("directory.yaml", "-k", "manager").assert_outcomes(passed=1)
    pytester.runpytest("directory.yaml", "-m", "smoke").assert_outcomes(passed=2)
    pytester.runpytest("directory.yaml", "-m", "not smoke", "--strict-markers").assert_outcomes(failed=1)
    stopped = pytester.runpytest("directory.yaml", "-x", "-p", "no:randomly")
    stopped.assert_outcomes(passed=1, failed=1)  # `manager` never ran


def test_only_named_files_and_configured_folders_are_collected(pytester: pytest.Pytester, suite_dir: Path) -> None:
    result = pytester.runpytest(".")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    evals = pytester.mkdir("evals")
    (suite_dir / "directory.yaml").rename(evals / "directory.yaml")
    (evals / "rows.yaml").write_text("# a dataset beside the suites\n- {country: France}\n", encoding="utf-8")
    pytester.makeini("[pytest]\nproctor_suites = evals\n")
    pytester.runpytest(".", "-k", "not phone").assert_outcomes(passed=2)


def test_a_suite_that_does_not_load_is_a_located_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml", broken="name: broken\nturns:\n  - content: hi\n    assert: [{type: containz, value: x}]\n"
    )
    result = pytester.runpytest("broken.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.re_match_lines(
        [r".*broken\.yaml:4:21: turns\[0\]\.assert\[0\]\.type: unknown check type 'containz'.*"]
    )


def test_the_trust_policy_applies_to_collected_suites(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", coded=SUITE)
    pytester.makefile(".yaml", proctor="trusted: false\n")
    untrusted = pytester.runpytest("coded.yaml")
    untrusted.stdout.fnmatch_lines(["*coded.yaml:2:*target.callable: the suite names Python code to run*--trust*"])
    pytester.runpytest("coded.yaml", "--proctor-trust", "-k", "email").assert_outcomes(passed=1)


def test_the_fixture_runs_a_case_against_a_python_function(pytester: pytest.Pytester, suite_dir: Path) -> None:
    pytester.makepyfile(
        test_agent="""
        from proctor.demo import respond

        def shouting(messages):
            reply = respond(messages)
            return {**reply, "text": reply["text"].upper()}

        def test_email(proctor_case):
            proctor_case("directory.yaml", "email", agent=respond, trials=1).assert_passed()

        def test_shouting(proctor_case):
            proctor_case("directory.yaml", "email", agent=shouting).assert_passed()
        """
    )
    result = pytester.runpytest("test_agent.py", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: proctor case 'email': failed*", "*BOB.SMITH@ACME.EXAMPLE*"])


def test_run_case_outcome_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "directory.yaml"
    path.write_text(SUITE, encoding="utf-8")
    calls: list[int] = []

    def counting(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        calls.append(len(messages))
        return respond(messages)

    outcome = run_case(path, "email", agent=counting, trials=3)
    assert (outcome.passed, outcome.status, outcome.failures(), calls) == (True, "passed", [], [1, 1, 1])
    failed = run_case(path, "phone", trials=1)
    assert [(t, name, status) for t, name, status, _ in failed.failures()] == [(1, "gives a phone number", "failed")]
    with pytest.raises(AssertionError, match="gives a phone number: expected reply to match"):
        failed.assert_passed()
    with pytest.raises(ConfigError, match="has 3 cases: name one"):
        run_case(path)
    with pytest.raises(ConfigError, match="no case 'nope'; it has: email, phone, manager"):
        run_case(path, "nope")
