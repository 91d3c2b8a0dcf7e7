"""Fixtures for the demo agent's tests: a real demo server on a free local port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from demo_helpers import RunningServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def demo_server() -> Iterator[RunningServer]:
    """One demo server shared by the HTTP tests (state is per session, so tests do not interfere)."""
    with RunningServer() as server:
        yield server


@pytest.fixture(scope="session")
def demo_url(demo_server: RunningServer) -> str:
    return demo_server.url
