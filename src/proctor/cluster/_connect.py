"""Reach a Ray cluster: `ray://HOST:PORT` (Ray Client), `HOST:PORT` (a node's GCS), or `auto` (a local instance).

A local instance is bound to 127.0.0.1 (its node address, and `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` set
by `proctor.cluster.remote_trials` before Ray is imported), sends no usage statistics,
keeps its files in its own temporary directory and caps its object store; it is stopped, and its
directory removed, when the run ends. A process that already called `ray.init()` keeps its connection.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import ray

from proctor.cluster._address import check_address
from proctor.errors import ConfigError

__all__ = ["Connection", "connect"]

LOCAL_OBJECT_STORE = 128 * 1024 * 1024
"""A local instance's object store: trials and results are small (Ray's default is 30 % of RAM)."""


@dataclass(slots=True)
class Connection:
    """A connection to Ray; `close()` disconnects what `connect` opened (and stops a local instance)."""

    owned: bool
    """Whether `connect` called `ray.init()` (else the process was connected already)."""
    temp_dir: str | None = None
    """A local instance's directory, removed on close."""

    def close(self) -> None:
        """Disconnect (stopping a local instance this connection started); a no-op for a borrowed connection."""
        if not self.owned:
            return
        ray.shutdown()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def connect(address: str) -> Connection:
    """Connect to the cluster at `address` (see the module's docstring).

    Raises:
        ConfigError: The address is malformed or nothing answers there.
    """
    if ray.is_initialized():
        return Connection(owned=False)
    check_address(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING", "namespace": "proctor"}
    if address != "auto":
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"--cluster {address}: cannot connect: {exc}") from None
        return Connection(owned=True)
    temp_dir = tempfile.mkdtemp(prefix="proctor-ray-")  # short: Ray's socket paths must fit 107 bytes
    try:
        ray.init(
            address="local",
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE,
            _temp_dir=temp_dir,
            **quiet,
        )
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    return Connection(owned=True, temp_dir=temp_dir)
