"""The demo agent over Embabel's chat protocol (what the `embabel` target speaks).

`POST /api/v1/chat/sessions {user, chatbot}` -> `{sessionId}`; `POST /api/v1/chat/messages {sessionId,
message: {role, content}, model}` -> `{sessionId, chatbot, message, history, events}` where every tool
call is a `function_call` event followed by its `function_response`; `GET
/api/v1/chat/objectContexts/{sessionId}` -> what the agent really did. Sessions are the demo's REST
sessions, so the reminders it creates land in the same graph and object context.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor.demo._http import read_json

if TYPE_CHECKING:
    from proctor.demo._server import DemoServer

__all__ = ["EmbabelChat"]


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


class EmbabelChat:
    """Embabel's chat endpoints around a `DemoServer`'s agent and sessions."""

    def __init__(self, server: DemoServer) -> None:
        self.server = server

    def routes(self) -> list[Route]:
        """The three Embabel routes under `/api/v1/chat`."""
        return [
            Route("/api/v1/chat/sessions", self.open_session, methods=["POST"]),
            Route("/api/v1/chat/messages", self.post_message, methods=["POST"]),
            Route("/api/v1/chat/objectContexts/{session_id}", self.object_context, methods=["GET"]),
        ]

    async def open_session(self, request: Request) -> Response:
        """Create a session for `user` (the `chatbot` is recorded)."""
        from proctor.demo._graph import GraphSink
        from proctor.demo._server import _RestSession

        body = await read_json(request)
        if body is None:
            return _error("the request body must be a JSON object", 400)
        user = body.get("user")
        session = _RestSession(
            uuid.uuid4().hex, user if isinstance(user, str) else None, sink=GraphSink.from_body(body)
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
        events: list[dict[str, Any]] = []
        for index, call in enumerate(reply.tool_calls):
            call_id = f"call_{index}"
            events.append({"type": "function_call", "id": call_id, "name": call.name, "arguments": call.arguments})
            events.append({"type": "function_response", "id": call_id, "name": call.name, "result": call.result})
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
        return JSONResponse(session.sink.object_context())
