"""An OpenAI-compatible chat server with scripted replies, plus misbehaving routes.

Every route takes a `token` path segment so each test gets its own script, counters and records:

- `/s/{token}/v1/chat/completions`: pops the next scripted reply (default: echo the last user message).
- `/fail/{n}/{token}/v1/...`: answers 500 the first `n` times, then a normal reply.
- `/status/{code}/{token}/v1/...`: always answers `code`.
- `/ratelimit/{seconds}/{token}/v1/...`: 429 with `Retry-After: seconds` once, then a normal reply.
- `/slow/{seconds}/{token}/v1/...`: sleeps, then replies.
- `/garbage/{token}/v1/...`: 200 with an HTML body.
- `/shape/{token}/v1/...`: 200 with JSON that has no `choices`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


@dataclass
class Recorded:
    headers: dict[str, str]
    body: Any
    at: float


@dataclass
class ChatServer:
    base_url: str = ""
    scripts: dict[str, deque[dict[str, Any]]] = field(default_factory=lambda: defaultdict(deque))
    requests: dict[str, list[Recorded]] = field(default_factory=lambda: defaultdict(list))

    def script(self, *replies: dict[str, Any]) -> str:
        """Queue replies for a new token; returns the `/v1` base URL to use."""
        token = uuid.uuid4().hex
        self.scripts[token].extend(replies)
        return f"{self.base_url}/s/{token}/v1"

    def url(self, route: str) -> tuple[str, str]:
        """Return (`/v1` base URL, token) for a misbehaving route such as `fail/2`."""
        token = uuid.uuid4().hex
        return f"{self.base_url}/{route}/{token}/v1", token

    @staticmethod
    def token_of(base_url: str) -> str:
        return base_url.rstrip("/").split("/")[-2]


def completion(reply: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content", f"you said: {last}")}
    if "tool_calls" in reply:
        message["tool_calls"] = reply["tool_calls"]
    body: dict[str, Any] = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if "id" in reply:
        body["id"] = reply["id"]
    if "usage" in reply:
        body["usage"] = reply["usage"]
    return body


def build_app(server: ChatServer) -> Starlette:
    async def record(request: Request) -> tuple[str, Any]:
        token = request.path_params["token"]
        try:
            body = await request.json()
        except ValueError:
            body = None
        server.requests[token].append(Recorded(dict(request.headers), body, time.monotonic()))
        return token, body

    def normal(token: str, body: Any) -> Response:
        queue = server.scripts[token]
        reply = queue.popleft() if queue else {}
        headers = reply.get("headers", {})
        messages = body.get("messages", []) if isinstance(body, dict) else []
        return JSONResponse(completion(reply, messages), headers=headers)

    async def scripted(request: Request) -> Response:
        return normal(*await record(request))

    async def fail(request: Request) -> Response:
        token, body = await record(request)
        if len(server.requests[token]) <= int(request.path_params["n"]):
            return PlainTextResponse("internal kaboom", status_code=500)
        return normal(token, body)

    async def status(request: Request) -> Response:
        await record(request)
        code = int(request.path_params["code"])
        return PlainTextResponse(f"status {code} " + "x" * 300, status_code=code)

    async def ratelimit(request: Request) -> Response:
        token, body = await record(request)
        if len(server.requests[token]) == 1:
            headers = {"Retry-After": request.path_params["seconds"]}
            return PlainTextResponse("slow down", status_code=429, headers=headers)
        return normal(token, body)

    async def slow(request: Request) -> Response:
        token, body = await record(request)
        await asyncio.sleep(float(request.path_params["seconds"]))
        return normal(token, body)

    async def garbage(request: Request) -> Response:
        await record(request)
        return PlainTextResponse("<html><body>Bad Gateway, but with a 200</body></html>")

    async def shape(request: Request) -> Response:
        await record(request)
        return JSONResponse({"error": {"message": "no choices here"}})

    tail = "{token}/v1/chat/completions"
    return Starlette(
        routes=[
            Route(f"/s/{tail}", scripted, methods=["POST"]),
            Route(f"/fail/{{n}}/{tail}", fail, methods=["POST"]),
            Route(f"/status/{{code}}/{tail}", status, methods=["POST"]),
            Route(f"/ratelimit/{{seconds}}/{tail}", ratelimit, methods=["POST"]),
            Route(f"/slow/{{seconds}}/{tail}", slow, methods=["POST"]),
            Route(f"/garbage/{tail}", garbage, methods=["POST"]),
            Route(f"/shape/{tail}", shape, methods=["POST"]),
        ]
    )
