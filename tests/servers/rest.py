"""A REST agent with sessions, for the `http` target.

- `POST /sessions` (needs `X-Api-Key: k-123`) -> `{"data": {"session": {"id": "s<n>"}}}`
- `POST /sessions/{sid}/messages` `{"text", ...}` -> `{"output": {"text"}, "calls", "usage", "trace"}`
- `DELETE /sessions/{sid}` -> 204 (500 when `fail_close` is set)
- `POST /chat` (stateless) `{"messages": [...]}` -> `{"reply", "usage"}`
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


@dataclass
class RestServer:
    base_url: str = ""
    opens: list[dict[str, Any]] = field(default_factory=list)
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    message_headers: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    closes: list[str] = field(default_factory=list)
    chats: list[dict[str, Any]] = field(default_factory=list)
    fail_close: set[str] = field(default_factory=set)


def build_app(server: RestServer) -> Starlette:
    ids = itertools.count(1)

    async def open_session(request: Request) -> Response:
        if request.headers.get("x-api-key") != "k-123":
            return PlainTextResponse("bad api key", status_code=401)
        body = await request.json()
        sid = f"s{next(ids)}"
        server.opens.append({"id": sid, "body": body})
        server.messages[sid] = []
        server.message_headers[sid] = []
        return JSONResponse({"data": {"session": {"id": sid}}}, status_code=201)

    async def post_message(request: Request) -> Response:
        sid = request.path_params["sid"]
        if sid not in server.messages:
            return PlainTextResponse(f"no session {sid}", status_code=404)
        body = await request.json()
        server.messages[sid].append(body)
        server.message_headers[sid].append(dict(request.headers))
        turn = len(server.messages[sid]) - 1
        text = body["text"]
        return JSONResponse(
            {
                "output": {"text": f"[{sid}] turn {turn}: {text}"},
                "calls": [
                    {"tool_name": "lookup", "parameters": {"q": text}},
                    {"id": "c2", "function": {"name": "notify", "arguments": '{"to": "hr"}'}},
                ],
                "usage": {"input_tokens": len(text), "output_tokens": 7},
                "trace": f"trace-{sid}-{turn}",
            }
        )

    async def close_session(request: Request) -> Response:
        sid = request.path_params["sid"]
        server.closes.append(sid)
        if sid in server.fail_close:
            return PlainTextResponse("cannot close", status_code=500)
        return Response(status_code=204)

    async def chat(request: Request) -> Response:
        body = await request.json()
        server.chats.append(body)
        messages = body["messages"]
        return JSONResponse(
            {
                "reply": f"{len(messages)} messages; last: {messages[-1]['content']}",
                "usage": {"inputTokens": 3, "outputTokens": 4},
            }
        )

    return Starlette(
        routes=[
            Route("/sessions", open_session, methods=["POST"]),
            Route("/sessions/{sid}/messages", post_message, methods=["POST"]),
            Route("/sessions/{sid}", close_session, methods=["DELETE"]),
            Route("/chat", chat, methods=["POST"]),
        ]
    )
