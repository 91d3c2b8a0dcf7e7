"""`--cluster` on a local Ray instance: same results as a local run, killed workers, limits, Ctrl-C, resume.

The agent and the judge are loopback model servers (`servers.model_server`) that count the requests in
flight: the limits are checked where they matter, at the server.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import ray

from proctor.checks import registry
from proctor.cluster import ClusterSettings, remote_trials
from proctor.results import TrialResult
from proctor.run import RunOptions, run_sync
from proctor.suite import Case, load_suites
from servers.model_server import Reply

pytestmark = pytest.mark.usefixtures("ray_local")


def write_suite(directory: Path, agent_url: str, *, cases: int, trials: int, judged: bool = False) -> Path:
    check = "{type: llm-rubric, value: Names who works here}" if judged else "{type: contains, value: Alice}"
    lines = [f"name: team\ntarget: {{type: openai, base_url: '{agent_url}'}}\ntrials: {trials}\ncases:"]
    for n in range(cases):
        lines.append(f"  - name: who-{n}\n    turns: [{{content: 'Who works here?', assert: [{check}]}}]")
    lines.append("  - name: never\n    turns: [{content: 'Who?', assert: [{type: contains, value: Zed}]}]")
    path = directory / "team.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Finished:
    """A `RunObserver` that counts each trial it is told about."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, int]] = Counter()

    def started(self, total: int, skipped: int) -> None:
        self.total = total

    def trial_finished(self, case: Case, trial: TrialResult) -> None:
        self.seen[(case.name, trial.trial)] += 1


def worker_pids() -> dict[str, int]:
    """The PIDs of the running runs' worker actors, by actor name."""
    names = [n for n in ray.util.list_named_actors() if "-worker-" in n]
    return {name: ray.get(ray.get_actor(name).pid.remote(), timeout=30) for name in names}


def shape(value: Any) -> Any:
    """A results document's keys, nested (lists by their first item), without the values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__ if value is not None else None


def statuses(data: dict[str, Any]) -> dict[str, list[tuple[int, str]]]:
    return {c["name"]: sorted((t["trial"], t["status"]) for t in c["trials"]) for c in data["cases"]}


def test_a_killed_worker_loses_only_its_trials_and_the_results_match_a_local_run(
    model_server: Any, tmp_path: Path
) -> None:
    agent = model_server.script(default=Reply("Alice works here.", delay=0.3))
    suites = load_suites([write_suite(tmp_path, agent.base_url, cases=4, trials=4)], registry)
    local = run_sync(suites, RunOptions(concurrency=3, seed=1, results_dir=tmp_path / "local", handle_sigint=False))
    local_requests = len(agent.requests)
    assert local_requests == 20

    killed: list[int] = []

    def kill_one_busy_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            pids = worker_pids() if agent.in_flight == 3 and len(agent.requests) > local_requests + 3 else {}
            if len(pids) == 3:  # every worker holds one trial at the agent: kill one mid-trial
                pid = pids[min(pids)]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_busy_worker, daemon=True)
    killer.start()
    finished = Finished()
    options = RunOptions(concurrency=3, seed=1, results_dir=tmp_path / "cluster", handle_sigint=False)
    cluster = remote_trials(ClusterSettings("auto", workers=3, cpus_per_worker=0.5))
    outcome = run_sync(suites, options, observer=finished, remote=cluster)
    killer.join()

    assert killed, "no worker was killed"
    data = outcome.data
    assert data["status"] == "complete"
    assert set(finished.seen.values()) == {1} and len(finished.seen) == 20  # each trial recorded exactly once
    assert statuses(data) == statuses(local.data)  # same statuses: who-* passed, never failed, every trial once
    assert shape(data) == shape(local.data)  # same keys, nested
    assert outcome.path is not None and outcome.path.exists()
    assert not list(outcome.path.parent.glob("*.journal.jsonl"))  # journal closed as after a local run
    assert len(agent.requests) - local_requests > 20  # the killed worker's trial was sent again
    assert agent.max_in_flight == 3  # the run's --concurrency held over three workers
    assert not [n for n in ray.util.list_named_actors() if "-worker-" in n]  # the run's workers are gone
