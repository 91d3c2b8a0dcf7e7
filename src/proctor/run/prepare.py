"""Prepare a conversation: the trial's graph (setups run), a fresh agent session, memory seeds.

Conversation seeds are replayed (their `user` messages, in order) in a session of their own that is
closed before the conversation (`seed_session: prior`, the default), or in the evaluated session itself
(`same`; the seed exchange is then not part of the transcript). Text seeds go to the target's `ingest`
(the `embabel` target's `ingest_url`). A target that cannot take a seed kind raises `ConfigError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from proctor.errors import ConfigError, ProctorError, TargetTimeout
from proctor.suite import Case
from proctor.targets import Session, SessionContext, Target

if TYPE_CHECKING:
    from proctor.state import StateManager

__all__ = ["Prepared", "deliver_seeds", "prepare"]


@dataclass(slots=True)
class Prepared:
    """A conversation ready to start, or the reason it cannot."""

    context: SessionContext
    """The session's context, with the trial graph's address in its variables."""
    session: Session | None = None
    """The open session; `None` when it could not be opened (see `error`)."""
    graph: Any = None
    """The trial's graph, for state assertions; `None` when the case uses none."""
    retries: int = 0
    """Agent calls retried while seeding."""
    error: str | None = None
    """Why the conversation cannot start (the session could not be opened, seeding failed)."""
    error_type: str | None = None
    """The error's class name."""
    warnings: list[str] = field(default_factory=list)
    """Problems after the trial (a failed teardown), added when the graph is released."""

    async def close_session(self) -> None:
        """Close the session now (before judging, which may take a while); later calls do nothing."""
        session, self.session = self.session, None
        if session is not None:
            with anyio.CancelScope(shield=True):
                await session.aclose()

    async def object_context(self, case: Case) -> Any:
        """The agent's object context when the case's own assertions may read it (else `None`).

        A failure to fetch it is a warning, not an error: assertions that need it then say so.
        """
        fetch = getattr(self.session, "object_context", None)
        if not case.assert_ or fetch is None:
            return None
        try:
            with anyio.fail_after(case.timeout):
                return await fetch()
        except (ProctorError, TimeoutError) as exc:
            self.warnings.append(f"could not fetch the agent's object context: {exc or 'timed out'}")
            return None


def _lease(states: StateManager | None, case: Case) -> AbstractAsyncContextManager[Any]:
    return states.trial(case) if states is not None else nullcontext(None)


@asynccontextmanager
async def prepare(
    case: Case, target: Target, context: SessionContext, states: StateManager | None = None
) -> AsyncIterator[Prepared]:
    """Give a conversation its graph, session and seeds; close the session and release the graph after.

    Agent problems never raise: they are in `Prepared.error`.

    Raises:
        proctor.state.StateError: The graph could not be made ready (a setup failed): the trial cannot run.
    """
    async with _lease(states, case) as lease:
        prepared = Prepared(context)
        if lease is not None:
            prepared.context = replace(context, variables={**context.variables, **lease.variables})
            prepared.graph = lease.graph
        await _open(prepared, case, target)
        try:
            yield prepared
        finally:
            await prepared.close_session()
    if lease is not None:
        prepared.warnings.extend(lease.warnings)


async def _open(prepared: Prepared, case: Case, target: Target) -> None:
    try:
        with anyio.fail_after(case.timeout):
            prepared.session = await target.open_session(prepared.context)
    except TimeoutError:
        prepared.error, prepared.error_type = f"could not open a session within {case.timeout:g} s", "TargetTimeout"
        return
    except ProctorError as exc:  # a target error, or a template that cannot render for this trial
        prepared.error, prepared.error_type = f"could not open a session: {exc}", type(exc).__name__
        return
    try:
        prepared.retries += await deliver_seeds(target, prepared.context, prepared.session, case)
    except ProctorError as exc:
        prepared.error, prepared.error_type = f"seeding: {exc}", type(exc).__name__


async def _replay(session: Session, case: Case) -> int:
    retries = 0
    for seed in case.seeds:
        for message in seed.conversation or []:
            if message.role != "user":
                continue
            try:
                with anyio.fail_after(case.timeout):
                    reply = await session.send(message.content)
            except TimeoutError:
                raise TargetTimeout(f"seed message got no reply within {case.timeout:g} s") from None
            retries += reply.retries
    return retries


async def deliver_seeds(target: Target, context: SessionContext, session: Session, case: Case) -> int:
    """Deliver `case.seeds`; returns the agent calls retried while doing so.

    Raises:
        ConfigError: The target cannot take text seeds.
        proctor.errors.TargetError: The agent failed while being seeded.
    """
    if not case.seeds:
        return 0
    retries = 0
    texts = [seed.text for seed in case.seeds if seed.text is not None]
    if texts:
        ingest: Any = getattr(target, "ingest", None)
        if ingest is None:
            raise ConfigError(f"the {target.name} target cannot ingest text seeds (see 'ingest_url')")
        for text in texts:
            try:
                with anyio.fail_after(case.timeout):
                    retries += await ingest(text, context)
            except TimeoutError:
                raise TargetTimeout(f"text seed not ingested within {case.timeout:g} s") from None
    if any(seed.conversation for seed in case.seeds):
        if case.seed_session == "same":
            return retries + await _replay(session, case)
        prior = await target.open_session(context)
        try:
            retries += await _replay(prior, case)
        finally:
            with anyio.CancelScope(shield=True):
                await prior.aclose()
    return retries
