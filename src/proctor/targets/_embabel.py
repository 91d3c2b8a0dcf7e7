"""The `embabel` target: an agent speaking Embabel Agent Eval's chat protocol, as its client sends it.

Protocol (Embabel's `AgentChatClient`; default service `http://localhost:8081`):

1. `PUT {agent}/api/v1/chat/sessions` with `{user, chatbot}` returns `{sessionId}` (a bare JSON string
   or `{id}` is accepted too).
2. `PUT {agent}/api/v1/chat/messages` with `{sessionId, message: {role: user, content}, model}` returns
   `{sessionId, chatbot, message: {role, content}, history, events}`. `model` is `--model` (Embabel's
   `-Dmodel`), else the target's `model` (Embabel's default `gpt-4.1-mini`).
3. `GET {agent}/api/v1/chat/objectContexts/{sessionId}` returns the agent's object context
   (`{context, resources, functions}`).

Every request carries `X-API-KEY` (the target's `api_key`, else `EMBABEL_API_KEY`; none: no header) and,
when the trial has a graph Proctor started, the `X-Proctor-Graph-*` headers (`proctor.targets._graph`).
An agent that answers `405` to a `PUT` is asked again with `POST` (older Proctor demo agents spoke POST);
the target remembers the method for the rest of the run.

Events carry no type field; Embabel tells them apart by their fields, and so does this target:
`{systemPrompt}` (the agent's system prompt), `{request: {function: {name}, arguments, context}}` (a
function call: a tool call of the reply), `{output}` (a function response: the result of the earliest
call still without one) and `{content, summaryDirection}` (a knowledge-graph request). Events with a
`type` are read too: a `type` containing `call` (e.g. `function_call`, with `name`, `arguments`, `id`)
is a call, one containing `response` or `result` fills in the matching call's result.

Every call is attempted up to `attempts` times (Embabel: 4) with `backoff` seconds between attempts
(100 ms); the failed attempts are reported as the reply's `retries`, which the composite score's
failure penalty counts. With `-v` every event is logged (logger `proctor.targets.embabel`) as it arrives.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from proctor._redact import redact, redact_excerpt, redact_url, remember_url_credentials
from proctor.errors import ConfigError, TargetHTTPError, TargetProtocolError
from proctor.suite._targets import EmbabelTargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._graph import graph_headers
from proctor.targets._http_client import (
    DEFAULT_MAX_CONNECTIONS,
    HttpResponse,
    RetryPolicy,
    build_client,
    decode_json,
    expand_env,
    send_with_retries,
)
from proctor.transcript import AgentReply, ToolCall

__all__ = ["API_KEY_ENV", "EmbabelSession", "EmbabelTarget", "tool_calls_from_events"]

logger = logging.getLogger("proctor.targets.embabel")

API_KEY_ENV = "EMBABEL_API_KEY"
"""The environment variable the `X-API-KEY` header is read from when the target names no `api_key`."""
_METHOD_NOT_ALLOWED = 405


class EmbabelTarget:
    """An Embabel-protocol agent.

    Args:
        spec: The validated target spec.
        max_connections: Most connections open at once to the agent.
    """

    def __init__(self, spec: EmbabelTargetSpec, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self.spec = spec
        self.base = str(spec.base_url).rstrip("/")
        self.name = f"embabel {redact_url(self.base)}"
        remember_url_credentials(self.base)  # userinfo (sent as Basic auth) and secret query values: masked
        headers = {key: expand_env(value, f"target header {key}") for key, value in spec.headers.items()}
        api_key = expand_env(spec.api_key, "target api_key") if spec.api_key else os.environ.get(API_KEY_ENV)
        if api_key:
            headers["X-API-KEY"] = api_key
        self.client = build_client(max_connections=max_connections, headers=headers)  # remembers the key
        self.policy = RetryPolicy(
            max_retries=spec.attempts - 1,
            initial_wait=spec.backoff,
            max_wait=spec.backoff,
            max_retry_after=spec.backoff,
        )
        self.methods = {"sessions": "PUT", "messages": "PUT"}
        """The method each write endpoint answers to: Embabel's `PUT`, or `POST` after a `405`."""

    async def put(
        self, endpoint: str, body: Any, request_timeout: float, headers: Mapping[str, str]
    ) -> tuple[HttpResponse, int]:
        """Send `body` to `/api/v1/chat/{endpoint}` with `PUT`, or `POST` when the agent answers `405`.

        Returns:
            The response and the retries it took.
        """
        url = f"{self.base}/api/v1/chat/{endpoint}"
        method = self.methods[endpoint]
        options: dict[str, Any] = {"json_body": body, "headers": headers, "policy": self.policy}
        try:
            return await send_with_retries(self.client, method, url, request_timeout=request_timeout, **options)
        except TargetHTTPError as exc:
            if exc.status_code in (401, 403) and "X-API-KEY" not in self.client.headers:
                raise TargetHTTPError(
                    f"{exc} (no X-API-KEY was sent: set {API_KEY_ENV} or the target's api_key)", exc.status_code
                ) from None
            if method != "PUT" or exc.status_code != _METHOD_NOT_ALLOWED:
                raise
        logger.info("%s answered 405 to PUT: using POST for it from now on", redact(url))
        self.methods[endpoint] = "POST"
        return await send_with_retries(self.client, "POST", url, request_timeout=request_timeout, **options)

    async def open_session(self, context: SessionContext) -> EmbabelSession:
        """Create a chat session for `target.user` and `target.chatbot`."""
        headers = graph_headers(context.variables)
        body = {"user": self.spec.user, "chatbot": self.spec.chatbot}
        response, _ = await self.put("sessions", body, context.timeout, headers)
        data = decode_json(response)
        session_id = (
            data
            if isinstance(data, str)
            else (data.get("sessionId") or data.get("id"))
            if isinstance(data, dict)
            else None
        )
        if not isinstance(session_id, str | int) or session_id == "":
            raise TargetProtocolError(
                f"session reply from {redact(response.url)} has no session id: {redact_excerpt(data, 200)}"
            )
        return EmbabelSession(self, context, str(session_id))

    async def ingest(self, text: str, context: SessionContext) -> int:
        """Post a text seed to `ingest_url` (`{text, user, chatbot}`); returns the retries it took.

        Raises:
            proctor.errors.ConfigError: The target has no `ingest_url`.
        """
        if not self.spec.ingest_url:
            raise ConfigError(f"{self.name}: text seeds need 'ingest_url'")
        body = {"text": text, "user": self.spec.user, "chatbot": self.spec.chatbot}
        _, retries = await send_with_retries(
            self.client,
            "POST",
            self.spec.ingest_url,
            request_timeout=context.timeout,
            json_body=body,
            headers=graph_headers(context.variables),
            policy=self.policy,
        )
        return retries

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.client.aclose()


class EmbabelSession:
    """One Embabel chat session."""

    def __init__(self, target: EmbabelTarget, context: SessionContext, session_id: str) -> None:
        self._target = target
        self._context = context
        self._headers = graph_headers(context.variables)
        self.session_id = session_id

    async def send(self, message: str) -> AgentReply:
        """Send one user message; the reply's events give its tool calls."""
        body: dict[str, Any] = {"sessionId": self.session_id, "message": {"role": "user", "content": message}}
        model = self._context.model or self._target.spec.model
        if model:
            body["model"] = model
        started = time.perf_counter()
        response, retries = await self._target.put("messages", body, self._context.timeout, self._headers)
        latency = (time.perf_counter() - started) * 1000
        data = decode_json(response)
        reply = data.get("message") if isinstance(data, dict) else None
        if not isinstance(reply, dict) or not isinstance(reply.get("content"), str):
            raise TargetProtocolError(
                f"reply from {redact(response.url)} has no message.content: {redact_excerpt(data, 200)}"
            )
        events = data.get("events") or []
        if not isinstance(events, list):
            raise TargetProtocolError(f"reply from {redact(response.url)} has events that are not a list")
        if logger.isEnabledFor(logging.INFO):  # an event may quote what the agent was sent: masked
            for event in events:
                logger.info("embabel event: %s", redact_excerpt(json.dumps(event, default=str), 500))
        return AgentReply(reply["content"], tool_calls_from_events(events), latency, raw=data, retries=retries)

    async def object_context(self) -> Any:
        """The agent's object context for this session (`GET /api/v1/chat/objectContexts/{sessionId}`)."""
        url = f"{self._target.base}/api/v1/chat/objectContexts/{self.session_id}"
        response, _ = await send_with_retries(
            self._target.client,
            "GET",
            url,
            request_timeout=self._context.timeout,
            headers=self._headers,
            policy=self._target.policy,
        )
        return decode_json(response)

    async def aclose(self) -> None:
        """Embabel has no end-of-session call: nothing to do."""


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"_raw": value}
    if value is None:
        return {}
    return value if isinstance(value, dict) else {"_value": value}


def _embabel_call(event: Mapping[str, Any]) -> ToolCall | None:
    """A `FunctionCallEvent` (`{request: {function: {name}, arguments, context}}`) as a tool call."""
    request = event.get("request")
    function = request.get("function") if isinstance(request, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(request, Mapping) or not name:
        return None
    return ToolCall(str(name), _arguments(request.get("arguments")))


def tool_calls_from_events(events: list[Any]) -> list[ToolCall]:
    """Function-call events as tool calls, with the results of the function-response events.

    Embabel's untyped events (`{request: {function: {name}, arguments}}` calls, `{output}` responses, each
    response answering the earliest call still without a result) and typed events (`type` containing
    `call`, or `response`/`result`, matched by `id` or else by name) are both read; system-prompt and
    knowledge-graph events are not tool calls.
    """
    calls: list[ToolCall] = []
    for event in events:
        if not isinstance(event, dict):
            continue
        if "type" not in event and "kind" not in event:
            call = _embabel_call(event)
            if call is not None:
                calls.append(call)
            elif "output" in event:
                waiting = next((c for c in calls if c.result is None), None)
                if waiting is not None:
                    waiting.result = event["output"]
            continue
        kind = str(event.get("type") or event.get("kind") or "").lower()
        name = event.get("name") or event.get("function") or event.get("tool")
        if "call" in kind and name:
            call_id = event.get("id") or event.get("callId")
            calls.append(ToolCall(str(name), _arguments(event.get("arguments", event.get("args"))), call_id))
        elif ("response" in kind or "result" in kind) and calls:
            call_id = event.get("id") or event.get("callId")
            match = next(
                (c for c in reversed(calls) if (call_id and c.id == call_id) or (not call_id and c.name == name)), None
            )
            if match is not None:
                match.result = event.get("result", event.get("response", event.get("content")))
    return calls
