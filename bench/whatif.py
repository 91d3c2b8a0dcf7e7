"""Attribution: how much of W1/W2/W1J's cost each suspected hot spot accounts for, measured without cProfile.

Usage: `.venv/bin/python bench/whatif.py [--reps 3] [--only W1,W2,W1J]`

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
5. The judge cache's writes (W1J, cold: a fresh cache directory each time). `ManagedModel.generate` calls
   `ModelCache.put` synchronously on the event loop after every judge call that missed: `mkdir`,
   `tempfile.mkstemp`, `json.dump` (the pure-Python encoder), close, `os.replace`. Variants: `no-cache`
   (`RunOptions(cache=False)`: no key, lookup or write), `cache-thread` (the same `put`, handed to one
   background thread; the run waits for the writes before its timer stops), and `cache-lean` (a leaner
   synchronous `put`: `json.dumps`, `mkdir` once per directory, `os.open(O_EXCL)` of a temporary name
   made from the key instead of `mkstemp`, then `os.replace`; same entries on disk), and `cache-deferred`
   (the entry is encoded on the loop with `json.dumps`, then a background thread does only the file
   system calls of `cache-lean`, which release the GIL; the run waits for them before its timer stops).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import workloads  # noqa: E402  # bench/ is on sys.path from here on
from run import latency_server  # noqa: E402

W2_VARIANTS = ("plain", "no-sigint", "no-sigint+boxed", "gc-off")
W1_VARIANTS = ("plain", "sniffio")
W1J_VARIANTS = ("plain", "no-cache", "cache-thread", "cache-lean", "cache-deferred")
JUDGE = "openai/bench-judge"


def _patch_cache_put(variant: str) -> Callable[[], None]:
    """Replace `ModelCache.put` for the W1J variants; returns what to call to wait for pending writes."""
    from proctor.models import ModelCache

    original = ModelCache.put
    if variant == "cache-thread":
        from concurrent.futures import Future, ThreadPoolExecutor

        pool = ThreadPoolExecutor(1)
        pending: list[Future[None]] = []

        def put_in_thread(self: ModelCache, key: str, response: Any, *, request: Any = None) -> None:
            pending.append(pool.submit(original, self, key, response, request=request))

        def wait() -> None:
            for future in pending:
                future.result()

        ModelCache.put = put_in_thread  # type: ignore[method-assign]
        return wait
    if variant in ("cache-lean", "cache-deferred"):
        from concurrent.futures import Future, ThreadPoolExecutor

        from proctor.models._cache import _FORMAT

        made: set[Path] = set()

        def write(path: Path, key: str, data: bytes) -> None:
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            tmp = path.with_name(f".{key[:16]}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, path)

        writer = ThreadPoolExecutor(1)
        writes: list[Future[None]] = []

        def lean_put(self: ModelCache, key: str, response: Any, *, request: Any = None) -> None:
            path = self.path(key)
            entry = {"format": _FORMAT, "key": key, "request": request or {}, "response": response.to_dict()}
            data = json.dumps(entry, ensure_ascii=False).encode()
            if variant == "cache-deferred":
                writes.append(writer.submit(write, path, key, data))
            else:
                write(path, key, data)

        def wait_writes() -> None:
            for future in writes:
                future.result()

        ModelCache.put = lean_put  # type: ignore[method-assign]
        return wait_writes
    return lambda: None


def _time_cache_calls() -> dict[str, list[float]]:
    """Wrap `cache_key`, `ModelCache.get` and `ModelCache.put` with timers (plain W1J): name -> [calls, s]."""
    import proctor.models._managed as managed
    from proctor.models import ModelCache
    from proctor.models._cache import cache_key

    spent: dict[str, list[float]] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                entry = spent.setdefault(name, [0, 0.0])
                entry[0] += 1
                entry[1] += time.perf_counter() - t0

        return wrapper

    setattr(managed, "cache_key", timed("cache_key", cache_key))  # noqa: B010  # the name `generate` calls
    ModelCache.get = timed("get", ModelCache.get)  # type: ignore[method-assign]
    ModelCache.put = timed("put", ModelCache.put)  # type: ignore[method-assign]
    return spent


def measure(workload: str, variant: str, suite_dir: Path, target: str, results_dir: Path) -> dict[str, Any]:
    """One measurement in this (fresh) interpreter: load + run, with `variant` applied."""
    import anyio

    from proctor.checks import registry
    from proctor.run import RunOptions, RunOutcome, run, run_sync
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
    spec = parse_target_string(target)
    judged = workload == "W1J"
    if judged:  # what the first judge call would import, as `bench/_inproc.py` does
        import _inproc

        _inproc.preimport(spec, JUDGE)
    flush = _patch_cache_put(variant) if judged else (lambda: None)
    cache_calls = _time_cache_calls() if judged and variant == "plain" else None
    options = RunOptions(
        target=spec,
        model="bench",
        concurrency=16,
        max_connections=16,
        results_dir=results_dir,
        handle_sigint=not variant.startswith("no-sigint"),
        judge=JUDGE if judged else None,
        judge_concurrency=16 if judged else None,
        cache=variant != "no-cache",
        cache_dir=results_dir / "cache",  # a fresh directory: every W1J measurement is a cold run
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
    flush()
    w2, c2 = time.perf_counter(), time.process_time()
    gc.callbacks.remove(on_gc)
    figures: dict[str, Any] = {
        "load": w1 - w0,
        "run": w2 - w1,
        "cpu": c2 - c1,
        "gc": gc_time[0],
        "passed": outcome.data["summary"]["trials"]["passed"],
    }
    if cache_calls is not None:
        figures["cache_calls"] = cache_calls
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
    if workload == "W1J":  # the judge is `openai/...` on the same server
        env.update(OPENAI_BASE_URL=target, OPENAI_API_KEY="bench")
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
    parser.add_argument("--only", default="W1,W2,W1J", help="Comma-separated workloads (W1, W2, W1J).")
    args = parser.parse_args()
    selected = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    if args.one:
        workload, variant, suite_dir, target, results_dir = args.one
        json.dump(measure(workload, variant, Path(suite_dir), target, Path(results_dir)), sys.stdout)
        return

    w1: dict[str, list[dict[str, Any]]] = {v: [] for v in W1_VARIANTS}
    w2: dict[str, list[dict[str, Any]]] = {v: [] for v in W2_VARIANTS}
    w1j: dict[str, list[dict[str, Any]]] = {v: [] for v in W1J_VARIANTS}
    with tempfile.TemporaryDirectory(prefix="proctor-whatif-") as name:
        tmp = Path(name)
        w2_dir = workloads.write_w2(tmp / "w2")
        w1_dir = workloads.write_w1(tmp / "w1")
        w1j_dir = workloads.write_w1j(tmp / "w1j")
        for rep in range(args.reps + 1) if "W2" in selected else ():  # round 0 warms up, not counted
            print(f"W2 round {rep}/{args.reps} ...", file=sys.stderr, flush=True)
            for variant in W2_VARIANTS:
                figures = _spawn("W2", variant, w2_dir, "python:bench_agent:respond", tmp / f"r-{rep}")
                if rep:
                    w2[variant].append(figures)
        with latency_server() as server:
            for rep in range(args.reps + 1) if "W1" in selected else ():
                print(f"W1 round {rep}/{args.reps} ...", file=sys.stderr, flush=True)
                for variant in W1_VARIANTS:
                    figures = _spawn("W1", variant, w1_dir, server.url, tmp / f"r1-{rep}")
                    if rep:
                        w1[variant].append(figures)
            for rep in range(args.reps + 1) if "W1J" in selected else ():
                print(f"W1J round {rep}/{args.reps} ...", file=sys.stderr, flush=True)
                for variant in W1J_VARIANTS:
                    figures = _spawn("W1J", variant, w1j_dir, server.url, tmp / f"r1j-{rep}-{variant}")
                    if rep:
                        w1j[variant].append(figures)

    if "W2" in selected:
        _report_w2(w2, args.reps)
    if "W1" in selected:
        _report_w1(w1, args.reps)
    if "W1J" in selected:
        _report_w1j(w1j, args.reps)


def _report_w2(w2: dict[str, list[dict[str, Any]]], reps: int) -> None:
    per_case = 1e6 / workloads.W2_CASES
    print(f"W2, in-process, {workloads.W2_CASES} cases (median of {reps} fresh interpreters), us/case:")
    print("  variant             load   run  load+run  in GC")
    for variant in W2_VARIANTS:
        load, run = _median(w2[variant], "load") * per_case, _median(w2[variant], "run") * per_case
        gc_us = _median(w2[variant], "gc") * per_case
        print(f"  {variant:17} {load:6.0f} {run:5.0f} {load + run:9.0f} {gc_us:6.0f}")
    print(
        f"  results JSON: indent=2 {_median(w2['plain'], 'json_indent2') * per_case:.0f} us/case,"
        f" indent=None {_median(w2['plain'], 'json_compact') * per_case:.0f} us/case"
    )


def _report_w1(w1: dict[str, list[dict[str, Any]]], reps: int) -> None:
    calls = workloads.W1_CASES
    ideal = calls / 16 * 0.1
    print(f"W1, in-process, {calls} calls to the 100 ms server (median of {reps}):")
    print("  variant    CPU/call (run)  run wall / ideal")
    for variant in W1_VARIANTS:
        cpu = _median(w1[variant], "cpu") / calls * 1000
        print(f"  {variant:8} {cpu:11.2f} ms {_median(w1[variant], 'run') / ideal:16.3f}x")


def _report_w1j(w1j: dict[str, list[dict[str, Any]]], reps: int) -> None:
    calls = 2 * workloads.W1_CASES
    ideal = workloads.W1_CASES * 0.2 / 16
    print(f"W1J, in-process, cold cache, {calls} model calls (agent + judge) to the 100 ms server (median of {reps}):")
    print("  variant         CPU/model call  run wall / ideal  (all samples)")
    for variant in W1J_VARIANTS:
        cpu = _median(w1j[variant], "cpu") / calls * 1000
        walls = " ".join(f"{s['run'] / ideal:.3f}" for s in w1j[variant])
        print(f"  {variant:14} {cpu:11.2f} ms {_median(w1j[variant], 'run') / ideal:16.3f}x  ({walls})")
    plain = [s["cache_calls"] for s in w1j["plain"]]
    print("  plain, on the event loop, per judge call (wall time of each call, median of the runs):")
    for name in ("cache_key", "get", "put"):
        per_call = statistics.median(c[name][1] / c[name][0] for c in plain if name in c) * 1e6
        print(f"    {name:10} {per_call:6.0f} us x {int(plain[0].get(name, [0])[0])}")


if __name__ == "__main__":
    main()
