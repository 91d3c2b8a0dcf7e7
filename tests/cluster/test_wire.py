"""What crosses the wire: a worker's plan and options, and each trial's result, pickle and come back equal."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.cluster import check_address
from proctor.cluster._worker import worker_options, worker_plan
from proctor.errors import ConfigError
from proctor.results import TrialResult
from proctor.run import RunOptions, run_sync
from proctor.run.plan import plan_run
from proctor.suite import load_suites

SUITE = """\
name: wire
target: {type: python, callable: "helpers.agents:memory"}
trials: 2
cases:
  - name: remembers
    tags: [memory]
    turns:
      - content: "My name is Alice."
        assert: [{type: contains, value: meet}, {type: regex, value: "(?i)nice"}]
      - content: "What is my name?"
        assert: [{type: llm-rubric, value: Recalls the name}, {type: tool-called, value: recall}]
"""


def test_the_plan_options_and_results_pickle(tmp_path: Path) -> None:
    path = tmp_path / "wire.yaml"
    path.write_text(SUITE)
    suites = load_suites([path], registry)
    options = RunOptions(seed=3, budget=1.0, write_results=False, handle_sigint=False)
    plan = worker_plan(plan_run(suites, options))
    assert plan.todo == [] and plan.kept == {}  # a worker gets the cases, not the trials
    assert pickle.loads(pickle.dumps(plan)) == plan
    sent = worker_options(options)
    assert (sent.budget, sent.write_results, sent.handle_sigint) == (None, False, False)  # the driver's business
    assert pickle.loads(pickle.dumps(sent)) == sent
    data = run_sync(suites, options).data
    trial = data["cases"][0]["trials"][0]
    result = TrialResult.from_dict(f"{path}::remembers", trial)
    assert pickle.loads(pickle.dumps(result)).to_dict() == result.to_dict() == trial


def test_cluster_addresses() -> None:
    for good in ("auto", "ray://head:10001", "10.0.0.5:6379", "ray://[::1]:10001"):
        assert check_address(good) == good
    for bad in ("", "head", "ray://head", "http://head:80", "ray://head:port"):
        with pytest.raises(ConfigError, match=re.escape(repr(bad))):
            check_address(bad)
