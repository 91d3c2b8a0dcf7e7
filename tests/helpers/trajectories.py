"""Builders for trajectory tests: transcripts with tool calls, judges on the scripted model server, and a
way to make the embeddings extra look uninstalled."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check
from proctor.checks._judging import Judge
from proctor.models import ModelSettings, _embeddings, get_model
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply, Message, ToolCall
from servers.model_server import Script

Call = tuple[str, dict[str, Any]]


def transcript(*replies: tuple[str, list[Call]] | tuple[str, list[Call], float]) -> list[Message]:
    """A conversation: one user message before each reply `(text, [(tool, args), ...][, latency_ms])`."""
    messages: list[Message] = []
    for number, reply in enumerate(replies, start=1):
        text, calls = reply[0], reply[1]
        latency = reply[2] if len(reply) > 2 else 10.0  # type: ignore[misc]
        messages.append(Message("user", f"message {number}"))
        messages.append(Message("assistant", text, [ToolCall(name, dict(args)) for name, args in calls], latency))
    return messages


def assertion(kind: str, value: Any, **extra: Any) -> AssertionSpec:
    """An assertion validated against the real registry (as the loader does)."""
    return AssertionSpec.model_validate({"type": kind, "value": value, **extra}, context={"checks": registry})


async def check(
    spec: AssertionSpec, messages: list[Message], judge: Judge | None = None, *, turn: int | None = None
) -> CheckResult:
    """Run a check on the whole conversation, or on reply number `turn` (0-based) when given."""
    if turn is None:
        context = CheckContext(None, None, messages, "case", judge=judge)
    else:
        end = 2 * turn + 2
        last = messages[end - 1]
        reply = AgentReply(last.content, last.tool_calls, last.latency_ms or 0.0)
        context = CheckContext(reply, turn, messages[:end], "case", judge=judge)
    result = run_check(spec, context)
    if inspect.isawaitable(result):
        return await result
    return result


def judge_for(script: Script) -> Judge:
    """A judge on a script of the scripted OpenAI-compatible model server (no cache, fast retries)."""
    settings = ModelSettings(
        base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02
    )
    return Judge(get_model("openai/judge-test", settings=settings))


def without_embeddings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the embeddings extra look uninstalled (the loader's import fails); returns a list that counts
    the import attempts."""
    attempts: list[int] = []

    def missing() -> Any:
        attempts.append(1)
        raise _embeddings.EmbeddingsUnavailable(
            "the embedding model is not installed (onnxruntime missing): " + _embeddings.INSTALL_HINT
        )

    monkeypatch.setattr(_embeddings, "_import_runtime", missing)
    monkeypatch.setattr(_embeddings, "_default", None)
    monkeypatch.setattr(_embeddings, "_unavailable", None)
    return attempts
