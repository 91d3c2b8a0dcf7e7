"""A fake Lobu gateway: sessions, messages and an SSE event stream with a replayed backlog.

What a message's content selects (see `_script`): `fail` -> an `error` event; `hang` -> no `complete`;
`tool` -> a `tool_call` event first; `usage` -> `complete` carries usage; `hangup` -> the stream ends
without `complete`. Every reply interleaves events of another message id, which must be ignored.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

ADMIN_TOKEN = "admin-secret"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@dataclass
class GatewaySession:
    token: str
    body: dict[str, Any]
    events: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    contents: list[str] = field(default_factory=list)
    deleted: bool = False
    streams: int = 0


@dataclass
class LobuGateway:
    base_url: str = ""
    sessions: dict[str, GatewaySession] = field(default_factory=dict)
    creates: list[dict[str, Any]] = field(default_factory=list)
    create_auth: list[str | None] = field(default_factory=list)
    create_graphs: list[str | None] = field(default_factory=list)
    """The `X-Proctor-Graph-Uri` header of each agent creation."""
    deletes: list[str] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


def _script(content: str, message_id: str) -> list[tuple[str, dict[str, Any] | None]]:
    def ev(name: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return name, {"messageId": message_id, "timestamp": time.time(), **data}

    other = ("output", {"type": "delta", "content": "IGNORE ME", "messageId": "other-message"})
    events: list[tuple[str, dict[str, Any] | None]] = []
    if "tool" in content:
        events.append(ev("tool_call", toolName="search", args={"q": "policy"}, toolCallId="t1"))
    if "fail" in content:
        return [*events, ev("output", type="delta", content="partial"), ev("error", error="model overloaded")]
    reply = f"echo: {content}"
    third = max(1, len(reply) // 3)
    chunks = [reply[:third], reply[third : 2 * third], reply[2 * third :]]
    events += [
        ev("status", type="status", status="thinking"),
        ev("output", type="delta", content=chunks[0]),
        other,
        ev("output", type="delta", content=chunks[1]),
        ("ping", {"timestamp": time.time()}),
        ev("output", type="delta", content=chunks[2]),
        ("complete", {"type": "complete", "messageId": "other-message"}),
    ]
    if "hangup" in content:
        return [*events, ("__end__", None)]
    if "hang" in content:
        return events
    complete: dict[str, Any] = {"type": "complete", "processedMessageIds": [message_id]}
    if "usage" in content:
        complete["usage"] = {"input_tokens": 11, "output_tokens": 5}
    return [*events, ev("complete", **complete)]


def build_app(gateway: LobuGateway) -> Starlette:
    def session_of(request: Request) -> GatewaySession | Response:
        sid = request.path_params["sid"]
        session = gateway.sessions.get(sid)
        if session is None or session.deleted:
            return PlainTextResponse(f"no session {sid}", status_code=404)
        if request.headers.get("authorization") != f"Bearer {session.token}":
            return PlainTextResponse("bad session token", status_code=401)
        return session

    async def create(request: Request) -> Response:
        gateway.create_auth.append(request.headers.get("authorization"))
        gateway.create_graphs.append(request.headers.get("x-proctor-graph-uri"))
        if request.headers.get("authorization") != f"Bearer {ADMIN_TOKEN}":
            return JSONResponse({"success": False, "error": "Unauthorized"}, status_code=401)
        body = await request.json()
        gateway.creates.append(body)
        if body.get("provider") and body["provider"] != "claude":
            return JSONResponse({"success": False, "error": "Invalid provider. Supported: claude"}, 400)
        agent = body.get("agentId", "ephemeral")
        sid = f"{agent}_{agent}_{body['thread']}" if body.get("thread") else f"{agent}_{agent}"
        token = f"tok-{uuid.uuid4().hex}"
        gateway.sessions[sid] = GatewaySession(token=token, body=body)
        base = f"/api/v1/agents/{sid}"
        return JSONResponse(
            {"success": True, "agentId": sid, "token": token, "sseUrl": f"{base}/events"}, status_code=201
        )

    async def emit(session: GatewaySession, events: list[tuple[str, dict[str, Any] | None]]) -> None:
        for event in events:
            await asyncio.sleep(0.005)
            session.events.append(event)

    async def post_message(request: Request) -> Response:
        session = session_of(request)
        if isinstance(session, Response):
            return session
        content = (await request.json())["content"]
        session.contents.append(content)
        message_id = uuid.uuid4().hex
        task = asyncio.create_task(emit(session, _script(content, message_id)))
        gateway.tasks.add(task)
        task.add_done_callback(gateway.tasks.discard)
        return JSONResponse(
            {
                "success": True,
                "messageId": message_id,
                "jobId": "job-1",
                "queued": True,
                "traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01",
            }
        )

    async def events(request: Request) -> Response:
        session = session_of(request)
        if isinstance(session, Response):
            return session
        session.streams += 1
        sid = request.path_params["sid"]

        async def stream() -> AsyncIterator[str]:
            yield f"event: connected\ndata: {json.dumps({'agentId': sid})}\n\n"
            index = 0
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                while index < len(session.events):
                    name, data = session.events[index]
                    index += 1
                    if name == "__end__":
                        return
                    yield f"event: {name}\ndata: {json.dumps(data)}\n\n"
                if session.deleted:
                    yield 'event: closed\ndata: {"reason": "agent_deleted"}\n\n'
                    return
                await asyncio.sleep(0.005)

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def delete(request: Request) -> Response:
        session = session_of(request)
        if isinstance(session, Response):
            return session
        session.deleted = True
        gateway.deletes.append(request.path_params["sid"])
        return JSONResponse({"success": True, "message": "Agent deleted"})

    return Starlette(
        routes=[
            Route("/api/v1/agents", create, methods=["POST"]),
            Route("/api/v1/agents/{sid}/messages", post_message, methods=["POST"]),
            Route("/api/v1/agents/{sid}/events", events, methods=["GET"]),
            Route("/api/v1/agents/{sid}", delete, methods=["DELETE"]),
        ]
    )
