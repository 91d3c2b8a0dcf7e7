"""Shared fixtures. Real network is banned: tests may only connect to loopback addresses."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytester"]  # tests/testing/ drives pytest itself (the proctor plugin)

# Property-based tests run with a bounded budget everywhere (CI included): 200 examples, 2 s each at most.
# `--hypothesis-profile=thorough --timeout=0` runs 5,000 examples (a longer fuzz session; not in the gate).
settings.register_profile(
    "proctor", max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("thorough", parent=settings.get_profile("proctor"), max_examples=5000, deadline=None)
settings.load_profile("proctor")

NEO4J_ENV = ("NEO_URI", "NEO_USERNAME", "NEO_PASSWORD")
"""A developer's real Neo4j: kept out of every test but the one that asks for it (`real_neo4j_env`)."""
_REAL_NEO4J = {name: os.environ[name] for name in NEO4J_ENV if name in os.environ}

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
    for name in list(os.environ):
        if name.startswith(("PROCTOR_", "LOBU_")) or name in ("OPENAI_API_KEY", "GATEWAY_URL", "GATEWAY_PORT"):
            monkeypatch.delenv(name, raising=False)
        if name in NEO4J_ENV or name == "EMBABEL_API_KEY":  # a real Neo4j would be the agent's graph
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def real_neo4j_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The developer's `NEO_URI`, `NEO_USERNAME` and `NEO_PASSWORD`, put back for this test (empty if unset)."""
    for name, value in _REAL_NEO4J.items():
        monkeypatch.setenv(name, value)
    return dict(_REAL_NEO4J)


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


def _free_bolt_port() -> int:
    """A port FalkorDB's Bolt listener accepts (up to 32767) that is free on all interfaces (it binds them all)."""
    for port in range(20000 + (os.getpid() * 7) % 10000, 32768):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port for the Bolt listener")  # pragma: no cover


@pytest.fixture
def bolt_graph_uri() -> Iterator[tuple[str, str]]:
    """`(bolt://127.0.0.1:<port>, falkordb://127.0.0.1:<port>)`: an embedded FalkorDB's Bolt listener,
    standing in for an agent's Neo4j, and the same server's native address.

    The listener speaks enough Bolt for the official driver (user `falkordb`, empty password) and always
    uses the graph named `falkordb`; see NOTES.md. Write fixtures through the native address (a second
    Bolt client after the first has closed may hang on the handshake).
    """
    import anyio

    from proctor.state import EmbeddedFalkorDB

    port = _free_bolt_port()
    server = EmbeddedFalkorDB(extra_args=("BOLT_PORT", str(port)))
    anyio.run(server.start)
    try:
        yield f"bolt://127.0.0.1:{port}", server.uri
    finally:
        anyio.run(server.aclose)


@pytest.fixture
def otlp_receiver() -> Iterator[Any]:
    """A loopback OTLP/HTTP trace receiver (`servers.otlp`) decoding requests with the official protos."""
    from servers._serve import serve_app
    from servers.otlp import OtlpReceiver

    receiver = OtlpReceiver()
    with serve_app(receiver.app()) as base_url:
        receiver.base_url = base_url
        yield receiver


@pytest.fixture
def traced_agent(tmp_path: Path) -> Iterator[Any]:
    """The OTel-instrumented example agent on loopback, writing its spans as OTLP JSON (`helpers.traced`)."""
    from helpers.traced import ServedAgent, agent_module
    from servers._serve import serve_app

    spans = tmp_path / "agent-spans.jsonl"
    agent = agent_module().TripAgent(spans)
    with serve_app(agent.app()) as url:
        yield ServedAgent(agent, url, spans)
    agent.provider.shutdown()
