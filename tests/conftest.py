"""Shared fixtures. Real network is banned: tests may only connect to loopback addresses."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Property-based tests run with a bounded budget everywhere (CI included): 200 examples, 2 s each at most.
# `--hypothesis-profile=thorough --timeout=0` runs 5,000 examples (a longer fuzz session; not in the gate).
settings.register_profile(
    "proctor", max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("thorough", parent=settings.get_profile("proctor"), max_examples=5000, deadline=None)
settings.load_profile("proctor")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _allowed(address):
        raise ConnectionRefusedError(f"tests may not reach the network: connect to {address!r} blocked")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _allowed(address):
        raise ConnectionRefusedError(f"tests may not reach the network: connect to {address!r} blocked")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    """Block every connection that is not to loopback (no real model or agent calls in tests)."""
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's PROCTOR_* and provider variables out of tests."""
    import os

    for name in list(os.environ):
        if name.startswith(("PROCTOR_", "LOBU_")) or name in ("OPENAI_API_KEY", "GATEWAY_URL", "GATEWAY_PORT"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def model_server() -> Iterator[Any]:
    """A scripted OpenAI-compatible model server on loopback (`servers.model_server`), for judge tests."""
    from servers._serve import serve_app
    from servers.model_server import ModelServer

    server = ModelServer()
    with serve_app(server.app()) as base_url:
        server.base_url = base_url
        yield server


@pytest.fixture(scope="session")
def falkordb_uri() -> Iterator[str]:
    """`falkordb://127.0.0.1:<port>` of an embedded FalkorDB shared by the session's state tests."""
    import anyio

    from proctor.state import EmbeddedFalkorDB

    server = EmbeddedFalkorDB()
    anyio.run(server.start)  # on the main thread: the server's death signal follows the starting thread
    try:
        yield server.uri
    finally:
        anyio.run(server.aclose)
