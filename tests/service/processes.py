"""Start `proctor serve` and `proctor consume` as real processes."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from service.conftest import free_port, subprocess_env

PROCTOR = [sys.executable, "-m", "proctor"]


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`proctor serve` on a free port, ready; yields the process and the port."""
    port = free_port()
    process = subprocess.Popen(
        [*PROCTOR, "serve", "--port", str(port), *args],
        env=subprocess_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"proctor serve did not start: {process.communicate()[1]}")
            time.sleep(0.05)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def consumer(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start `proctor consume` (not waited for)."""
    return subprocess.Popen(
        [*PROCTOR, "consume", "--log-level", "warning", *args],
        env=subprocess_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
