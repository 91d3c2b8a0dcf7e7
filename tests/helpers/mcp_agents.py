"""Agents that take their tools over MCP (`helpers.mcp_agents:<name>` as python targets).

They call the tool server whose URL they are given (`tools_url`) with the official SDK's client, and
report no tool calls in their replies: what they did is seen only at the tool server.
"""

from __future__ import annotations

import re
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

_RULES = (
    (re.compile(r"weather in (\w+)", re.I), "get_weather", lambda m: {"city": m.group(1)}),
    (
        re.compile(r"book (?:room )?(\w+) on (\S+?)\.?$", re.I),
        "book_room",
        lambda m: {"room": m.group(1), "date": m.group(2)},
    ),
)


async def desk(messages: list[dict[str, str]], tools_url: str | None = None) -> str:
    """Answer weather questions and room bookings with the tools at `tools_url` (no tool calls reported)."""
    text = messages[-1]["content"]
    if tools_url is None:
        return "I have no tools."
    async with streamable_http_client(tools_url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        available = {tool.name for tool in (await session.list_tools()).tools}
        answers = []
        for pattern, tool, arguments in _RULES:
            match = pattern.search(text)
            if match is None or tool not in available:
                continue
            result = await session.call_tool(tool, arguments(match))
            body = " ".join(getattr(block, "text", "") for block in result.content)
            answers.append(f"Sorry, {tool} failed: {body}" if result.is_error else body)
    return " ".join(answers) or "I cannot help with that."


async def tool_list(messages: list[dict[str, str]], tools_url: str | None = None) -> dict[str, Any]:
    """Reply with the tools the server lists (name: description), for tests of what agents see."""
    assert tools_url is not None
    async with streamable_http_client(tools_url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
    return {
        "text": "; ".join(f"{t.name}: {t.description} {sorted(t.input_schema.get('properties', {}))}" for t in tools)
    }


async def reporting_desk(messages: list[dict[str, str]], tools_url: str | None = None) -> dict[str, Any]:
    """`desk`, reporting its first MCP call (with an id, no result) and a call to a tool of its own."""
    text = await desk(messages, tools_url)
    if "weather" not in messages[-1]["content"]:
        return {"text": text}
    city = messages[-1]["content"].rstrip("?").rsplit(" ", 1)[-1]
    calls = [
        {"id": "c1", "name": "get_weather", "arguments": {"city": city}},
        {"id": "c2", "name": "lookup_notes", "arguments": {}},
    ]
    return {"text": text, "tool_calls": calls}
