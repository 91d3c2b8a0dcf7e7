"""Calls to an agent under a deadline, paying for the timer only when the call actually waits.

Every call Proctor makes to an agent (opening a session, a turn, a seed, the object context) has a
timeout. `anyio.fail_after` costs ~16 µs per call here (two generator-based context managers, a cancel
scope and a timer scheduled on the loop then cancelled), most of a trial against an in-process agent
that answers at once. `within` enters a plain cancel scope (~6 µs) before the call, so whatever the call
opens nests inside it as it would inside `fail_after`, and runs the call's first step directly: a call
that finishes without suspending cannot hang on anything a timer could end, so no timer is set. Only
when the call suspends is the scope given its deadline, counted from the start of the call, and the rest
of the call awaited in it: from there on it is `fail_after`, cancellation included.
"""

from __future__ import annotations

import time
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar, cast

import anyio
import sniffio

__all__ = ["within"]

T = TypeVar("T")

_scope_class: list[type[anyio.CancelScope]] = []
"""The asyncio backend's cancel scope class, once `_cancel_scope` has made one scope."""


def _cancel_scope() -> anyio.CancelScope:
    """`anyio.CancelScope()`, without asking sniffio which event loop runs when that is plainly asyncio.

    `anyio.CancelScope()` asks sniffio for the running library on every call (~2 µs here, once per turn).
    sniffio answers with its thread-local, else its context variable (`anyio.run` sets it), else asyncio
    when an asyncio task runs: when that answer is asyncio, the scope is the asyncio backend's class,
    learnt from the first scope anyio made.
    """
    declared = sniffio.thread_local.name or sniffio.current_async_library_cvar.get()
    if _scope_class and declared in (None, "asyncio"):
        return _scope_class[0]()
    scope = anyio.CancelScope()
    if not _scope_class and sniffio.current_async_library() == "asyncio":
        _scope_class.append(type(scope))
    return scope


async def within(call: Awaitable[T], seconds: float) -> T:
    """Await `call`, ending it with `TimeoutError` when it has not finished after `seconds`.

    The same as `with anyio.fail_after(seconds): return await call`, without the timer for a call that
    finishes without suspending (see the module's docstring).

    Raises:
        TimeoutError: The call was still waiting after `seconds` (it was cancelled).
    """
    if not isinstance(call, types.CoroutineType):  # another kind of awaitable: awaited whole, under a timer
        with anyio.fail_after(seconds):
            return await call
    started = time.monotonic()
    with _cancel_scope() as scope:
        try:
            first = call.send(None)
        except StopIteration as done:
            return cast("T", done.value)
        scope.deadline = anyio.current_time() + seconds - (time.monotonic() - started)
        return cast("T", await _resume(call, first))
    # the scope caught its own cancellation: the deadline passed (an outer cancellation is not caught here)
    raise TimeoutError


@types.coroutine
def _resume(call: Coroutine[Any, Any, Any], value: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine that suspended on its first step, which yielded `value` to the event loop.

    What the loop sends or throws (a cancellation) goes to the coroutine, as `await` would pass it on.
    """
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            call.close()
            raise
        except BaseException as exc:  # thrown in by the event loop, e.g. a cancellation: the call's to handle
            try:
                value = call.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                value = call.send(sent)
            except StopIteration as done:
                return done.value
