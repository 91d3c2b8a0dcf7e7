"""The `openai` target: an OpenAI-compatible `/chat/completions` endpoint."""

from __future__ import annotations

import os
import time
from typing import Any

from proctor._redact import redact, redact_excerpt, redact_url, remember_url_credentials
from proctor.errors import TargetProtocolError
from proctor.suite._targets import OpenAITargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._graph import graph_headers
from proctor.targets._http_client import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_RETRY,
    HttpResponse,
    RetryPolicy,
    build_client,
    decode_json,
    expand_env,
    send_with_retries,
)
from proctor.targets._replies import parse_tool_calls, parse_usage
from proctor.targets._runtime import file_content_part
from proctor.transcript import AgentReply

__all__ = ["OpenAISession", "OpenAITarget"]

DEFAULT_MODEL = "default"
"""The `model` sent when neither `--model` nor the spec names one (most local servers ignore it)."""


class OpenAITarget:
    """Talks to an OpenAI-compatible chat completions endpoint, sending the whole history each turn.

    Each session keeps the conversation (system prompt first, when given) and appends the user's message
    and the assistant's reply text every turn. Tool calls in the reply are reported, but the agent is
    assumed to have executed them already, so no tool results are sent back.

    The `model` field is `context.model`, else `spec.model`, else `"default"`. A watsonx dataset's
    `runtime_context` goes in the body's `context` and its `file_upload` into the first user message
    (`proctor.targets._runtime`).
    """

    def __init__(
        self,
        spec: OpenAITargetSpec,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        """Build the target and its connection pool.

        Args:
            spec: The validated target specification.
            max_connections: Most connections open at once to the agent.
            retry: How retryable failures are retried.

        Raises:
            proctor.errors.ConfigError: A header uses an unset `${VAR}`.
        """
        self.spec = spec
        base_url = str(spec.base_url).rstrip("/")
        self.name = f"openai {redact_url(base_url)}"
        self.url = f"{base_url}/chat/completions"
        remember_url_credentials(self.url)  # userinfo (sent as Basic auth) and secret query values: masked
        self.shown_url = redact(self.url)
        """The endpoint as error messages quote it."""
        headers = {key: expand_env(value, f"headers.{key}") for key, value in spec.headers.items()}
        api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        if api_key:
            headers.setdefault("Authorization", f"Bearer {api_key}")
        self._retry = retry
        self._client = build_client(max_connections=max_connections, headers=headers)  # remembers the keys

    async def open_session(self, context: SessionContext) -> OpenAISession:
        """Start a conversation (nothing is sent until the first message).

        Args:
            context: The trial the session belongs to.

        Returns:
            A new session.
        """
        return OpenAISession(self, context)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _post(
        self, body: dict[str, Any], request_timeout: float, headers: dict[str, str] | None = None
    ) -> tuple[HttpResponse, int]:
        return await send_with_retries(
            self._client,
            "POST",
            self.url,
            request_timeout=request_timeout,
            json_body=body,
            headers=headers,
            policy=self._retry,
        )


class OpenAISession:
    """One conversation with an OpenAI-compatible endpoint."""

    def __init__(self, target: OpenAITarget, context: SessionContext) -> None:
        self._target = target
        self._context = context
        self._model = context.model or target.spec.model or DEFAULT_MODEL
        self.history: list[dict[str, Any]] = []
        """The messages sent so far, in OpenAI's format."""
        if target.spec.system_prompt:
            self.history.append({"role": "system", "content": target.spec.system_prompt})

    async def send(self, message: str) -> AgentReply:
        """Send the history plus `message` and return the reply.

        Args:
            message: The user's message.

        Returns:
            The reply text, tool calls, usage and trace id (`id`, else the `x-request-id` header).

        Raises:
            proctor.errors.TargetError: The endpoint failed or answered in another shape.
        """
        target = self._target
        variables = self._context.variables
        content: Any = message
        upload = variables.get("file_upload")
        if isinstance(upload, dict) and not any(m["role"] == "user" for m in self.history):
            content = [{"type": "text", "text": message}, file_content_part(upload)]
        messages = [*self.history, {"role": "user", "content": content}]
        body: dict[str, Any] = {"model": self._model, "messages": messages, **target.spec.params}
        if variables.get("runtime_context") is not None:
            body["context"] = variables["runtime_context"]  # as IBM's runtime sends it
        started = time.perf_counter()
        headers = graph_headers(self._context.variables)  # the trial's graph, when Proctor started one
        response, retries = await target._post(body, self._context.timeout, headers or None)
        data = decode_json(response)
        latency_ms = (time.perf_counter() - started) * 1000
        reply = _parse_reply(data, target.shown_url)
        reply.latency_ms = latency_ms
        reply.retries = retries
        if reply.trace_id is None:
            reply.trace_id = response.headers.get("x-request-id")
        messages.append({"role": "assistant", "content": reply.text})
        self.history = messages
        return reply

    async def aclose(self) -> None:
        """Forget the conversation (the endpoint keeps no session)."""
        self.history = []


def _parse_reply(data: Any, where: str) -> AgentReply:
    """Read a completion; `where` (the endpoint, redacted) names it in error messages.

    Raises:
        TargetProtocolError: The reply has no message or no text content (quoted with secrets masked).
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise TargetProtocolError(f"reply from {where} has no choices[0].message: {redact_excerpt(data, 200)}")
    content = message.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):  # content parts: [{type: text, text: ...}]
        text = "".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    else:
        raise TargetProtocolError(
            f"reply from {where} has a non-text message content: {redact_excerpt(repr(content), 200)}"
        )
    trace_id = data.get("id")
    try:
        tool_calls = parse_tool_calls(message.get("tool_calls"), f"the reply from {where}")
    except TargetProtocolError as exc:  # it quotes the reply: masked
        raise TargetProtocolError(redact(str(exc))) from None
    return AgentReply(
        text=text,
        tool_calls=tool_calls,
        usage=parse_usage(data.get("usage")),
        raw=data,
        trace_id=str(trace_id) if trace_id else None,
    )
