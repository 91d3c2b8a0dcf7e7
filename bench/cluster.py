"""Cluster benchmark (`proctor run --cluster`): trials/s against a 100 ms agent for 1, 2 and 4 workers.

Usage:
    .venv/bin/python bench/cluster.py [--workers 1,2,4] [--concurrency 16]

W1's suite (400 one-turn cases, one `contains` check) against `latency_server.py` (100 ms per request),
run in-process with `run_sync(..., remote=remote_trials(ClusterSettings("auto", workers=N)))` on one local
Ray instance (127.0.0.1, started once, before the timers), after one local run for comparison. For each:
the wall time of the whole run (worker start-up included), the steady rate (trials/s between the first
and the last trial's result), and the driver's CPU per trial (`time.process_time()` over the run / 400:
planning, dispatch, Ray's client threads, journaling), which says how many workers one driver can feed.
The ideal rate is concurrency / 0.1 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read when Ray is imported: loopback only
sys.path.insert(0, str(Path(__file__).parent))

from proctor.checks import registry
from proctor.cluster import ClusterSettings, remote_trials
from proctor.cluster._connect import connect
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites
from run import latency_server
from workloads import W1_CASES, write_w1


class Clock:
    """A `RunObserver` that keeps when each trial's result arrived."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def started(self, total: int, skipped: int) -> None:
        self.times.clear()

    def trial_finished(self, case: Any, trial: Any) -> None:
        self.times.append(time.perf_counter())


def measure(suites: Any, url: str, concurrency: int, workers: int | None) -> dict[str, float]:
    """One run: wall time, steady trials/s and driver CPU ms per trial."""
    options = RunOptions(
        target={"type": "openai", "base_url": url},
        model="bench",
        concurrency=concurrency,
        max_connections=concurrency,
        write_results=False,
        handle_sigint=False,
    )
    remote = None if workers is None else remote_trials(ClusterSettings("auto", workers=workers, cpus_per_worker=0))
    clock = Clock()
    cpu, wall = time.process_time(), time.perf_counter()
    data = run_sync(suites, options, observer=clock, remote=remote).data
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert data["summary"]["trials"]["passed"] == W1_CASES, data["summary"]
    steady = (len(clock.times) - 1) / (clock.times[-1] - clock.times[0])
    return {"wall_s": wall, "steady_trials_per_s": steady, "driver_cpu_ms_per_trial": cpu * 1000 / W1_CASES}


def main() -> None:
    """Run the benchmark and print one line per configuration."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    suites = load_suites([write_w1(Path(tempfile.mkdtemp()) / "w1")], registry)
    connection = connect("auto")
    try:
        with latency_server() as server:
            print(f"ideal: {args.concurrency / 0.1:.0f} trials/s; {W1_CASES} trials; concurrency {args.concurrency}")
            for workers in [None, *(int(n) for n in args.workers.split(","))]:
                row = measure(suites, server.url, args.concurrency, workers)
                name = "local (no cluster)" if workers is None else f"{workers} worker(s)"
                print(
                    f"{name:>20}: wall {row['wall_s']:.2f} s, steady {row['steady_trials_per_s']:.0f} trials/s, "
                    f"driver CPU {row['driver_cpu_ms_per_trial']:.2f} ms/trial",
                    flush=True,
                )
    finally:
        connection.close()


if __name__ == "__main__":
    main()
