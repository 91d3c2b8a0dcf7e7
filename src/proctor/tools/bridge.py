"""`python -m proctor.tools.bridge [URL]`: a trial's tool endpoint over stdio.

For agents that take MCP tools only from a command they start (a stdio server): Proctor tells the agent
processes it launches `PROCTOR_TOOLS_COMMAND`, this module with the trial's endpoint, and the agent starts
it as its tool server. Every request is forwarded to the trial's streamable HTTP endpoint (default
`PROCTOR_TOOLS_URL`), so the calls land in the trial's transcript exactly as direct HTTP calls do.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["bridge", "bridge_command", "main"]


def bridge_command(url: str) -> str:
    """The shell command that serves `url` over stdio (what `PROCTOR_TOOLS_COMMAND` holds)."""
    return shlex.join([sys.executable, "-m", "proctor.tools.bridge", url])


async def bridge(url: str) -> None:
    """Serve the tool endpoint at `url` on this process's stdin/stdout until the agent closes them."""
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as upstream:
        await upstream.initialize()

        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            return await upstream.list_tools()

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return await upstream.call_tool(params.name, dict(params.arguments or {}))

        server: Server[Any] = Server("proctor-tools", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> None:
    """Bridge the URL given, else `PROCTOR_TOOLS_URL`."""
    args = list(sys.argv[1:] if argv is None else argv)
    url = args[0] if args else os.environ.get("PROCTOR_TOOLS_URL", "")
    if not url:
        sys.exit("usage: python -m proctor.tools.bridge URL (or set PROCTOR_TOOLS_URL)")
    anyio.run(bridge, url)


if __name__ == "__main__":
    main()
