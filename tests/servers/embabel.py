"""An agent that accepts only what Embabel's real client (`AgentChatClient.kt`) sends, and answers as its server.

- `PUT /api/v1/chat/sessions` with header `X-API-KEY: <api_key>` and body exactly `{user, chatbot}` ->
  `{sessionId}`. Any other method is 405 (Starlette answers it); a missing or wrong key is 401.
- `PUT /api/v1/chat/messages` with body exactly `{sessionId, message: {role: user, content}, model}`
  (`model` a string: the client's `ChatRequest.model` is non-null; the client sends no API key here) ->
  `{sessionId, chatbot, message: {role: assistant, content}, history, events}`, the events untyped as
  Embabel's `GenerationEvent`s: `{systemPrompt}`, `{request: {function: {name}, arguments, context}}`,
  `{output}`, `{content, summaryDirection}`.
- `GET /api/v1/chat/objectContexts/{sessionId}` -> `{context, resources, functions}` (Embabel's
  `ObjectContext`).

A message containing "remind" makes the agent call `createReminder` (and record a resource); "capital"
makes it call `lookup`. Every accepted request is recorded with its headers; `on_reminder` sees each
reminder created (a test writes it to the graph standing in for the agent's Neo4j).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SYSTEM_PROMPT = "You are a helpful HR assistant."


@dataclass
class EmbabelAgent:
    """What the agent saw; `api_key` is the key it demands on session creation."""

    api_key: str = "treehorn"
    base_url: str = ""
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)
    """(method, path, headers, body) of every request that got through."""
    rejected: list[tuple[str, str, int, str]] = field(default_factory=list)
    """(method, path, status, why) of every request turned away."""
    on_reminder: Callable[[dict[str, Any]], None] | None = None
    """Called with each reminder the agent creates (e.g. to write it to the agent's own graph)."""


def _problem(agent: EmbabelAgent, request: Request, status: int, why: str) -> Response:
    agent.rejected.append((request.method, request.url.path, status, why))
    return JSONResponse({"error": why}, status_code=status)


async def _json(request: Request) -> Any:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return None
    try:
        return await request.json()
    except ValueError:
        return None


def _events(content: str) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None]:
    """The reply, Embabel-shaped events, and the resource the turn created (if any)."""
    events: list[dict[str, Any]] = [{"systemPrompt": SYSTEM_PROMPT}]
    text = content.lower()
    if "remind" in text:
        arguments = {"text": "submit timesheet", "day": "Friday"}
        events.append({"request": {"function": {"name": "createReminder"}, "arguments": arguments, "context": "hr"}})
        events.append({"output": '{"id": "r1", "created": true}'})
        resource = {"id": "r1", "name": "submit timesheet", "labels": ["Reminder", "DomainNode"]}
        return "Done: I will remind you on Friday.", events, resource
    if "capital" in text:
        events.append({"content": "capital of France", "summaryDirection": None})
        events.append({"request": {"function": {"name": "lookup"}, "arguments": {"q": "France"}, "context": "geo"}})
        events.append({"output": "Paris"})
        return "The capital of France is Paris.", events, None
    return "Hello! How can I help?", events, None


def build_app(agent: EmbabelAgent) -> Starlette:
    """The three endpoints, strict about what they accept."""
    ids = itertools.count(1)

    async def sessions(request: Request) -> Response:
        if request.headers.get("x-api-key") != agent.api_key:
            return _problem(agent, request, 401, "missing or wrong X-API-KEY")
        body = await _json(request)
        if not isinstance(body, dict) or set(body) != {"user", "chatbot"}:
            return _problem(agent, request, 400, f"expected {{user, chatbot}}, found {body!r}")
        if not all(isinstance(body[key], str) for key in body):
            return _problem(agent, request, 400, "user and chatbot must be strings")
        session_id = f"s{next(ids)}"
        agent.sessions[session_id] = {**body, "history": [], "resources": []}
        agent.requests.append((request.method, request.url.path, dict(request.headers), body))
        return JSONResponse({"sessionId": session_id})

    async def messages(request: Request) -> Response:
        body = await _json(request)
        if not isinstance(body, dict) or set(body) != {"sessionId", "message", "model"}:
            return _problem(agent, request, 400, f"expected {{sessionId, message, model}}, found {body!r}")
        message = body["message"]
        if (
            not isinstance(message, dict)
            or set(message) != {"role", "content"}
            or message["role"] != "user"
            or not isinstance(message["content"], str)
            or not isinstance(body["model"], str)
        ):
            return _problem(agent, request, 400, f"bad message or model: {body!r}")
        session = agent.sessions.get(body["sessionId"])
        if session is None:
            return _problem(agent, request, 404, f"no session {body['sessionId']!r}")
        agent.requests.append((request.method, request.url.path, dict(request.headers), body))
        text, events, resource = _events(message["content"])
        if resource is not None:
            session["resources"].append(resource)
            if agent.on_reminder is not None:
                agent.on_reminder(resource)
        session["history"] += [message, {"role": "assistant", "content": text}]
        return JSONResponse(
            {
                "sessionId": body["sessionId"],
                "chatbot": session["chatbot"],
                "message": {"role": "assistant", "content": text},
                "history": session["history"],
                "events": events,
            }
        )

    async def object_context(request: Request) -> Response:
        session = agent.sessions.get(request.path_params["sid"])
        if session is None:
            return _problem(agent, request, 404, "no such session")
        agent.requests.append((request.method, request.url.path, dict(request.headers), None))
        functions = [{"name": "createReminder", "description": "Create a reminder", "label": None,
                      "inputTypeSchema": "{}"}]  # fmt: skip
        return JSONResponse({"context": "hr", "resources": session["resources"], "functions": functions})

    return Starlette(
        routes=[
            Route("/api/v1/chat/sessions", sessions, methods=["PUT"]),
            Route("/api/v1/chat/messages", messages, methods=["PUT"]),
            Route("/api/v1/chat/objectContexts/{sid}", object_context, methods=["GET"]),
        ]
    )
