"""W1's floors: the same 400 requests at concurrency 16 without Proctor, to calibrate its figures.

- `raw`: hand-written HTTP/1.1 over asyncio streams, 16 keep-alive connections (server + loopback cost).
- `httpx`: a bare `httpx.AsyncClient` with the pool Proctor uses (16 connections), posting the same body
  and decoding the JSON reply (the HTTP client's own cost, as installed in this environment).

Usage: `python bench/floor.py BASE_URL` (e.g. `http://127.0.0.1:8123/v1`); prints one JSON object with
the wall time (s) and CPU time (s) of each.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

import httpx

REQUESTS = 400
CONCURRENCY = 16
_MESSAGES = [{"role": "user", "content": "Question number 1: what is the answer?"}]
_BODY = json.dumps({"model": "bench", "messages": _MESSAGES}).encode()


async def raw(base_url: str) -> None:
    """400 requests over 16 plain keep-alive connections."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    head = (
        f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(_BODY)}\r\n\r\n"
    ).encode()
    work = iter(range(REQUESTS))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        for _ in work:
            writer.write(head + _BODY)
            await writer.drain()
            headers = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in headers.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            json.loads(await reader.readexactly(length))
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


def _timed(client: Callable[[str], Coroutine[Any, Any, None]], base_url: str) -> dict[str, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(client(base_url))
    return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}


def main() -> None:
    """Time both floors once each and print the JSON figures."""
    base_url = sys.argv[1].rstrip("/")
    json.dump({"raw": _timed(raw, base_url), "httpx": _timed(bare_httpx, base_url)}, sys.stdout)


if __name__ == "__main__":
    main()
