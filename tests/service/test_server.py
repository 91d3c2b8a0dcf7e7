"""`proctor serve`'s uvicorn settings: one write per response, the loop and protocol chosen."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from proctor.service import Pipeline, create_app
from proctor.service._server import OneWriteHttpToolsProtocol, server_config
from service.events import SEED_EARLY_EXIT


class CountingTransport:
    """A transport that counts the writes reaching it, then passes them on (uvloop's `write` cannot be patched)."""

    def __init__(self, transport: asyncio.Transport, writes: list[int]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: Any) -> None:
        self._writes.append(len(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def counting(protocol: type[HttpToolsProtocol], writes: list[int]) -> type[HttpToolsProtocol]:
    """`protocol`, counting the writes that reach each connection's real transport."""

    class Counting(protocol):  # type: ignore[misc,valid-type]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(CountingTransport(transport, writes))  # type: ignore[arg-type]

    return Counting


@contextmanager
def running(config: uvicorn.Config) -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def post_keep_alive(port: int, count: int) -> list[bytes]:
    """`count` precheck-only POSTs on one connection; each raw response."""
    body = SEED_EARLY_EXIT.encode()
    request = b"POST /api/v1/evaluate HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    request += f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    responses = []
    with socket.create_connection(("127.0.0.1", port)) as sock, sock.makefile("rb") as stream:
        for _ in range(count):
            sock.sendall(request)
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += stream.readline()
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length")
            )
            responses.append(head + stream.read(length))
    return responses


@pytest.mark.parametrize(("protocol", "writes_per_response"), [(OneWriteHttpToolsProtocol, 1), (HttpToolsProtocol, 2)])
def test_each_response_leaves_in_one_write(protocol: type[HttpToolsProtocol], writes_per_response: int) -> None:
    writes: list[int] = []
    config = server_config(
        create_app(Pipeline()), host="127.0.0.1", port=0, access_log=False, log_level="warning", shutdown_timeout=1
    )
    config.http = counting(protocol, writes)
    config.lifespan = "off"
    with running(config) as port:
        responses = post_keep_alive(port, 5)
    assert len(writes) == 5 * writes_per_response  # uvicorn's own protocol writes the head, then the body
    assert sum(writes) == sum(len(response) for response in responses)
    for response in responses:
        head, _, body = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"content-type: application/json" in head
        assert b'"verdict":"fail"' in body and body.startswith(b'{"id":"evt-002"')


def test_the_server_settings() -> None:
    config = server_config(
        create_app(Pipeline()), host="127.0.0.1", port=0, access_log=False, log_level="warning", shutdown_timeout=3
    )
    assert (config.http, config.loop, config.ws, config.lifespan) == (OneWriteHttpToolsProtocol, "auto", "none", "on")
    assert (config.proxy_headers, config.access_log, config.timeout_graceful_shutdown) == (False, False, 3)
    logged = server_config(
        create_app(Pipeline()), host="127.0.0.1", port=0, access_log=True, log_level="info", shutdown_timeout=3
    )
    assert logged.proxy_headers and logged.access_log  # the access log shows the forwarded client address
