"""Scenario scripts: scripted user turns, simulated stretches, checks and judge checkpoints, in order.

A case's `script:` is played step by step on one session, into one `Conversation`:

* `user`: a scripted turn (`exchange`), as `proctor.drivers.script` sends one;
* `simulate: {goal, max_turns, until}`: the simulated user (`proctor.drivers.simulator.Simulator`, with
  the case's persona) pursues `goal` for at most `max_turns` messages; with `until`, a judge checkpoint
  after each reply ends the conversation as soon as the criterion is met; the persona's sign-off ends
  the stretch (the script goes on);
* `check`: a `Checkpoint` here, on the last reply or on the conversation so far; checks are run
  afterwards by the check phase on the transcript as it was at that point (the same result as running
  them live, without holding the agent up);
* `judge`: a judge checkpoint; when the judge finds the criterion met, the conversation ends here.

A scripted case (`turns:`) is the script of its user steps; a simulated case is its turns then one
stretch: the older forms are special cases, played by their own drivers.

The driver decides nothing about checks: the judge is a callable the runner passes (`JudgeCheckpoint`),
and the checkpoints are handed back with the conversation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from proctor.drivers.conversation import Conversation, exchange
from proctor.errors import ModelError, ProctorError
from proctor.suite import AssertionSpec, SimulatedTask
from proctor.transcript import Message

if TYPE_CHECKING:
    from proctor.drivers.simulator import Simulator
    from proctor.suite import ScriptStep, SimulateSpec, StretchSpec
    from proctor.targets import Session

__all__ = ["Checkpoint", "JudgeCheckpoint", "ScenarioRun", "play_scenario"]

JudgeCheckpoint = Callable[[int, str, list[Message]], Awaitable[bool]]
"""`(step index, criterion, conversation so far) -> met?`: the runner's judge; it records its verdict."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Checks a script step asks for, and where in the conversation they look."""

    step: int
    """0-based index of the script step."""
    specs: tuple[AssertionSpec, ...]
    """The checks."""
    on: Literal["reply", "conversation"]
    """`reply`: the last reply at that point; `conversation`: the conversation so far."""
    reply: int | None
    """0-based index of the reply checked (`None`: there was no reply yet)."""
    upto: int
    """Messages in the conversation at that point."""


@dataclass(slots=True)
class ScenarioRun:
    """A played script: the conversation, its checkpoints, and the steps it never reached."""

    conversation: Conversation
    """What was said, and why it ended (`judge`: a checkpoint's criterion was met)."""
    checkpoints: list[Checkpoint] = field(default_factory=list)
    """Checks to run, in script order."""
    unreached: list[int] = field(default_factory=list)
    """0-based indexes of the steps not played (the conversation ended before them)."""
    ended_by: int | None = None
    """The judge checkpoint step that ended the conversation, if one did."""


def _replies(conversation: Conversation) -> int:
    return sum(1 for message in conversation.messages if message.role == "assistant")


async def play_scenario(
    session: Session,
    steps: Sequence[ScriptStep],
    *,
    reply_timeout: float,
    simulator: Simulator | None = None,
    simulate: SimulateSpec | None = None,
    judge: JudgeCheckpoint | None = None,
    seed: int = 0,
    conversation: Conversation | None = None,
) -> ScenarioRun:
    """Play a scenario script on an open session (the caller opens and closes it).

    Args:
        session: An open agent session.
        steps: The script.
        reply_timeout: Seconds the agent may take per reply.
        simulator: Plays the simulated stretches (required when the script has any).
        simulate: The case's `simulate:` block: the stretches' persona, prompt and facts.
        judge: Decides judge checkpoints; without one they never end the conversation.
        seed: Seeds the simulator's sampling.
        conversation: Continue this conversation; default a new one.

    Never raises for agent or simulator problems: they end the conversation (`stop` `error` or
    `simulator_error`, the reason in `error`), and the steps after are `unreached`.
    """
    run = ScenarioRun(conversation if conversation is not None else Conversation(seed=seed))
    conv = run.conversation
    for index, step in enumerate(steps):
        if conv.error is not None or conv.stop == "judge":
            run.unreached.append(index)
            continue
        if step.user is not None:
            if not await _user(session, conv, step.user, reply_timeout):
                run.unreached.append(index)  # no reply to check
                continue
            if step.assert_:
                run.checkpoints.append(_checkpoint(index, step.assert_, "reply", conv))
        elif step.check is not None:
            run.checkpoints.append(_checkpoint(index, step.check, step.on, conv))
        elif step.simulate is not None:
            if simulator is None or simulate is None:
                raise ValueError("a script with simulated stretches needs a simulator and the case's simulate block")
            await _stretch(session, conv, step.simulate, index, simulator, simulate, judge, seed, reply_timeout)
        elif step.judge is not None and judge is not None and await judge(index, step.judge, list(conv.messages)):
            conv.stop = "judge"
        if conv.stop == "judge":
            run.ended_by = index
    if conv.error is None and conv.stop != "judge":
        conv.stop = "done"
    return run


def _checkpoint(step: int, specs: Sequence[AssertionSpec], on: str, conv: Conversation) -> Checkpoint:
    replies = _replies(conv)
    where: Literal["reply", "conversation"] = "conversation" if on == "conversation" else "reply"
    return Checkpoint(step, tuple(specs), where, replies - 1 if replies else None, len(conv.messages))


async def _user(session: Session, conv: Conversation, text: str, reply_timeout: float) -> bool:
    try:
        await exchange(session, conv, text, reply_timeout)
    except ProctorError as exc:
        conv.fail("error", f"turn {_replies(conv) + 1}: {exc}", type(exc).__name__)
        return False
    conv.answered += 1
    return True


async def _stretch(
    session: Session,
    conv: Conversation,
    stretch: StretchSpec,
    step: int,
    simulator: Simulator,
    simulate: SimulateSpec,
    judge: JudgeCheckpoint | None,
    seed: int,
    reply_timeout: float,
) -> None:
    """A simulated stretch: up to `max_turns` simulated user messages toward the goal."""
    spec = simulate.model_copy(update={"tasks": [SimulatedTask(task=stretch.goal)]})
    signoff = spec.persona.signoff.lower()
    for _ in range(stretch.max_turns):
        try:
            text, response = await simulator.next_message(spec, "supplied", conv.messages, seed)
        except ModelError as exc:
            conv.fail("simulator_error", f"the simulator model failed: {exc}", type(exc).__name__)
            return
        conv.simulator_calls += 1
        conv.simulator_usage = conv.simulator_usage + response.usage
        if response.cost_usd is not None:
            conv.simulator_cost_usd = (conv.simulator_cost_usd or 0.0) + response.cost_usd
        if signoff in text.lower():
            conv.messages.append(Message("user", text))
            return
        if not await _user(session, conv, text, reply_timeout):
            return
        if stretch.until is not None and judge is not None and await judge(step, stretch.until, list(conv.messages)):
            conv.stop = "judge"
            return
