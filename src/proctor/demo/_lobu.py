"""The Lobu gateway protocol, as `lobu eval` uses it, served by the demo agent.

`POST /api/v1/agents` creates a session and returns its key (as `agentId`) and a token;
`POST /api/v1/agents/{key}/messages` queues a message and returns its `messageId`; the reply arrives on
`GET /api/v1/agents/{key}/events` (server-sent events) as `output` deltas and then a `complete` event
carrying `usage` (and, as a demo extension, `tool_calls`); `DELETE /api/v1/agents/{key}` ends it.

Like the real gateway, a session keeps a backlog of its recent events (the last 100, for two minutes) and
replays them to every new stream, so a client may open the stream after posting the message. Unlike the
real gateway, authentication is not checked, any `provider` is accepted, and a `forceNew` session without
a `thread` gets a unique key so that concurrent trials never share a conversation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from proctor.demo._agent import AGENT_NAME, HRAgent, split_chunks
from proctor.demo._http import read_json

__all__ = ["BACKLOG_LIMIT", "BACKLOG_TTL_SECONDS", "LobuGateway"]

BACKLOG_LIMIT = 100
"""Events kept per session for replay (as the Lobu gateway)."""
BACKLOG_TTL_SECONDS = 120.0
"""How long an event stays replayable (as the Lobu gateway)."""
TOKEN_LIFETIME_MS = 24 * 60 * 60 * 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _Event:
    seq: int
    name: str
    data: dict[str, Any]
    at: float = field(default_factory=time.monotonic)

    def encode(self) -> str:
        return f"event: {self.name}\ndata: {json.dumps(self.data)}\n\n"


@dataclass(slots=True)
class _LobuSession:
    key: str
    token: str
    user: str | None
    history: list[dict[str, str]] = field(default_factory=list)
    events: list[_Event] = field(default_factory=list)
    seq: int = 0
    changed: anyio.Event = field(default_factory=anyio.Event)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    closed: bool = False

    def publish(self, name: str, data: dict[str, Any]) -> None:
        self.seq += 1
        self.events.append(_Event(self.seq, name, data))
        del self.events[:-BACKLOG_LIMIT]
        changed, self.changed = self.changed, anyio.Event()
        changed.set()

    def after(self, seq: int) -> list[_Event]:
        oldest = time.monotonic() - BACKLOG_TTL_SECONDS
        return [e for e in self.events if e.seq > seq and e.at >= oldest]


def _not_found(key: str) -> JSONResponse:
    return JSONResponse({"success": False, "error": f"Agent session {key!r} not found"}, 404)


class LobuGateway:
    """Lobu-protocol sessions over one `HRAgent`.

    Args:
        agent: The agent answering every session.
        delay: Awaited before each reply (the server's `--latency-ms`).
    """

    ping_seconds: float = 30.0
    """Idle time after which a `ping` event is sent on open streams."""

    def __init__(self, agent: HRAgent, delay: Callable[[], Awaitable[None]]) -> None:
        self.agent = agent
        self.delay = delay
        self.sessions: dict[str, _LobuSession] = {}

    def routes(self) -> list[Route]:
        """The gateway routes under `/api/v1/agents`."""
        return [
            Route("/api/v1/agents", self.create, methods=["POST"]),
            Route("/api/v1/agents/{key}", self.delete, methods=["DELETE"]),
            Route("/api/v1/agents/{key}/messages", self.message, methods=["POST"]),
            Route("/api/v1/agents/{key}/events", self.events, methods=["GET"]),
        ]

    async def create(self, request: Request) -> Response:
        """`POST /api/v1/agents` -> 201 `{success, agentId, token, expiresAt, sseUrl, messagesUrl}`."""
        body = await read_json(request)
        if body is None:
            return JSONResponse({"success": False, "error": "Invalid JSON body"}, 400)
        agent_id = str(body.get("agentId") or AGENT_NAME)
        user_id = str(body.get("userId") or agent_id)
        key = f"{agent_id}_{user_id}"
        if body.get("thread"):
            key += f"_{body['thread']}"
        elif body.get("forceNew"):
            key += f"_{uuid.uuid4().hex[:12]}"
        existing = self.sessions.get(key)
        if existing is not None and body.get("forceNew"):
            self._close(existing)
            existing = None
        session = existing or _LobuSession(key, uuid.uuid4().hex, body.get("userId"))
        self.sessions[key] = session
        base = request.url.path.rstrip("/")
        return JSONResponse(
            {
                "success": True,
                "agentId": key,
                "token": session.token,
                "expiresAt": _now_ms() + TOKEN_LIFETIME_MS,
                "sseUrl": f"{base}/{key}/events",
                "messagesUrl": f"{base}/{key}/messages",
            },
            201,
        )

    async def message(self, request: Request) -> Response:
        """`POST /api/v1/agents/{key}/messages` with `{"content": ...}` -> `{success, messageId, ...}`."""
        key = request.path_params["key"]
        session = self.sessions.get(key)
        if session is None:
            return _not_found(key)
        body = await read_json(request)
        content = (body or {}).get("content", (body or {}).get("message"))
        if not isinstance(content, str) or not content:
            return JSONResponse({"success": False, "error": "'content' must be a non-empty string"}, 400)
        message_id = str(uuid.uuid4())
        trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
        return JSONResponse(
            {
                "success": True,
                "messageId": message_id,
                "jobId": str(uuid.uuid4()),
                "queued": True,
                "traceparent": f"00-{trace_id}-{span_id}-01",
            },
            background=BackgroundTask(self._process, session, message_id, content),
        )

    async def events(self, request: Request) -> Response:
        """`GET /api/v1/agents/{key}/events`: `connected`, the backlog, then live events."""
        key = request.path_params["key"]
        session = self.sessions.get(key)
        if session is None:
            return _not_found(key)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(self._stream(session), media_type="text/event-stream", headers=headers)

    async def delete(self, request: Request) -> Response:
        """`DELETE /api/v1/agents/{key}`: end the session; open streams get `closed`."""
        key = request.path_params["key"]
        session = self.sessions.get(key)
        if session is None:
            return _not_found(key)
        self._close(session)
        return JSONResponse({"success": True, "message": "Agent deleted", "agentId": key})

    def _close(self, session: _LobuSession) -> None:
        session.publish("closed", {"reason": "agent_deleted"})
        session.closed = True
        self.sessions.pop(session.key, None)

    async def _process(self, session: _LobuSession, message_id: str, content: str) -> None:
        async with session.lock:
            if session.closed:
                return
            session.publish(
                "status",
                {"type": "status", "status": "thinking", "messageId": message_id, "timestamp": _now_ms()},
            )
            try:
                await self.delay()
                session.history.append({"role": "user", "content": content})
                reply = self.agent.respond(session.history, user=session.user)
                session.history.append({"role": "assistant", "content": reply.text})
            except Exception as exc:  # reported to the client, as the gateway does
                error = {"type": "error", "error": str(exc), "messageId": message_id, "timestamp": _now_ms()}
                session.publish("error", error)
                return
            for piece in split_chunks(reply.text):
                delta = {"type": "delta", "content": piece, "timestamp": _now_ms(), "messageId": message_id}
                session.publish("output", delta)
            session.publish(
                "complete",
                {
                    "type": "complete",
                    "messageId": message_id,
                    "processedMessageIds": [message_id],
                    "timestamp": _now_ms(),
                    "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
                    "tool_calls": [
                        {"name": c.name, "arguments": c.arguments, "result": c.result} for c in reply.tool_calls
                    ],
                },
            )

    async def _stream(self, session: _LobuSession) -> AsyncIterator[str]:
        yield _Event(0, "connected", {"agentId": session.key, "timestamp": _now_ms()}).encode()
        last = 0
        while True:
            changed = session.changed  # taken before reading, so no event can slip between the two
            pending = session.after(last)
            if pending:
                yield "".join(event.encode() for event in pending)  # one write: a client may leave early
                last = pending[-1].seq
                continue
            if session.closed:
                return
            with anyio.move_on_after(self.ping_seconds) as scope:
                await changed.wait()
            if scope.cancelled_caught:
                yield _Event(0, "ping", {"timestamp": _now_ms()}).encode()
