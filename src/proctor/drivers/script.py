"""The scripted user: a case's fixed turns, sent in order, each reply timed and its tool calls kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from proctor.drivers.conversation import Conversation, exchange
from proctor.errors import ProctorError

if TYPE_CHECKING:
    from proctor.suite import TurnSpec
    from proctor.targets import Session

__all__ = ["play_script"]


async def play_script(
    session: Session, turns: Sequence[TurnSpec], *, reply_timeout: float, conversation: Conversation | None = None
) -> Conversation:
    """Send each turn's message and wait for the reply (the caller opens and closes the session).

    Args:
        session: An open agent session.
        turns: The scripted turns.
        reply_timeout: Seconds the agent may take per reply.
        conversation: Continue this conversation (e.g. one a simulated arm goes on with); default a new one.

    Never raises for agent problems: a failed turn ends the conversation with `stop` `error` and the
    reason (`turn N: ...`) in `error`; `answered` says how many turns got a reply.
    """
    conversation = conversation if conversation is not None else Conversation()
    for index, turn in enumerate(turns):
        try:
            await exchange(session, conversation, turn.content, reply_timeout)
        except ProctorError as exc:
            return conversation.fail("error", f"turn {index + 1}: {exc}", type(exc).__name__)
        conversation.answered = index + 1
    conversation.stop = "done"
    return conversation
