"""Where and how a run's trials execute on Ray (read without importing Ray)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClusterSettings"]


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """Where and how a run's trials execute on Ray."""

    address: str
    """`auto` (a local instance on 127.0.0.1), `ray://HOST:PORT` or `HOST:PORT`."""
    workers: int | None = None
    """Worker actors (default: the cluster's CPUs, at most the run's concurrency)."""
    cpus_per_worker: float = 1.0
    """CPUs each worker reserves (Ray spreads the workers over the nodes)."""
    max_attempts: int = 3
    """Times a trial is sent before it is recorded as an error because its workers kept dying."""
    start_timeout: float = 120.0
    """Seconds the workers may take to start before the run fails (a cluster short of CPUs never starts them)."""
