"""W1's floors: the same 400 requests at concurrency 16 without Proctor, to calibrate its figures.

- `raw`: hand-written HTTP/1.1 over asyncio streams, 16 keep-alive connections (server + loopback cost).
- `httpx`: a bare `httpx.AsyncClient` with a pool of 16 connections, posting the same body and decoding
  the JSON reply (the HTTP client Proctor used before issue 22, as installed in this environment).
- `aiohttp`: the same through a bare `aiohttp.ClientSession` (16 connections), the client Proctor's
  targets and model providers now send through (`proctor._http`).

With `--judged` (W1J's floor) each of the 16 workers sends an agent request and then a judge request (a
~1.6 KB body with a `response_format`, like Proctor's `llm-rubric` call), 400 times in all: `raw` over
two connections per worker, `httpx` and `aiohttp` through two pooled clients (agent and judge, 16
connections each).

Usage: `python bench/floor.py BASE_URL [--judged]` (e.g. `http://127.0.0.1:8123/v1`); prints one JSON
object with the wall time (s) and CPU time (s) of each.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx

REQUESTS = 400
CONCURRENCY = 16
_MESSAGES = [{"role": "user", "content": "Question number 1: what is the answer?"}]
_BODY = json.dumps({"model": "bench", "messages": _MESSAGES}).encode()
_VERDICT_SCHEMA = {
    "properties": {
        "pass": {"title": "Pass", "type": "boolean"},
        "reason": {"title": "Reason", "type": "string"},
        "score": {"maximum": 1, "minimum": 0, "title": "Score", "type": "number"},
    },
    "required": ["reason", "pass", "score"],
    "title": "RubricVerdict",
    "type": "object",
}
_JUDGE_JSON: dict[str, Any] = {
    "model": "bench-judge",
    "messages": [
        {"role": "system", "content": "You are an impartial evaluator. " * 11},
        {"role": "user", "content": "Grade the assistant's last reply against one criterion. " * 14},
    ],
    "temperature": 0.0,
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "RubricVerdict", "schema": _VERDICT_SCHEMA, "strict": False},
    },
}
"""About the size and shape of Proctor's `llm-rubric` request (its prompt text is not needed here)."""
_JUDGE_BODY = json.dumps(_JUDGE_JSON).encode()
_JSON = {"Content-Type": "application/json"}


def _head(base_url: str, body: bytes) -> tuple[str, int, bytes]:
    """Host, port and the request head of a POST of `body` to `/chat/completions`."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    head = (
        f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return host, port, head


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> Any:
    """Send one request on a keep-alive connection and decode the JSON answer."""
    writer.write(request)
    await writer.drain()
    headers = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    return json.loads(await reader.readexactly(length))


async def raw(base_url: str) -> None:
    """400 requests over 16 plain keep-alive connections."""
    host, port, head = _head(base_url, _BODY)
    work = iter(range(REQUESTS))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        for _ in work:
            await _exchange(reader, writer, head + _BODY)
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def raw_judged(base_url: str) -> None:
    """400 agent + judge request pairs; each worker has one connection for each role."""
    host, port, head = _head(base_url, _BODY)
    _, _, judge_head = _head(base_url, _JUDGE_BODY)
    work = iter(range(REQUESTS))

    async def worker() -> None:
        agent = await asyncio.open_connection(host, port)
        judge = await asyncio.open_connection(host, port)
        for _ in work:
            await _exchange(*agent, head + _BODY)
            await _exchange(*judge, judge_head + _JUDGE_BODY)
        for _, writer in (agent, judge):
            writer.close()
            await writer.wait_closed()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def bare_httpx(base_url: str) -> None:
    """400 requests through one pooled `httpx.AsyncClient`."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    work = iter(range(REQUESTS))
    async with httpx.AsyncClient(limits=limits) as client:

        async def worker() -> None:
            for _ in work:
                response = await client.post(
                    f"{base_url}/chat/completions", json={"model": "bench", "messages": _MESSAGES}
                )
                response.raise_for_status()
                json.loads(response.content)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def httpx_judged(base_url: str) -> None:
    """400 agent + judge request pairs through two pooled `httpx.AsyncClient`s (agent, judge)."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    work = iter(range(REQUESTS))
    url = f"{base_url}/chat/completions"
    async with httpx.AsyncClient(limits=limits) as agent, httpx.AsyncClient(limits=limits) as judge:

        async def worker() -> None:
            for _ in work:
                response = await agent.post(url, json={"model": "bench", "messages": _MESSAGES})
                response.raise_for_status()
                json.loads(response.content)
                response = await judge.post(url, json=_JUDGE_JSON)
                response.raise_for_status()
                json.loads(json.loads(response.content)["choices"][0]["message"]["content"])

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def bare_aiohttp(base_url: str) -> None:
    """400 requests through one pooled `aiohttp.ClientSession`."""
    work = iter(range(REQUESTS))
    connector = aiohttp.TCPConnector(limit=CONCURRENCY, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            for _ in work:
                async with session.post(f"{base_url}/chat/completions", data=_BODY, headers=_JSON) as response:
                    response.raise_for_status()
                    json.loads(await response.read())

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def aiohttp_judged(base_url: str) -> None:
    """400 agent + judge request pairs through two pooled `aiohttp.ClientSession`s (agent, judge)."""
    work = iter(range(REQUESTS))
    url = f"{base_url}/chat/completions"
    agent = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY, limit_per_host=0))
    judge = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY, limit_per_host=0))
    async with agent, judge:

        async def worker() -> None:
            for _ in work:
                async with agent.post(url, data=_BODY, headers=_JSON) as response:
                    response.raise_for_status()
                    json.loads(await response.read())
                async with judge.post(url, data=json.dumps(_JUDGE_JSON).encode(), headers=_JSON) as response:
                    response.raise_for_status()
                    json.loads(json.loads(await response.read())["choices"][0]["message"]["content"])

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


def _timed(client: Callable[[str], Coroutine[Any, Any, None]], base_url: str) -> dict[str, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(client(base_url))
    return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}


def main() -> None:
    """Time each floor once and print the JSON figures."""
    base_url = sys.argv[1].rstrip("/")
    if "--judged" in sys.argv[2:]:
        clients = {"raw": raw_judged, "httpx": httpx_judged, "aiohttp": aiohttp_judged}
    else:
        clients = {"raw": raw, "httpx": bare_httpx, "aiohttp": bare_aiohttp}
    figures = {name: _timed(client, base_url) for name, client in clients.items()}
    json.dump(figures, sys.stdout)


if __name__ == "__main__":
    main()
