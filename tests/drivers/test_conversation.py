"""`proctor.drivers.conversation.exchange`: one user message, its reply under the turn's timeout."""

from __future__ import annotations

import anyio
import pytest

from proctor.drivers.conversation import Conversation, exchange
from proctor.errors import TargetTimeout
from proctor.transcript import AgentReply

pytestmark = pytest.mark.anyio


class _Session:
    """A session whose replies take `seconds`; `replies_instantly` is what it promises."""

    def __init__(self, seconds: float, *, replies_instantly: bool = False) -> None:
        self.seconds = seconds
        self.replies_instantly = replies_instantly

    async def send(self, message: str) -> AgentReply:
        if self.seconds:
            await anyio.sleep(self.seconds)
        return AgentReply(f"re: {message}", latency_ms=1.5)

    async def aclose(self) -> None:
        return None


async def test_both_messages_are_recorded() -> None:
    for session in (_Session(0), _Session(0, replies_instantly=True), _Session(0.01)):
        conversation = Conversation()
        await exchange(session, conversation, "hi", 5)
        assert [(m.role, m.content, m.latency_ms) for m in conversation.messages] == [
            ("user", "hi", None),
            ("assistant", "re: hi", 1.5),
        ]


async def test_a_reply_that_waits_past_the_timeout_is_a_target_timeout() -> None:
    conversation = Conversation()
    with pytest.raises(TargetTimeout, match=r"no reply within 0\.05 s"):
        await exchange(_Session(10), conversation, "hi", 0.05)
    assert [m.role for m in conversation.messages] == ["user"]


async def test_a_session_whose_replies_never_wait_gets_no_timer() -> None:
    # the promise is the session's (the python target makes it only for an `async def` that never awaits):
    # no timer is set, so one that broke it would not be cut short
    conversation = Conversation()
    await exchange(_Session(0.05, replies_instantly=True), conversation, "hi", 0.01)
    assert conversation.messages[-1].content == "re: hi"
