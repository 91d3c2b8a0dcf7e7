"""The demo agent in MCP mode: it takes its tools from an MCP server, and its tools as an MCP server.

- `respond_mcp(messages, tools_url)`: the HR agent as a Python target that runs the current message's
  tools on the MCP server at `tools_url` (Proctor's tool server for the trial: mocked, recorded or
  replayed tools) and reports no tool calls itself; Proctor sees them at its tool server.
- `tool_server()`: the agent's own tools over the bundled data, as an MCP server
  (`python -m proctor.demo tools`, stdio): the "real" tools a suite proxies and records.

Needs the `tools` extra (the official MCP SDK).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

from proctor.demo._agent import HRAgent, State, Turn

__all__ = ["respond_mcp", "tool_server"]

_agent: HRAgent | None = None


def _the_agent() -> HRAgent:
    global _agent
    if _agent is None:
        _agent = HRAgent()
    return _agent


def _value(result: Any) -> Any:
    """A tool result as the agent's tools return it: the structured content, else the text (as JSON if it is)."""
    if result.is_error:
        why = " ".join(getattr(block, "text", "") for block in result.content)
        raise RuntimeError(f"tool failed: {why}")
    structured = result.structured_content
    if isinstance(structured, dict):  # the SDK's servers wrap a value that is not an object as {"result": ...}
        return structured["result"] if set(structured) == {"result"} else structured
    texts = [getattr(block, "text", "") for block in result.content if getattr(block, "type", None) == "text"]
    if not texts:
        return None
    text = "\n".join(texts)
    try:
        return json.loads(text)
    except ValueError:
        return text


async def respond_mcp(messages: Sequence[Mapping[str, Any]], tools_url: str | None = None) -> dict[str, Any]:
    """Answer the last user message with tools from the MCP server at `tools_url` (in-process without one).

    Returns:
        `{"text", "usage"}`: no tool calls are reported (they happen at the tool server).
    """
    agent = _the_agent()
    if tools_url is None:
        return agent.respond(messages).to_dict()
    async with streamable_http_client(tools_url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            return _value(await session.call_tool(name, arguments))

        def remote(name: str, arguments: dict[str, Any]) -> Any:
            return anyio.from_thread.run(call, name, arguments)

        reply = await anyio.to_thread.run_sync(lambda: agent.respond(messages, tools=remote))
    usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
    return {"text": reply.text, "usage": usage}


def tool_server() -> MCPServer:
    """The demo's directory tools as an MCP server (stateless lookups over the bundled data)."""
    server = MCPServer("acme-hr-tools", log_level="WARNING")
    agent = _the_agent()

    def tools() -> Turn:
        return Turn(agent, State(), 0)

    @server.tool()
    def lookup_user(name: str | None = None, user_id: str | None = None) -> dict[str, Any] | None:
        """Find a colleague by name or id: id, name, title, team, email, manager."""
        return tools()._tool_lookup_user(name=name, user_id=user_id)

    @server.tool()
    def get_time_off(
        user_id: str | None = None, start: str | None = None, end: str | None = None, team: str | None = None
    ) -> list[dict[str, Any]]:
        """Booked time off (vacation, sick leave), for a person or a team, optionally within dates."""
        return tools()._tool_get_time_off(user_id=user_id, start=start, end=end, team=team)

    @server.tool()
    def list_team(team: str) -> list[dict[str, str]]:
        """The members of a team."""
        return tools()._tool_list_team(team=team)

    @server.tool()
    def list_reports(manager_id: str) -> list[dict[str, str]]:
        """The direct reports of a manager."""
        return tools()._tool_list_reports(manager_id=manager_id)

    return server
