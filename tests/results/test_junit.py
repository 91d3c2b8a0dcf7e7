"""JUnit XML from a real results file: one test case per case x trial, errors apart from failures."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from proctor.results import load_run, write_junit

DATA = Path(__file__).parent / "data"


def test_junit_has_one_testcase_per_case_and_trial(tmp_path: Path) -> None:
    data = load_run(DATA / "gpt-4-1-mini_20261101T090000Z.json")
    write_junit(tmp_path / "junit.xml", data)
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == sum(len(c["trials"]) for c in data["cases"]) == 12
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("12", "2", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"time-off", "directory", "json-output"}
    assert sum(int(s.get("tests", 0)) for s in suites.values()) == 12
    names = [c.get("name") for c in cases]
    assert len(set(names)) == 12 and "vacation-dates [trial 3]" in names
    by_name = {c.get("name"): c for c in cases}
    error = by_name["json-reply [trial 2]"]
    assert error.find("failure") is None
    error_el = error.find("error")
    assert error_el is not None and error_el.get("message") == "turn 1: no reply within 15 s"
    failure = by_name["vacation-dates [trial 3]"].find("failure")
    assert failure is not None and "[failed] llm-rubric: concrete dates" in (failure.text or "")
    passed = by_name["vacation-dates [trial 1]"]
    assert passed.find("failure") is None and passed.find("error") is None
    assert all(float(c.get("time", "-1")) >= 0 for c in cases)
