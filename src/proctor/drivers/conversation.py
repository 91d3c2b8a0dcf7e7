"""What every driver returns: one `Conversation`, and the one way a user message reaches the agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from proctor._trace_context import note_reply
from proctor.errors import TargetTimeout
from proctor.targets._deadline import within
from proctor.transcript import Message, Usage

if TYPE_CHECKING:
    from proctor.targets import Session

__all__ = ["Conversation", "Stop", "exchange"]

Stop = Literal["done", "signoff", "max_turns", "error", "simulator_error", "judge"]
"""Why a conversation ended: every scripted turn was answered (`done`), the simulated user's sign-off,
`max_turns` (aborted), an agent `error`, a `simulator_error`, or a scenario's `judge` checkpoint found
its criterion met."""


@dataclass(slots=True)
class Conversation:
    """One conversation with the agent: scripted, simulated, or scripted then simulated."""

    arm: str = ""
    """The arm it belongs to (`withheld`, `supplied`); empty for a scripted conversation."""
    messages: list[Message] = field(default_factory=list)
    """User and agent messages in order (a simulated user's sign-off message last, when there was one)."""
    stop: Stop = "done"
    """Why it ended."""
    error: str | None = None
    """The agent's or the simulator model's error, when there was one."""
    error_type: str | None = None
    """The error's class name."""
    retries: int = 0
    """Agent calls re-sent after retryable failures (each a failed attempt)."""
    usage: Usage = field(default_factory=Usage)
    """The agent's tokens."""
    simulator_usage: Usage = field(default_factory=Usage)
    """The simulator model's tokens."""
    simulator_calls: int = 0
    """Simulator model calls made."""
    simulator_cost_usd: float | None = None
    """What the simulator's calls cost, when its price is known."""
    trace_ids: list[str] = field(default_factory=list)
    """Trace ids the agent returned."""
    opener: str = ""
    """The simulated user's first message (a greeting or the starting sentence)."""
    seed: int = 0
    """The seed the greeting and the simulator's sampling used."""
    first_simulated: int = 1
    """Index of the first message the simulator wrote (after the opener or the scripted turns)."""
    answered: int = 0
    """Scripted turns the agent answered."""

    @property
    def aborted(self) -> bool:
        """Whether the conversation hit `max_turns` without the sign-off."""
        return self.stop == "max_turns"

    def fail(self, stop: Stop, error: str, error_type: str) -> Conversation:
        """End the conversation on an error; returns it."""
        self.stop, self.error, self.error_type = stop, error, error_type
        return self


async def exchange(session: Session, conversation: Conversation, text: str, reply_timeout: float) -> None:
    """Send `text` as the user, wait up to `reply_timeout` seconds for the reply, and record both.

    Raises:
        proctor.errors.TargetError: The agent failed (`TargetTimeout` when it did not reply in time).
    """
    conversation.messages.append(Message("user", text))
    try:  # a session whose replies never wait cannot hang: no timer (`proctor.targets._base`)
        sending = session.send(text)
        reply = await (sending if getattr(session, "replies_instantly", False) else within(sending, reply_timeout))
    except TimeoutError:
        raise TargetTimeout(f"no reply within {reply_timeout:g} s") from None
    conversation.messages.append(Message("assistant", reply.text, reply.tool_calls, reply.latency_ms))
    note_reply(text, reply)  # for the trial's turn span, when the run exports traces
    conversation.retries += reply.retries
    if reply.usage is not None:
        conversation.usage = conversation.usage + reply.usage
    if reply.trace_id:
        conversation.trace_ids.append(reply.trace_id)
