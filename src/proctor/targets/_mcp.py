"""The `mcp` target: an agent exposed as an MCP tool, called once per turn (official SDK client).

Each trial opens its own MCP session (and, for a `command`, starts its own agent process). The SDK's
transports hold task groups that one task must enter and leave, while a trial opens its session under
one timeout and closes it later: so the session lives in an asyncio task of its own, started when the
trial's session opens and ended when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from proctor._redact import redact, redact_url, remember_headers, remember_url_credentials
from proctor.errors import TargetError, TargetProtocolError
from proctor.suite._protocol_targets import McpTargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._graph import GRAPH_HEADERS, graph_headers
from proctor.targets._http_client import expand_env
from proctor.transcript import AgentReply

__all__ = ["McpSession", "McpTarget", "process_environment"]


def process_environment(variables: dict[str, Any]) -> dict[str, str]:
    """What an agent process Proctor starts learns of its trial: `PROCTOR_TOOLS_URL`, `PROCTOR_GRAPH_*`.

    `PROCTOR_TOOLS_COMMAND` serves the same tools over stdio, for agents that start their MCP servers
    themselves (`proctor.tools.bridge`).
    """
    env = {}
    if variables.get("tools_url"):
        url = str(variables["tools_url"])
        env["PROCTOR_TOOLS_URL"] = url
        env["PROCTOR_TOOLS_COMMAND"] = shlex.join([sys.executable, "-m", "proctor.tools.bridge", url])
    for key in GRAPH_HEADERS:
        if variables.get(key) is not None and variables.get("graph_uri"):
            env[f"PROCTOR_{key.upper()}"] = str(variables[key])
    return env


class McpTarget:
    """Calls a tool of an MCP server with each user message (see `proctor.suite.McpTargetSpec`)."""

    def __init__(self, spec: McpTargetSpec, **_options: Any) -> None:
        """Keep the spec; connections are made per trial.

        Raises:
            proctor.errors.ConfigError: A header or environment value uses an unset `${VAR}`.
        """
        self.spec = spec
        where = redact_url(spec.url) if spec.url is not None else " ".join(spec.command or [])
        self.name = f"mcp {where} tool {spec.tool}"
        if spec.url is not None:
            remember_url_credentials(spec.url)  # userinfo (sent as Basic auth) and secret query values: masked
        self.headers = {key: expand_env(value, f"headers.{key}") for key, value in spec.headers.items()}
        remember_headers(self.headers)  # a literal key too (`${VAR}` values are remembered as they are read)
        self.env = {key: expand_env(value, f"env.{key}") for key, value in spec.env.items()}

    async def open_session(self, context: SessionContext) -> McpSession:
        """Connect (start the agent process, for a `command`) and initialise an MCP session.

        Raises:
            TargetError: The server could not be started, reached or initialised.
        """
        session = McpSession(self, context)
        await session.start()
        return session

    async def aclose(self) -> None:
        """Nothing pooled: each session closes its own connection."""


class McpSession:
    """One trial's MCP session with the agent."""

    def __init__(self, target: McpTarget, context: SessionContext) -> None:
        self._target = target
        self._context = context
        self.session_id = uuid.uuid4().hex
        """Sent as the `session_arg`, when the spec names one."""
        self.history: list[dict[str, str]] = []
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the session in its own task and wait until it is initialised (or failed)."""
        self._task = asyncio.create_task(self._run())
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if self._session is None:
            error = self._task.exception() if self._task.done() else None
            await self.aclose()
            detail = _reason(error) if error is not None else "no session"
            raise TargetError(f"{self._target.name}: cannot open an MCP session: {detail}") from error

    async def _run(self) -> None:
        try:
            async with self._transport() as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._stop.wait()
        finally:
            self._session = None

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        spec, variables = self._target.spec, self._context.variables
        if spec.url is not None:
            headers = {**self._target.headers, **graph_headers(variables)}
            # a client we pass in is ours to close (the SDK closes only the one it makes)
            async with (
                create_mcp_http_client(headers=headers) as client,
                streamable_http_client(spec.url, http_client=client) as streams,
            ):
                yield streams
            return
        command = spec.command or []
        env = {**self._target.env, **process_environment(variables)}
        parameters = StdioServerParameters(command=command[0], args=command[1:], env=env)
        # the agent's stderr would garble Proctor's console; opening /dev/null never blocks
        with open(os.devnull, "w", encoding="utf-8") as errlog:  # noqa: ASYNC230
            async with stdio_client(parameters, errlog=errlog) as streams:
                yield streams

    def _arguments(self, message: str, history: list[dict[str, str]]) -> dict[str, Any]:
        spec = self._target.spec
        arguments: dict[str, Any] = {**spec.arguments, spec.message_arg: message}
        if spec.session_arg is not None:
            arguments[spec.session_arg] = self.session_id
        if spec.history_arg is not None:
            arguments[spec.history_arg] = history
        return arguments

    async def send(self, message: str) -> AgentReply:
        """Call the agent's tool with the message; its result is the reply.

        Raises:
            TargetError: The call failed, or the tool answered with an error.
            TargetProtocolError: The result has no text (or no `reply_key`).
        """
        session = self._session
        if session is None:
            raise TargetError(f"{self._target.name}: the MCP session is closed")
        history = [*self.history, {"role": "user", "content": message}]
        started = time.perf_counter()
        try:
            result = await session.call_tool(
                self._target.spec.tool, self._arguments(message, history), read_timeout_seconds=self._context.timeout
            )
        except Exception as exc:  # the SDK's McpError and transport errors alike
            problem = redact(f"{type(exc).__name__}: {exc}")  # the SDK quotes URLs and the server's error texts
            raise TargetError(f"{self._target.name}: {problem}") from exc
        text = _text(result.content)
        if result.is_error:  # the agent may echo what it was sent
            raise TargetError(f"{self._target.name} answered with an error: {redact(text)}")
        reply_key = self._target.spec.reply_key
        if reply_key is not None:
            structured = result.structured_content or {}
            if reply_key not in structured:
                raise TargetProtocolError(
                    f"{self._target.name}: the result has no '{reply_key}': {redact(str(structured))}"
                )
            text = str(structured[reply_key])
        raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        history.append({"role": "assistant", "content": text})
        self.history = history
        return AgentReply(text=text, latency_ms=(time.perf_counter() - started) * 1000, raw=raw)

    async def aclose(self) -> None:
        """End the session (and the agent process) in its task; never raises."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await task


def _reason(exc: BaseException) -> str:
    """The innermost causes of a failure (the SDK's task groups wrap them in exception groups), redacted."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in exc.exceptions)
    return redact(f"{type(exc).__name__}: {exc}")


def _text(content: Any) -> str:
    return "\n".join(block.text for block in content if getattr(block, "type", None) == "text")
