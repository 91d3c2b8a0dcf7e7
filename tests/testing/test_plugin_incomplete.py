"""An `incomplete` case (its run stopped before all its planned trials ran) in the pytest plugin and in
`proctor.testing`: a failure that says so, with how many trials ran; never a pass, never a skip.

The plugin's runs have no `--max-errors` or `--budget` and leave Ctrl-C to pytest, so none of its own runs
stops early: the case's outcome is made incomplete here (as an interrupted run records it) and given to
the plugin in place of the run's.
"""

from __future__ import annotations

from typing import Any

import pytest

from proctor.results import CaseResult, RunResult, TrialResult
from proctor.testing import _helper
from proctor.testing._helper import CaseOutcome

SUITE = """\
name: s
target: {type: python, callable: "proctor.demo:respond"}
trials: 3
cases:
  - name: partly
    turns:
      - content: What is Bob's email?
        assert: [{type: contains, value: bob.smith@acme.example}]
"""


def incomplete_case(ran: int, status: str = "interrupted") -> dict[str, Any]:
    """Case `partly` of a run that stopped (`status`) after `ran` of its 3 trials, each passed."""
    trials = [TrialResult("s.yaml::partly", n, "passed", 1.0) for n in range(1, ran + 1)]
    run = RunResult(
        "r", "2026-11-29T00:00:00+00:00", None, "t", [CaseResult("partly", "s", "s.yaml", [], 1.0, trials, planned=3)]
    )
    run.end(status)
    case: dict[str, Any] = run.to_dict()["cases"][0]
    assert case["status"] == "incomplete"
    return case


def test_an_incomplete_case_is_a_failure_saying_how_many_trials_ran(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".yaml", s=SUITE)
    pytester.makefile(".yaml", proctor="trusted: true\n")
    monkeypatch.setattr(_helper, "run_loaded_case", lambda *args, **kwargs: CaseOutcome(incomplete_case(1)))
    result = pytester.runpytest("s.yaml", "-p", "no:randomly", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=1)  # every trial that ran passed: still not a pass, nor a skip
    result.stdout.fnmatch_lines(
        [
            "*proctor case 'partly': incomplete (interrupted: 1 of 3 trials ran): the run stopped before all its "
            "planned trials ran, so it did not pass*",
            "*pass rate 100% over the trials that ran*",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED s.yaml::partly*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_the_outcome_explains_an_incomplete_case() -> None:
    none_ran = CaseOutcome(incomplete_case(0, "aborted"))
    assert none_ran.status == "incomplete" and not none_ran.passed
    assert none_ran.explain() == (
        "proctor case 'partly': incomplete (aborted: 0 of 3 trials ran): the run stopped before all its planned "
        "trials ran, so it did not pass"
    )
    with pytest.raises(AssertionError, match=r"incomplete \(aborted: 0 of 3 trials ran\)"):
        none_ran.assert_passed()
