"""Per-model limits: requests in flight and requests per minute, named, separate from the agent's limits.

Each model gets its own `ModelLimits`, named after it; models given the same `limit_group` in their
settings share one (e.g. two model names behind one rate-limited key).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager

import anyio

from proctor.errors import ConfigError
from proctor.models._base import LoopLocal

__all__ = ["ModelLimits", "RateLimiter", "shared_limits"]


class RateLimiter:
    """Spaces requests so no more than `rpm` start in any minute (a generic cell rate algorithm).

    With `burst` 1 the starts are evenly spaced (60 / rpm seconds apart); a larger `burst` lets that
    many start at once after an idle period, still averaging `rpm`. Waiters reserve their slot before
    sleeping, so no lock is needed; the clock is `time.monotonic`, so the limiter outlives event loops.
    """

    __slots__ = ("_tat", "burst", "interval", "rpm")

    def __init__(self, rpm: int, burst: int = 1) -> None:
        """Build a limiter.

        Args:
            rpm: Requests per minute, at least 1.
            burst: Requests that may start together after an idle period, at least 1.

        Raises:
            ValueError: `rpm` or `burst` is below 1.
        """
        if rpm < 1 or burst < 1:
            raise ValueError("rpm and burst must be at least 1")
        self.rpm = rpm
        self.burst = burst
        self.interval = 60.0 / rpm
        self._tat = 0.0

    def reserve(self) -> float:
        """Reserve the next start and return how many seconds to wait for it."""
        now = time.monotonic()
        tat = max(self._tat, now)
        wait = tat - (self.burst - 1) * self.interval - now
        self._tat = tat + self.interval
        return max(0.0, wait)

    async def acquire(self) -> None:
        """Wait until a request may start."""
        wait = self.reserve()
        if wait > 0:
            await anyio.sleep(wait)


class ModelLimits:
    """A named concurrency limit plus an optional requests-per-minute limit."""

    def __init__(self, name: str, *, concurrency: int, rpm: int | None = None) -> None:
        """Build the limits.

        Args:
            name: What the limits belong to (a model or a group), shown in logs and errors.
            concurrency: Most requests in flight at once, at least 1.
            rpm: Most requests started per minute; `None` for no limit.

        Raises:
            ConfigError: A limit is below 1.
        """
        if concurrency < 1:
            raise ConfigError(f"model limit {name!r}: concurrency must be at least 1, not {concurrency}")
        if rpm is not None and rpm < 1:
            raise ConfigError(f"model limit {name!r}: rpm must be at least 1, not {rpm}")
        self.name = name
        self.concurrency = concurrency
        self.rpm = rpm
        self._rate = RateLimiter(rpm) if rpm else None
        # asyncio's semaphore takes a free slot without yielding to the event loop (anyio's always yields
        # once: an extra loop turn per model call); it is bound to the loop it first waits in, hence LoopLocal.
        self._slots: LoopLocal[asyncio.Semaphore] = LoopLocal(lambda: asyncio.Semaphore(concurrency))

    def __repr__(self) -> str:
        return f"ModelLimits({self.name!r}, concurrency={self.concurrency}, rpm={self.rpm})"

    def slot(self) -> AbstractAsyncContextManager[None]:
        """Hold one request slot (waiting for it and then for the rate limit) for the block's duration."""
        return _Slot(self._slots.get(), self._rate)


class _Slot:
    """`ModelLimits.slot()`: a plain async context manager (a generator-based one costs ~2x the instructions)."""

    __slots__ = ("_rate", "_semaphore")

    def __init__(self, semaphore: asyncio.Semaphore, rate: RateLimiter | None) -> None:
        self._semaphore = semaphore
        self._rate = rate

    async def __aenter__(self) -> None:
        await self._semaphore.acquire()
        if self._rate is not None:
            try:
                await self._rate.acquire()
            except BaseException:  # cancelled while waiting for the rate limit: the slot is given back
                self._semaphore.release()
                raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._semaphore.release()


_groups: dict[str, ModelLimits] = {}


def shared_limits(group: str, *, concurrency: int, rpm: int | None) -> ModelLimits:
    """Return the limits of a named group, creating them on first use.

    Args:
        group: The group name.
        concurrency: The group's concurrency limit.
        rpm: The group's requests-per-minute limit.

    Returns:
        The group's limits, shared by every model that names the group.

    Raises:
        ConfigError: The group exists with different limits.
    """
    limits = _groups.get(group)
    if limits is None:
        limits = _groups[group] = ModelLimits(group, concurrency=concurrency, rpm=rpm)
    elif (limits.concurrency, limits.rpm) != (concurrency, rpm):
        raise ConfigError(
            f"model limit group {group!r} is already set to concurrency {limits.concurrency}, rpm {limits.rpm}; "
            f"a model asked for concurrency {concurrency}, rpm {rpm}"
        )
    return limits
