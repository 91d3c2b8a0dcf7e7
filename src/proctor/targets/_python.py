"""The `python` target: a callable in this process, sync or async."""

from __future__ import annotations

import dis
import functools
import importlib
import inspect
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from proctor.errors import ConfigError, TargetError, TargetProtocolError
from proctor.suite._targets import PythonTargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._replies import parse_tool_calls, parse_usage
from proctor.transcript import AgentReply

__all__ = ["PythonSession", "PythonTarget", "load_callable"]


def load_callable(reference: str) -> Callable[..., Any]:
    """Import `module:attr` (the attribute may be dotted, e.g. `pkg.mod:Agent.reply`).

    The current directory is put on `sys.path` first, so a local `agent.py` is importable.

    Args:
        reference: `module:attribute`.

    Returns:
        The callable.

    Raises:
        ConfigError: The module does not import, an attribute is missing, or the value is not callable.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"python target {reference!r} is not of the form 'module:function'")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"python target {reference!r}: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise ConfigError(
            f"python target {reference!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    path = module_name
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ConfigError(f"python target {reference!r}: {path!r} has no attribute {part!r}") from None
        path = f"{path}.{part}"
    if not callable(value):
        raise ConfigError(f"python target {reference!r}: {path} is a {type(value).__name__}, not a callable")
    return value  # type: ignore[no-any-return]


def _is_async(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


_SUSPENDING = frozenset(
    {"YIELD_VALUE", "YIELD_FROM", "SEND", "GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH"}
)
"""Opcodes of every way a coroutine can suspend (an `await`, `async with`, `async for`; 3.11 and later)."""


def _never_suspends(function: Callable[..., Any]) -> bool:
    """Whether `function` is an `async def` whose body has no `await`, `async with` nor `async for`.

    Such a coroutine finishes on its first step: it never yields to the event loop, so no timer or
    cancellation can ever reach it, and a deadline around it would be pure cost. Anything else (a
    partial, an object with `__call__`, a sync function run in a thread) is `False`: it gets its timer.
    """
    code = getattr(function, "__code__", None)
    # the code's own flag, not `inspect.iscoroutinefunction`: that also says yes for a sync function marked
    # with `inspect.markcoroutinefunction` (3.12+), whose code returns an awaitable that may well wait
    if not isinstance(code, types.CodeType) or not code.co_flags & inspect.CO_COROUTINE:
        return False
    return not any(instruction.opname in _SUSPENDING for instruction in dis.get_instructions(code))


def _accepts_context(function: Callable[..., Any], name: str = "context") -> bool:
    try:
        parameter = inspect.signature(function).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


class PythonTarget:
    """Calls a Python function with the conversation so far and reads its return value.

    The callable gets `list[{"role", "content"}]` (ending with the new user message) and, when it has a
    `context` parameter, the `SessionContext` as `context=`; when it has a `tools_url` parameter, the
    trial's tool server endpoint (`None` when the case declares no tools). Async callables are awaited on the event
    loop; sync ones run in a worker thread, which is abandoned (left to finish in the background) when
    the caller cancels the turn, e.g. on timeout. It returns a string, a dict (`text` or `content`, plus
    optional `tool_calls`, `usage` and `trace_id`) or an `AgentReply`.
    """

    opens_instantly = True
    """Opening a session makes an object and nothing else: it never waits (see `proctor.targets._base`)."""

    def __init__(self, spec: PythonTargetSpec, **_options: Any) -> None:
        """Import the callable.

        Args:
            spec: The validated target specification.
            **_options: Options other targets use (e.g. `max_connections`); ignored.

        Raises:
            proctor.errors.ConfigError: The callable cannot be imported.
        """
        self.spec = spec
        self.name = f"python {spec.callable}"
        self.function = load_callable(spec.callable)
        self.is_async = _is_async(self.function)
        self.wants_context = _accepts_context(self.function)
        self.wants_tools_url = _accepts_context(self.function, "tools_url")
        self.replies_instantly = _never_suspends(self.function)
        """The callable never waits (see `_never_suspends`): its sessions' replies need no timer."""
        """The callable has a `tools_url` parameter: it gets the trial's tool server endpoint (or `None`)."""
        self.context_function = load_callable(spec.object_context) if spec.object_context else None
        """The `object_context` callable, if the spec names one."""
        self.seed_function = load_callable(spec.seed) if spec.seed else None
        """The `seed` hook, if the spec names one."""

    async def open_session(self, context: SessionContext) -> PythonSession:
        """Start a conversation.

        Args:
            context: The trial the session belongs to.

        Returns:
            A new session.
        """
        return PythonSession(self, context)

    async def ingest(self, text: str, context: SessionContext) -> int:
        """Pass a text seed to the spec's `seed` hook; returns 0 (nothing is retried in process).

        Raises:
            proctor.errors.ConfigError: The spec names no `seed` hook.
            proctor.errors.TargetError: The hook raised.
        """
        function = self.seed_function
        if function is None:
            raise ConfigError(f"{self.name}: text seeds need a 'seed' hook")
        if _accepts_context(function):
            function = functools.partial(function, context=context)
        try:
            if _is_async(function):
                result = await function(text)
            else:
                result = await anyio.to_thread.run_sync(function, text, abandon_on_cancel=True)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            raise TargetError(f"{self.spec.seed} raised {type(exc).__name__}: {exc}") from exc
        return 0

    async def aclose(self) -> None:
        """Nothing to release."""


class PythonSession:
    """One conversation with a Python callable."""

    __slots__ = ("_context", "_function", "_target", "history", "replies_instantly")  # one per trial: no `__dict__`

    closes_instantly = True
    """Closing forgets the history and nothing else: it never waits (see `proctor.targets._base`)."""

    def __init__(self, target: PythonTarget, context: SessionContext) -> None:
        self._target = target
        self.replies_instantly = target.replies_instantly
        """`send` never waits: the callable is an `async def` that never suspends (see `proctor.targets._base`)."""
        self._context = context
        function = target.function
        if target.wants_context:
            function = functools.partial(function, context=context)
        if target.wants_tools_url:
            function = functools.partial(function, tools_url=context.variables.get("tools_url"))
        self._function = function
        self.history: list[dict[str, str]] = []
        """The conversation so far as `{role, content}` dicts."""

    async def send(self, message: str) -> AgentReply:
        """Call the function with the history plus `message`.

        Args:
            message: The user's message.

        Returns:
            The reply built from the function's return value.

        Raises:
            proctor.errors.TargetError: The function raised (with its exception type and message).
            proctor.errors.TargetProtocolError: It returned something other than str, dict or AgentReply.
        """
        target = self._target
        history = [*self.history, {"role": "user", "content": message}]
        started = time.perf_counter()
        try:
            if target.is_async:
                result = await self._function(list(history))
            else:
                # Abandoned on cancel, so a caller's timeout (anyio.fail_after) is not held up.
                result = await anyio.to_thread.run_sync(self._function, list(history), abandon_on_cancel=True)
                if inspect.isawaitable(result):
                    result = await result
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(f"{target.spec.callable} raised {type(exc).__name__}: {exc}") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        if result.__class__ is str:  # the common reply (what `_to_reply` makes of it), built with its latency
            reply = AgentReply(result, [], latency_ms, None, result)
        else:
            reply = _to_reply(result, target.spec.callable)
            if not reply.latency_ms:
                reply.latency_ms = latency_ms
        history.append({"role": "assistant", "content": reply.text})
        self.history = history
        return reply

    async def object_context(self) -> Any:
        """Call the spec's `object_context` callable with the conversation (`None` without one).

        Raises:
            proctor.errors.TargetError: The callable raised.
        """
        function = self._target.context_function
        if function is None:
            return None
        is_async = _is_async(function)
        if _accepts_context(function):
            function = functools.partial(function, context=self._context)
        try:
            if is_async:
                result = await function(list(self.history))
            else:
                result = await anyio.to_thread.run_sync(function, list(self.history), abandon_on_cancel=True)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            name = self._target.spec.object_context
            raise TargetError(f"{name} raised {type(exc).__name__}: {exc}") from exc
        return result

    async def aclose(self) -> None:
        """Forget the conversation."""
        self.history = []


def _to_reply(result: Any, reference: str) -> AgentReply:
    if isinstance(result, str):  # positional (text, tool_calls, latency_ms, usage, raw): once per reply
        return AgentReply(result, [], 0.0, None, result)
    if isinstance(result, AgentReply):
        return result
    if isinstance(result, dict):
        text = result.get("text", result.get("content"))
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise TargetProtocolError(
                f"{reference} returned a dict whose text is a {type(text).__name__}, not a string"
            )
        trace_id = result.get("trace_id")
        return AgentReply(
            text=text,
            tool_calls=parse_tool_calls(result.get("tool_calls"), f"the value {reference} returned"),
            usage=parse_usage(result.get("usage")),
            raw=result,
            trace_id=None if trace_id is None else str(trace_id),
        )
    raise TargetProtocolError(
        f"{reference} returned a {type(result).__name__}; expected a str, a dict or an AgentReply"
    )
