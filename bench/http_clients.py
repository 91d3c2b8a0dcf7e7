"""Client CPU per HTTP request against the number of connections, for the HTTP clients Proctor could use.

Issue 22 asks for an HTTP client whose per-request CPU is flat in the number of connections. This
measures, in one process and interleaved (so the machine's load hits every client alike):

- `httpx`: one `httpx.AsyncClient` with `Limits(max_connections=N)` (httpcore's pool);
- `httpx-pools8`: N connections spread over `httpx` clients of at most 8 (Proctor's old model client);
- `httpx2`: pydantic's httpx fork (`httpcore2`'s O(N+M) pool pass), if installed;
- `httpx+aiohttp`: an `httpx.AsyncClient` over the `httpx-aiohttp` transport (aiohttp's pool);
- `aiohttp`: a plain `aiohttp.ClientSession` with `TCPConnector(limit=N)`;
- `pyreqwest`: `pyreqwest.client.Client` with `max_connections(N)` (Rust reqwest/hyper on a Tokio runtime
  thread), if installed;
- `rnet`: `rnet.Client(pool_max_size=N)` (Rust, a fork of reqwest), if installed; it has no limit on the
  connections in use, so only the N tasks bound them;
- `proctor`: `proctor._http.HttpClient(max_connections=N)`, what targets and model providers use (aiohttp's
  pool plus Proctor's error mapping, proxies from the environment, JSON encoding);
- `proctor-pyreqwest`: `pyreqwest_client.ReqwestClient`, the same API on pyreqwest (a probe, not adopted).

Each sends the same `/chat/completions` POST (a JSON body of ~600 bytes) from N concurrent tasks to a
loopback OpenAI-compatible server in another process (`bench/peers/mock_llm.py`, started here) and
reads and decodes the JSON answer. CPU is this process's `time.process_time()` over the requests (every
thread), and the event loop thread's `time.thread_time()`, so the server's work is not counted.

    .venv/bin/python bench/http_clients.py --connections 1 4 16 64 --requests 800 --reps 3

pyreqwest and rnet are no dependencies of Proctor: `.venv/bin/pip install pyreqwest rnet` to measure them
(issue 22, fourth session of 2026-11-29: `--connections 1 4 16 32 --requests 800 --reps 5`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BODY = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You grade answers. Reply with JSON: {pass, score, reason}."},
        {"role": "user", "content": "Question: what is 2 plus 1?\nAnswer: 3\nRubric: " + "correct and concise. " * 12},
    ],
    "temperature": 0,
}

Send = Callable[[], Awaitable[Any]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def httpx_factory(url: str, connections: int, pools: int = 1, module: str = "httpx") -> tuple[Send, Any]:
    httpx: Any = __import__(module)
    per = -(-connections // pools)
    limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
    clients = [httpx.AsyncClient(limits=limits) for _ in range(pools)]
    turn = [0]

    async def send() -> Any:
        turn[0] = (turn[0] + 1) % pools
        response = await clients[turn[0]].post(url, json=BODY, timeout=30.0)
        return json.loads(response.content)

    async def close() -> None:
        for client in clients:
            await client.aclose()

    return send, close


async def httpx_aiohttp_factory(url: str, connections: int) -> tuple[Send, Any]:
    import httpx
    from httpx_aiohttp import AiohttpTransport

    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    client = httpx.AsyncClient(transport=AiohttpTransport(limits=limits))

    async def send() -> Any:
        response = await client.post(url, json=BODY, timeout=30.0)
        return json.loads(response.content)

    return send, client.aclose


async def aiohttp_factory(url: str, connections: int) -> tuple[Send, Any]:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections, limit_per_host=connections))
    timeout = aiohttp.ClientTimeout(total=30.0)
    headers = {"Content-Type": "application/json"}

    async def send() -> Any:
        data = json.dumps(BODY).encode()
        async with session.post(url, data=data, headers=headers, timeout=timeout) as response:
            return json.loads(await response.read())

    return send, session.close


async def pyreqwest_factory(url: str, connections: int) -> tuple[Send, Any]:
    from pyreqwest.client import ClientBuilder

    client = ClientBuilder().max_connections(connections).timeout(timedelta(seconds=30)).build()
    headers = {"Content-Type": "application/json"}

    async def send() -> Any:
        data = json.dumps(BODY).encode()
        response = await client.post(url).headers(headers).body_bytes(data).build().send()
        return json.loads(bytes(await response.bytes()))

    return send, client.close


async def rnet_factory(url: str, connections: int) -> tuple[Send, Any]:
    import rnet

    # rnet has no limit on connections in use (`pool_max_size` bounds the idle ones); the N tasks are the limit
    client = rnet.Client(pool_max_size=connections, timeout=30)
    headers = {"Content-Type": "application/json"}

    async def send() -> Any:
        data = json.dumps(BODY).encode()
        response = await client.post(url, headers=headers, body=data)
        try:
            return json.loads(await response.bytes())
        finally:
            await response.close()

    async def close() -> None:
        return None

    return send, close


async def proctor_factory(url: str, connections: int) -> tuple[Send, Any]:
    from proctor._http import HttpClient

    client = HttpClient(max_connections=connections)

    async def send() -> Any:
        response = await client.request("POST", url, json_body=BODY, request_timeout=30.0)
        return json.loads(response.content)

    return send, client.aclose


async def proctor_pyreqwest_factory(url: str, connections: int) -> tuple[Send, Any]:
    sys.path.insert(0, str(HERE))
    from pyreqwest_client import ReqwestClient

    client = ReqwestClient(max_connections=connections)

    async def send() -> Any:
        response = await client.request("POST", url, json_body=BODY, request_timeout=30.0)
        return json.loads(response.content)

    return send, client.aclose


CLIENTS: dict[str, Callable[[str, int], Awaitable[tuple[Send, Any]]]] = {
    "httpx": lambda url, n: httpx_factory(url, n),
    "httpx-pools8": lambda url, n: httpx_factory(url, n, pools=max(1, -(-n // 8))),
    "httpx2": lambda url, n: httpx_factory(url, n, module="httpx2"),
    "httpx+aiohttp": httpx_aiohttp_factory,
    "aiohttp": aiohttp_factory,
    "pyreqwest": pyreqwest_factory,
    "rnet": rnet_factory,
    "proctor": proctor_factory,
    "proctor-pyreqwest": proctor_pyreqwest_factory,
}


async def measure(kind: str, url: str, connections: int, requests: int) -> tuple[float, float]:
    """Client CPU in µs per request (the whole process; the event loop's thread alone), after one warm-up round.

    The two differ for clients that work on threads of their own (pyreqwest's and rnet's Tokio runtimes):
    the process figure is what the 2-core machine pays, the loop thread's what holds up the event loop.
    """
    send, close = await CLIENTS[kind](url, connections)
    try:
        await asyncio.gather(*(send() for _ in range(connections)))  # open every connection
        per_task = max(1, requests // connections)

        async def worker() -> None:
            for _ in range(per_task):
                await send()

        started, started_thread = time.process_time(), time.thread_time()
        await asyncio.gather(*(worker() for _ in range(connections)))
        spent, spent_thread = time.process_time() - started, time.thread_time() - started_thread
    finally:
        await close()
    total = per_task * connections
    return spent / total * 1e6, spent_thread / total * 1e6


MODULES = {
    "httpx2": "httpx2",
    "httpx+aiohttp": "httpx_aiohttp",
    "aiohttp": "aiohttp",
    "pyreqwest": "pyreqwest",
    "rnet": "rnet",
    "proctor": "proctor._http",
    "proctor-pyreqwest": "pyreqwest",
}


def available(kinds: list[str]) -> list[str]:
    found = []
    for kind in kinds:
        module = MODULES.get(kind, "httpx")
        try:
            __import__(module)
        except ImportError:
            print(f"skipping {kind}: {module} is not installed", file=sys.stderr)
            continue
        found.append(kind)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--requests", type=int, default=800, help="requests per measurement")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, default=20, help="the server's latency per request")
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS))
    parser.add_argument("--server-python", default=os.environ.get("MOCK_PYTHON", sys.executable))
    args = parser.parse_args()
    kinds = available(args.clients)
    port = free_port()
    mock = [str(HERE / "peers" / "mock_llm.py"), "--port", str(port), "--latency-ms", str(args.latency_ms)]
    server = subprocess.Popen(
        [args.server_python, *mock],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        results: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for _ in range(args.reps):
            for connections in args.connections:
                for kind in kinds:
                    value = asyncio.run(measure(kind, url, connections, args.requests))
                    results.setdefault((kind, connections), []).append(value)
    finally:
        server.terminate()
        server.wait()
    for index, what in enumerate(("the whole process", "the event loop's thread alone")):
        print(f"client CPU per request, {what}, µs: median (min-max) of {args.reps}; latency {args.latency_ms} ms")
        print("client".ljust(18) + "".join(f"{f'N={n}':>16}" for n in args.connections))
        for kind in kinds:
            cells = []
            for connections in args.connections:
                values = [sample[index] for sample in results[(kind, connections)]]
                cells.append(f"{statistics.median(values):6.0f} ({min(values):.0f}-{max(values):.0f})".rjust(16))
            print(kind.ljust(18) + "".join(cells))


if __name__ == "__main__":
    main()
