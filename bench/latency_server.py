"""A minimal OpenAI-compatible chat server that answers every request after a fixed delay.

`POST /v1/chat/completions` sleeps `--latency` seconds (default 0.1) and returns a fixed
`chat.completion` object, so a client's wall time and CPU cost can be compared with the ideal.

It answers two roles. A request whose body has a `response_format` is a judge call (Proctor's judges
always ask for `json_schema` output; its agent targets never do): it sleeps `--judge-latency` seconds
(default: `--latency`) and its reply content is the verdict `{"reason": ..., "pass": true, "score": 1.0}`.
Any other request is an agent call, answered with `REPLY_TEXT`. `GET /stats` returns the requests seen
so far per role, `{"agent": N, "judge": N}`, so a benchmark can check which calls reached the server.

Run: `python bench/latency_server.py --port 8123 [--latency 0.1] [--judge-latency 0.1]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

REPLY_TEXT = "The answer is 42."
"""The assistant message every agent request gets."""
VERDICT = {"reason": "The reply gives the answer, 42.", "pass": True, "score": 1.0}
"""The verdict every judge request gets (as the reply's content, JSON-encoded)."""


def _completion(content: str, prompt_tokens: int, completion_tokens: int) -> bytes:
    """A fixed `chat.completion` body whose first choice says `content`."""
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
        separators=(",", ":"),
    ).encode()


_AGENT_BODY = _completion(REPLY_TEXT, 12, 5)
_JUDGE_BODY = _completion(json.dumps(VERDICT), 250, 20)


def build_app(latency: float, judge_latency: float | None = None) -> Starlette:
    """The app: the chat route (agent or judge, by `response_format`), `/stats` and `/health`."""
    judge_wait = latency if judge_latency is None else judge_latency
    counts = {"agent": 0, "judge": 0}

    async def chat_completions(request: Request) -> Response:
        body = await request.body()  # read the request as a real server would
        # A key in the JSON body; inside a JSON string the quotes would be escaped, so this never
        # matches message text (and it spares W1's server a JSON decode per request).
        is_judge = b'"response_format"' in body
        counts["judge" if is_judge else "agent"] += 1
        await asyncio.sleep(judge_wait if is_judge else latency)
        return Response(_JUDGE_BODY if is_judge else _AGENT_BODY, media_type="application/json")

    async def stats(_request: Request) -> Response:
        return Response(json.dumps(counts).encode(), media_type="application/json")

    async def health(_request: Request) -> Response:
        return Response(b"ok", media_type="text/plain")

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/stats", stats, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


def main() -> None:
    """Serve on 127.0.0.1 until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=float(os.environ.get("BENCH_LATENCY", "0.1")))
    parser.add_argument("--judge-latency", type=float, default=None, help="Default: --latency.")
    args = parser.parse_args()
    uvicorn.run(
        build_app(args.latency, args.judge_latency),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )


if __name__ == "__main__":
    main()
