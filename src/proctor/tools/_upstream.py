"""A connection to a real MCP server (stdio command or streamable HTTP), for proxied and recorded tools.

Each connection lives in a task of its own in the tool server's task group (the SDK's transports hold
task groups that must be entered and left by one task); trials call through it concurrently. The
connection opens the first time a trial needs it and closes with the run.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from proctor._redact import redact, redact_url, remember_headers, remember_secret, remember_url_credentials
from proctor.errors import ConfigError, ProctorError
from proctor.suite._tools import ToolServerSpec
from proctor.tools._answer import ToolAnswer

__all__ = ["Upstream", "UpstreamError"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class UpstreamError(ProctorError):
    """A real tool server could not be reached or failed."""


def _expand(value: str, where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        value = os.environ[name]
        remember_secret(value)  # read from the environment for a tool server: masked wherever it shows
        return value

    return _ENV.sub(one, value)


def describe(spec: ToolServerSpec) -> str:
    """A short name for a server: its URL (userinfo and secret query values masked) or its command line."""
    return redact_url(spec.url) if spec.url is not None else " ".join(spec.command or [])


class Upstream:
    """One open session with a real MCP server."""

    def __init__(self, spec: ToolServerSpec, cwd: Path) -> None:
        """Prepare (not open) a connection; `cwd` is where a stdio command starts (the suite's directory)."""
        self.spec = spec
        self.cwd = cwd
        self.name = describe(spec)
        self.tools: dict[str, dict[str, Any]] = {}
        """The server's tools as it lists them (`name`, `description`, `inputSchema`), by name."""
        self._session: ClientSession | None = None
        self._stop = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the session, list the tools, report started, and hold the session until `close()`.

        Raises:
            UpstreamError: The server could not be started, reached or initialised (before `started`).
        """
        started = False
        try:
            async with self._transport() as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                listing = await session.list_tools()
                self.tools = {
                    tool.name: tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listing.tools
                }
                self._session = session
                task_status.started()
                started = True
                await self._stop.wait()
        except Exception as exc:
            if not started:
                raise UpstreamError(f"tool server {self.name}: {_reason(exc)}") from exc
        finally:
            self._session = None

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        spec = self.spec
        if spec.url is not None:
            where = f"tool server {self.name} header"
            headers = {key: _expand(value, f"{where} {key}") for key, value in spec.headers.items()}
            remember_headers(headers)  # a static key too: masked wherever the server echoes it
            remember_url_credentials(spec.url)  # userinfo (sent as Basic auth) and secret query values
            # a client we pass in is ours to close (the SDK closes only the one it makes)
            async with (
                create_mcp_http_client(headers=headers) as client,
                streamable_http_client(spec.url, http_client=client) as streams,
            ):
                yield streams
            return
        command = spec.command or []
        env = {key: _expand(value, f"tool server {command[0]} env {key}") for key, value in spec.env.items()}
        parameters = StdioServerParameters(command=command[0], args=command[1:], env=env or None, cwd=self.cwd)
        # its stderr would garble Proctor's console; opening /dev/null never blocks
        with open(os.devnull, "w", encoding="utf-8") as errlog:  # noqa: ASYNC230
            async with stdio_client(parameters, errlog=errlog) as streams:
                yield streams

    async def call(self, name: str, arguments: dict[str, Any], *, seconds: float) -> ToolAnswer:
        """Forward one call and return the server's answer (an error answer when the server failed).

        Raises:
            UpstreamError: The connection is closed.
        """
        session = self._session
        if session is None:
            raise UpstreamError(f"tool server {self.name} is not connected")
        try:
            result = await session.call_tool(name, arguments, read_timeout_seconds=seconds)
        except Exception as exc:  # the SDK raises McpError and transport errors alike
            problem = redact(f"{type(exc).__name__}: {exc}")  # the SDK quotes URLs and the server's error texts
            return ToolAnswer.error(f"tool server {self.name} failed: {problem}")
        return ToolAnswer.from_mcp(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    def close(self) -> None:
        """Let `run` end (the session closes in its own task)."""
        self._stop.set()


def _reason(exc: BaseException) -> str:
    """The innermost causes of a failure (the SDK's task groups wrap them in exception groups), redacted."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in exc.exceptions)
    return redact(f"{type(exc).__name__}: {exc}")
