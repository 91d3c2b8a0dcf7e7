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


def kill_a_busy_worker(agent: Any, *, busy: int, after: int) -> tuple[list[int], threading.Thread]:
    """SIGKILL one worker process while all `busy` workers hold a trial at the agent (after `after` requests)."""
    killed: list[int] = []

    def kill() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            pids = worker_pids() if agent.in_flight == busy and len(agent.requests) > after else {}
            if len(pids) == busy:  # every worker holds one trial at the agent: kill one mid-trial
                pid = pids[min(pids)]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.02)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return killed, thread


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

    killed, killer = kill_a_busy_worker(agent, busy=3, after=local_requests + 3)
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


def interrupt_after(agent: Any, requests: int) -> threading.Thread:
    """Send this process a SIGINT (Ctrl-C) once the agent has seen `requests` requests."""

    def wait_then_interrupt() -> None:
        deadline = time.monotonic() + 120
        while len(agent.requests) < requests and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=wait_then_interrupt, daemon=True)
    thread.start()
    return thread


def test_ctrl_c_cancels_the_cluster_work_and_leaves_a_resumable_journal(model_server: Any, tmp_path: Path) -> None:
    agent = model_server.script(default=Reply("Alice works here.", delay=0.4))
    suites = load_suites([write_suite(tmp_path, agent.base_url, cases=3, trials=3)], registry)
    cluster = remote_trials(ClusterSettings("auto", workers=2, cpus_per_worker=0.5))
    first = Finished()
    interrupter = interrupt_after(agent, 4)
    options = RunOptions(concurrency=2, results_dir=tmp_path, handle_sigint=True)
    interrupted = run_sync(suites, options, observer=first, remote=cluster)
    interrupter.join()
    assert interrupted.data["status"] == "interrupted"
    done = interrupted.data["summary"]["trials"]["run"]
    assert 2 <= done < 12 and len(first.seen) == done
    assert interrupted.path is not None
    assert not [n for n in ray.util.list_named_actors() if "-worker-" in n]  # the cluster's work is gone

    second = Finished()
    resumed = run_sync(
        suites, RunOptions(concurrency=2, resume=interrupted.path, handle_sigint=False), observer=second, remote=cluster
    )
    assert resumed.data["status"] == "complete" and resumed.data["run_id"] == interrupted.data["run_id"]
    assert not set(first.seen) & set(second.seen)  # a kept trial is not run again
    assert len(first.seen) + len(second.seen) == 12
    assert statuses(resumed.data) == {
        **{f"who-{n}": [(t, "passed") for t in (1, 2, 3)] for n in range(3)},
        "never": [(t, "failed") for t in (1, 2, 3)],
    }


def test_judge_concurrency_holds_across_workers(
    model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = model_server.script(default=Reply("Alice works here."))
    judge = model_server.script(default=Reply('{"reason": "names Alice", "pass": true, "score": 1}', delay=0.1))
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)  # forwarded to the workers with the key
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    suites = load_suites([write_suite(tmp_path, agent.base_url, cases=3, trials=3, judged=True)], registry)
    options = RunOptions(
        concurrency=6, judge="openai/judge", judge_concurrency=2, cache=False, write_results=False, handle_sigint=False
    )
    data = run_sync(suites, options, remote=remote_trials(ClusterSettings("auto", workers=3, cpus_per_worker=0.5))).data
    assert [c["status"] for c in data["cases"]] == ["passed", "passed", "passed", "failed"]
    assert len(judge.requests) == 9
    assert judge.max_in_flight == 2  # --judge-concurrency for the run, not per worker (3 workers x 2)
    assert agent.max_in_flight <= 6


def test_the_budget_counts_what_the_workers_judges_spent(
    model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = model_server.script(default=Reply("Alice works here."))
    judge = model_server.script(default=Reply('{"reason": "names Alice", "pass": true, "score": 1}', delay=0.2))
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {"openai/judge": {"input": 1000, "output": 0}}}')  # 100 prompt tokens: $0.10
    suites = load_suites([write_suite(tmp_path, agent.base_url, cases=4, trials=3, judged=True)], registry)
    options = RunOptions(
        concurrency=2, judge="openai/judge", cache=False, budget=0.15, prices=prices, write_results=False,
        handle_sigint=False,
    )  # fmt: skip
    data = run_sync(suites, options, remote=remote_trials(ClusterSettings("auto", workers=2, cpus_per_worker=0.5))).data
    assert data["status"] == "aborted" and "budget of $0.15 reached" in data["reason"]
    assert 2 <= data["summary"]["trials"]["run"] <= 4 < 15  # stopped once two judged trials had spent $0.20
    assert data["summary"]["costs"]["judge"]["cost_usd"] >= 0.2


def test_a_trial_whose_workers_keep_dying_is_an_error_not_a_retry_loop(model_server: Any, tmp_path: Path) -> None:
    agent = model_server.script(default=Reply("Alice works here.", delay=0.3))
    suites = load_suites([write_suite(tmp_path, agent.base_url, cases=2, trials=3)], registry)
    killed, killer = kill_a_busy_worker(agent, busy=2, after=2)
    cluster = remote_trials(ClusterSettings("auto", workers=2, cpus_per_worker=0.5, max_attempts=1))
    options = RunOptions(concurrency=2, write_results=False, handle_sigint=False)
    data = run_sync(suites, options, remote=cluster).data
    killer.join()
    assert killed
    trials = [t for case in data["cases"] for t in case["trials"]]
    assert len(trials) == 9 and sorted(len(case["trials"]) for case in data["cases"]) == [3, 3, 3]
    assert all(sorted(t["trial"] for t in case["trials"]) == [1, 2, 3] for case in data["cases"])
    lost = [t for t in trials if t["status"] == "error"]
    assert len(lost) == 1 and lost[0]["error_type"] == "WorkerLost"
    assert lost[0]["error"].startswith("its worker died 1 times (")
    assert all(c["status"] == "skipped" for c in lost[0]["checks"])  # nothing unchecked passes
