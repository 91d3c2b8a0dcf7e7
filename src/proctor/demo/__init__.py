"""A bundled example agent to try Proctor on: a deterministic, tool-using HR assistant.

The agent has no model and no randomness. It parses requests with keywords and regular expressions,
runs tools over bundled data (twelve employees, a time-off calendar frozen at Monday 2025-06-02,
per-conversation reminders, and the HR system behind the watsonx `hr_agent` tools
`get_assignment_id_hr_agent` and `get_timeoff_schedule_hr_agent`) and reports the tool calls it made.
Ask "as JSON" to get a JSON object.

It is reachable four ways, all answering from the same `HRAgent`:

* `respond` here, as a Python target: `{type: python, callable: proctor.demo:respond}`;
* `python -m proctor.demo serve` (needs the `serve` extra), which serves an OpenAI-compatible
  `/v1/chat/completions`, a REST API with sessions under `/api/sessions`, the Lobu gateway protocol
  under `/api/v1/agents`, and (with the `a2a` extra) the A2A protocol under `/a2a`;
* `respond_mcp`, its MCP mode (needs the `tools` extra): the agent takes its tools from the MCP server
  Proctor hands it (`tools_url`) and reports no tool calls; `python -m proctor.demo tools` serves its
  own directory tools as an MCP server (stdio), to proxy and record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from proctor.demo._agent import AGENT_NAME, HRAgent, Reply

__all__ = ["AGENT_NAME", "HRAgent", "Reply", "respond", "respond_mcp"]

_agent: HRAgent | None = None


def respond(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Answer the last user message of a conversation (the demo's Python-callable target).

    Args:
        messages: The conversation so far, as `{role, content}` dicts, oldest first.

    Returns:
        `{"text": ..., "tool_calls": [{"name", "arguments", "result"}], "usage": {"prompt_tokens",
        "completion_tokens"}}`.

    Example:
        ```python
        respond([{"role": "user", "content": "What is Bob's email?"}])["text"]
        # "Bob Smith's email is bob.smith@acme.example."
        ```
    """
    global _agent
    if _agent is None:
        _agent = HRAgent()
    return _agent.respond(messages).to_dict()


async def respond_mcp(messages: Sequence[Mapping[str, Any]], tools_url: str | None = None) -> dict[str, Any]:
    """The agent in MCP mode: the current message's tools run on the MCP server at `tools_url`.

    Returns:
        `{"text", "usage"}`, and no tool calls: Proctor sees them at its tool server.
    """
    # Local: MCP mode needs the optional `tools` extra (the MCP SDK), which `respond` must not load.
    from proctor.demo._mcp import respond_mcp as run

    return await run(messages, tools_url)
