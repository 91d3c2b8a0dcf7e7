"""The pytest plugin and `proctor.testing` on cases with no scored trial (skipped, errored), on judged checks
that went unjudged, and on the judge call cache; driven through pytest itself (`pytester`), against the demo
agent in process, Python agents given as functions and a scripted judge on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.errors import ConfigError
from proctor.testing import run_case
from servers.model_server import Reply

SUITE = """\
name: unscored
target: {type: python, callable: "proctor.demo:respond"}
trials: 1
cases:
  - name: no-checks
    turns:
      - content: What is Bob's email?
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
  - name: check-error
    turns:
      - content: What is Bob's email?
        assert: [{type: python, value: "1/0"}]
  - name: agent-error
    target: {type: python, callable: "broken_agent:respond"}
    turns:
      - content: What is Bob's email?
        assert: [{type: contains, value: bob}]
"""
BROKEN_AGENT = """\
def respond(messages):
    raise RuntimeError("the agent is down")
"""
VERDICT = json.dumps({"reason": "Gives it.", "pass": True, "score": 0.9})


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    pytester.makefile(".yaml", unscored=SUITE)
    pytester.makefile(".yaml", proctor="trusted: true\n")  # python targets and the python check may run
    pytester.makepyfile(broken_agent=BROKEN_AGENT)
    pytester.syspathinsert()
    return pytester.path


@pytest.fixture
def judge(model_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    script = model_server.script(default=Reply(VERDICT))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    return script


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("unscored.yaml", "-p", "no:randomly", "-p", "no:cacheprovider", "-rA", *args)


def test_a_case_with_no_checks_is_a_skip_with_its_reason(pytester: pytest.Pytester, project: Path) -> None:
    result = run(pytester, "-k", "no-checks")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*proctor case 'no-checks': skipped (no scored trial)*", "*nothing was scored: the case has no checks*"]
    )
    result.stdout.no_fnmatch_line("*TypeError*")


def test_a_judged_case_without_a_judge_is_a_skip_with_the_plugins_hint(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = run(pytester, "-k", "judged and not contains and not failing")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*proctor case 'judged' was not fully checked: 'llm-rubric: Gives an email address' needs a judge "
            "model and none is configured: pass --proctor-judge provider/model, set PROCTOR_JUDGE_MODEL, or add "
            "'judge:' to the suite*",
            "*proctor case 'judged': skipped (no scored trial)*",
        ]
    )
    result.stdout.no_fnmatch_line("*TypeError*")


def test_an_errored_case_fails_with_its_reasons(pytester: pytest.Pytester, project: Path) -> None:
    result = run(pytester, "-k", "error")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*proctor case 'check-error': error (no scored trial)*",
            "*trial 1: error python: 1/0: check could not run: *ZeroDivisionError: division by zero*",
            "*proctor case 'agent-error': error (no scored trial)*",
            "*trial 1 error: *the agent is down*",
        ]
    )
    result.stdout.no_fnmatch_line("*TypeError*")


def test_assert_passed_raises_an_assertion_error_for_a_case_with_no_scored_trial(
    pytester: pytest.Pytester, project: Path
) -> None:
    pytester.makepyfile(
        test_cases="""
        def test_no_checks(proctor_case):
            proctor_case("unscored.yaml", "no-checks").assert_passed()

        def test_check_error(proctor_case):
            proctor_case("unscored.yaml", "check-error").assert_passed()

        def test_agent_raises(proctor_case):
            def raising(messages):
                raise ValueError("no reply today")

            proctor_case("unscored.yaml", "no-checks", agent=raising).assert_passed()
        """
    )
    result = pytester.runpytest("test_cases.py", "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "*AssertionError: proctor case 'no-checks': skipped (no scored trial)*",
            "*AssertionError: proctor case 'check-error': error (no scored trial)*",
            "*AssertionError: proctor case 'no-checks': error (no scored trial)*",
            "*trial 1 error: *no reply today*",
        ]
    )
    result.stdout.no_fnmatch_line("*TypeError*")


def test_a_judged_check_left_unjudged_is_not_a_pass_unless_allowed(
    pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`contains` passed, `llm-rubric` had no judge: a skip with the hint (as `run --ci` stops on it)."""
    strict = run(pytester, "-k", "contains or failing")
    strict.assert_outcomes(skipped=1, failed=1)  # a failure among the checks that ran still fails
    strict.stdout.fnmatch_lines_random(
        [
            "SKIPPED*proctor case 'judged-and-contains' was not fully checked: 'llm-rubric: Gives an email address' "
            "needs a judge model*--proctor-judge provider/model*",
            "*its other checks passed; --proctor-allow-skipped (or PROCTOR_ALLOW_SKIPPED=1) lets it pass on them*",
            "proctor case 'judged-and-failing': failed (pass rate 0%)",
            "*trial 1: failed contains: carol@acme.example*",
        ]
    )
    run(pytester, "-k", "contains or failing", "--proctor-allow-skipped").assert_outcomes(passed=1, failed=1)
    monkeypatch.setenv("PROCTOR_ALLOW_SKIPPED", "1")
    run(pytester, "-k", "contains or failing").assert_outcomes(passed=1, failed=1)
    monkeypatch.setenv("PROCTOR_ALLOW_SKIPPED", "maybe")  # refused, as the CLI refuses it
    refused = run(pytester, "-k", "contains")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*PROCTOR_ALLOW_SKIPPED='maybe' is not a valid boolean*"])


def test_with_a_judge_the_judged_cases_pass(pytester: pytest.Pytester, project: Path, judge: Any) -> None:
    judged = ("--proctor-judge", "openai/gpt-4.1-mini", "--proctor-no-cache")
    run(pytester, "-k", "judged and not failing", *judged).assert_outcomes(passed=2)
    assert len(judge.bodies) == 2


def test_the_judge_cache_honours_proctor_no_cache(
    pytester: pytest.Pytester, project: Path, judge: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = project / "calls"
    monkeypatch.setenv("PROCTOR_CACHE_DIR", str(cache))
    args = ("-k", "judged and not contains and not failing", "--proctor-judge", "openai/gpt-4.1-mini")
    run(pytester, *args).assert_outcomes(passed=1)
    assert len(judge.bodies) == 1 and any(cache.rglob("*"))  # the call was cached where PROCTOR_CACHE_DIR says
    run(pytester, *args).assert_outcomes(passed=1)
    assert len(judge.bodies) == 1  # the warm cache answered
    run(pytester, *args, "--proctor-no-cache").assert_outcomes(passed=1)
    assert len(judge.bodies) == 2
    monkeypatch.setenv("PROCTOR_NO_CACHE", "1")
    run(pytester, *args).assert_outcomes(passed=1)
    assert len(judge.bodies) == 3
    monkeypatch.setenv("PROCTOR_NO_CACHE", "0")
    run(pytester, *args).assert_outcomes(passed=1)
    assert len(judge.bodies) == 3  # cached again


def test_run_case_honours_proctor_no_cache(tmp_path: Path, judge: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "unscored.yaml"
    path.write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the default cache, .proctor/cache, is made here
    judged = {"judge": "openai/gpt-4.1-mini"}
    assert run_case(path, "judged", **judged).passed and len(judge.bodies) == 1
    assert run_case(path, "judged", **judged).passed and len(judge.bodies) == 1  # cached
    assert (tmp_path / ".proctor" / "cache").is_dir()
    monkeypatch.setenv("PROCTOR_NO_CACHE", "yes")
    assert run_case(path, "judged", **judged).passed and len(judge.bodies) == 2
    assert run_case(path, "judged", cache=True, **judged).passed and len(judge.bodies) == 2  # the argument wins
    monkeypatch.setenv("PROCTOR_NO_CACHE", "sometimes")
    with pytest.raises(ConfigError, match="PROCTOR_NO_CACHE='sometimes' is not a valid boolean"):
        run_case(path, "judged", **judged)


def test_explain_and_assert_passed_on_outcomes_with_no_scored_trial(tmp_path: Path) -> None:
    path = tmp_path / "unscored.yaml"
    path.write_text(SUITE, encoding="utf-8")
    skipped = run_case(path, "no-checks")
    assert (skipped.status, skipped.data["pass_rate"]) == ("skipped", None)
    assert skipped.explain().splitlines()[0] == "proctor case 'no-checks': skipped (no scored trial)"
    with pytest.raises(AssertionError, match=r"no-checks': skipped \(no scored trial\)"):
        skipped.assert_passed()

    def raising(messages: Any) -> Any:
        raise RuntimeError("boom")

    errored = run_case(path, "no-checks", agent=raising)
    assert errored.status == "error"
    with pytest.raises(AssertionError, match=r"(?s)error \(no scored trial\).*trial 1 error: .*boom"):
        errored.assert_passed()
