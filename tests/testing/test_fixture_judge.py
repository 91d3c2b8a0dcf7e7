"""`proctor_case` / `run_case` and the plugin on LLM-judged checks: a case whose judged check went unjudged
for want of a judge model is not a pass for `assert_passed` unless allowed, and `PROCTOR_JUDGE_MODEL` names
the judge when no judge option or argument is given (as for the CLI's `--judge`); against the demo agent in
process and a scripted judge on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.errors import ConfigError
from proctor.testing import run_case
from servers.model_server import Reply

SUITE = """\
name: judging
target: {type: python, callable: "proctor.demo:respond"}
trials: 1
cases:
  - name: judged
    turns:
      - content: What is Bob's email?
        assert: [{type: llm-rubric, value: Gives an email address}]
  - name: judged-and-contains
    turns:
      - content: What is Bob's email?
        assert:
          - {type: llm-rubric, value: Gives an email address}
          - {type: contains, value: bob.smith@acme.example}
  - name: judged-and-failing
    turns:
      - content: What is Bob's email?
        assert:
          - {type: llm-rubric, value: Gives an email address}
          - {type: contains, value: carol@acme.example}
"""
VERDICT = json.dumps({"reason": "Gives it.", "pass": True, "score": 0.9})
CHECK = "llm-rubric: Gives an email address"
JUDGE = "openai/gpt-4.1-mini"


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "judging.yaml"
    path.write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # a cache, if any, is made here
    return path


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    pytester.makefile(".yaml", judging=SUITE)
    pytester.makefile(".yaml", proctor="trusted: true\n")  # the python target may run
    return pytester.path


@pytest.fixture
def judge(model_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    script = model_server.script(default=Reply(VERDICT))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    return script


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-rA", *args)


def test_assert_passed_refuses_a_case_whose_judged_check_went_unjudged(suite: Path) -> None:
    outcome = run_case(suite, "judged-and-contains")
    assert outcome.passed  # as the run said: it passed on its other checks
    assert outcome.unjudged == CHECK
    with pytest.raises(AssertionError) as raised:
        outcome.assert_passed()
    message = str(raised.value)
    assert f"proctor case 'judged-and-contains' was not fully checked: {CHECK!r} needs a judge model" in message
    assert "pass judge='provider/model', set PROCTOR_JUDGE_MODEL, or add 'judge:' to the suite" in message
    assert "allow_skipped=True (or PROCTOR_ALLOW_SKIPPED=1)" in message


def test_assert_passed_lets_an_unjudged_case_pass_when_allowed(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(suite, "judged-and-contains", allow_skipped=True).assert_passed()
    run_case(suite, "judged-and-contains").assert_passed(allow_skipped=True)
    with pytest.raises(AssertionError, match="was not fully checked"):  # the assert's argument wins
        run_case(suite, "judged-and-contains", allow_skipped=True).assert_passed(allow_skipped=False)
    monkeypatch.setenv("PROCTOR_ALLOW_SKIPPED", "1")
    outcome = run_case(suite, "judged-and-contains")
    outcome.assert_passed()
    with pytest.raises(AssertionError, match="was not fully checked"):  # an argument wins over the variable
        outcome.assert_passed(allow_skipped=False)
    monkeypatch.setenv("PROCTOR_ALLOW_SKIPPED", "maybe")
    with pytest.raises(ConfigError, match="PROCTOR_ALLOW_SKIPPED='maybe' is not a valid boolean"):
        outcome.assert_passed()


def test_assert_passed_on_a_failed_unjudged_case_gives_its_failures_and_the_hint(suite: Path) -> None:
    outcome = run_case(suite, "judged-and-failing", allow_skipped=True)
    assert not outcome.passed
    with pytest.raises(AssertionError) as raised:  # allowing skipped checks never passes a failed case
        outcome.assert_passed()
    message = str(raised.value)
    assert "proctor case 'judged-and-failing': failed" in message
    assert "trial 1: failed contains: carol@acme.example" in message
    assert f"{CHECK!r} needs a judge model" in message


def test_the_proctor_case_fixture_fails_an_unjudged_case(pytester: pytest.Pytester, project: Path) -> None:
    pytester.makepyfile(
        test_cases="""
        def test_strict(proctor_case):
            proctor_case("judging.yaml", "judged-and-contains").assert_passed()

        def test_allowed(proctor_case):
            proctor_case("judging.yaml", "judged-and-contains", allow_skipped=True).assert_passed()
        """
    )
    result = run(pytester, "test_cases.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * AssertionError: proctor case 'judged-and-contains' was not fully checked: "
            f"{CHECK!r} needs a judge model and none is configured: pass judge='provider/model'*",
            "FAILED test_cases.py::test_strict - AssertionError*",
        ]
    )


def test_run_case_honours_proctor_judge_model(suite: Path, judge: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_JUDGE_MODEL", JUDGE)
    outcome = run_case(suite, "judged", cache=False)
    assert (outcome.status, outcome.unjudged, len(judge.bodies)) == ("passed", None, 1)
    outcome.assert_passed()
    assert judge.bodies[0]["model"] == "gpt-4.1-mini"
    run_case(suite, "judged-and-contains", cache=False).assert_passed()
    assert len(judge.bodies) == 2
    unjudged = run_case(suite, "judged", judge="", cache=False)  # a given blank judge is none, as --judge ""
    assert (unjudged.status, unjudged.unjudged, len(judge.bodies)) == ("skipped", CHECK, 2)
    monkeypatch.setenv("PROCTOR_JUDGE_MODEL", "  ")  # blank: no judge
    blank = run_case(suite, "judged-and-contains", cache=False)
    assert (blank.passed, blank.unjudged, len(judge.bodies)) == (True, CHECK, 2)
    with pytest.raises(AssertionError, match="was not fully checked"):
        blank.assert_passed()


def test_the_plugin_honours_proctor_judge_model(
    pytester: pytest.Pytester, project: Path, judge: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_JUDGE_MODEL", JUDGE)
    run(pytester, "judging.yaml", "-k", "not failing", "--proctor-no-cache").assert_outcomes(passed=2)
    assert len(judge.bodies) == 2
    monkeypatch.setenv("PROCTOR_JUDGE_MODEL", "")  # empty: no judge
    result = run(pytester, "judging.yaml", "-k", "contains", "--proctor-no-cache")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED*proctor case 'judged-and-contains' was not fully checked: {CHECK!r} needs a judge model and "
            "none is configured: pass --proctor-judge provider/model, set PROCTOR_JUDGE_MODEL, or add 'judge:' "
            "to the suite*"
        ]
    )
    assert len(judge.bodies) == 2
