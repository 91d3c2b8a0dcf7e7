"""An agent exposed as an MCP tool, built with the official SDK (`MCPServer`), for the `mcp` target.

`ask(message, session_id)` remembers a name per session ("My name is Alice." / "What is my name?"),
and answers "weather in <city>" with the `get_weather` tool of the MCP server named by the environment
variable `PROCTOR_TOOLS_URL` (set by Proctor for agent processes it starts), reporting nothing about it.
"fail" answers with an error. Run as a script it serves over stdio; `build()` gives the server.
"""

from __future__ import annotations

import os
import re

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer


async def _weather(city: str) -> str:
    url = os.environ.get("PROCTOR_TOOLS_URL")
    if not url:
        return "I have no weather tool."
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        result = await session.call_tool("get_weather", {"city": city})
    return " ".join(getattr(block, "text", "") for block in result.content)


def build() -> MCPServer:
    """The agent's server."""
    server = MCPServer("memory-agent", log_level="WARNING")
    names: dict[str, str] = {}

    @server.tool()
    async def ask(message: str, session_id: str = "") -> str:
        """Talk to the agent."""
        if message == "fail":
            raise ValueError("the agent broke")
        weather = re.search(r"weather in (\w+)", message, re.I)
        if weather:
            return await _weather(weather.group(1))
        if message.startswith("My name is "):
            names[session_id] = message.removeprefix("My name is ").rstrip(".")
            return "Nice to meet you."
        name = names.get(session_id)
        return f"Your name is {name}." if name else "I don't know your name."

    @server.tool()
    def recap(message: str, history: list[dict[str, str]], mood: str = "plain") -> dict[str, object]:
        """Say how long the conversation is (the history Proctor sends), as structured content."""
        users = [m["content"] for m in history if m["role"] == "user"]
        return {"reply": f"{len(history)} messages; you said: {' / '.join(users)} ({mood})", "count": len(history)}

    return server


if __name__ == "__main__":
    build().run()
