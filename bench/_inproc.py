"""One in-process measurement (run by `bench/run.py` in a fresh interpreter for each repetition).

Usage: `python bench/_inproc.py SUITE_DIR TARGET RESULTS_DIR [--profile OUT.prof]`; prints one JSON
object: load and run wall/CPU seconds and the pass counts. Imports happen before any timer starts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from proctor.checks import registry
from proctor.runner import RunOptions, run_sync
from proctor.suite import load_suites, parse_target_string


def measure(suite_dir: Path, target: str, results_dir: Path) -> dict[str, float | int]:
    """Load the suites and run them at concurrency 16, timing each phase."""
    spec = parse_target_string(target)
    w0, c0 = time.perf_counter(), time.process_time()
    suites = load_suites([suite_dir], registry)
    w1, c1 = time.perf_counter(), time.process_time()
    outcome = run_sync(
        suites,
        RunOptions(
            target=spec,
            model="bench",
            concurrency=16,
            max_connections=16,
            write_results=True,
            results_dir=results_dir,
        ),
    )
    w2, c2 = time.perf_counter(), time.process_time()
    trials = outcome.data["summary"]["trials"]
    return {
        "load_wall": w1 - w0,
        "load_cpu": c1 - c0,
        "run_wall": w2 - w1,
        "run_cpu": c2 - c1,
        "cases": outcome.data["summary"]["cases"],
        "trials_run": trials["run"],
        "trials_passed": trials["passed"],
        "results_written": int(outcome.path is not None and outcome.path.exists()),
    }


def main() -> None:
    """Parse the arguments, measure (optionally under cProfile) and print the JSON figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("suite_dir", type=Path)
    parser.add_argument("target")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    if args.profile is None:
        figures = measure(args.suite_dir, args.target, args.results_dir)
    else:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        figures = measure(args.suite_dir, args.target, args.results_dir)
        profiler.disable()
        profiler.dump_stats(args.profile)
    json.dump(figures, sys.stdout)


if __name__ == "__main__":
    main()
