"""What was said and done in a conversation: the data every layer shares.

This module sits at the bottom of the package (it imports nothing from Proctor) because targets produce
these values, checks read them and results store them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["AgentReply", "Message", "ToolCall", "Usage"]


@dataclass(slots=True)
class ToolCall:
    """One tool call the agent made (or reported making) during a turn."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments, decoded from JSON when the agent sent a string."""
    id: str | None = None
    """The call id, when the agent gives one."""
    result: Any = None
    """The tool's result, when the agent reports it (or Proctor's tool server answered it)."""
    source: str | None = None
    """Who saw the call: `None` or `agent` (the agent's API reported it), `tools` (Proctor's tool server
    answered it; the agent reported nothing), `agent+tools` (both: the same call, merged)."""
    latency_ms: float | None = None
    """How long the tool took to answer, when Proctor's tool server answered it."""
    error: bool = False
    """The tool answered with an error (Proctor's tool server knows; agents rarely report it)."""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form used in results files (`source`, `latency_ms`, `error` only when known)."""
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.id is not None:
            out["id"] = self.id
        if self.result is not None:
            out["result"] = self.result
        if self.source is not None:
            out["source"] = self.source
        if self.latency_ms is not None:
            out["latency_ms"] = round(self.latency_ms, 3)
        if self.error:
            out["error"] = True
        return out


@dataclass(slots=True)
class Usage:
    """Token counts for one reply (or a sum of replies)."""

    prompt_tokens: int = 0
    """Tokens sent to the model."""
    completion_tokens: int = 0
    """Tokens the model generated."""

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)

    def to_dict(self) -> dict[str, int]:
        """Return the JSON form used in results files."""
        return {
            "prompt": self.prompt_tokens,
            "completion": self.completion_tokens,
            "total": self.total_tokens,
        }


@dataclass(slots=True)
class AgentReply:
    """The agent's answer to one user message, as a target reports it."""

    text: str
    """The reply text shown to the user."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Tool calls the agent made while producing this reply, in order."""
    latency_ms: float = 0.0
    """Wall time from sending the message to having the whole reply, in milliseconds."""
    usage: Usage | None = None
    """Token usage, when the agent reports it."""
    raw: Any = None
    """The reply body as received (decoded JSON, or text), for debugging and custom checks."""
    trace_id: str | None = None
    """A trace or request id the agent returned, for finding the turn in its observability tools."""
    retries: int = 0
    """How many times the message was re-sent after a retryable failure before this reply."""


@dataclass(slots=True)
class Message:
    """One message of a transcript."""

    role: Literal["user", "assistant", "system"]
    """Who said it."""
    content: str
    """What was said."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """For assistant messages: the tool calls made for this reply."""
    latency_ms: float | None = None
    """For assistant messages: how long the reply took."""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form used in results files."""
        return {
            "role": self.role,
            "content": self.content,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 3),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
        }
