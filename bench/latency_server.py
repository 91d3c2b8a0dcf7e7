"""A minimal OpenAI-compatible chat server that answers every request after a fixed delay.

`POST /v1/chat/completions` sleeps `--latency` seconds (default 0.1) and returns a fixed
`chat.completion` object, so a client's wall time and CPU cost can be compared with the ideal.

Run: `python bench/latency_server.py --port 8123 [--latency 0.1]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

REPLY_TEXT = "The answer is 42."
"""The assistant message every request gets."""

_BODY = (
    b'{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"bench",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"' + REPLY_TEXT.encode() + b'"},'
    b'"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}'
)


def build_app(latency: float) -> Starlette:
    """The app: one route that waits `latency` seconds, then answers with the fixed completion."""

    async def chat_completions(request: Request) -> Response:
        await request.body()  # read the request as a real server would
        await asyncio.sleep(latency)
        return Response(_BODY, media_type="application/json")

    async def health(_request: Request) -> Response:
        return Response(b"ok", media_type="text/plain")

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


def main() -> None:
    """Serve on 127.0.0.1 until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=float(os.environ.get("BENCH_LATENCY", "0.1")))
    args = parser.parse_args()
    uvicorn.run(
        build_app(args.latency),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )


if __name__ == "__main__":
    main()
