"""The in-process agent of workload W2: an async function that returns a fixed string.

Importable as `bench_agent` when `bench/` is on `sys.path` (the benchmark sets `PYTHONPATH`), so the
target string is `python:bench_agent:respond`.
"""

from __future__ import annotations

from typing import Any

REPLY = "Hello from the bench agent: the answer is 42."
"""What every call returns."""


async def respond(messages: list[dict[str, Any]]) -> str:
    """Return the fixed reply, whatever the conversation."""
    return REPLY
