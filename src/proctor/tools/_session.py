"""An agent session whose replies carry the tool calls Proctor's tool server answered during each turn."""

from __future__ import annotations

from typing import Any

from proctor.tools._answer import merge_calls
from proctor.tools._server import ToolReplayError, TrialTools
from proctor.transcript import AgentReply

__all__ = ["ToolCallsSession"]


class ToolCallsSession:
    """Wraps a target's session: after each reply, the turn's calls at the boundary join the reply's.

    Every other attribute (e.g. `object_context`) is the wrapped session's.
    """

    def __init__(self, session: Any, tools: TrialTools) -> None:
        """Wrap `session`; calls made before now (while seeding) are not the conversation's."""
        self._session = session
        self._tools = tools
        tools.drain()
        tools.take_misses()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def send(self, message: str) -> AgentReply:
        """Send the message; merge the turn's tool calls into the reply.

        Raises:
            ToolReplayError: The agent made a call its cassette does not hold (the trial is an error).
            proctor.errors.TargetError: As the wrapped session.
        """
        tools = self._tools
        tools.conversation.append({"role": "user", "content": message})
        reply: AgentReply = await self._session.send(message)
        reply.tool_calls = merge_calls(reply.tool_calls, tools.drain())
        tools.conversation.append({"role": "assistant", "content": reply.text})
        misses = tools.take_misses()
        if misses:
            raise ToolReplayError(f"the agent made calls the cassette does not hold: {'; '.join(misses)}")
        return reply

    async def aclose(self) -> None:
        """Close the wrapped session."""
        await self._session.aclose()
