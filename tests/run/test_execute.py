"""`proctor.run.execute`: the one batch executor (bounded concurrency, lazy sources, stop rules, errors)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import anyio
import anyio.lowlevel
import pytest

from proctor.run.execute import CHECKPOINT_EVERY, Ending, execute


@pytest.mark.anyio
async def test_every_item_runs_with_at_most_concurrency_in_flight() -> None:
    in_flight = peak = 0
    done: list[int] = []

    async def work(item: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.001 * (item % 3))
        in_flight -= 1
        done.append(item)

    ending = await execute(range(40), work, concurrency=4)
    assert ending == Ending("complete")
    assert sorted(done) == list(range(40)) and peak == 4


@pytest.mark.anyio
async def test_a_generator_source_is_read_only_as_workers_take_items() -> None:
    pulled: list[int] = []

    def source() -> Iterator[int]:
        for item in range(10):
            pulled.append(item)
            yield item

    gate = anyio.Event()
    started: list[int] = []

    async def work(item: int) -> None:
        started.append(item)
        await gate.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: execute(source(), work, concurrency=2))
        await anyio.wait_all_tasks_blocked()
        assert pulled == [0, 1] and started == [0, 1]  # two in flight, nothing read ahead
        gate.set()


@pytest.mark.anyio
async def test_a_stop_rule_starts_no_more_items_and_says_why() -> None:
    done: list[int] = []

    async def work(item: int) -> None:
        done.append(item)

    ending = await execute(range(10), work, concurrency=1, stop=lambda: "budget spent" if len(done) >= 3 else None)
    assert ending == Ending("stopped", "budget spent") and done == [0, 1, 2]


@pytest.mark.anyio
async def test_an_error_in_work_or_source_is_raised_as_itself() -> None:
    async def work(item: int) -> None:
        if item == 5:
            raise KeyError("row 5")
        await anyio.lowlevel.checkpoint()

    with pytest.raises(KeyError, match="row 5"):
        await execute(range(20), work, concurrency=3)

    def broken() -> Iterator[int]:
        yield 1
        raise ValueError("unreadable record at line 2")

    async def nothing(item: int) -> None:
        await anyio.lowlevel.checkpoint()

    with pytest.raises(ValueError, match="line 2"):
        await execute(broken(), nothing, concurrency=2)


@pytest.mark.anyio
async def test_concurrency_below_one_is_refused() -> None:
    async def work(item: int) -> None:
        await anyio.lowlevel.checkpoint()

    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        await execute([1], work, concurrency=0)


@pytest.mark.anyio
async def test_ctrl_c_interrupts_work_that_never_waits() -> None:
    done: list[int] = []

    async def work(item: int) -> None:  # never suspends, like an in-process agent that answers at once
        done.append(item)
        if item == 10:
            os.kill(os.getpid(), signal.SIGINT)

    ending = await execute(range(100_000), work, concurrency=4, handle_sigint=True)
    assert ending == Ending("interrupted")
    # the signal reaches the watcher within a few loop passes, each running at most CHECKPOINT_EVERY items a worker
    assert 10 < len(done) <= 10 + 8 * 4 * CHECKPOINT_EVERY
