"""Attribution: how much of W1/W2's cost each suspected hot spot accounts for, measured without cProfile.

Usage: `.venv/bin/python bench/whatif.py [--reps 3]`

Nothing in Proctor is changed. Each probe runs the same workload in fresh interpreters two ways, the
plain way and with one thing changed from outside Proctor, and reports the medians:

1. `run_sync` teardown with `RunOptions(handle_sigint=False)` (W2). `run_sync` returns the `RunOutcome`
   as the asyncio main task's result. On exit, Python 3.11's `asyncio.Runner.run` checks
   `signal.getsignal(SIGINT) is <its handler>` and restores the default with `signal.signal(...)`; both
   try `Handlers(<functools.partial(_on_sigint, main_task=task)>)`, and the failing enum lookup formats
   its ValueError with `repr()` of the partial, hence of the finished task, hence of its result: the whole
   `RunOutcome` (every `Case` with its pydantic specs, and the results dict), twice. With the default
   `handle_sigint=True` anyio's signal receiver has already put back `default_int_handler`, so the check
   fails cheaply. Variants: `no-sigint` (`handle_sigint=False`), and `no-sigint+boxed` (the same, but
   through `anyio.run` of a coroutine that keeps the outcome in a closure and returns None).
2. Results JSON (W2). `write_json` uses `json.dumps(indent=2)`, which always takes the pure-Python
   encoder. Measured on the run's own results dict: `indent=2` against `indent=None` (the C encoder).
3. Cyclic garbage collector (W2). Loading builds ~10^6 container objects; every young-generation
   collection that escalates to the old generations walks all of them. Measured: total time spent in
   collections (`gc.callbacks`) in the plain run, and variant `gc-off` (`gc.disable()` before loading).
4. `import sniffio` (W1). httpcore 1.0 runs `import sniffio` in `current_async_library()` every time it
   creates a lock, event or semaphore (several per request). sniffio is not installed in this venv (anyio
   4.16 and httpx 0.28 no longer depend on it), so each call is a failed import that searches every
   `sys.path` entry. Variant `sniffio`: a `sniffio` stand-in in `sys.modules` (as if it were installed).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import workloads  # noqa: E402  # bench/ is on sys.path from here on
from run import latency_server  # noqa: E402

W2_VARIANTS = ("plain", "no-sigint", "no-sigint+boxed", "gc-off")
W1_VARIANTS = ("plain", "sniffio")


def measure(workload: str, variant: str, suite_dir: Path, target: str, results_dir: Path) -> dict[str, Any]:
    """One measurement in this (fresh) interpreter: load + run, with `variant` applied."""
    import anyio

    from proctor.checks import registry
    from proctor.runner import RunOptions, RunOutcome, run, run_sync
    from proctor.suite import load_suites, parse_target_string

    if variant == "sniffio":
        stub = types.ModuleType("sniffio")
        stub.current_async_library = lambda: "asyncio"  # type: ignore[attr-defined]
        sys.modules["sniffio"] = stub
    gc_time = [0.0, 0.0]  # total, start of the current collection

    def on_gc(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            gc_time[1] = time.perf_counter()
        else:
            gc_time[0] += time.perf_counter() - gc_time[1]

    gc.callbacks.append(on_gc)
    if variant == "gc-off":
        gc.disable()
    options = RunOptions(
        target=parse_target_string(target),
        model="bench",
        concurrency=16,
        max_connections=16,
        results_dir=results_dir,
        handle_sigint=not variant.startswith("no-sigint"),
    )
    w0 = time.perf_counter()
    suites = load_suites([suite_dir], registry)
    w1, c1 = time.perf_counter(), time.process_time()
    if variant.endswith("boxed"):
        box: list[RunOutcome] = []

        async def main() -> None:
            box.append(await run(suites, options))

        anyio.run(main)
        outcome = box[0]
    else:
        outcome = run_sync(suites, options)
    w2, c2 = time.perf_counter(), time.process_time()
    gc.callbacks.remove(on_gc)
    figures: dict[str, Any] = {
        "load": w1 - w0,
        "run": w2 - w1,
        "cpu": c2 - c1,
        "gc": gc_time[0],
        "passed": outcome.data["summary"]["trials"]["passed"],
    }
    if workload == "W2" and variant == "plain":
        t0 = time.perf_counter()
        json.dumps(outcome.data, indent=2, ensure_ascii=False)
        t1 = time.perf_counter()
        json.dumps(outcome.data, ensure_ascii=False)
        figures["json_indent2"] = t1 - t0
        figures["json_compact"] = time.perf_counter() - t1
    return figures


def _spawn(workload: str, variant: str, suite_dir: Path, target: str, results_dir: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BENCH), env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, __file__, "--one", workload, variant, str(suite_dir), target, str(results_dir)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{workload}/{variant} failed:\n{done.stderr}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _median(samples: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(s[key]) for s in samples)


def main() -> None:
    """Run the probes (or, with `--one`, one measurement) and print what each hot spot costs."""
    parser = argparse.ArgumentParser(description="Attribute W1/W2 cost to suspected hot spots.")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--one", nargs=5, metavar=("WORKLOAD", "VARIANT", "SUITES", "TARGET", "RESULTS"))
    args = parser.parse_args()
    if args.one:
        workload, variant, suite_dir, target, results_dir = args.one
        json.dump(measure(workload, variant, Path(suite_dir), target, Path(results_dir)), sys.stdout)
        return

    w1: dict[str, list[dict[str, Any]]] = {v: [] for v in W1_VARIANTS}
    w2: dict[str, list[dict[str, Any]]] = {v: [] for v in W2_VARIANTS}
    with tempfile.TemporaryDirectory(prefix="proctor-whatif-") as name:
        tmp = Path(name)
        w2_dir = workloads.write_w2(tmp / "w2")
        w1_dir = workloads.write_w1(tmp / "w1")
        for rep in range(args.reps + 1):  # round 0 warms up and is not counted
            print(f"round {rep}/{args.reps} ...", file=sys.stderr, flush=True)
            for variant in W2_VARIANTS:
                figures = _spawn("W2", variant, w2_dir, "python:bench_agent:respond", tmp / f"r-{rep}")
                if rep:
                    w2[variant].append(figures)
        with latency_server() as server:
            for rep in range(args.reps + 1):
                for variant in W1_VARIANTS:
                    figures = _spawn("W1", variant, w1_dir, server.url, tmp / f"r1-{rep}")
                    if rep:
                        w1[variant].append(figures)

    per_case = 1e6 / workloads.W2_CASES
    print(f"W2, in-process, {workloads.W2_CASES} cases (median of {args.reps} fresh interpreters), us/case:")
    print("  variant             load   run  load+run  in GC")
    for variant in W2_VARIANTS:
        load, run = _median(w2[variant], "load") * per_case, _median(w2[variant], "run") * per_case
        gc_us = _median(w2[variant], "gc") * per_case
        print(f"  {variant:17} {load:6.0f} {run:5.0f} {load + run:9.0f} {gc_us:6.0f}")
    print(
        f"  results JSON: indent=2 {_median(w2['plain'], 'json_indent2') * per_case:.0f} us/case,"
        f" indent=None {_median(w2['plain'], 'json_compact') * per_case:.0f} us/case"
    )
    calls = workloads.W1_CASES
    ideal = calls / 16 * 0.1
    print(f"W1, in-process, {calls} calls to the 100 ms server (median of {args.reps}):")
    print("  variant    CPU/call (run)  run wall / ideal")
    for variant in W1_VARIANTS:
        cpu = _median(w1[variant], "cpu") / calls * 1000
        print(f"  {variant:8} {cpu:11.2f} ms {_median(w1[variant], 'run') / ideal:16.3f}x")


if __name__ == "__main__":
    main()
