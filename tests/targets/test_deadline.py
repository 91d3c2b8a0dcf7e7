"""`within`: the timeout of every call to an agent, with a timer only for calls that wait."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Generator
from typing import Any

import anyio
import pytest
import sniffio

from proctor.targets._deadline import _cancel_scope, within

pytestmark = pytest.mark.anyio


async def at_once() -> str:
    return "done"


async def fails_at_once() -> str:
    raise ValueError("bad input")


async def sleeps(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "slept"


async def hangs() -> str:
    await anyio.Event().wait()  # never set
    return "unreachable"


async def busy_then_sleeps(busy: float, seconds: float) -> str:
    end = time.monotonic() + busy
    while time.monotonic() < end:  # a first step that takes long but cannot be interrupted
        pass
    await anyio.sleep(seconds)
    return "slept"


async def locked(lock: anyio.Lock) -> str:
    # anyio's lock enters a cancel scope of its own and suspends inside it on its first step: our scope
    # must already be entered, or the scopes would not nest
    async with lock:
        await anyio.sleep(0.01)
    with anyio.fail_after(5):  # and a scope of its own after suspending
        await anyio.sleep(0.01)
    return "locked"


class _Ready:
    """An awaitable that is not a coroutine."""

    def __await__(self) -> Generator[Any, None, str]:
        yield from anyio.sleep(0.001).__await__()
        return "ready"


async def test_a_call_that_finishes_at_once_returns_its_result() -> None:
    assert await within(at_once(), 0.001) == "done"  # it never waited, so it cannot have timed out


async def test_an_error_on_the_first_step_is_raised_as_is() -> None:
    with pytest.raises(ValueError, match="bad input"):
        await within(fails_at_once(), 5)


async def test_a_call_that_waits_finishes_within_its_time() -> None:
    assert await within(sleeps(0.01), 5) == "slept"
    assert await within(locked(anyio.Lock()), 5) == "locked"
    ready: Awaitable[str] = _Ready()
    assert await within(ready, 5) == "ready"


@pytest.mark.parametrize("call", [hangs, lambda: sleeps(10)], ids=["hangs", "slow"])
async def test_a_call_that_hangs_times_out(call: Any) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await within(call(), 0.1)
    assert 0.09 <= time.monotonic() - started < 2


async def test_the_deadline_counts_from_the_start_of_the_call() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):  # 0.15 s busy + 0.15 s asleep > 0.2 s, though each is less
        await within(busy_then_sleeps(0.15, 0.15), 0.2)
    assert time.monotonic() - started < 0.29


async def test_a_non_coroutine_awaitable_times_out_too() -> None:
    class Never:
        def __await__(self) -> Generator[Any, None, str]:
            yield from anyio.Event().wait().__await__()
            return "never"

    with pytest.raises(TimeoutError):
        await within(Never(), 0.05)


async def test_an_outer_cancellation_is_not_a_timeout() -> None:
    with anyio.move_on_after(0.05) as outer:
        await within(hangs(), 10)
    assert outer.cancelled_caught  # cancelled from outside: propagated, not turned into TimeoutError


async def test_an_inner_timeout_does_not_leak_into_the_caller() -> None:
    with pytest.raises(TimeoutError):
        await within(hangs(), 0.05)
    await anyio.sleep(0.01)  # the caller's scope is not cancelled afterwards
    assert await within(sleeps(0.01), 5) == "slept"


async def test_the_scope_is_the_one_anyio_makes_and_each_call_gets_its_own() -> None:
    first, second = _cancel_scope(), _cancel_scope()
    assert type(first) is type(anyio.CancelScope()) and first is not second
    assert await within(at_once(), 5) == "done"  # after the class is known: the same behaviour
    with pytest.raises(TimeoutError):
        await within(hangs(), 0.05)


async def test_a_library_that_declares_itself_is_asked_through_anyio(monkeypatch: pytest.MonkeyPatch) -> None:
    scope_class = type(_cancel_scope())  # the asyncio class is known from here on
    asked: list[None] = []

    def new(cls: type[anyio.CancelScope], **kwargs: Any) -> anyio.CancelScope:
        asked.append(None)
        return scope_class()

    monkeypatch.setattr(anyio.CancelScope, "__new__", new)
    assert await within(at_once(), 5) == "done"
    assert not asked  # asyncio (declared by anyio.run, or found running): the remembered class
    token = sniffio.current_async_library_cvar.set("trio")  # what trio (or trio-asyncio) declares
    try:
        assert await within(at_once(), 5) == "done"
    finally:
        sniffio.current_async_library_cvar.reset(token)
    assert asked  # not the remembered class: anyio chose
