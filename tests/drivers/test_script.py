"""`proctor.drivers.script`: the scripted user, against a real OpenAI-compatible server on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from proctor.drivers.conversation import Conversation
from proctor.drivers.script import play_script
from proctor.suite import TurnSpec
from proctor.targets import SessionContext, build_target
from proctor.transcript import Usage
from servers.model_server import Reply

TURNS = (TurnSpec(content="Hi"), TurnSpec(content="What is Bob's email?"), TurnSpec(content="Thanks"))


async def play(agent: Any, conversation: Conversation | None = None, reply_timeout: float = 5.0) -> Conversation:
    target = build_target({"type": "openai", "base_url": agent.base_url}, max_connections=2)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        try:
            return await play_script(session, TURNS, reply_timeout=reply_timeout, conversation=conversation)
        finally:
            await session.aclose()
    finally:
        await target.aclose()


@pytest.mark.anyio
async def test_every_turn_is_sent_in_order_and_its_reply_timed(model_server: Any) -> None:
    agent = model_server.script(Reply("Hello."), Reply("bob@example.com"), Reply("You're welcome."))
    conversation = await play(agent)
    assert conversation.stop == "done" and conversation.error is None and conversation.answered == 3
    assert [m.content for m in conversation.messages] == [
        "Hi", "Hello.", "What is Bob's email?", "bob@example.com", "Thanks", "You're welcome.",
    ]  # fmt: skip
    replies = [m for m in conversation.messages if m.role == "assistant"]
    assert all(m.latency_ms is not None and m.latency_ms > 0 for m in replies)
    assert conversation.usage != Usage()  # the server reports tokens; they are summed


@pytest.mark.anyio
async def test_a_failed_turn_ends_the_conversation_with_its_number(model_server: Any) -> None:
    agent = model_server.script(Reply("Hello."), default=Reply("nope", status=400))
    conversation = await play(agent)
    assert conversation.stop == "error" and conversation.answered == 1
    assert conversation.error is not None and conversation.error.startswith("turn 2: ")
    assert conversation.error_type is not None
    assert [m.role for m in conversation.messages] == ["user", "assistant", "user"]


@pytest.mark.anyio
async def test_a_slow_reply_is_a_timeout_not_a_hang(model_server: Any) -> None:
    agent = model_server.script(Reply("Hello.", delay=2.0))
    conversation = await play(agent, reply_timeout=0.2)
    assert (conversation.stop, conversation.error, conversation.error_type) == (
        "error", "turn 1: no reply within 0.2 s", "TargetTimeout",
    )  # fmt: skip


@pytest.mark.anyio
async def test_a_given_conversation_is_continued(model_server: Any) -> None:
    agent = model_server.script(default=Reply("ok"))
    start = Conversation(arm="supplied", seed=3, retries=2)
    conversation = await play(agent, start)
    assert conversation is start and conversation.arm == "supplied" and conversation.retries == 2
    assert len(conversation.messages) == 6
