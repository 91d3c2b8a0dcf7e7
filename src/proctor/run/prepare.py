"""Prepare a conversation: the trial's graph (setups run), a fresh agent session, memory seeds.

Conversation seeds are replayed (their `user` messages, in order) in a session of their own that is
closed before the conversation (`seed_session: prior`, the default), or in the evaluated session itself
(`same`; the seed exchange is then not part of the transcript). Text seeds go to the target's `ingest`
(the `embabel` target's `ingest_url`). A target that cannot take a seed kind raises `ConfigError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from proctor.errors import ConfigError, ProctorError, TargetTimeout
from proctor.suite import Case
from proctor.targets import Session, SessionContext, Target
from proctor.targets._deadline import within

if TYPE_CHECKING:
    from proctor.state import StateManager
    from proctor.tools import ModelFor, ToolServer, TrialTools

__all__ = ["TOOL_SERVER", "Prepared", "deliver_seeds", "prepare", "serve_tools"]

TOOL_SERVER: ContextVar[ToolServer | None] = ContextVar("proctor_tool_server", default=None)
"""The run's tool server, for the trials it runs (set by `serve_tools`; tasks inherit it)."""


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
    tools: TrialTools | None = None
    """The trial's tool endpoint and the calls made to it; `None` when the case declares no tools."""

    async def close_session(self) -> None:
        """Close the session now (before judging, which may take a while); later calls do nothing."""
        session, self.session = self.session, None
        if session is None:
            return
        if getattr(session, "closes_instantly", False):  # nothing to wait for, so nothing to shield
            await session.aclose()
            return
        with anyio.CancelScope(shield=True):
            await session.aclose()

    async def object_context(self, case: Case) -> Any:
        """The agent's object context when the case's own assertions may read it (else `None`).

        A failure to fetch it is a warning, not an error: assertions that need it then say so.
        """
        if not case.assert_:
            return None
        fetch = getattr(self.session, "object_context", None)
        if fetch is None:
            return None
        try:
            return await within(fetch(), case.timeout)
        except (ProctorError, TimeoutError) as exc:
            self.warnings.append(f"could not fetch the agent's object context: {exc or 'timed out'}")
            return None


def _lease(states: StateManager | None, case: Case) -> AbstractAsyncContextManager[Any]:
    return states.trial(case) if states is not None else nullcontext(None)


def prepare(
    case: Case, target: Target, context: SessionContext, states: StateManager | None = None
) -> AbstractAsyncContextManager[Prepared]:
    """Give a conversation its graph, session and seeds; close the session and release the graph after.

    Use as `async with prepare(...) as prepared:`. Agent problems never raise: they are in `Prepared.error`.

    Raises:
        proctor.state.StateError: The graph could not be made ready (a setup failed): the trial cannot run.
    """
    if states is None and not case.tools:  # no graph to lease, no tool endpoint: a session (and seeds) only
        return _Opened(Prepared(context), case, target)
    return _prepare(case, target, context, states)


class _Opened:
    """The session part of `prepare`: open it and deliver the seeds; close it at the end.

    A class rather than a generator-based context manager: it is on every trial's path (measured: ~5 µs
    less per trial than `@asynccontextmanager`).
    """

    __slots__ = ("case", "prepared", "target")

    def __init__(self, prepared: Prepared, case: Case, target: Target) -> None:
        self.prepared, self.case, self.target = prepared, case, target

    async def __aenter__(self) -> Prepared:
        await _open(self.prepared, self.case, self.target)
        return self.prepared

    async def __aexit__(self, *_exc: object) -> None:
        if self.prepared.session is not None:  # a trial closes it before checking: no second coroutine then
            await self.prepared.close_session()


@asynccontextmanager
async def _prepare(
    case: Case, target: Target, context: SessionContext, states: StateManager | None
) -> AsyncIterator[Prepared]:
    """`prepare` with a graph lease or a tool endpoint around the session."""
    async with _lease(states, case) as lease:
        prepared = Prepared(context)
        if lease is not None:
            prepared.context = replace(context, variables={**context.variables, **lease.variables})
            prepared.graph = lease.graph
        async with _tools(case, prepared):
            if prepared.error is None:
                await _open(prepared, case, target)
            if prepared.tools is not None and prepared.session is not None:
                prepared.session = _watched(prepared.session, prepared.tools)
            try:
                yield prepared
            finally:
                await prepared.close_session()
    if lease is not None:
        prepared.warnings.extend(lease.warnings)


@asynccontextmanager
async def serve_tools(cases: Iterable[Case], model_for: ModelFor | None = None) -> AsyncIterator[ToolServer | None]:
    """Run one tool server for the trials of a run when any case declares tools (else nothing starts).

    Trials started inside the block (in tasks created inside it) use it through `TOOL_SERVER`.

    Raises:
        ConfigError: The `tools` extra (the MCP SDK) is not installed.
    """
    if not any(case.tools for case in cases):
        yield None
        return
    server_class = _tool_server_class()
    async with server_class(model_for) as server:
        token = TOOL_SERVER.set(server)
        try:
            yield server
        finally:
            TOOL_SERVER.reset(token)


def _tool_server_class() -> type[ToolServer]:
    try:
        # Local: the MCP SDK is an optional extra, and loads in ~0.6 s; only runs that serve tools pay it.
        from proctor.tools import ToolServer
    except ImportError as exc:
        raise ConfigError(
            f"a case declares tools, which Proctor serves over MCP: pip install 'proctor-eval[tools]' ({exc})"
        ) from None
    return ToolServer


@asynccontextmanager
async def _tools(case: Case, prepared: Prepared) -> AsyncIterator[None]:
    """The trial's tool endpoint (on the run's server, else a private one); a failure is `prepared.error`."""
    if not case.tools:
        yield
        return
    async with AsyncExitStack() as stack:
        try:
            server = TOOL_SERVER.get()
            if server is None:  # a trial run on its own (a library caller): a server of its own
                server = await stack.enter_async_context(_tool_server_class()())
            tools = await stack.enter_async_context(server.trial(case, prepared.graph))
        except ProctorError as exc:
            prepared.error, prepared.error_type = f"tools: {exc}", type(exc).__name__
        else:
            prepared.tools = tools
            variables = {**prepared.context.variables, "tools_url": tools.url}
            prepared.context = replace(prepared.context, variables=variables)
        yield


def _watched(session: Session, tools: TrialTools) -> Session:
    # Local: only cases with tools get here, and the tools package loads the MCP SDK.
    from proctor.tools import ToolCallsSession

    watched: Session = ToolCallsSession(session, tools)
    return watched


async def _open(prepared: Prepared, case: Case, target: Target) -> None:
    try:  # a target whose sessions open without waiting cannot hang there: no timer (`proctor.targets._base`)
        opening = target.open_session(prepared.context)
        prepared.session = await (
            opening if getattr(target, "opens_instantly", False) else within(opening, case.timeout)
        )
    except TimeoutError:
        prepared.error, prepared.error_type = f"could not open a session within {case.timeout:g} s", "TargetTimeout"
        return
    except ProctorError as exc:  # a target error, or a template that cannot render for this trial
        prepared.error, prepared.error_type = f"could not open a session: {exc}", type(exc).__name__
        return
    if not case.seeds:  # most cases: no `deliver_seeds` coroutine made to return 0
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
                reply = await within(session.send(message.content), case.timeout)
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
                retries += await within(ingest(text, context), case.timeout)
            except TimeoutError:
                raise TargetTimeout(f"text seed not ingested within {case.timeout:g} s") from None
    if any(seed.conversation for seed in case.seeds):
        if case.seed_session == "same":
            return retries + await _replay(session, case)
        try:
            prior = await within(target.open_session(context), case.timeout)
        except TimeoutError:
            raise TargetTimeout(f"could not open the seed session within {case.timeout:g} s") from None
        try:
            retries += await _replay(prior, case)
        finally:
            with anyio.CancelScope(shield=True):
                await prior.aclose()
    return retries
