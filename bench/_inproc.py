"""One in-process measurement (run by `bench/run.py` in a fresh interpreter for each repetition).

Usage: `python bench/_inproc.py SUITE_DIR TARGET RESULTS_DIR [--judge MODEL [--cache-dir DIR | --no-cache]]
[--profile OUT.prof]`; prints one JSON object: load and run wall/CPU seconds, the pass counts and the
run's `summary.costs`. With `--judge` (W1J) the judge runs at `judge_concurrency` 16 and its cache lives
in `--cache-dir`; the judge's endpoint comes from `OPENAI_BASE_URL` / `OPENAI_API_KEY`, as for
`proctor run --judge openai/...`.

Imports happen before any timer starts, including the modules Proctor imports on first use (the target's
module, and with a judge the model layer and Jinja); only asyncio and anyio's asyncio backend, which
`anyio.run` imports, are left inside the run (~25 ms), as they always were.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites, parse_target_string

CONCURRENCY = 16
_TARGET_MODULES = {
    "openai": "proctor.targets._openai",
    "http": "proctor.targets._http",
    "python": "proctor.targets._python",
}
"""The module `build_target` imports on first use, by target type."""
_JUDGE_MODULES = ("jinja2", "proctor.models", "proctor.models._openai", "proctor.checks._judging")
"""What the first judge call imports (for an `openai/...` judge)."""


def preimport(spec: dict[str, object], judge: str | None) -> None:
    """Import what the run would import on first use, so no timer includes module loading."""
    import importlib

    module = _TARGET_MODULES.get(str(spec.get("type")))
    for name in ((module,) if module else ()) + (_JUDGE_MODULES if judge is not None else ()):
        importlib.import_module(name)


def measure(
    suite_dir: Path,
    target: str,
    results_dir: Path,
    judge: str | None = None,
    cache_dir: Path | None = None,
    cache: bool = True,
) -> dict[str, Any]:
    """Load the suites and run them at concurrency 16 (the judge too, if any), timing each phase."""
    spec = parse_target_string(target)
    preimport(spec, judge)
    w0, c0 = time.perf_counter(), time.process_time()
    gc.disable()  # as `proctor run` does: no collection while loading, the loaded suites frozen after
    suites = load_suites([suite_dir], registry)
    gc.enable()
    gc.freeze()
    gc.set_threshold(100_000, 10, 10)
    w1, c1 = time.perf_counter(), time.process_time()
    outcome = run_sync(
        suites,
        RunOptions(
            target=spec,
            model="bench",
            concurrency=CONCURRENCY,
            max_connections=CONCURRENCY,
            write_results=True,
            results_dir=results_dir,
            judge=judge,
            judge_concurrency=CONCURRENCY if judge is not None else None,
            cache_dir=cache_dir,
            cache=cache,
        ),
    )
    w2, c2 = time.perf_counter(), time.process_time()
    summary = outcome.data["summary"]
    trials = summary["trials"]
    return {
        "load_wall": w1 - w0,
        "load_cpu": c1 - c0,
        "run_wall": w2 - w1,
        "run_cpu": c2 - c1,
        "cases": summary["cases"],
        "trials_run": trials["run"],
        "trials_passed": trials["passed"],
        "results_written": int(outcome.path is not None and outcome.path.exists()),
        "costs": summary.get("costs"),
    }


def main() -> None:
    """Parse the arguments, measure (optionally under cProfile) and print the JSON figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("suite_dir", type=Path)
    parser.add_argument("target")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--judge", default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--no-cache", dest="cache", action="store_false")
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    run_args = (args.suite_dir, args.target, args.results_dir, args.judge, args.cache_dir, args.cache)
    if args.profile is None:
        figures = measure(*run_args)
    else:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        figures = measure(*run_args)
        profiler.disable()
        profiler.dump_stats(args.profile)
    json.dump(figures, sys.stdout)


if __name__ == "__main__":
    main()
