"""The expression worker pool: hard CPU and memory limits, off the event loop, workers replaced."""

from __future__ import annotations

import os
import re
import signal
import time

import anyio
import pytest

from proctor.checks._expression import ExpressionError
from proctor.checks._sandbox import NotBool, SandboxPool, evaluate_off_loop


def _power_of(levels: int) -> str:
    product = "(10**100)**999"
    for _ in range(levels):
        product = f"({product})*({product})"
    return product


RUNAWAY = f"sum([{_power_of(3)}] * 99999) > 0"
"""Within every in-process bound (a 2.6-million-bit integer, built in milliseconds, in a list of 99,999
references), but `sum` is one C call of about 10**10 digit additions: seconds to minutes of CPU that
no check between operations can stop."""


@pytest.fixture
def pool() -> SandboxPool:
    created = SandboxPool(max_workers=2)
    yield created
    created.close()


LIMITS = "CPU time|wall-clock|took longer than 1 s"
"""The limit that stops a runaway: the worker's CPU limit, or on a machine busy elsewhere the caller's
clock, or the in-process one-second deadline when the long call happens to end within the CPU limit."""


def test_a_runaway_expression_is_stopped_by_a_hard_limit(pool: SandboxPool) -> None:
    assert pool.evaluate("true", None, {}, "") is True  # started: what follows is the evaluation alone
    started = time.perf_counter()
    with pytest.raises(ExpressionError, match=LIMITS) as info:
        pool.evaluate(RUNAWAY, None, {}, "")
    assert time.perf_counter() - started < 8.0
    assert pool.replaced == (0 if "took longer than 1 s" in info.value.reason else 1)
    assert pool.evaluate("1 + 1 == 2", None, {}, "") is True  # a fresh (or the same) worker answers


def test_a_worker_killed_from_outside_is_replaced_unnoticed(pool: SandboxPool) -> None:
    assert pool.evaluate("true", None, {}, "") is True
    for worker in list(pool._idle):
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=5)
    assert pool.evaluate("objectContext.n == 1", {"n": 1}, {}, "") is True
    assert pool.replaced >= 1


def test_workers_are_reused(pool: SandboxPool) -> None:
    assert pool.evaluate("objectContext.n > 1", {"n": 2}, {}, "") is True
    time.sleep(1.5)  # the spare has started
    pids = {worker.process.pid for worker in pool._idle}
    for _ in range(5):
        assert pool.evaluate("evaluation.turns == 0", None, {"turns": 0}, "") is True
    assert {worker.process.pid for worker in pool._idle} == pids and len(pids) == 2 and pool.replaced == 0


def test_values_and_errors_come_back_described(pool: SandboxPool) -> None:
    other = pool.evaluate("objectContext.items", {"items": [1, 2]}, {}, "")
    assert isinstance(other, NotBool) and (other.type_name, other.text) == ("list", "[1, 2]")
    with pytest.raises(ExpressionError, match="no key 'missing'"):
        pool.evaluate("objectContext.missing", {"items": []}, {}, "")
    with pytest.raises(ExpressionError, match="no object context"):
        pool.evaluate("objectContext.x", None, {}, "no object context")


def test_memory_is_limited() -> None:
    small = SandboxPool(max_workers=1, memory_limit=32 * 2**20)
    try:
        # 9,999 items (within the item bounds), but each a distinct 332,000-bit integer: 400 MB
        expression = "len([x + 1 for x in [(10**100)**999] * 9999]) > 0"
        with pytest.raises(ExpressionError, match="needed more than 32 MiB of memory"):
            small.evaluate(expression, None, {}, "")
        assert small.evaluate("1 < 2", None, {}, "") is True  # the worker survives its MemoryError
    finally:
        small.close()


@pytest.mark.anyio
async def test_the_event_loop_and_other_evaluations_never_wait_on_a_runaway() -> None:
    ticks = 0
    quick_took: list[float] = []
    errors: list[str] = []

    async def runaway() -> None:
        try:
            await evaluate_off_loop(RUNAWAY, None, {}, "")
        except ExpressionError as exc:
            errors.append(exc.reason)

    async def quick() -> None:
        await anyio.sleep(0.2)  # the runaway is running by now
        started = time.perf_counter()
        assert await evaluate_off_loop("objectContext.ok", {"ok": True}, {}, "") is True
        quick_took.append(time.perf_counter() - started)

    async def clock() -> None:
        nonlocal ticks
        while not errors:
            ticks += 1
            await anyio.sleep(0.05)

    assert await evaluate_off_loop("true", None, {}, "") is True  # the pool is warm, as during a run
    async with anyio.create_task_group() as group:
        group.start_soon(runaway)
        group.start_soon(quick)
        group.start_soon(clock)
    assert errors and re.search(LIMITS, errors[0])
    assert quick_took and quick_took[0] < 1.0  # served by another worker meanwhile
    assert ticks >= 10  # the loop kept running throughout
