"""A case whose planned trials did not all run (the run stopped first) is `incomplete`: never passed, never errored.

Its trials' figures are kept as they are; the summary, the results format, JUnit and the report carry it.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args
from xml.etree import ElementTree as ET

from proctor.results import CaseResult, RunResult, TrialResult, build_report, write_junit
from proctor.results._aggregate import CASE_STATUSES, TRIAL_STATUSES
from proctor.results._format import CaseStatus, Status, results_json_schema, validate_results
from proctor.results._journal import read_previous_run
from proctor.results._markdown import render_markdown
from proctor.results._writers import write_json


def passed(case: str, number: int) -> TrialResult:
    return TrialResult(f"s.yaml::{case}", number, "passed", 1.0)


def interrupted_run() -> RunResult:
    cases = [
        CaseResult("done", "s", "s.yaml", [], 0.8, [passed("done", n) for n in (1, 2, 3)], planned=3),
        CaseResult("partly", "s", "s.yaml", [], 0.8, [passed("partly", 1)], planned=3),
        CaseResult("never", "s", "s.yaml", [], 0.8, [], planned=3),
    ]
    return RunResult("r", "2026-11-29T00:00:00+00:00", "m", "t", cases, planned_trials=9)


def test_a_case_short_of_its_planned_trials_is_incomplete_with_its_figures_kept() -> None:
    run = interrupted_run()
    partly = run.cases[1].summarize()
    assert (partly.status, partly.reason, partly.passed) == ("incomplete", "1 of 3 trials ran", False)
    assert partly.pass_rate == 1.0 and partly.trial_counts == {"passed": 1, "failed": 0, "error": 0}
    run.end("interrupted")  # how the run ended: in each incomplete case's reason
    assert run.cases[1].summarize().reason == "interrupted: 1 of 3 trials ran"
    assert run.cases[2].summarize().reason == "interrupted: 0 of 3 trials ran"
    assert run.cases[0].summarize().status == "passed"  # every planned trial ran
    summary = run.summary
    assert (summary.cases, summary.passed, summary.errored, summary.incomplete) == (3, 1, 0, 2)
    assert summary.pass_rate == 1 / 3  # an incomplete case is not a pass (nor left out, as a skipped one is)
    data = run.to_dict()
    assert data["summary"]["incomplete"] == 2 and data["summary"]["errored"] == 0
    never = data["cases"][2]
    assert (never["status"], never["passed"], never["planned_trials"]) == ("incomplete", False, 3)
    assert list(never)[list(never).index("status") + 1] == "reason"  # where a skipped case says why, too
    assert "planned_trials" not in data["cases"][0] and "incomplete" not in RunResult("r", "", None, "t", []).to_dict()
    validate_results(data, "run")  # the format carries the status and the count
    case_status = results_json_schema()["$defs"]["CaseRecord"]["properties"]["status"]
    assert "incomplete" in case_status["enum"]


def test_an_interrupted_results_file_records_each_case_s_planned_trials(tmp_path: Path) -> None:
    run = interrupted_run()
    run.end("interrupted")
    path = tmp_path / "r.json"
    write_json(path, run.to_dict())
    cases = read_previous_run(path).cases
    assert [c.planned for c in cases.values()] == [3, 3, 3]  # what a --case subset resume carries over


def test_junit_lists_the_unrun_trials_as_skipped_saying_why(tmp_path: Path) -> None:
    run = interrupted_run()
    run.end("aborted", "budget of $1 reached")
    write_junit(tmp_path / "junit.xml", run.to_dict())
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert (root.get("tests"), root.get("skipped"), root.get("errors"), root.get("failures")) == ("9", "5", "0", "0")
    skipped = {c.get("name"): c.find("skipped") for c in root.iter("testcase") if c.find("skipped") is not None}
    assert sorted(skipped) == [f"never [trial {n}]" for n in (1, 2, 3)] + [f"partly [trial {n}]" for n in (2, 3)]
    message = skipped["partly [trial 2]"].get("message")  # type: ignore[union-attr]
    assert message == "not run: aborted: 1 of 3 trials ran"


def test_the_markdown_report_lists_incomplete_cases() -> None:
    run = interrupted_run()
    run.end("interrupted")
    text = render_markdown(build_report([(run.to_dict(), None)], "2026-11-29T00:00:00+00:00"))
    assert "| partly | INCOMPLETE" in text and "| never | INCOMPLETE" in text
    assert "## Incomplete: m" in text and "- **never**: interrupted: 0 of 3 trials ran" in text


def test_the_format_enumerates_the_statuses_the_model_gives() -> None:
    assert get_args(CaseStatus) == CASE_STATUSES and get_args(Status) == TRIAL_STATUSES
    assert "incomplete" not in TRIAL_STATUSES  # a trial either ran or is absent; only a case is incomplete
