"""A real MCP tool server built with the official SDK (`MCPServer`): the "real tools" to proxy and record.

Run as a script it serves over stdio (`python tests/servers/mcp_weather.py`); `build()` gives the server
to serve over streamable HTTP. Answers are deterministic, and say how often the server was called, so a
test can tell a replayed answer (which never reaches the server) from a live one.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

CALLS: list[tuple[str, dict[str, object]]] = []
"""Calls this process's servers answered, in order."""


def build() -> MCPServer:
    """A server with `get_weather(city)` and `book_room(room, date)`."""
    server = MCPServer("weather", log_level="WARNING")

    @server.tool()
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        CALLS.append(("get_weather", {"city": city}))
        return f"Rain, 12 C in {city}"

    @server.tool()
    def book_room(room: str, date: str) -> str:
        """Book a meeting room for a day."""
        CALLS.append(("book_room", {"room": room, "date": date}))
        if room == "Z9":
            raise ValueError(f"room {room} does not exist")
        return f"Booked {room} on {date} (booking #{len(CALLS)})"

    return server


if __name__ == "__main__":
    build().run()
