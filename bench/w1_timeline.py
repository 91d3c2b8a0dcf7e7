"""Where W1's time above its limit goes: a timeline of every model call of a judged `proctor run`.

The harness's W1 (`bench/peers/`: 400 cases, each an agent call then an `llm-rubric` judge call, against
`bench/peers/mock_llm.py` at 100 ms, concurrency 16; physical limit 400 x 2 / 16 x 0.1 s = 5.0 s) is run as
`proctor run` in a child process whose `HttpClient.request` logs each call's start and end. The parent
reports, per repetition: start-up (process start to the first request), the first request's extra wait
(aiohttp is imported by it, inside the event loop: the rest of the first wave waits), the span of the calls
against the 5.0 s, their median round trip, and the tail (last reply to the process's end: results file,
journal, history store). Then the same number of calls from a bare `aiohttp.ClientSession` (16 workers,
each call after the previous one): the span and round trip any client gets from this mock on this machine;
and, interleaved with the repetitions, that client as a whole process (interpreter start, `import aiohttp`,
the calls): the wall a Python process with aiohttp and no framework gets, W1's floor on this machine.

Usage: `.venv/bin/python bench/w1_timeline.py [--reps 3] [--cases 400] [--port 18990]`. Numbers vary with
the machine's load; compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = "The response answers the question correctly and concisely."


def _child(log_path: str, argv: list[str]) -> None:
    """In the child: log every `HttpClient.request`'s (start, end) as epoch seconds, then run the CLI."""
    import atexit

    import proctor._http as http
    import proctor.cli

    calls: list[tuple[float, float]] = []
    original = http.HttpClient.request

    async def request(self: http.HttpClient, method: str, url: str, **kwargs: object) -> http.HttpResponse:
        started = time.time()
        response = await original(self, method, url, **kwargs)  # type: ignore[arg-type]
        calls.append((started, time.time()))
        return response

    http.HttpClient.request = request  # type: ignore[method-assign]
    atexit.register(lambda: Path(log_path).write_text(json.dumps({"calls": calls, "exit": time.time()})))
    sys.argv = ["proctor", *argv]
    proctor.cli.script()  # as the `proctor` script: `atexit` handlers run, no teardown


def _write_suite(directory: Path, cases: int, port: int) -> None:
    lines = [
        "name: w1-timeline",
        "trials: 1",
        f'target: {{type: openai, base_url: "http://127.0.0.1:{port}/v1", model: gpt-4o-mini}}',
        "cases:",
    ]
    for n in range(cases):
        lines += [
            f"  - name: w1-{n}",
            "    turns:",
            f'      - content: "Case {n}: what is {n} plus 1?"',
            f"        assert: [{{type: llm-rubric, value: {json.dumps(RUBRIC)}}}]",
        ]
    (directory / "suite.yaml").write_text("\n".join(lines) + "\n")


def _one_run(work: Path, port: int, limit: float) -> dict[str, float]:
    suite, scratch = work / "suite", Path(tempfile.mkdtemp(dir=work))
    argv = [
        "run", str(suite), "--judge", "openai/gpt-4o-mini", "--no-cache", "--concurrency", "16", "--judge-concurrency",
        "16", "--max-connections", "16", "--results-dir", str(scratch / "results"), "--history",
        str(scratch / "history.db"), "--ci", "--output", str(scratch / "results.json"), "--quiet",
    ]  # fmt: skip
    env = dict(os.environ, OPENAI_API_KEY="dummy", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    log = scratch / "calls.json"
    started = time.time()
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(log), *argv], env=env, stdout=subprocess.DEVNULL, check=False
    )
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"proctor run exited {done.returncode}")
    data = json.loads(log.read_text())
    calls = sorted(data["calls"])
    first, rest = calls[0], calls[1:]
    span = max(end for _, end in calls) - first[0]
    return {
        "wall_over_limit": (ended - started) / limit,
        "start_to_first_request_s": first[0] - started,
        "first_wave_wait_s": min(start for start, _ in rest) - first[0],
        "calls_span_s": span,
        "rtt_median_ms": 1000 * statistics.median(end - start for start, end in calls),
        "tail_s": ended - max(end for _, end in calls),
        "calls": len(calls),
    }


async def _floor(port: int, calls: int, workers: int) -> dict[str, float]:
    import aiohttp

    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Case 1: what is 1 plus 1?"}]})
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    rtts: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=workers)) as session:

        async def worker() -> None:
            for _ in range(calls // workers):
                started = time.perf_counter()
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as response:
                    await response.read()
                rtts.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(workers)))
        span = time.perf_counter() - started
    return {"calls_span_s": span, "rtt_median_ms": 1000 * statistics.median(rtts), "calls": len(rtts)}


def _floor_process(port: int, calls: int, limit: float) -> dict[str, float]:
    """The same calls from a bare aiohttp client as a whole process: interpreter, `import aiohttp`, calls."""
    started = time.time()
    done = subprocess.run([sys.executable, __file__, "--floor-process", str(port), str(calls)], check=False)
    if done.returncode != 0:
        raise SystemExit(f"the bare client exited {done.returncode}")
    return {"wall_over_limit": (time.time() - started) / limit}


def main() -> None:
    """Run the repetitions and the bare client's, then print the figures (median [range])."""
    if sys.argv[1:2] == ["--child"]:  # the measured `proctor run` (see `_one_run`)
        _child(sys.argv[2], sys.argv[3:])
        return
    if sys.argv[1:2] == ["--floor-process"]:  # a bare client's whole process (see `_floor_process`)
        asyncio.run(_floor(int(sys.argv[2]), int(sys.argv[3]), 16))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--port", type=int, default=18990)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    limit = args.cases * 2 / 16 * 0.1
    mock = subprocess.Popen(
        [sys.executable, str(ROOT / "bench/peers/mock_llm.py"), "--port", str(args.port), "--latency-ms", "100"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(1.5)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "suite").mkdir()
            _write_suite(work / "suite", args.cases, args.port)
            runs, processes = [], []
            for _ in range(args.reps):  # interleaved: the machine's hour moves both alike
                runs.append(_one_run(work, args.port, limit))
                processes.append(_floor_process(args.port, args.cases * 2, limit))
        floors = [asyncio.run(_floor(args.port, args.cases * 2, 16)) for _ in range(args.reps)]
    finally:
        mock.terminate()
        mock.wait()
    print(f"limit {limit:.2f} s ({args.cases} cases x 2 calls / 16 x 0.1 s); median [range] of {args.reps}")
    for name in runs[0]:
        values = [run[name] for run in runs]
        print(f"  proctor run  {name:26s} {statistics.median(values):8.3f} [{min(values):.3f}-{max(values):.3f}]")
    for name in floors[0]:
        values = [floor[name] for floor in floors]
        print(f"  bare aiohttp {name:26s} {statistics.median(values):8.3f} [{min(values):.3f}-{max(values):.3f}]")
    values = [process["wall_over_limit"] for process in processes]
    print(
        f"  bare process wall_over_limit{'':12s} {statistics.median(values):8.3f} [{min(values):.3f}-{max(values):.3f}]"
    )
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "floor": floors, "floor_process": processes}, indent=2))


if __name__ == "__main__":
    main()
