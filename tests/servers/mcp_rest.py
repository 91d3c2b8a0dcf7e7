"""A REST agent and an OpenAI-compatible agent that take their tools over MCP from the URL Proctor gives.

- `POST /chat` `{"message", "tools_url"}` -> `{"reply"}` (the `http` target renders `{{ tools_url }}`)
- `POST /v1/chat/completions` (the `openai` target) reads the `X-Proctor-Tools-Url` header.

Both use `helpers.mcp_agents.desk` and report no tool calls.
"""

from __future__ import annotations

import time

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from helpers.mcp_agents import desk


def build_app() -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        reply = await desk([{"role": "user", "content": body["message"]}], tools_url=body.get("tools_url"))
        return JSONResponse({"reply": reply})

    async def completions(request: Request) -> Response:
        body = await request.json()
        reply = await desk(body["messages"], tools_url=request.headers.get("x-proctor-tools-url"))
        message = {"role": "assistant", "content": reply}
        return JSONResponse(
            {
                "id": "x",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or "desk",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )

    return Starlette(
        routes=[Route("/chat", chat, methods=["POST"]), Route("/v1/chat/completions", completions, methods=["POST"])]
    )
