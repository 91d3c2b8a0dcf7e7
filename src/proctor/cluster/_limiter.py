"""Model limits for the whole cluster: one limiter actor holds every judge's and simulator's slots.

A worker's model asks the limiter for a slot before each request (`RemoteLimits` replaces the model's own
`ModelLimits`), so `--judge-concurrency` and `--judge-rpm` hold for the run, not per worker. Each slot is
leased to the trial that asked (its dispatch id): when a worker dies, the driver releases what the dead
trials held.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from proctor.models import RateLimiter

__all__ = ["Limiter", "RemoteLimits", "current_dispatch"]

current_dispatch: contextvars.ContextVar[str] = contextvars.ContextVar("proctor_cluster_dispatch", default="")
"""The dispatch id of the trial a worker's task runs (its slots are leased to it)."""


class _Group:
    def __init__(self, concurrency: int, rpm: int | None) -> None:
        self.concurrency, self.rpm = concurrency, rpm
        self.slots = asyncio.Semaphore(concurrency)
        self.rate = RateLimiter(rpm) if rpm else None
        self.in_flight = 0
        self.peak = 0


class Limiter:
    """The cluster's model limits (a Ray actor: `ray.remote(Limiter)`); one group per model name."""

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self._leases: dict[int, tuple[str, str]] = {}
        self._ids = itertools.count(1)

    async def acquire(self, name: str, concurrency: int, rpm: int | None, holder: str) -> int:
        """Wait for a slot of `name` (and its rate), lease it to `holder`, return the lease."""
        group = self._groups.get(name)
        if group is None:
            group = self._groups[name] = _Group(concurrency, rpm)
        await group.slots.acquire()
        try:
            if group.rate is not None:
                await asyncio.sleep(group.rate.reserve())
        except BaseException:
            group.slots.release()
            raise
        lease = next(self._ids)
        self._leases[lease] = (name, holder)
        group.in_flight += 1
        group.peak = max(group.peak, group.in_flight)
        return lease

    def release(self, lease: int) -> None:
        """Give a slot back (a lease already released is ignored)."""
        held = self._leases.pop(lease, None)
        if held is not None:
            group = self._groups[held[0]]
            group.in_flight -= 1
            group.slots.release()

    def release_holder(self, holder: str) -> int:
        """Give back every slot a trial held (it died with its worker); returns how many."""
        leases = [lease for lease, (_, who) in self._leases.items() if who == holder]
        for lease in leases:
            self.release(lease)
        return len(leases)

    def peaks(self) -> dict[str, int]:
        """The most slots each group had leased at once."""
        return {name: group.peak for name, group in self._groups.items()}


class RemoteLimits:
    """A model's limits held by the cluster's `Limiter` (the same `slot()` as `proctor.models.ModelLimits`)."""

    def __init__(self, limiter: Any, name: str, *, concurrency: int, rpm: int | None) -> None:
        self.limiter, self.name, self.concurrency, self.rpm = limiter, name, concurrency, rpm

    def __repr__(self) -> str:
        return f"RemoteLimits({self.name!r}, concurrency={self.concurrency}, rpm={self.rpm})"

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the cluster's slots for this model for the block's duration."""
        lease = await self.limiter.acquire.remote(self.name, self.concurrency, self.rpm, current_dispatch.get())
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.limiter.release.remote(lease)
