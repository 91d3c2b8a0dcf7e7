"""The `lobu` target: a Lobu gateway's agent API (create session, post, read SSE, delete).

Protocol (as used by `lobu eval`):

1. `POST {gateway}/api/v1/agents` with the admin/API bearer token and
   `{forceNew: true, dryRun: true, agentId, thread, provider?, model?}` returns `{agentId, token}`;
   the returned `agentId` is the session key and `token` authorises every later call.
2. `POST {base}/messages` with `{content}` returns `{messageId, traceparent?}`, where
   `base = {gateway}/api/v1/agents/{session agentId}`.
3. `GET {base}/events` is an SSE stream (the gateway replays recent events on connect). `output`
   deltas whose `messageId` matches are concatenated; the matching `complete` ends the reply (its
   `usage`, if any, is read); a matching `error` fails the turn. Other messages' events are ignored.
4. `DELETE {base}` ends the session.
"""

from __future__ import annotations

import json
import logging
import os
import time
import tomllib
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
from httpx_sse import SSEError, aconnect_sse

from proctor._redact import (
    masking,
    redact,
    redact_excerpt,
    redact_url,
    remember_credential,
    remember_url_credentials,
)
from proctor._tls import shared_ssl_context
from proctor.errors import (
    ConfigError,
    TargetError,
    TargetHTTPError,
    TargetProtocolError,
    TargetTimeout,
    TargetUnreachable,
)
from proctor.suite._targets import LobuTargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._graph import graph_headers
from proctor.targets._http_client import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_RETRY,
    NO_RETRY,
    RetryPolicy,
    build_client,
    decode_json,
    failure_cause,
    send_with_retries,
)
from proctor.targets._replies import parse_tool_calls, parse_usage
from proctor.transcript import AgentReply, ToolCall, Usage

__all__ = ["LobuSession", "LobuTarget", "resolve_agent", "resolve_gateway", "resolve_token"]

logger = logging.getLogger("proctor.targets")

DEFAULT_GATEWAY = "http://localhost:8080"
"""The gateway used when nothing else names one."""

_TOOL_EVENTS = frozenset({"tool_call", "tool-call"})


def resolve_gateway(spec: LobuTargetSpec) -> str:
    """Return the gateway URL without a trailing slash.

    Order: `spec.gateway`, `LOBU_GATEWAY_URL`, `GATEWAY_URL`, `http://localhost:$GATEWAY_PORT`, and
    finally `http://localhost:8080`.

    Args:
        spec: The target specification.

    Returns:
        The gateway's base URL.
    """
    url = spec.gateway or os.environ.get("LOBU_GATEWAY_URL") or os.environ.get("GATEWAY_URL")
    if not url:
        port = os.environ.get("GATEWAY_PORT", "").strip().strip("'\"")
        url = f"http://localhost:{port}" if port else DEFAULT_GATEWAY
    return url.rstrip("/")


def resolve_agent(spec: LobuTargetSpec, directory: Path | None = None) -> str:
    """Return the agent id: `spec.agent`, `LOBU_AGENT`, or the first `[agents.<id>]` in `lobu.toml`.

    Args:
        spec: The target specification.
        directory: Where to look for `lobu.toml`; the current directory when `None`.

    Returns:
        The agent id.

    Raises:
        ConfigError: No agent is named anywhere, or `lobu.toml` does not parse.
    """
    if spec.agent:
        return spec.agent
    if os.environ.get("LOBU_AGENT"):
        return os.environ["LOBU_AGENT"]
    path = (directory or Path.cwd()) / "lobu.toml"
    agents: Any = None
    if path.is_file():
        try:
            agents = tomllib.loads(path.read_text(encoding="utf-8")).get("agents")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        if isinstance(agents, dict) and agents:
            return str(next(iter(agents)))
    raise ConfigError(
        "no Lobu agent given: set `agent:` in the target (or --agent), set LOBU_AGENT, "
        f"or add an [agents.<id>] table to {path}"
    )


def resolve_token(spec: LobuTargetSpec) -> str | None:
    """Return the gateway bearer token: `$<spec.token_env>`, `LOBU_API_TOKEN` or `ADMIN_PASSWORD`.

    Args:
        spec: The target specification.

    Returns:
        The first of those variables that is set and non-empty, or `None`.
    """
    names = [spec.token_env] if spec.token_env else []
    for name in [*names, "LOBU_API_TOKEN", "ADMIN_PASSWORD"]:
        value = os.environ.get(name)
        if value:
            remember_credential(value)  # sent as a bearer token: masked wherever the gateway echoes it
            return value
    return None


def _split_model(model: str | None) -> dict[str, str]:
    if not model:
        return {}
    provider, slash, name = model.partition("/")
    return {"provider": provider, "model": name} if slash else {"model": model}


class LobuTarget:
    """Talks to an agent through a Lobu gateway; one gateway session per trial.

    Each session is created with `forceNew` and `dryRun`, and with a unique `thread`
    (`proctor-<hex>`) so concurrent trials never share a conversation. When `context.model` is given it
    is sent as `provider`/`model` (split at the first `/`; without a slash only `model` is sent).

    Tool calls are read from events named `tool_call` or `tool-call`, from `output` events whose
    `type` is one of those or that carry a `tool_calls` list, and from a `tool_calls` list on `complete`
    when no event carried them; the call itself may be the event data
    (`{name|toolName, arguments|args|input}`) or nested under `toolCall`/`tool_call`.
    """

    def __init__(
        self,
        spec: LobuTargetSpec,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        """Resolve the gateway, agent and token, and build the connection pool.

        Args:
            spec: The validated target specification.
            max_connections: Most connections open at once to the gateway.
            retry: How retryable failures are retried.

        Raises:
            proctor.errors.ConfigError: No agent id can be found.
        """
        self.spec = spec
        self.gateway = resolve_gateway(spec)
        self.agent = resolve_agent(spec)
        self._token = resolve_token(spec)
        remember_url_credentials(self.gateway)  # userinfo (sent as Basic auth) and secret query values: masked
        self.name = f"lobu {redact_url(self.gateway)} agent={self.agent}"
        self._retry = retry
        self._client = build_client(max_connections=max_connections)
        # The event stream is read with httpx-sse, on an httpx client of its own (one stream per session).
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._streams = httpx.AsyncClient(limits=limits, follow_redirects=True, verify=shared_ssl_context())

    async def open_session(self, context: SessionContext) -> LobuSession:
        """Create a gateway session for one trial.

        Args:
            context: The trial the session belongs to.

        Returns:
            A new session.

        Raises:
            proctor.errors.TargetError: The gateway refused or answered without `agentId`/`token`.
        """
        url = f"{self.gateway}/api/v1/agents"
        body: dict[str, Any] = {
            "forceNew": True,
            "dryRun": True,
            "agentId": self.agent,
            "thread": f"proctor-{uuid.uuid4().hex}",
            **_split_model(context.model),
        }
        headers = graph_headers(context.variables)  # the trial's graph, when Proctor started one
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        response, _ = await send_with_retries(
            self._client,
            "POST",
            url,
            request_timeout=context.timeout,
            json_body=body,
            headers=headers or None,
            policy=self._retry,
        )
        data = decode_json(response)
        session_key = data.get("agentId") if isinstance(data, dict) else None
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(session_key, str) or not session_key or not isinstance(token, str):
            with masking(token if isinstance(token, str) else ""):  # the session's token: masked too
                shown = redact_excerpt(data, 200)
            raise TargetProtocolError(f"session reply from {redact(url)} has no agentId and token: {shown}")
        base = f"{self.gateway}/api/v1/agents/{quote(session_key, safe='')}"
        return LobuSession(self, context, base, token)

    async def aclose(self) -> None:
        """Close the connection pools."""
        await self._client.aclose()
        await self._streams.aclose()


class LobuSession:
    """One gateway session (one conversation)."""

    def __init__(self, target: LobuTarget, context: SessionContext, base: str, token: str) -> None:
        self._target = target
        self._context = context
        self.base = base
        """`{gateway}/api/v1/agents/{session key}`."""
        self._auth = {**graph_headers(context.variables), "Authorization": f"Bearer {token}"}
        # One token per session: masked in this session's errors (`masking`) rather than remembered for the
        # whole run (a run of thousands of trials would make the global mask slow for nothing).
        self._token = token

    async def send(self, message: str) -> AgentReply:
        """Post `message` and collect the reply from the event stream.

        Args:
            message: The user's message.

        Returns:
            The concatenated `output` deltas, tool calls, usage from `complete` (when the gateway sends
            it) and the W3C trace id from the post's `traceparent`.

        Raises:
            proctor.errors.TargetError: A request failed, the agent reported an error, the stream ended
                before `complete`, or no `complete` came within the timeout (the session's token masked in
                its message).
        """
        with masking(self._token):
            return await self._send(message)

    async def _send(self, message: str) -> AgentReply:
        target = self._target
        timeout = self._context.timeout
        started = time.perf_counter()
        url = f"{self.base}/messages"
        response, retries = await send_with_retries(
            target._client,
            "POST",
            url,
            request_timeout=timeout,
            json_body={"content": message},
            headers=self._auth,
            policy=target._retry,
        )
        data = decode_json(response)
        message_id = data.get("messageId") if isinstance(data, dict) else None
        if message_id is None:
            raise TargetProtocolError(f"reply from {redact(url)} has no messageId: {redact_excerpt(data, 200)}")
        traceparent = data.get("traceparent")
        parts = traceparent.split("-") if isinstance(traceparent, str) else []
        reply = await self._collect(str(message_id))
        reply.latency_ms = (time.perf_counter() - started) * 1000
        reply.retries = retries
        reply.trace_id = parts[1] if len(parts) >= 2 and parts[1] else None
        return reply

    async def _collect(self, message_id: str) -> AgentReply:
        url = f"{self.base}/events"
        timeout = self._context.timeout
        try:
            with anyio.fail_after(timeout):
                return await self._read_stream(url, message_id)
        except TimeoutError:
            raise TargetTimeout(
                f"no complete event for message {message_id} from {redact(url)} within {timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise _stream_error(exc, url, timeout) from exc
        except SSEError as exc:
            raise TargetProtocolError(redact(f"reply from {url} is not an event stream: {exc}")) from None

    async def _read_stream(self, url: str, message_id: str) -> AgentReply:
        text: list[str] = []
        tool_calls: list[ToolCall] = []
        events: list[dict[str, Any]] = []
        headers = dict(self._auth)
        async with aconnect_sse(
            self._target._streams, "GET", url, headers=headers, timeout=httpx.Timeout(self._context.timeout)
        ) as source:
            response = source.response
            if response.status_code >= 400:
                await response.aread()
                body = redact_excerpt(response.text, 200)  # a gateway may echo the credentials it got
                raise TargetHTTPError(
                    f"GET {redact(url)} returned {response.status_code}: {body}", response.status_code
                )
            async for event in source.aiter_sse():
                try:
                    data = json.loads(event.data)
                except ValueError:
                    continue
                if not isinstance(data, dict) or str(data.get("messageId")) != message_id:
                    continue
                events.append({"event": event.event, **data})
                kind = event.event
                if kind == "output":
                    content = data.get("content")
                    if isinstance(content, str) and data.get("type", "delta") == "delta":
                        text.append(content)
                    tool_calls.extend(_tool_calls(kind, data, url))
                elif kind in _TOOL_EVENTS:
                    tool_calls.extend(_tool_calls(kind, data, url))
                elif kind == "error":
                    error = data.get("error") or "unknown error"
                    raise TargetProtocolError(
                        f"Lobu agent {self._target.agent} reported an error: {redact_excerpt(error, 500)}"
                    )
                elif kind == "complete":
                    if not tool_calls and isinstance(data.get("tool_calls"), list):
                        tool_calls = _tool_calls(kind, data, url)  # a summary of the calls, if the gateway sends one
                    usage: Usage | None = parse_usage(data.get("usage"))
                    return AgentReply(text="".join(text), tool_calls=tool_calls, usage=usage, raw={"events": events})
        raise TargetProtocolError(
            f"event stream from {redact(url)} ended before the complete event for message {message_id} "
            f"({len(''.join(text))} characters received)"
        )

    async def aclose(self) -> None:
        """Delete the gateway session (best effort; failures are logged at debug level only)."""
        try:
            with masking(self._token):
                await send_with_retries(
                    self._target._client,
                    "DELETE",
                    self.base,
                    request_timeout=self._context.timeout,
                    headers=self._auth,
                    policy=NO_RETRY,
                )
        except TargetError as exc:
            logger.debug("deleting Lobu session %s failed: %s", redact(self.base), exc)


def _stream_error(exc: httpx.HTTPError, url: str, timeout: float) -> TargetError:
    """Turn an httpx failure of the event stream into the matching Proctor error."""
    url = redact(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return TargetTimeout(f"cannot connect to {url} within {timeout:g} s")
    if isinstance(exc, httpx.PoolTimeout):
        return TargetTimeout(f"no free connection to {url} within {timeout:g} s")
    if isinstance(exc, httpx.TimeoutException):
        return TargetTimeout(f"no reply from {url} within {timeout:g} s")
    if isinstance(exc, httpx.ConnectError):
        return TargetUnreachable(f"cannot connect to {url}: {failure_cause(exc)}")
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return TargetUnreachable(f"connection to {url} failed: {failure_cause(exc)}")
    return TargetError(f"GET {url} failed: {failure_cause(exc)}")


def _tool_calls(kind: str, data: dict[str, Any], url: str) -> list[ToolCall]:
    try:
        return _read_tool_calls(kind, data, f"a {kind} event from {url}")
    except TargetProtocolError as exc:  # it quotes the event: masked
        raise TargetProtocolError(redact(str(exc))) from None


def _read_tool_calls(kind: str, data: dict[str, Any], where: str) -> list[ToolCall]:
    if isinstance(data.get("tool_calls"), list):
        return parse_tool_calls(data["tool_calls"], where)
    nested = data.get("toolCall", data.get("tool_call"))
    if isinstance(nested, dict):
        return parse_tool_calls(nested, where)
    if kind in _TOOL_EVENTS or data.get("type") in _TOOL_EVENTS:
        return parse_tool_calls(data, where)
    return []
