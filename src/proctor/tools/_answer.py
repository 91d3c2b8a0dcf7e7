"""What a tool answered, in MCP's shape and in the transcript's; and the calls seen at the boundary.

Tool answers travel as MCP `CallToolResult` JSON (`content` blocks, `isError`, `structuredContent`): that
is what a real server returns, what a cassette stores and what the agent receives. The transcript keeps
a simpler value: the structured content when there is some, else the text of the text blocks, else the
blocks themselves.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.transcript import ToolCall

__all__ = ["ToolAnswer", "call_key", "merge_calls"]


@dataclass(slots=True)
class ToolAnswer:
    """One answer to one tool call, as MCP `CallToolResult` JSON."""

    content: list[dict[str, Any]] = field(default_factory=list)
    """MCP content blocks, e.g. `[{"type": "text", "text": "Sunny"}]`."""
    is_error: bool = False
    """The call failed; `content` says why (the agent sees it)."""
    structured: dict[str, Any] | None = None
    """MCP `structuredContent`, when the tool returns an object."""
    held: Any = None
    """The value a mock answered with (a list stays a list in the transcript, though MCP sends it as text)."""

    @classmethod
    def of(cls, value: Any, *, is_error: bool = False) -> ToolAnswer:
        """An answer holding `value`: text as a text block, an object also as structured content."""
        if isinstance(value, str):
            return cls([{"type": "text", "text": value}], is_error)
        text = json.dumps(value, ensure_ascii=False)
        return cls([{"type": "text", "text": text}], is_error, value if isinstance(value, dict) else None, value)

    @classmethod
    def error(cls, message: str) -> ToolAnswer:
        """A failed call, with the reason the agent sees."""
        return cls.of(message, is_error=True)

    @classmethod
    def from_mcp(cls, data: dict[str, Any]) -> ToolAnswer:
        """Read `CallToolResult` JSON (as a server sent it or a cassette stores it)."""
        structured = data.get("structuredContent")
        return cls(
            list(data.get("content") or []),
            bool(data.get("isError")),
            structured if isinstance(structured, dict) else None,
        )

    def to_mcp(self) -> dict[str, Any]:
        """The `CallToolResult` JSON (what a cassette stores)."""
        out: dict[str, Any] = {"content": self.content, "isError": self.is_error}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        return out

    @property
    def value(self) -> Any:
        """The transcript's form: the mock's value, structured content, the text blocks' text, or the blocks."""
        if self.held is not None:
            return self.held
        if self.structured is not None:
            return self.structured
        texts = [block.get("text") for block in self.content if block.get("type") == "text"]
        if len(texts) == len(self.content) and all(isinstance(text, str) for text in texts):
            return "\n".join(str(text) for text in texts)
        return self.content


def call_key(name: str, arguments: dict[str, Any]) -> str:
    """The key a call is recorded and looked up under: the tool and its arguments as canonical JSON."""
    return f"{name} {json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(',', ':'))}"


def merge_calls(reported: Sequence[ToolCall], seen: Sequence[ToolCall]) -> list[ToolCall]:
    """The agent's reported calls merged with those Proctor's tool server answered during the same turn.

    A reported call with the same tool and arguments as a seen one (in order) is the same call: it keeps
    the agent's id and gains the server's result, latency and error flag (`source: agent+tools`). Seen
    calls the agent did not report follow, in the order the server answered them (`source: tools`).
    Without seen calls, the reported ones are returned as they are.
    """
    if not seen:
        return list(reported)
    unmatched = list(seen)
    merged: list[ToolCall] = []
    for call in reported:
        key = call_key(call.name, call.arguments)
        match = next((s for s in unmatched if call_key(s.name, s.arguments) == key), None)
        if match is None:
            merged.append(call)
            continue
        unmatched.remove(match)
        merged.append(
            ToolCall(
                call.name,
                call.arguments,
                call.id,
                call.result if call.result is not None else match.result,
                source="agent+tools",
                latency_ms=match.latency_ms,
                error=match.error,
            )
        )
    merged.extend(unmatched)
    return merged
