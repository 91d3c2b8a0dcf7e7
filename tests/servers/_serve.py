"""Serve an ASGI app with uvicorn in a background thread, on a free port of 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import uvicorn

from proctor.targets import RetryPolicy

FAST_RETRY = RetryPolicy(max_retries=3, initial_wait=0.01, max_wait=0.05)
"""Retries as in production (3), with short back-offs so tests stay quick."""


@contextmanager
def serve_app(app: Any, *, lifespan: str = "off") -> Iterator[str]:
    """Run `app` until the block ends; yields its base URL, e.g. `http://127.0.0.1:54321`.

    `lifespan="on"` runs the app's startup (an MCP SDK app starts its session manager there).
    """
    with serve_built(lambda base_url: app, lifespan=lifespan) as url:
        yield url


@contextmanager
def serve_built(build: Callable[[str], Any], *, lifespan: str = "off") -> Iterator[str]:
    """`serve_app` for an app that must know its own URL (an A2A agent card names it): `build(base_url)`."""
    sock = socket.socket(
        socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP
    )  # TCP proto: asyncio then sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        build(f"http://127.0.0.1:{port}"),
        loop="asyncio",  # not uvloop (the serve extra's): the apps under test leave their clients to the GC
        log_level="warning",
        lifespan=lifespan,
        ws="none",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def closed_port() -> int:
    """Return a port on 127.0.0.1 that nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def hang_up_server() -> Iterator[tuple[str, list[int]]]:
    """A raw TCP server that accepts connections and closes them without answering.

    Yields the base URL and a one-item list counting accepted connections.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    accepted = [0]
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(1)
                with suppress(OSError):
                    conn.recv(65536)
                accepted[0] += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
