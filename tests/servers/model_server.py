"""A scripted OpenAI-compatible model server for the `proctor.models` tests.

Each test takes its own script (`server.script(Reply(...), ...)`), which has its own base URL
(`/m/<token>/v1`), queue of replies, recorded requests and in-flight counters. When the queue is empty
the script's `default` reply is used.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

DEFAULT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20}


@dataclass
class Reply:
    """One scripted answer."""

    content: str = "ok"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: dict[str, int] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    choices: list[str] | None = None
    logprobs: list[list[tuple[str, float]]] | None = None
    """Per token: the chosen token first, then alternatives (sent as `top_logprobs`)."""
    body: Any = None
    """Sent as it is (JSON, or text when a `str`) instead of a completion."""
    finish_reason: str | None = "stop"
    """The first choice's `finish_reason` (`length` when the answer hit `max_tokens`)."""


@dataclass
class Recorded:
    body: Any
    headers: dict[str, str]
    at: float


@dataclass
class Script:
    token: str
    base_url: str
    replies: deque[Reply]
    default: Reply
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def bodies(self) -> list[Any]:
        return [request.body for request in self.requests]


def completion(reply: Reply) -> dict[str, Any]:
    texts = reply.choices or [reply.content]
    choices: list[dict[str, Any]] = []
    for index, text in enumerate(texts):
        choice: dict[str, Any] = {
            "index": index,
            "message": {"role": "assistant", "content": text},
            "finish_reason": reply.finish_reason if index == 0 else "stop",
        }
        if reply.logprobs is not None and index == 0:
            choice["logprobs"] = {
                "content": [
                    {
                        "token": step[0][0],
                        "logprob": step[0][1],
                        "top_logprobs": [{"token": t, "logprob": p} for t, p in step],
                    }
                    for step in reply.logprobs
                ]
            }
        choices.append(choice)
    body: dict[str, Any] = {"id": "chatcmpl-test", "object": "chat.completion", "model": "served", "choices": choices}
    if reply.usage is not None:
        body["usage"] = {**reply.usage, "total_tokens": sum(reply.usage.values())}
    return body


class ModelServer:
    def __init__(self) -> None:
        self.base_url = ""
        self.scripts: dict[str, Script] = {}

    def script(self, *replies: Reply, default: Reply | None = None) -> Script:
        token = uuid.uuid4().hex
        script = Script(token, f"{self.base_url}/m/{token}/v1", deque(replies), default or Reply())
        self.scripts[token] = script
        return script

    def app(self) -> Starlette:
        async def chat(request: Request) -> Response:
            script = self.scripts[request.path_params["token"]]
            try:
                body = await request.json()
            except ValueError:
                body = None
            script.requests.append(Recorded(body, dict(request.headers), time.monotonic()))
            reply = script.replies.popleft() if script.replies else script.default
            script.in_flight += 1
            script.max_in_flight = max(script.max_in_flight, script.in_flight)
            try:
                if reply.delay:
                    await asyncio.sleep(reply.delay)
            finally:
                script.in_flight -= 1
            if reply.body is not None:
                if isinstance(reply.body, str):
                    return PlainTextResponse(reply.body, status_code=reply.status, headers=reply.headers)
                return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)
            if reply.status != 200:
                error = {"error": {"message": reply.content, "type": "test"}}
                return JSONResponse(error, status_code=reply.status, headers=reply.headers)
            return JSONResponse(completion(reply), headers=reply.headers)

        return Starlette(routes=[Route("/m/{token}/v1/chat/completions", chat, methods=["POST"])])
