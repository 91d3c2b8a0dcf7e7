"""The `Target` protocol: how Proctor talks to the agent under test.

A target is built once per run from a `TargetSpec` (it may hold pooled connections); each trial opens
its own `Session` (a fresh conversation on the agent), sends the user's messages in order and closes it.

Every call that can wait is bounded: opening a session by the case's timeout, each message by the
per-turn timeout, and a session's close is shielded from cancellation. Two optional attributes (not
part of the protocols) let a target whose calls are plain in-memory work skip that machinery: a target
with `opens_instantly = True` promises that `open_session` never waits (no I/O, no `await` that
suspends), a session with `closes_instantly = True` the same of `aclose`, and a session with
`replies_instantly = True` the same of `send` (a reply that never waits cannot be cut short by a
timer, so none is set). The in-process `python` target sets the first two; its sessions set the third
when the agent is an `async def` that never awaits, else its `send` runs the agent's code and stays bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from proctor._slots import slot_init
from proctor.transcript import AgentReply

__all__ = ["DEFAULT_MAX_CONNECTIONS", "Session", "SessionContext", "Target", "TargetFactory"]

DEFAULT_MAX_CONNECTIONS = 16
"""Connections one target may open at once unless the run says otherwise."""


@slot_init  # made once per trial: the frozen dataclass's own `__init__` cost ~4 % of a trial in-process
@dataclass(frozen=True, slots=True)
class SessionContext:
    """What a target may know about the trial a session belongs to (frozen: a target cannot change it)."""

    case: str
    """The case name."""
    trial: int
    """The 1-based trial number."""
    model: str | None = None
    """The `--model` under evaluation, if any (sent to the agent by targets that support it)."""
    timeout: float = 120.0
    """The per-turn timeout in seconds; targets use it for their own I/O timeouts."""
    variables: dict[str, Any] = field(default_factory=dict)
    """Extra template variables (e.g. a state backend's address), for targets that render templates."""


@runtime_checkable
class Session(Protocol):
    """One conversation with the agent. Not shared between trials."""

    async def send(self, message: str) -> AgentReply:
        """Send one user message and return the agent's whole reply.

        Raises:
            proctor.errors.TargetError: The agent could not be reached or answered badly. Retryable
                failures (connection errors, 5xx, 429) have already been retried by the target.
        """
        ...

    async def aclose(self) -> None:
        """End the conversation on the agent (best effort; must not raise on an agent error)."""
        ...


@runtime_checkable
class Target(Protocol):
    """The agent under test."""

    name: str
    """A short description for reports, e.g. `openai http://127.0.0.1:8000/v1`."""

    async def open_session(self, context: SessionContext) -> Session:
        """Open a fresh conversation for one trial.

        Raises:
            proctor.errors.TargetError: The session could not be created.
        """
        ...

    async def aclose(self) -> None:
        """Release pooled connections at the end of the run."""
        ...


TargetFactory = Callable[[Any], Target]
"""Builds a target from its validated spec (one of `proctor.suite.TargetSpec`'s members)."""
