"""The `embabel` target: an agent speaking Embabel Agent Eval's chat protocol.

Protocol (default service `http://localhost:8081`):

1. `POST {agent}/api/v1/chat/sessions` with `{user, chatbot}` returns the session id (a JSON string, or
   an object with `sessionId` or `id`).
2. `POST {agent}/api/v1/chat/messages` with `{sessionId, message: {role: user, content}, model}` returns
   `{sessionId, chatbot, message: {role, content}, history, events}`. Events with a function call
   (`type` containing `call`, e.g. `function_call`) become the reply's tool calls; function responses
   (`type` containing `response` or `result`) fill in the matching call's result.
3. `GET {agent}/api/v1/chat/objectContexts/{sessionId}` returns the agent's object context.

Every call is attempted up to `attempts` times (Embabel: 4) with `backoff` seconds between attempts
(100 ms); the failed attempts are reported as the reply's `retries`, which the composite score's
failure penalty counts. With `-v` every event is logged (logger `proctor.targets.embabel`) as it arrives.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from proctor.errors import ConfigError, TargetProtocolError
from proctor.suite._targets import EmbabelTargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._http_client import (
    DEFAULT_MAX_CONNECTIONS,
    RetryPolicy,
    build_client,
    decode_json,
    expand_env,
    send_with_retries,
)
from proctor.transcript import AgentReply, ToolCall

__all__ = ["EmbabelSession", "EmbabelTarget", "tool_calls_from_events"]

logger = logging.getLogger("proctor.targets.embabel")


class EmbabelTarget:
    """An Embabel-protocol agent.

    Args:
        spec: The validated target spec.
        max_connections: Most connections open at once to the agent.
    """

    def __init__(self, spec: EmbabelTargetSpec, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self.spec = spec
        self.base = str(spec.base_url).rstrip("/")
        self.name = f"embabel {self.base}"
        headers = {key: expand_env(value, f"target header {key}") for key, value in spec.headers.items()}
        self.client = build_client(max_connections=max_connections, headers=headers)
        self.policy = RetryPolicy(
            max_retries=spec.attempts - 1,
            initial_wait=spec.backoff,
            max_wait=spec.backoff,
            max_retry_after=spec.backoff,
        )

    async def open_session(self, context: SessionContext) -> EmbabelSession:
        """Create a chat session for `target.user` and `target.chatbot`."""
        url = f"{self.base}/api/v1/chat/sessions"
        body = {"user": self.spec.user, "chatbot": self.spec.chatbot}
        response, _ = await send_with_retries(
            self.client, "POST", url, request_timeout=context.timeout, json_body=body, policy=self.policy
        )
        data = decode_json(response)
        session_id = (
            data
            if isinstance(data, str)
            else (data.get("sessionId") or data.get("id"))
            if isinstance(data, dict)
            else None
        )
        if not isinstance(session_id, str | int) or session_id == "":
            raise TargetProtocolError(f"session reply from {url} has no session id: {str(data)[:200]}")
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
        self.session_id = session_id

    async def send(self, message: str) -> AgentReply:
        """Post one user message; the reply's events give its tool calls."""
        target = self._target
        url = f"{target.base}/api/v1/chat/messages"
        body: dict[str, Any] = {"sessionId": self.session_id, "message": {"role": "user", "content": message}}
        if self._context.model:
            body["model"] = self._context.model
        started = time.perf_counter()
        response, retries = await send_with_retries(
            target.client, "POST", url, request_timeout=self._context.timeout, json_body=body, policy=target.policy
        )
        latency = (time.perf_counter() - started) * 1000
        data = decode_json(response)
        reply = data.get("message") if isinstance(data, dict) else None
        if not isinstance(reply, dict) or not isinstance(reply.get("content"), str):
            raise TargetProtocolError(f"reply from {url} has no message.content: {str(data)[:200]}")
        events = data.get("events") or []
        for event in events:
            logger.info("embabel event: %s", json.dumps(event, default=str)[:500])
        return AgentReply(reply["content"], tool_calls_from_events(events), latency, raw=data, retries=retries)

    async def object_context(self) -> Any:
        """The agent's object context for this session."""
        url = f"{self._target.base}/api/v1/chat/objectContexts/{self.session_id}"
        response, _ = await send_with_retries(
            self._target.client, "GET", url, request_timeout=self._context.timeout, policy=self._target.policy
        )
        return decode_json(response)

    async def aclose(self) -> None:
        """Embabel has no end-of-session call: nothing to do."""


def tool_calls_from_events(events: list[Any]) -> list[ToolCall]:
    """Function-call events as tool calls, with the results of the matching function-response events."""
    calls: list[ToolCall] = []
    for event in events:
        if not isinstance(event, dict):
            continue
        kind = str(event.get("type") or event.get("kind") or "").lower()
        name = event.get("name") or event.get("function") or event.get("tool")
        if "call" in kind and name:
            arguments = event.get("arguments", event.get("args") or {})
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {"_raw": arguments}
            call_id = event.get("id") or event.get("callId")
            calls.append(
                ToolCall(str(name), arguments if isinstance(arguments, dict) else {"_value": arguments}, call_id)
            )
        elif ("response" in kind or "result" in kind) and calls:
            call_id = event.get("id") or event.get("callId")
            match = next(
                (c for c in reversed(calls) if (call_id and c.id == call_id) or (not call_id and c.name == name)), None
            )
            if match is not None:
                match.result = event.get("result", event.get("response", event.get("content")))
    return calls
