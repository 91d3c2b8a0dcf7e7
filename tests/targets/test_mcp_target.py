"""The `mcp` target: an agent exposed as an MCP tool (the official SDK's `MCPServer`), over HTTP and stdio."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.errors import TargetError
from proctor.run import RunOptions, run_sync
from proctor.suite import McpTargetSpec, load_suites
from proctor.targets import SessionContext, build_target
from servers import mcp_agent
from servers._serve import serve_app

AGENT_SCRIPT = Path(mcp_agent.__file__).resolve()


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(mcp_agent.build().streamable_http_app(), lifespan="on") as url:
        yield f"{url}/mcp"


@pytest.mark.anyio
async def test_each_turn_is_one_call_and_each_trial_a_session(agent_url: str) -> None:
    target = build_target(McpTargetSpec(url=agent_url, tool="ask", session_arg="session_id"))
    one = await target.open_session(SessionContext(case="c", trial=1))
    two = await target.open_session(SessionContext(case="c", trial=2))
    assert (await one.send("My name is Alice.")).text == "Nice to meet you."
    reply = await one.send("What is my name?")
    assert reply.text == "Your name is Alice." and reply.latency_ms > 0
    assert reply.raw["content"] == [{"type": "text", "text": "Your name is Alice."}]
    assert (await two.send("What is my name?")).text == "I don't know your name."
    with pytest.raises(TargetError, match=r"answered with an error: .*ask"):
        await one.send("fail")
    await one.aclose()
    await two.aclose()
    with pytest.raises(TargetError, match="the MCP session is closed"):
        await one.send("hello")
    await target.aclose()


@pytest.mark.anyio
async def test_history_fixed_arguments_and_a_reply_key(agent_url: str) -> None:
    spec = McpTargetSpec(
        url=agent_url, tool="recap", history_arg="history", arguments={"mood": "calm"}, reply_key="reply"
    )
    target = build_target(spec)
    session = await target.open_session(SessionContext(case="c", trial=1))
    assert (await session.send("hi")).text == "1 messages; you said: hi (calm)"
    assert (await session.send("again")).text == "3 messages; you said: hi / again (calm)"
    await session.aclose()
    missing = build_target(McpTargetSpec(url=agent_url, tool="recap", history_arg="history", reply_key="nope"))
    session = await missing.open_session(SessionContext(case="c", trial=1))
    with pytest.raises(TargetError, match="the result has no 'nope'"):
        await session.send("hi")
    await session.aclose()


@pytest.mark.anyio
async def test_an_unreachable_server_is_a_target_error() -> None:
    target = build_target({"type": "mcp", "url": "http://127.0.0.1:9/mcp", "tool": "ask"})
    with pytest.raises(TargetError, match="cannot open an MCP session"):
        await target.open_session(SessionContext(case="c", trial=1, timeout=5))


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return run_sync(load_suites([path], registry), RunOptions(write_results=False)).data


def test_a_stdio_agent_gets_the_tools_url_and_its_calls_are_seen(tmp_path: Path) -> None:
    data = run(
        tmp_path,
        f"""\
name: stdio-agent
target: {{type: mcp, command: ["{sys.executable}", "{AGENT_SCRIPT}"], tool: ask, session_arg: session_id}}
trials: 1
tools:
  get_weather: {{description: Weather, mock: "Sunny in {{{{ city }}}}"}}
turns:
  - content: "My name is Alice."
  - content: "What is my name?"
    assert: [{{type: contains, value: Alice}}]
  - content: "What is the weather in Oslo?"
    assert: [{{type: equals, value: "Sunny in Oslo"}}, {{type: tool-called, value: get_weather}}]
""",
    )
    case = data["cases"][0]
    assert case["status"] == "passed", case["trials"][0]
    (call,) = case["trials"][0]["turns"][5]["tool_calls"]
    assert call["arguments"] == {"city": "Oslo"} and call["source"] == "tools"
