"""Callables for the `python` target tests (referenced as `servers.pyagents:<name>`)."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio

from proctor.targets import SessionContext
from proctor.transcript import AgentReply, ToolCall, Usage

calls: list[dict[str, Any]] = []


def echo(messages: list[dict[str, str]]) -> str:
    calls.append({"thread": threading.current_thread().name, "messages": messages})
    return f"{len(messages)} messages; last: {messages[-1]['content']}"


async def async_echo(messages: list[dict[str, str]]) -> str:
    calls.append({"thread": threading.current_thread().name, "messages": messages})
    return f"async {len(messages)}: {messages[-1]['content']}"


def with_context(messages: list[dict[str, str]], context: SessionContext) -> str:
    return f"{context.case}#{context.trial} model={context.model}"


def as_dict(messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "content": "booked",
        "tool_calls": [
            {"name": "book_room", "arguments": '{"room": "4B", "hours": 2}'},
            {"function": {"name": "notify", "arguments": "not json"}, "id": "n1"},
        ],
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "trace_id": 42,
    }


async def as_reply(messages: list[dict[str, str]]) -> AgentReply:
    return AgentReply(
        text="done",
        tool_calls=[ToolCall("lookup", {"id": 7})],
        usage=Usage(5, 6),
        trace_id="t-1",
    )


def boom(messages: list[dict[str, str]]) -> str:
    raise ValueError(f"cannot handle {messages[-1]['content']!r}")


def bad_return(messages: list[dict[str, str]]) -> int:
    return 42


class Agent:
    prefix = "agent"

    @staticmethod
    def reply(messages: list[dict[str, str]]) -> str:
        return f"{Agent.prefix}: {messages[-1]['content']}"


class AsyncCallable:
    async def __call__(self, messages: list[dict[str, str]]) -> str:
        calls.append({"thread": threading.current_thread().name, "messages": messages})
        return "called"


async_object = AsyncCallable()
not_callable = 3


def sleepy(messages: list[dict[str, str]]) -> str:
    time.sleep(1.0)
    return "finally"


def runtime_context(messages: list[dict[str, str]], context: SessionContext) -> str:
    """Answers with the watsonx runtime context and the uploaded file it was given."""
    upload = context.variables.get("file_upload") or {}
    return f"user={context.variables['runtime_context']['sap_username']} file={upload.get('file_id')}"


async def awaits_then_answers(messages: list[dict[str, str]]) -> str:
    """An async agent that waits (a millisecond) before answering."""
    await anyio.sleep(0.001)
    return f"waited: {messages[-1]['content']}"
