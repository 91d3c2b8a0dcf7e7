"""The demo agent over Embabel's chat protocol, as Embabel's client (`AgentChatClient`) speaks it.

`PUT /api/v1/chat/sessions {user, chatbot}` -> `{sessionId}`; `PUT /api/v1/chat/messages {sessionId,
message: {role, content}, model}` -> `{sessionId, chatbot, message, history, events}` with Embabel's
untyped events: `{systemPrompt}` first, then per tool call `{request: {function: {name}, arguments,
context}}` followed by `{output}`; `GET /api/v1/chat/objectContexts/{sessionId}` -> what the agent really
did (`{context, resources, entities, functions}`). The demo asks for no `X-API-KEY`. A session is told
where to write its reminders by the `X-Proctor-Graph-Uri`/`-Name`/`-Label` headers Proctor sends (or the
same fields, `graph_uri`, ..., in the body). Sessions are the demo's REST sessions, so the reminders it
creates land in the same graph and object context.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor.demo._agent import Turn
from proctor.demo._graph import GraphSink
from proctor.demo._http import RestSession, read_json
from proctor.targets._graph import GRAPH_HEADERS

if TYPE_CHECKING:
    from proctor.demo._server import DemoServer

__all__ = ["SYSTEM_PROMPT", "EmbabelChat"]

SYSTEM_PROMPT = "You are the demo HR assistant: directory look-ups, time off and reminders."
"""The system prompt the demo reports as its first event, as an Embabel agent does."""
TOOLS = tuple(sorted(name.removeprefix("_tool_") for name in vars(Turn) if name.startswith("_tool_")))
"""The agent's functions, as its object context lists them."""


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


class EmbabelChat:
    """Embabel's chat endpoints around a `DemoServer`'s agent and sessions."""

    def __init__(self, server: DemoServer) -> None:
        self.server = server

    def routes(self) -> list[Route]:
        """The three Embabel routes under `/api/v1/chat`."""
        return [
            Route("/api/v1/chat/sessions", self.open_session, methods=["PUT"]),
            Route("/api/v1/chat/messages", self.post_message, methods=["PUT"]),
            Route("/api/v1/chat/objectContexts/{session_id}", self.object_context, methods=["GET"]),
        ]

    async def open_session(self, request: Request) -> Response:
        """Create a session for `user` (the `chatbot` is recorded)."""
        body = await read_json(request)
        if body is None:
            return _error("the request body must be a JSON object", 400)
        user = body.get("user")
        told = {key: request.headers[header] for key, header in GRAPH_HEADERS.items() if header in request.headers}
        session = RestSession(
            uuid.uuid4().hex, user if isinstance(user, str) else None, sink=GraphSink.from_body({**body, **told})
        )
        self.server.sessions[session.id] = session
        return JSONResponse({"sessionId": session.id, "chatbot": body.get("chatbot")}, 201)

    async def post_message(self, request: Request) -> Response:
        """Answer one user message; tool calls are reported as function-call events."""
        body = await read_json(request)
        message = body.get("message") if body is not None else None
        if body is None or not isinstance(message, dict) or not isinstance(message.get("content"), str):
            return _error("the body must be {sessionId, message: {role, content}}", 400)
        session = self.server.sessions.get(str(body.get("sessionId")))
        if session is None:
            return _error(f"unknown session {body.get('sessionId')!r}", 404)
        async with session.lock:
            await self.server.delay()
            session.history.append({"role": "user", "content": message["content"]})
            reply = self.server.agent.respond(session.history, user=session.user)
            session.history.append({"role": "assistant", "content": reply.text})
            if reply.tool_calls:
                await anyio.to_thread.run_sync(session.sink.apply, session.user, reply.tool_calls)
        events: list[dict[str, Any]] = [{"systemPrompt": SYSTEM_PROMPT}]
        for call in reply.tool_calls:
            request_ = {"function": {"name": call.name}, "arguments": call.arguments, "context": session.user or ""}
            events.append({"request": request_})
            events.append({"output": json.dumps(call.result, default=str)})
        return JSONResponse(
            {
                "sessionId": session.id,
                "chatbot": body.get("chatbot"),
                "message": {"role": "assistant", "content": reply.text},
                "history": list(session.history),
                "events": events,
            }
        )

    async def object_context(self, request: Request) -> Response:
        """The session's object context (`resources`, `entities`)."""
        session = self.server.sessions.get(request.path_params["session_id"])
        if session is None:
            return _error(f"unknown session {request.path_params['session_id']!r}", 404)
        functions = [{"name": name, "description": name, "label": None, "inputTypeSchema": "{}"} for name in TOOLS]
        return JSONResponse({"context": session.user or "", **session.sink.object_context(), "functions": functions})
