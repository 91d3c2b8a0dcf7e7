"""The one batch executor: work items from any source, a bounded number in flight, stop rules, Ctrl-C.

`proctor run` feeds it trials, `proctor rescore` stored trials, `proctor score` recorded rows and
service events. Items are pulled lazily from one iterator shared by `concurrency` workers, so a source
may be a generator that reads a file as it goes; a stop rule (a spent budget, too many errors) is asked
before each item is started, and Ctrl-C cancels the work in flight (also when no item ever waits: each
worker yields to the event loop every `CHECKPOINT_EVERY` items). What each item produced is the
source's business (`work` records it); the executor only says how the batch ended.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["Ending", "execute"]

T = TypeVar("T")

EndStatus = Literal["complete", "interrupted", "stopped"]

CHECKPOINT_EVERY = 64
"""A worker yields to the event loop after this many items of its own: work that never waits (an
in-process agent answering at once) would otherwise hold the loop for the whole batch, and Ctrl-C (and
every other task) would wait for its end. Costs one loop pass per 64 items."""


@dataclass(frozen=True, slots=True)
class Ending:
    """How a batch ended."""

    status: EndStatus
    """`complete` (every item done), `interrupted` (Ctrl-C) or `stopped` (a stop rule fired)."""
    reason: str | None = None
    """The stop rule's reason, when one fired."""


async def execute(
    items: Iterable[T],
    work: Callable[[T], Awaitable[None]],
    *,
    concurrency: int,
    stop: Callable[[], str | None] | None = None,
    handle_sigint: bool = False,
) -> Ending:
    """Run `work` on every item, at most `concurrency` at once.

    Args:
        items: The work; iterated lazily (an exception from the iterator ends the batch and is raised).
        work: Does one item and records what it produced; an exception from it ends the batch.
        concurrency: Items in flight at once (>= 1).
        stop: Asked before each item starts: a reason to start no more items, or `None`.
        handle_sigint: On Ctrl-C (main thread only), cancel the items in flight and end `interrupted`.

    Raises:
        ValueError: `concurrency` < 1.
        Exception: The first error raised by `items` or `work` (not wrapped in an exception group).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    shared = iter(items)
    ended: dict[str, str | None] = {}

    async def worker() -> None:
        for done, item in enumerate(shared, 1):
            reason = stop() if stop is not None else None
            if reason is not None:
                ended.setdefault("stopped", reason)
                return
            await work(item)
            if not done % CHECKPOINT_EVERY:
                await anyio.lowlevel.checkpoint()

    try:
        async with anyio.create_task_group() as outer:
            if handle_sigint and threading.current_thread() is threading.main_thread():
                outer.start_soon(_watch_sigint, outer.cancel_scope, ended)
            async with anyio.create_task_group() as workers:
                for _ in range(concurrency):
                    workers.start_soon(worker)
            outer.cancel_scope.cancel()
    except BaseExceptionGroup as failures:  # one item's error cancels the others: raise that error
        raise _first(failures) from None
    if "interrupted" in ended:
        return Ending("interrupted")
    if "stopped" in ended:
        return Ending("stopped", ended["stopped"])
    return Ending("complete")


async def _watch_sigint(scope: anyio.CancelScope, ended: dict[str, str | None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            ended["interrupted"] = None
            scope.cancel()
            return


def _first(failures: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error in a task group's failures that is not a cancellation."""
    for failure in failures.exceptions:
        if isinstance(failure, BaseExceptionGroup):
            return _first(failure)
        if not isinstance(failure, anyio.get_cancelled_exc_class()):
            return failure
    return failures.exceptions[0]
