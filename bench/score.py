"""`proctor score` at scale: a generated 100,000-row CSV, one cheap scorer, a judge with 20 ms latency.

The judge is a minimal OpenAI-compatible server on 127.0.0.1 (plain asyncio HTTP/1.1 with keep-alive, so
its own CPU stays small beside the client's on a 2-core machine): every `POST /v1/chat/completions` is
answered after `--latency` seconds with the verdict `{"reasoning": ..., "score": 8}`.

The run is the CLI as a user types it, in a subprocess:
`proctor score DATA.csv --scorers context_relevancy --judge openai/bench --concurrency 32 --no-cache
--output OUT.jsonl --quiet`, with `OPENAI_BASE_URL` pointing at the server. Measured: wall time (vs the ideal
rows / concurrency x latency, one judge call per row), peak RSS of the `proctor` process (`wait4`), its
CPU time per row, and that the output holds every row, scored. One discarded warm-up run (64 rows, the same
command) comes first, so the measured run starts with compiled bytecode as an installed package does: the
subprocesses keep it in a `PYTHONPYCACHEPREFIX` of the run even where `PYTHONDONTWRITEBYTECODE` is set
(before 2026-11-29, third session, it was not written there, and every run compiled every module it
imported, Python's own included: 0.8-0.9 s of its wall time).

Usage: `python bench/score.py [--rows 100000] [--latency 0.02] [--concurrency 32] [--json out.json]
[--probes] [--model-client pyreqwest]` (the last: the judge's HTTP client replaced by the probe in
`pyreqwest_client.py`, measured in issue 22's fourth session of 2026-11-29 and not adopted).
Targets: peak RSS <= 300 MB; wall <= 1.2 x ideal.

`--probes` adds two calibration runs, changing nothing in Proctor:
- `floor`: the same number of requests, same body size, same concurrency, from a hand-written asyncio
  HTTP/1.1 client (32 keep-alive connections) without Proctor: what the server and loopback allow.
- `aiohttp`: the same requests from a bare aiohttp session (32 pooled connections, each reply read and
  JSON-decoded): the floor of the HTTP client Proctor's judge calls go through (issue 22, sixth session).
(The `sharded-pool` probe, which spread httpx's pool to show httpcore's per-connection bookkeeping, is
gone with httpx: model calls go through aiohttp's pool, whose CPU per request is flat in the pool size;
`bench/http_clients.py` measures that.)
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERDICT = json.dumps({"reasoning": "The response answers the task within the role.", "score": 8})
BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "bench",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
    }
).encode()
COLUMNS = ["user_id", "task_id", "turn_id", "agent_name", "agent_role", "question", "agent_response"]
COLUMNS += ["tools_available", "tool_calls", "agent_exit"]
WARM_UP_ROWS = 64
"""Rows of the unmeasured warm-up run."""
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


class _Judge(asyncio.Protocol):
    """HTTP/1.1 keep-alive: each complete request is answered `latency` seconds after it arrived."""

    latency = 0.02
    served = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.buffer = b""
        self.loop = asyncio.get_running_loop()
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            _Judge.served += 1
            self.loop.call_later(self.latency, self._reply)

    def _reply(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(RESPONSE)


def serve(port: int, latency: float) -> None:
    """Run the judge server until killed."""
    _Judge.latency = latency

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(_Judge, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


async def _floor_client(port: int, requests: int, concurrency: int, body: bytes) -> None:
    """`requests` POSTs over `concurrency` keep-alive connections, each reply read and JSON-decoded."""
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    work = iter(range(requests))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in work:
            writer.write(head + body)
            await writer.drain()
            headers = await reader.readuntil(b"\r\n\r\n")
            length = next(int(h[15:]) for h in headers.split(b"\r\n") if h[:15].lower() == b"content-length:")
            json.loads(await reader.readexactly(length))
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def _aiohttp_client(port: int, requests: int, concurrency: int, body: bytes) -> None:
    """The same requests from a bare aiohttp session (`concurrency` pooled connections), no framework.

    The floor of the HTTP client Proctor sends its judge calls through: what `aiohttp` itself costs over the
    hand-written client above.
    """
    import aiohttp

    work = iter(range(requests))
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    headers = {"Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as session:

        async def worker() -> None:
            for _ in work:
                async with session.post(url, data=body, headers=headers) as response:
                    json.loads(await response.read())

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def generate(path: Path, rows: int) -> None:
    """Write `rows` AgentData records (a realistic width: ~600 bytes each, JSON tool fields)."""
    tools = json.dumps([{"name": "kb_search", "description": "Search the help-centre articles."}])
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i in range(rows):
            call = json.dumps([{"tool_name": "kb_search", "parameters": {"q": f"password {i}"}, "call_id": f"c{i}"}])
            writer.writerow(
                [
                    f"user-{i % 997}",
                    f"task-{i % 5000}",
                    str(i % 7),
                    f"agent-{i % 5}",
                    "Customer-support agent for Acme's web app; never shares other customers' data.",
                    f"How do I reset my password? My account number is {100000 + i}.",
                    "Open Settings, choose Security, then Reset password; a link is e-mailed to you within a minute.",
                    tools,
                    call,
                    "true",
                ]
            )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_ready(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the judge server did not start")


def run(
    rows: int, latency: float, concurrency: int, variant: str = "plain", model_client: str = "aiohttp"
) -> dict[str, Any]:
    """Generate, serve, score (`plain`) or just send (`floor`), check; return the figures."""
    with tempfile.TemporaryDirectory(prefix="proctor-score-bench-") as tmp:
        work = Path(tmp)
        data, output = work / "runs.csv", work / "scores.jsonl"
        started = time.perf_counter()
        generate(data, rows)
        generated = time.perf_counter() - started
        generate(work / "warm-up.csv", WARM_UP_ROWS)
        port = _free_port()
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency", str(latency)])
        try:
            _wait_ready(port)
            env = {
                **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
                "OPENAI_API_KEY": "bench",
                "PYTHONPYCACHEPREFIX": str(work / "pycache"),
            }
            if variant in PROBES:
                return _probe(variant, port, rows, latency, concurrency)
            _warm_up(_command(work / "warm-up.csv", work / "warm-up.jsonl", concurrency, model_client), env, work)
            command = _command(data, output, concurrency, model_client)
            wall_start = time.perf_counter()
            child = subprocess.Popen(command, env=env, cwd=work)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - wall_start
            child.returncode = os.waitstatus_to_exitcode(status)
        finally:
            server.terminate()
            server.wait()
        statuses: dict[str, int] = {}
        written = 0
        with output.open(encoding="utf-8") as handle:
            for line in handle:
                written += 1
                status_ = json.loads(line)["scores"]["context_relevancy"]["status"]
                statuses[status_] = statuses.get(status_, 0) + 1
        ideal = rows / concurrency * latency
        return {
            "variant": variant,
            "model_client": model_client,
            "rows": rows,
            "latency_s": latency,
            "concurrency": concurrency,
            "input_mb": round(data.stat().st_size / 1e6, 1) if data.exists() else None,
            "generate_s": round(generated, 2),
            "exit_code": child.returncode,
            "wall_s": round(wall, 2),
            "ideal_s": round(ideal, 2),
            "wall_over_ideal": round(wall / ideal, 3),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "cpu_ms_per_row": round((usage.ru_utime + usage.ru_stime) / rows * 1000, 3),
            "rows_written": written,
            "statuses": statuses,
        }


def _command(data: Path, output: Path, concurrency: int, model_client: str = "aiohttp") -> list[str]:
    """The `proctor score` command line scoring `data` into `output` (`pyreqwest`: the probe's client)."""
    proctor = [str(ROOT / ".venv/bin/proctor")]
    if model_client == "pyreqwest":
        proctor = [str(ROOT / ".venv/bin/python"), str(Path(__file__).with_name("pyreqwest_client.py"))]
    command = [*proctor, "score", str(data), "--map", "question=agent_task"]
    command += ["--scorers", "context_relevancy", "--judge", "openai/bench", "--concurrency", str(concurrency)]
    return [*command, "--no-cache", "--output", str(output), "--quiet"]


def _warm_up(command: list[str], env: dict[str, str], work: Path) -> None:
    """Run `command` once, unmeasured, to compile the bytecode the measured run then loads."""
    if subprocess.run(command, env=env, cwd=work, check=False).returncode != 0:
        raise RuntimeError("the warm-up run failed")


PROBES = {"floor": "_floor_client", "aiohttp": "_aiohttp_client"}
"""The calibration clients (`--probes`): a hand-written asyncio HTTP/1.1 client, and a bare aiohttp session."""


def _probe(variant: str, port: int, requests: int, latency: float, concurrency: int) -> dict[str, Any]:
    """A probe client (`PROBES`), in a subprocess of this Python, against the same server."""
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "x" * 2000}]}).encode()
    code = (
        "import asyncio, sys; sys.path.insert(0, sys.argv[1]); import score; "
        f"asyncio.run(score.{PROBES[variant]}({port}, {requests}, {concurrency}, {body!r}))"
    )
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent)])
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    ideal = requests / concurrency * latency
    return {
        "variant": variant,
        "rows": requests,
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal, 2),
        "wall_over_ideal": round(wall / ideal, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu_ms_per_row": round((usage.ru_utime + usage.ru_stime) / requests * 1000, 3),
    }


def main() -> None:
    """Parse the options, run once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    parser.add_argument("--probes", action="store_true", help="Also run the floor probe.")
    parser.add_argument(
        "--model-client",
        choices=["aiohttp", "pyreqwest"],
        default="aiohttp",
        help="pyreqwest: the judge's HTTP client replaced by bench/pyreqwest_client.py's probe (not Proctor's own)",
    )
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.latency)
        return
    figures = run(args.rows, args.latency, args.concurrency, model_client=args.model_client)
    figures["targets"] = {
        "peak_rss_mb <= 300": figures["peak_rss_mb"] <= 300,
        "wall_over_ideal <= 1.2": figures["wall_over_ideal"] <= 1.2,
        "every row scored": figures["rows_written"] == args.rows and figures["statuses"].get("passed") == args.rows,
    }
    if args.probes:
        figures["probes"] = [run(args.rows, args.latency, args.concurrency, probe) for probe in PROBES]
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
