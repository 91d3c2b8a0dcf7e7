"""Agents used as `python:` targets in runner and CLI tests (importable as `helpers.agents:<name>`)."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio

from proctor.transcript import AgentReply, ToolCall, Usage

CALLS: dict[str, int] = {}


def echo(messages: list[dict[str, str]]) -> str:
    """Reply with the last user message."""
    return messages[-1]["content"]


def memory(messages: list[dict[str, str]]) -> dict[str, Any]:
    """Remember a name told earlier; report a tool call per turn."""
    last = messages[-1]["content"]
    name = None
    for message in messages:
        if message["role"] == "user" and message["content"].startswith("My name is "):
            name = message["content"].removeprefix("My name is ").rstrip(".")
    if last.startswith("My name is"):
        return {"text": "Nice to meet you.", "tool_calls": [{"name": "remember", "arguments": {"name": name}}]}
    return {
        "text": f"Your name is {name}." if name else "I don't know your name.",
        "tool_calls": [{"name": "recall", "arguments": {}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }


async def json_agent(messages: list[dict[str, str]]) -> AgentReply:
    """Reply with JSON, asynchronously."""
    return AgentReply(
        text=json.dumps({"answer": messages[-1]["content"], "days": 3}),
        tool_calls=[ToolCall("lookup", {"q": messages[-1]["content"]})],
        usage=Usage(3, 4),
    )


def flaky_by_trial(messages: list[dict[str, str]], context: Any = None) -> str:
    """Pass on odd trials, fail on even ones (deterministic 'flakiness')."""
    trial = context.trial if context is not None else 1
    return "yes, confirmed" if trial % 2 == 1 else "no idea"


def crash(messages: list[dict[str, str]]) -> str:
    """Raise, as a broken agent would."""
    raise RuntimeError("agent exploded")


def slow(messages: list[dict[str, str]]) -> str:
    """Take 0.5 s (blocking, in a worker thread)."""
    time.sleep(0.5)
    return "finally"


async def hangs(messages: list[dict[str, str]]) -> str:
    """Answer the first message at once, then never again (an async agent stuck on the event loop)."""
    if len(messages) > 1:
        await anyio.Event().wait()  # never set
    return "first"


def counting(messages: list[dict[str, str]], context: Any = None) -> str:
    """Count calls per case and trial (for resume tests)."""
    key = f"{context.case}#{context.trial}" if context is not None else "?"
    CALLS[key] = CALLS.get(key, 0) + 1
    return "ok"


def watsonx_hr_agent(messages: list[dict[str, str]]) -> dict[str, Any]:
    """The calls of the watsonx ADK's example dataset, made in one turn, and its expected summary."""
    return {
        "text": "Your time off schedule is on January 5, 2025.",
        "tool_calls": [
            {"name": "get_assignment_id_hr_agent", "arguments": {"username": "nwaters"}, "result": "15778303"},
            {
                "name": "get_timeoff_schedule_hr_agent",
                "arguments": {"assignment_id": "15778303", "start_date": "2025-01-01", "end_date": "2025-01-30"},
                "result": ["2025-01-05"],
            },
        ],
    }


SEEDED: list[tuple[str, str]] = []
"""Text seeds `seed` received, with the case they were for."""


def seed(text: str, context: Any = None) -> None:
    """A python target's seed hook: remembers the text."""
    SEEDED.append((text, context.case if context is not None else ""))


def forgetful(messages: list[dict[str, str]]) -> str:
    """Answer where the user works, then forget their name (the README's Lobu migration example)."""
    return "Acme Corp." if len(messages) == 1 else "I don't know."


def by_model(messages: list[dict[str, str]], context: Any = None) -> str:
    """Echo for model `strong`; for any other model, echo only messages with an even number in them."""
    text = messages[-1]["content"]
    if context is not None and context.model == "strong":
        return text
    digits = [int(word) for word in text.split() if word.isdigit()]
    return text if digits and digits[0] % 2 == 0 else "no idea"
