"""The tool server itself: one listener, an endpoint per trial that sees only its case's tools, 404 after."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from proctor.checks import registry
from proctor.suite import Case, load_suites
from proctor.tools import ToolServer

SUITE = """\
name: s
target: "python:helpers.agents:echo"
tools:
  shared: {mock: "file-level"}
cases:
  - name: one
    tools: {only_one: {mock: "1"}}
    turns: [{content: hi}]
  - name: two
    tools: {shared: {mock: "case-level"}}
    turns: [{content: hi}]
"""


def cases(tmp_path: Path) -> dict[str, Case]:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return {case.name: case for case in load_suites([path], registry)[0].cases}


async def tools_and_answer(url: str) -> tuple[list[str], str]:
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        names = sorted(tool.name for tool in (await session.list_tools()).tools)
        result = await session.call_tool("shared", {})
    return names, " ".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.anyio
async def test_trials_see_only_their_tools_and_ended_trials_are_gone(tmp_path: Path) -> None:
    by_name = cases(tmp_path)
    async with ToolServer() as server:
        async with server.trial(by_name["one"]) as one, server.trial(by_name["two"]) as two:
            assert one.url != two.url and one.url.startswith(server.base_url + "/t/")
            assert await tools_and_answer(one.url) == (["only_one", "shared"], "file-level")
            assert await tools_and_answer(two.url) == (["shared"], "case-level")  # the case's overrides
            assert [c.name for c in one.drain()] == ["shared"] and one.drain() == []
        async with httpx.AsyncClient() as client:
            response = await client.post(one.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert response.status_code == 404 and "no such trial endpoint" in response.text
        assert server.trials_served == 2


@pytest.mark.anyio
async def test_the_stdio_bridge_serves_a_trials_tools_and_its_calls_land_in_the_trial(tmp_path: Path) -> None:
    """An agent that starts its MCP servers itself gets the trial's tools from `PROCTOR_TOOLS_COMMAND`."""
    import shlex

    from mcp.client.stdio import StdioServerParameters, stdio_client

    from proctor.targets._mcp import process_environment

    async with ToolServer() as server, server.trial(cases(tmp_path)["one"]) as trial:
        command = shlex.split(process_environment({"tools_url": trial.url})["PROCTOR_TOOLS_COMMAND"])
        parameters = StdioServerParameters(command=command[0], args=command[1:])
        async with stdio_client(parameters) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            names = sorted(tool.name for tool in (await session.list_tools()).tools)
            result = await session.call_tool("only_one", {"x": 1})
        assert names == ["only_one", "shared"]
        assert [getattr(block, "text", "") for block in result.content] == ["1"]
        assert [(c.name, c.arguments) for c in trial.drain()] == [("only_one", {"x": 1})]
