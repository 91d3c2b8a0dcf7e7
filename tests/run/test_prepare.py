"""`prepare`: a session (and its seeds) per conversation, every call to the agent bounded, the close shielded."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from proctor.run import prepare as module
from proctor.run.prepare import prepare
from proctor.suite import Case, PythonTargetSpec, TurnSpec
from proctor.suite._simulate import SeedSpec
from proctor.targets import PythonTarget, SessionContext
from proctor.transcript import AgentReply

pytestmark = pytest.mark.anyio

CONTEXT = SessionContext(case="c", trial=1)


class Session:
    def __init__(self, target: Target) -> None:
        self.target = target

    async def send(self, message: str) -> AgentReply:
        self.target.sent.append(message)
        return AgentReply(f"re: {message}")

    async def aclose(self) -> None:
        await anyio.sleep(self.target.close_takes)  # a close that waits: only a shield lets it finish
        self.target.closed += 1


class Target:
    """Opens sessions at once, except those listed in `hang_on` (1-based), which never open."""

    name = "test"

    def __init__(self, hang_on: tuple[int, ...] = (), close_takes: float = 0.0) -> None:
        self.hang_on, self.close_takes = hang_on, close_takes
        self.opened = self.closed = 0
        self.sent: list[str] = []

    async def open_session(self, context: SessionContext) -> Session:
        self.opened += 1
        if self.opened in self.hang_on:
            await anyio.Event().wait()
        return Session(self)

    async def aclose(self) -> None:
        pass


def case(**fields: object) -> Case:
    return Case(name="c", file=Path("s.yaml"), suite="s", turns=(TurnSpec(content="hi"),), timeout=0.1, **fields)  # type: ignore[arg-type]


async def test_a_session_is_opened_then_closed_after_the_block() -> None:
    target = Target()
    async with prepare(case(), target, CONTEXT) as prepared:
        assert prepared.error is None and prepared.session is not None and prepared.graph is None
        await prepared.session.send("hello")
    assert (target.opened, target.closed, target.sent) == (1, 1, ["hello"])
    assert prepared.session is None


async def test_the_session_is_closed_when_the_block_raises() -> None:
    target = Target()
    with pytest.raises(RuntimeError, match="boom"):
        async with prepare(case(), target, CONTEXT):
            raise RuntimeError("boom")
    assert target.closed == 1


async def test_a_session_that_never_opens_is_an_error_within_the_timeout() -> None:
    started = time.monotonic()
    async with prepare(case(), Target(hang_on=(1,)), CONTEXT) as prepared:
        assert prepared.session is None
        assert (prepared.error, prepared.error_type) == ("could not open a session within 0.1 s", "TargetTimeout")
    assert time.monotonic() - started < 2


async def test_a_seed_session_that_never_opens_is_a_seeding_error() -> None:
    seed = SeedSpec.model_validate({"conversation": [{"content": "My name is Alice"}]})
    target = Target(hang_on=(2,))  # the evaluated session opens; the prior one for the seeds does not
    async with prepare(case(seeds=(seed,)), target, CONTEXT) as prepared:
        assert prepared.error == "seeding: could not open the seed session within 0.1 s"
        assert prepared.error_type == "TargetTimeout"
    assert target.sent == [] and target.closed == 1  # the evaluated session is closed all the same


async def test_conversation_seeds_are_replayed_in_a_prior_session() -> None:
    seed = SeedSpec.model_validate({"conversation": [{"content": "My name is Alice"}]})
    target = Target()
    async with prepare(case(seeds=(seed,)), target, CONTEXT) as prepared:
        assert prepared.error is None and (target.opened, target.closed) == (2, 1)
    assert target.sent == ["My name is Alice"] and target.closed == 2


async def test_the_close_runs_to_its_end_when_the_trial_is_cancelled() -> None:
    target = Target(close_takes=0.05)
    with anyio.move_on_after(0.01) as outer:
        async with prepare(case(), target, CONTEXT):
            await anyio.sleep(1)
    assert outer.cancelled_caught and target.closed == 1


async def test_an_instant_target_is_opened_and_closed_without_a_timer_or_shield(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_timer(*_args: object) -> None:
        raise AssertionError("opening a python session needs no timer")

    monkeypatch.setattr(module, "within", no_timer)
    monkeypatch.setattr(module.anyio, "CancelScope", no_timer)
    target = PythonTarget(PythonTargetSpec(callable="helpers.agents:echo"))
    async with prepare(case(), target, CONTEXT) as prepared:
        assert prepared.error is None and prepared.session is not None
        monkeypatch.undo()  # the turn itself is bounded as always
        assert (await prepared.session.send("hi")).text == "hi"
        monkeypatch.setattr(module.anyio, "CancelScope", no_timer)
    assert prepared.session is None
