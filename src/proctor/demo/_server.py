"""The demo agent over HTTP: an OpenAI-compatible API, a REST API with sessions, the Lobu and Embabel protocols.

Every endpoint answers from the same `HRAgent`, so a conversation gets the same replies whichever
protocol carries it. Needs the `serve` extra (Starlette, uvicorn).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from proctor.demo._agent import AGENT_NAME, HRAgent, Reply, split_chunks
from proctor.demo._embabel import EmbabelChat
from proctor.demo._graph import GraphSink
from proctor.demo._http import RestSession, read_json
from proctor.demo._lobu import LobuGateway

__all__ = ["DemoServer", "create_app"]


def _openai_error(message: str, status: int, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": None}}, status)


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


class DemoServer:
    """The HTTP endpoints around one `HRAgent`.

    Args:
        agent: The agent to serve; a fresh `HRAgent` by default.
        latency_ms: Extra delay before every reply, to make latency visible in benchmarks.
    """

    def __init__(self, agent: HRAgent | None = None, latency_ms: float = 0.0) -> None:
        self.agent = agent or HRAgent()
        self.latency_ms = latency_ms
        self.sessions: dict[str, RestSession] = {}
        self.lobu = LobuGateway(self.agent, self.delay)

    async def delay(self) -> None:
        """Sleep for the configured latency."""
        if self.latency_ms > 0:
            await anyio.sleep(self.latency_ms / 1000)

    def routes(self) -> list[Route | Mount]:
        """All routes: `/health`, `/v1/...`, `/api/sessions...` and the Lobu gateway routes."""
        lobu = self.lobu.routes()
        return [
            Route("/health", self.health, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/api/sessions", self.open_session, methods=["POST"]),
            Route("/api/sessions/{session_id}", self.get_session, methods=["GET"]),
            Route("/api/sessions/{session_id}", self.close_session, methods=["DELETE"]),
            Route("/api/sessions/{session_id}/messages", self.post_message, methods=["POST"]),
            Route("/api/sessions/{session_id}/object-context", self.object_context, methods=["GET"]),
            *EmbabelChat(self).routes(),
            *lobu,
            Mount("/lobu", routes=lobu),  # newer Lobu CLIs put the agent API under /lobu
            *self._a2a(),
        ]

    def _a2a(self) -> list[Route | Mount]:
        """The A2A protocol under `/a2a`, when the `a2a` extra is installed."""
        try:
            # Local: the A2A SDK is an optional extra; without it the demo serves everything else.
            from proctor.demo._a2a import a2a_routes
        except ImportError:
            return []
        return [Mount("/a2a", routes=a2a_routes(self.agent))]

    async def health(self, request: Request) -> Response:
        """`GET /health`."""
        return JSONResponse({"status": "ok", "agent": AGENT_NAME})

    # OpenAI-compatible.

    async def models(self, request: Request) -> Response:
        """`GET /v1/models`: the one model, `hr-assistant`."""
        model = {"id": AGENT_NAME, "object": "model", "created": 1748822400, "owned_by": "proctor-demo"}
        return JSONResponse({"object": "list", "data": [model]})

    async def chat_completions(self, request: Request) -> Response:
        """`POST /v1/chat/completions`: answer the last user message of `messages` (stateless)."""
        body = await read_json(request)
        if body is None:
            return _openai_error("the request body must be a JSON object", 400)
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return _openai_error("'messages' must be a list of message objects", 400)
        if not any(m.get("role") == "user" for m in messages):
            return _openai_error("'messages' must contain at least one user message", 400)
        await self.delay()
        user = body.get("user")
        reply = self.agent.respond(messages, user=user if isinstance(user, str) else None)
        model = str(body.get("model") or AGENT_NAME)
        completion_id = "chatcmpl-" + _digest(json.dumps(messages, sort_keys=True, default=str))[:24]
        if body.get("stream"):
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            return StreamingResponse(
                _openai_stream(reply, completion_id, model, include_usage), media_type="text/event-stream"
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = _openai_tool_calls(reply)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
                "usage": _openai_usage(reply),
                "system_fingerprint": "proctor-demo",
            }
        )

    # REST with server-side sessions.

    async def open_session(self, request: Request) -> Response:
        """`POST /api/sessions` -> `{"session_id": ...}`.

        Optional body fields: `user`; `graph_uri`, `graph_name`, `graph_label` (where the agent writes the
        reminders it creates); `forgetful: true` (claim actions without performing them).
        """
        body = await read_json(request)
        if body is None:
            return _error("the request body must be a JSON object", 400)
        user = body.get("user")
        session = RestSession(uuid.uuid4().hex, user if isinstance(user, str) else None, sink=GraphSink.from_body(body))
        self.sessions[session.id] = session
        return JSONResponse({"session_id": session.id}, 201)

    async def get_session(self, request: Request) -> Response:
        """`GET /api/sessions/{id}`: the session's messages so far."""
        session = self.sessions.get(request.path_params["session_id"])
        if session is None:
            return _error(f"unknown session {request.path_params['session_id']!r}", 404)
        return JSONResponse({"session_id": session.id, "user": session.user, "messages": session.history})

    async def close_session(self, request: Request) -> Response:
        """`DELETE /api/sessions/{id}`."""
        session = self.sessions.pop(request.path_params["session_id"], None)
        if session is None:
            return _error(f"unknown session {request.path_params['session_id']!r}", 404)
        return JSONResponse({"deleted": True, "session_id": session.id})

    async def object_context(self, request: Request) -> Response:
        """`GET /api/sessions/{id}/object-context`: what the agent really did (`resources`, `entities`)."""
        session = self.sessions.get(request.path_params["session_id"])
        if session is None:
            return _error(f"unknown session {request.path_params['session_id']!r}", 404)
        return JSONResponse(session.sink.object_context())

    async def post_message(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/messages` with `{"message": ..., "user": ...}` -> the reply."""
        session = self.sessions.get(request.path_params["session_id"])
        if session is None:
            return _error(f"unknown session {request.path_params['session_id']!r}", 404)
        body = await read_json(request)
        if body is None or not isinstance(body.get("message"), str):
            return _error("the body must be a JSON object with a string 'message'", 400)
        user = body.get("user")
        if isinstance(user, str) and user and session.user is None:
            session.user = user
        async with session.lock:
            await self.delay()
            session.history.append({"role": "user", "content": body["message"]})
            reply = self.agent.respond(session.history, user=session.user)
            session.history.append({"role": "assistant", "content": reply.text})
            if reply.tool_calls:
                await anyio.to_thread.run_sync(session.sink.apply, session.user, reply.tool_calls)
            turn = sum(1 for m in session.history if m["role"] == "user")
        return JSONResponse(
            {
                "reply": reply.text,
                "tool_calls": [
                    {"name": c.name, "arguments": c.arguments, "result": c.result} for c in reply.tool_calls
                ],
                "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
                "trace_id": _digest(f"{session.id}:{turn}")[:32],
            }
        )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _openai_tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in reply.tool_calls
    ]


def _openai_usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


async def _openai_stream(reply: Reply, completion_id: str, model: str, include_usage: bool) -> AsyncIterator[str]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else []
        payload = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(payload)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if reply.tool_calls:
        calls = [{"index": i, **call} for i, call in enumerate(_openai_tool_calls(reply))]
        yield chunk({"tool_calls": calls})
    for piece in split_chunks(reply.text):
        yield chunk({"content": piece})
    yield chunk({}, "stop")
    if include_usage:
        yield chunk({}, usage=_openai_usage(reply))
    yield "data: [DONE]\n\n"


def create_app(latency_ms: float = 0.0, agent: HRAgent | None = None) -> Starlette:
    """Build the demo's ASGI app.

    Args:
        latency_ms: Delay before every reply, in milliseconds.
        agent: The agent to serve; a fresh `HRAgent` by default.

    Returns:
        A Starlette app serving `/health`, `/v1/models`, `/v1/chat/completions`, `/api/sessions...` and
        the Lobu gateway protocol under `/api/v1/agents` (and `/lobu/api/v1/agents`).
    """
    server = DemoServer(agent, latency_ms)
    app = Starlette(routes=server.routes())
    app.state.demo = server
    return app
