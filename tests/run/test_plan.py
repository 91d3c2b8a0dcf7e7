"""`plan_run`: each trial to run, with what its case's trials share made once."""

from __future__ import annotations

from pathlib import Path

from proctor.checks import Checklist, registry
from proctor.run import RunOptions
from proctor.run.plan import plan_run
from proctor.suite import load_suites

SUITE = """\
name: planned
target: python:helpers.agents:echo
trials: 2
cases:
  - name: scripted
    turns:
      - content: hi
        assert: [{type: contains, value: hi}]
  - name: scenario
    script:
      - user: hi
      - check: [{type: contains, value: hi}]
"""


def test_each_case_key_and_checklist_is_made_once_for_its_trials(tmp_path: Path) -> None:
    path = tmp_path / "planned.yaml"
    path.write_text(SUITE, encoding="utf-8")
    suites = load_suites([path], registry)
    plan = plan_run(suites, RunOptions(write_results=False))
    scripted, scenario = suites[0].cases
    first, second, *rest = plan.todo
    assert [(w.case.name, w.number) for w in plan.todo] == [
        ("scripted", 1),
        ("scripted", 2),
        ("scenario", 1),
        ("scenario", 2),
    ]
    assert first.key == second.key == f"{path}::scripted" and first.key in plan.targets and first.key in plan.kept
    assert first.checklist is second.checklist and first.checklist == Checklist.of(scripted)
    assert all(work.checklist is None for work in rest)  # a scenario's checks come with its steps
    assert rest[0].case is scenario
