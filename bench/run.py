"""Proctor's performance benchmark: overhead against a slow agent (and its judge), per-case cost, start-up.

Usage:
    .venv/bin/python bench/run.py [--only W1,W1J,W2,W0] [--reps 3] [--json out.json] [--profile]

Workloads (suites are generated into a temporary directory; see `bench/README.md`):

- W1: 400 one-turn cases against a local OpenAI-compatible server that answers after 100 ms, at
  `--concurrency 16 --max-connections 16`. Wall time over the ideal (400 / 16 x 0.1 s = 2.5 s) and
  Proctor's CPU time per model call, (a) in-process around `run_sync`, (b) for the whole
  `proctor run ... --ci` subprocess.
- W1J: W1 with one `llm-rubric` judge per case, the same server answering the judge too (100 ms), agent
  and judge each at concurrency 16, in-process. A cold run with a fresh cache directory: wall time over
  the ideal (400 x (0.1 + 0.1) / 16 = 5.0 s) and CPU per model call (800 calls); then the same suite
  again with the cache warm: wall time, and the judge requests the server saw (must be 0).
- W2: 5,000 one-turn cases with 2-3 deterministic checks against the in-process async callable
  `python:bench_agent:respond`, concurrency 16, results written. Microseconds per case, (a) in-process
  including suite loading (loading also reported apart), (b) the whole CLI subprocess.
- W0: `proctor --help` start-up time (median of 10) and the top `-X importtime` offenders.

Each W1/W1J/W2 figure is measured `--reps` times (each in a fresh interpreter) after one discarded warm-up round;
the median and the minimum are reported. Subprocesses keep bytecode in a temporary cache, as an installed
package would. `--profile` also runs W2, W1 and W1J (cold and warm) once under cProfile and prints the top
functions by own time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import workloads  # noqa: E402  # bench/ is on sys.path from here on

PYTHON = sys.executable
PROCTOR = str(Path(PYTHON).parent / "proctor")
CONCURRENCY = 16
LATENCY = 0.1
W2_TARGET = "python:bench_agent:respond"
JUDGE = "openai/bench-judge"
"""W1J's judge: `openai/...` reaches the latency server through `OPENAI_BASE_URL`."""
_pycache: Path | None = None
"""Bytecode cache for every subprocess (set by `main`), so start-up is measured with compiled bytecode."""


def _env(bench_importable: bool = False, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a subprocess: no PROCTOR_* settings leaking in; `bench/` on PYTHONPATH if asked.

    Only W2 needs `bench/` importable (its target is `python:bench_agent:respond`); W1 and W0 run without
    it, so `sys.path` is what a user would have. Bytecode goes to `_pycache` (when set) even where
    PYTHONDONTWRITEBYTECODE is set, as an installed package has its modules compiled; the warm-up round
    of each workload fills it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    if _pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(_pycache)
    if bench_importable:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BENCH), env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """The running latency server."""

    process: subprocess.Popen[bytes]
    url: str

    def cpu_seconds(self) -> float:
        """The server's user + system CPU time so far (Linux `/proc`)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def requests(self) -> dict[str, int]:
        """Requests the server has answered so far, per role: `{"agent": N, "judge": N}` (`GET /stats`)."""
        root = self.url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/stats", timeout=5) as reply:
            counts: dict[str, int] = json.loads(reply.read())
        return counts


@contextmanager
def latency_server(latency: float = LATENCY) -> Iterator[Server]:
    """Start `bench/latency_server.py` on a free port, wait until it answers, stop it afterwards."""
    port = _free_port()
    process = subprocess.Popen(
        [PYTHON, str(BENCH / "latency_server.py"), "--port", str(port), "--latency", str(latency)],
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"latency server exited with {process.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("latency server did not start within 20 s") from None
                time.sleep(0.05)
        yield Server(process, f"http://127.0.0.1:{port}/v1")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _inproc(
    suite_dir: Path,
    target: str,
    results_dir: Path,
    profile: Path | None = None,
    cache_dir: Path | None = None,
    judged: bool = False,
) -> dict[str, Any]:
    """One in-process measurement in a fresh interpreter (`bench/_inproc.py`).

    With `judged` (W1J) the run has the judge `JUDGE`, served by the same server as the agent (`target`),
    at judge concurrency 16, with its model cache in `cache_dir` (`None`: the cache is off).
    """
    command = [PYTHON, str(BENCH / "_inproc.py"), str(suite_dir), target, str(results_dir)]
    extra: dict[str, str] = {}
    if judged:
        command += ["--judge", JUDGE] + (["--cache-dir", str(cache_dir)] if cache_dir else ["--no-cache"])
        extra = {"OPENAI_BASE_URL": target, "OPENAI_API_KEY": "bench"}
    if profile is not None:
        command += ["--profile", str(profile)]
    env = _env(bench_importable=target == W2_TARGET, extra=extra)
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"in-process run failed ({done.returncode}):\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout)
    if figures["trials_passed"] != figures["cases"] or not figures["results_written"]:
        raise RuntimeError(f"in-process run did not pass every case or write results: {figures}")
    return figures


def _cli(suite_dir: Path, target: str, results_dir: Path) -> dict[str, Any]:
    """One `proctor run ... --ci` subprocess: wall time (incl. start-up) and its CPU time."""
    command = [
        PROCTOR,
        "run",
        str(suite_dir),
        "--target",
        target,
        "--model",
        "bench",
        "--concurrency",
        str(CONCURRENCY),
        "--max-connections",
        str(CONCURRENCY),
        "--results-dir",
        str(results_dir),
        "--ci",
    ]
    env = _env(bench_importable=target == W2_TARGET)
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"proctor run exited with {done.returncode}:\n{done.stdout[-2000:]}{done.stderr}")
    summary = json.loads(done.stdout)["summary"]
    if summary["passed"] != summary["cases"]:
        raise RuntimeError(f"proctor run did not pass every case: {summary}")
    return {"wall": wall, "cpu": cpu, "cases": summary["cases"]}


def _floor(url: str, judged: bool = False) -> dict[str, dict[str, float]]:
    """W1 (or with `judged`, W1J) without Proctor (`bench/floor.py`): a raw asyncio and a bare httpx client."""
    command = [PYTHON, str(BENCH / "floor.py"), url] + (["--judged"] if judged else [])
    done = subprocess.run(command, env=_env(), cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"floor run failed ({done.returncode}):\n{done.stderr}")
    figures: dict[str, dict[str, float]] = json.loads(done.stdout)
    return figures


def _stats(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "samples": values}


def bench_w1(tmp: Path, reps: int, profile: bool) -> dict[str, Any]:
    """W1: 400 cases against the 100 ms server, in-process and through the CLI."""
    suite_dir = workloads.write_w1(tmp / "w1")
    requests = workloads.W1_CASES
    ideal = requests / CONCURRENCY * LATENCY
    a_wall: list[float] = []
    a_cpu: list[float] = []
    b_wall: list[float] = []
    b_cpu: list[float] = []
    server_cpu: list[float] = []
    floor: dict[str, list[float]] = {"raw_wall": [], "httpx_wall": [], "httpx_cpu": []}
    with latency_server() as server:
        print("  W1 warm-up ...", file=sys.stderr, flush=True)
        _inproc(suite_dir, server.url, tmp / "w1-res-warm-a")
        _cli(suite_dir, server.url, tmp / "w1-res-warm-b")
        _floor(server.url)
        for rep in range(reps):
            print(f"  W1 rep {rep + 1}/{reps} ...", file=sys.stderr, flush=True)
            s0 = server.cpu_seconds()
            figures = _inproc(suite_dir, server.url, tmp / f"w1-res-a{rep}")
            server_cpu.append((server.cpu_seconds() - s0) / requests * 1000)
            a_wall.append(figures["run_wall"] / ideal)
            a_cpu.append(figures["run_cpu"] / requests * 1000)
            cli = _cli(suite_dir, server.url, tmp / f"w1-res-b{rep}")
            b_wall.append(cli["wall"] / ideal)
            b_cpu.append(cli["cpu"] / requests * 1000)
            floors = _floor(server.url)
            floor["raw_wall"].append(floors["raw"]["wall"] / ideal)
            floor["httpx_wall"].append(floors["httpx"]["wall"] / ideal)
            floor["httpx_cpu"].append(floors["httpx"]["cpu"] / requests * 1000)
        prof = None
        if profile:
            prof = tmp / "w1.prof"
            _inproc(suite_dir, server.url, tmp / "w1-res-prof", profile=prof)
    return {
        "requests": requests,
        "ideal_s": ideal,
        "a_wall_over_ideal": _stats(a_wall),
        "a_cpu_ms_per_call": _stats(a_cpu),
        "b_wall_over_ideal": _stats(b_wall),
        "b_cpu_ms_per_call": _stats(b_cpu),
        "server_cpu_ms_per_request": _stats(server_cpu),
        "floor_raw_wall_over_ideal": _stats(floor["raw_wall"]),
        "floor_httpx_wall_over_ideal": _stats(floor["httpx_wall"]),
        "floor_httpx_cpu_ms_per_call": _stats(floor["httpx_cpu"]),
        "profile": _top(prof) if prof else None,
    }


def _w1j_round(
    server: Server, suite_dir: Path, tmp: Path, tag: str, profile: bool = False, no_cache: bool = False
) -> list[dict[str, Any]]:
    """One W1J cold run (fresh cache directory) and one warm run (same directory), each checked.

    With `no_cache`, a third run with the cache off (`--no-cache`), for attribution. Returns the runs'
    figures, each with the server's request counts (`server_requests`) and CPU time (`server_cpu`)
    during that run added.
    """
    cache_dir = tmp / f"w1j-cache-{tag}"
    if cache_dir.exists():
        raise RuntimeError(f"{cache_dir} already exists: the cold run needs a fresh cache")
    cases = workloads.W1_CASES
    runs: list[dict[str, Any]] = []
    for phase in ("cold", "warm", "off") if no_cache else ("cold", "warm"):
        before, cpu0 = server.requests(), server.cpu_seconds()
        prof = tmp / f"w1j-{phase}.prof" if profile else None
        figures = _inproc(
            suite_dir,
            server.url,
            tmp / f"w1j-res-{tag}-{phase}",
            profile=prof,
            cache_dir=None if phase == "off" else cache_dir,
            judged=True,
        )
        after = server.requests()
        figures["server_cpu"] = server.cpu_seconds() - cpu0
        figures["server_requests"] = {role: after[role] - before.get(role, 0) for role in after}
        figures["profile_path"] = str(prof) if prof else None
        judge = figures["costs"]["judge"]
        if figures["server_requests"]["agent"] != cases or judge["calls"] != cases:
            raise RuntimeError(f"W1J {phase} run: expected {cases} agent and judge calls: {figures}")
        if phase != "warm" and (figures["server_requests"]["judge"] != cases or judge["cached_calls"] != 0):
            raise RuntimeError(f"W1J {phase} run: expected {cases} uncached judge requests: {figures}")
        runs.append(figures)
    return runs


def bench_w1j(tmp: Path, reps: int, profile: bool) -> dict[str, Any]:
    """W1J: W1 plus one `llm-rubric` per case, judged by the same 100 ms server; cold, then warm cache."""
    suite_dir = workloads.write_w1j(tmp / "w1j")
    cases = workloads.W1_CASES
    calls = 2 * cases  # one agent call and one judge call per case
    ideal = cases * (LATENCY + LATENCY) / CONCURRENCY
    warm_ideal = cases * LATENCY / CONCURRENCY  # the agent alone, as in W1
    samples: dict[str, list[float]] = {
        key: []
        for key in (
            "cold_wall",
            "cold_cpu",
            "cold_server_cpu",
            "warm_wall_s",
            "warm_wall",
            "warm_cpu",
            "warm_judge_requests",
            "warm_cached_calls",
            "cold_cached_calls",
            "off_wall",
            "off_cpu",
            "floor_raw_wall",
            "floor_httpx_wall",
            "floor_httpx_cpu",
        )
    }
    prof: list[dict[str, Any]] | None = None
    with latency_server() as server:
        print("  W1J warm-up ...", file=sys.stderr, flush=True)
        _w1j_round(server, suite_dir, tmp, "warm-up")
        _floor(server.url, judged=True)
        for rep in range(reps):
            print(f"  W1J rep {rep + 1}/{reps} ...", file=sys.stderr, flush=True)
            cold, warm, off = _w1j_round(server, suite_dir, tmp, f"r{rep}", no_cache=True)
            samples["cold_wall"].append(cold["run_wall"] / ideal)
            samples["cold_cpu"].append(cold["run_cpu"] / calls * 1000)
            samples["cold_server_cpu"].append(cold["server_cpu"] / calls * 1000)
            samples["cold_cached_calls"].append(cold["costs"]["judge"]["cached_calls"])
            samples["warm_wall_s"].append(warm["run_wall"])
            samples["warm_wall"].append(warm["run_wall"] / warm_ideal)
            samples["warm_cpu"].append(warm["run_cpu"] / cases * 1000)
            samples["warm_judge_requests"].append(warm["server_requests"]["judge"])
            samples["warm_cached_calls"].append(warm["costs"]["judge"]["cached_calls"])
            samples["off_wall"].append(off["run_wall"] / ideal)
            samples["off_cpu"].append(off["run_cpu"] / calls * 1000)
            floors = _floor(server.url, judged=True)
            samples["floor_raw_wall"].append(floors["raw"]["wall"] / ideal)
            samples["floor_httpx_wall"].append(floors["httpx"]["wall"] / ideal)
            samples["floor_httpx_cpu"].append(floors["httpx"]["cpu"] / calls * 1000)
        if profile:
            prof = _w1j_round(server, suite_dir, tmp, "prof", profile=True)
    return {
        "cases": cases,
        "model_calls_cold": calls,
        "ideal_s": ideal,
        "warm_ideal_s": warm_ideal,
        "cold_wall_over_ideal": _stats(samples["cold_wall"]),
        "cold_cpu_ms_per_call": _stats(samples["cold_cpu"]),
        "cold_server_cpu_ms_per_request": _stats(samples["cold_server_cpu"]),
        "cold_cached_calls": _stats(samples["cold_cached_calls"]),
        "warm_wall_s": _stats(samples["warm_wall_s"]),
        "warm_wall_over_w1_ideal": _stats(samples["warm_wall"]),
        "warm_cpu_ms_per_case": _stats(samples["warm_cpu"]),
        "warm_judge_requests": _stats(samples["warm_judge_requests"]),
        "warm_cached_calls": _stats(samples["warm_cached_calls"]),
        "off_wall_over_ideal": _stats(samples["off_wall"]),
        "off_cpu_ms_per_call": _stats(samples["off_cpu"]),
        "floor_raw_wall_over_ideal": _stats(samples["floor_raw_wall"]),
        "floor_httpx_wall_over_ideal": _stats(samples["floor_httpx_wall"]),
        "floor_httpx_cpu_ms_per_call": _stats(samples["floor_httpx_cpu"]),
        "profile": _top(Path(prof[0]["profile_path"])) if prof else None,
        "profile_warm": _top(Path(prof[1]["profile_path"])) if prof else None,
    }


def bench_w2(tmp: Path, reps: int, profile: bool) -> dict[str, Any]:
    """W2: 5,000 cases against the in-process async callable, in-process and through the CLI."""
    suite_dir = workloads.write_w2(tmp / "w2")
    cases = workloads.W2_CASES
    a_total: list[float] = []
    a_load: list[float] = []
    a_run: list[float] = []
    b_total: list[float] = []
    print("  W2 warm-up ...", file=sys.stderr, flush=True)
    _inproc(suite_dir, W2_TARGET, tmp / "w2-res-warm-a")
    _cli(suite_dir, W2_TARGET, tmp / "w2-res-warm-b")
    for rep in range(reps):
        print(f"  W2 rep {rep + 1}/{reps} ...", file=sys.stderr, flush=True)
        figures = _inproc(suite_dir, W2_TARGET, tmp / f"w2-res-a{rep}")
        a_total.append((figures["load_wall"] + figures["run_wall"]) / cases * 1e6)
        a_load.append(figures["load_wall"] / cases * 1e6)
        a_run.append(figures["run_wall"] / cases * 1e6)
        cli = _cli(suite_dir, W2_TARGET, tmp / f"w2-res-b{rep}")
        b_total.append(cli["wall"] / cases * 1e6)
    prof = None
    if profile:
        prof = tmp / "w2.prof"
        _inproc(suite_dir, W2_TARGET, tmp / "w2-res-prof", profile=prof)
    return {
        "cases": cases,
        "a_us_per_case": _stats(a_total),
        "a_load_us_per_case": _stats(a_load),
        "a_run_us_per_case": _stats(a_run),
        "b_us_per_case": _stats(b_total),
        "profile": _top(prof) if prof else None,
    }


def _importtime() -> list[tuple[str, int, int]]:
    """`-X importtime` of `import proctor.cli` (second of two runs, so bytecode is cached): top 8."""
    rows: list[tuple[str, int, int]] = []
    for _ in range(2):
        done = subprocess.run(
            [PYTHON, "-X", "importtime", "-c", "import proctor.cli"],
            env=_env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        rows = []
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "[us]" in line:
                continue
            self_us, cumulative, name = line.removeprefix("import time:").split("|", 2)
            rows.append((name.rstrip(), int(self_us), int(cumulative)))
    return sorted(rows, key=lambda row: row[2], reverse=True)[:8]


def bench_w0(runs: int) -> dict[str, Any]:
    """W0: wall and CPU time of `proctor --help` (one warm-up run, then `runs` measured)."""
    walls: list[float] = []
    cpus: list[float] = []
    for index in range(runs + 1):
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        subprocess.run([PROCTOR, "--help"], env=_env(), cwd=ROOT, capture_output=True, check=True)
        if index:
            walls.append(time.perf_counter() - t0)
            cpus.append(_children_cpu() - cpu0)
    return {"help_s": _stats(walls), "help_cpu_s": _stats(cpus), "importtime_top8": _importtime()}


def _top(path: Path, limit: int = 10) -> list[dict[str, Any]]:
    """The `limit` functions with the most own time in a cProfile dump."""
    import pstats

    stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in stats.values())
    rows = []
    for (filename, line, function), (cc, nc, tottime, cumtime, _callers) in stats.items():
        where = filename
        for prefix in (str(ROOT / ".venv/lib/python3.11/site-packages") + "/", str(ROOT) + "/"):
            where = where.removeprefix(prefix)
        where = where.replace(os.path.dirname(os.__file__) + "/", "")
        calls = str(nc) if nc == cc else f"{nc}/{cc}"
        name = f"{where}:{line}({function})" if line else function
        rows.append({"function": name, "ncalls": calls, "tottime": tottime, "cumtime": cumtime})
    rows.sort(key=lambda row: row["tottime"], reverse=True)
    return [dict(row, share=row["tottime"] / total) for row in rows[:limit]]


def _row(
    label: str, figure: dict[str, Any], unit: str, fmt: str, target: float | None, every: bool = False
) -> list[str]:
    """One table row; the target is met when the median is within it (with `every`, every sample)."""
    median, low = figure["median"], figure["min"]
    judged = max(figure["samples"]) if every else median
    met = "-" if target is None else ("yes" if judged <= target else "NO")
    return [
        label,
        f"{median:{fmt}}{unit}",
        f"{low:{fmt}}{unit}",
        "-" if target is None else f"<= {target:{fmt}}{unit}",
        met,
    ]


def table(results: dict[str, Any]) -> list[list[str]]:
    """The figures as rows: name, median, min, target, met."""
    rows: list[list[str]] = []
    if "W1" in results:
        w1 = results["W1"]
        rows += [
            _row("W1 (a) run_sync wall / ideal 2.5 s", w1["a_wall_over_ideal"], "x", ".3f", 1.10),
            _row("W1 (a) Proctor CPU per call", w1["a_cpu_ms_per_call"], " ms", ".2f", 1.5),
            _row("W1 (b) CLI wall / ideal 2.5 s", w1["b_wall_over_ideal"], "x", ".3f", 1.10),
            _row("W1 (b) CLI CPU per call (incl. start-up)", w1["b_cpu_ms_per_call"], " ms", ".2f", 1.5),
            _row("W1 server CPU per request (context)", w1["server_cpu_ms_per_request"], " ms", ".2f", None),
            _row("W1 floor: raw asyncio client wall / ideal", w1["floor_raw_wall_over_ideal"], "x", ".3f", None),
            _row("W1 floor: bare httpx wall / ideal", w1["floor_httpx_wall_over_ideal"], "x", ".3f", None),
            _row("W1 floor: bare httpx CPU per call", w1["floor_httpx_cpu_ms_per_call"], " ms", ".2f", None),
        ]
    if "W1J" in results:
        w1j = results["W1J"]
        n = w1j["cases"]
        rows += [
            _row("W1J cold run_sync wall / ideal 5.0 s", w1j["cold_wall_over_ideal"], "x", ".3f", 1.10),
            _row("W1J cold Proctor CPU per model call", w1j["cold_cpu_ms_per_call"], " ms", ".2f", None),
            _row("W1J cold server CPU per request", w1j["cold_server_cpu_ms_per_request"], " ms", ".2f", None),
            _row(f"W1J cold judge cached_calls (of {n})", w1j["cold_cached_calls"], "", ".0f", None),
            _row("W1J warm run_sync wall", w1j["warm_wall_s"], " s", ".3f", None),
            _row("W1J warm wall / W1 ideal 2.5 s", w1j["warm_wall_over_w1_ideal"], "x", ".3f", None),
            _row("W1J warm Proctor CPU per case", w1j["warm_cpu_ms_per_case"], " ms", ".2f", None),
            _row("W1J warm judge requests at server", w1j["warm_judge_requests"], "", ".0f", 0, every=True),
            _row(f"W1J warm judge cached_calls (of {n})", w1j["warm_cached_calls"], "", ".0f", None),
            _row("W1J cache off (--no-cache): wall / ideal", w1j["off_wall_over_ideal"], "x", ".3f", None),
            _row("W1J cache off (--no-cache): CPU per call", w1j["off_cpu_ms_per_call"], " ms", ".2f", None),
            _row("W1J floor: raw asyncio wall / ideal", w1j["floor_raw_wall_over_ideal"], "x", ".3f", None),
            _row("W1J floor: bare httpx wall / ideal", w1j["floor_httpx_wall_over_ideal"], "x", ".3f", None),
            _row("W1J floor: bare httpx CPU per call", w1j["floor_httpx_cpu_ms_per_call"], " ms", ".2f", None),
        ]
    if "W2" in results:
        w2 = results["W2"]
        rows += [
            _row("W2 (a) in-process per case (load + run)", w2["a_us_per_case"], " us", ".0f", 300),
            _row("W2 (a)   of which suite loading", w2["a_load_us_per_case"], " us", ".0f", None),
            _row("W2 (a)   of which run_sync", w2["a_run_us_per_case"], " us", ".0f", None),
            _row("W2 (b) CLI subprocess per case", w2["b_us_per_case"], " us", ".0f", 300),
        ]
    if "W0" in results:
        w0 = results["W0"]
        rows += [
            _row("W0 proctor --help wall", w0["help_s"], " s", ".3f", 0.3),
            _row("W0 proctor --help CPU", w0["help_cpu_s"], " s", ".3f", None),
        ]
    return rows


def _print_table(rows: list[list[str]]) -> None:
    header = ["figure", "median", "min", "target", "met"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for index, row in enumerate([header, *rows]):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


def _print_profile(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}: top {len(rows)} functions by own time (tottime)")
    for row in rows:
        print(
            f"  {row['tottime']:7.3f} s {100 * row['share']:5.1f}%  cum {row['cumtime']:7.3f} s"
            f"  {row['ncalls']:>16}  {row['function']}"
        )


def main() -> None:
    """Run the selected workloads and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description="Proctor performance benchmark.")
    parser.add_argument("--only", default="W1,W1J,W2,W0", help="Comma-separated workloads (W1, W1J, W2, W0).")
    parser.add_argument("--reps", type=int, default=3, help="Repetitions of each W1/W1J/W2 measurement.")
    parser.add_argument("--help-runs", type=int, default=10, help="Measured runs of `proctor --help`.")
    parser.add_argument("--json", type=Path, default=None, help="Also write every sample here.")
    parser.add_argument("--profile", action="store_true", help="Also run W1/W1J/W2 once under cProfile.")
    parser.add_argument("--markdown", action="store_true", help="Print the table as Markdown too.")
    args = parser.parse_args()
    selected = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = set(selected) - {"W0", "W1", "W1J", "W2"}
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")

    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": sys.platform},
        "date": time.strftime("%Y-%m-%d"),
    }
    jobs: dict[str, Callable[[Path], dict[str, Any]]] = {
        "W1": lambda tmp: bench_w1(tmp, args.reps, args.profile),
        "W1J": lambda tmp: bench_w1j(tmp, args.reps, args.profile),
        "W2": lambda tmp: bench_w2(tmp, args.reps, args.profile),
        "W0": lambda _tmp: bench_w0(args.help_runs),
    }
    global _pycache
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as name:
        _pycache = Path(name) / "pycache"
        for workload in ("W1", "W1J", "W2", "W0"):
            if workload in selected:
                print(f"{workload} ...", file=sys.stderr, flush=True)
                results[workload] = jobs[workload](Path(name))

    rows = table(results)
    results["table"] = rows
    if "W0" in results:
        print("\nW0: python -X importtime -c 'import proctor.cli' - top 8 by cumulative time")
        for module, self_us, cumulative in results["W0"]["importtime_top8"]:
            print(f"  {cumulative / 1000:8.1f} ms cumulative  {self_us / 1000:7.1f} ms self  {module}")
    for workload in ("W1", "W1J", "W2"):
        if workload in results and results[workload]["profile"]:
            title = f"{workload} (cold)" if workload == "W1J" else workload
            _print_profile(f"{title} under cProfile", results[workload]["profile"])
        if workload in results and results[workload].get("profile_warm"):
            _print_profile(f"{workload} (warm) under cProfile", results[workload]["profile_warm"])
    print(f"\nProctor benchmark ({results['machine']['cpus']} CPUs, Python {results['machine']['python']}):")
    _print_table(rows)
    if args.markdown:
        print("\n| Figure | Median | Min | Target | Met |\n| --- | --- | --- | --- | --- |")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
