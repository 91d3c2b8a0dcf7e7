"""The service's uvicorn settings: the event loop, parser and protocol measured cheapest per request.

`bench/service.py --only http` measures them. Per precheck-only request, most of the server's CPU is
uvicorn's and the kernel's, not the app's, so:

* `loop="auto"`: uvloop when installed (the `serve` extra installs it where it builds), else asyncio;
* `OneWriteHttpToolsProtocol`: uvicorn's httptools protocol, with the writes of one event-loop step
  sent as one `send()`. uvicorn writes a response's head and its body separately; over a `TCP_NODELAY`
  socket (every accepted connection, see `_listen` in `proctor.cli._serve`) that is two segments, two
  system calls and two wake-ups of the client per response;
* `proxy_headers` only with the access log: `X-Forwarded-For` rewrites the client address, which only the
  access log reads;
* no websocket protocol (the service has no websocket route).
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # httptools: part of the serve extra

__all__ = ["OneWriteHttpToolsProtocol", "OneWriteTransport", "server_config"]


class OneWriteTransport:
    """A transport whose writes within one event-loop step go out together, in order, in one `write`.

    The first write of a step schedules the flush with `call_soon`; closing flushes first.
    """

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        """Queue `data`; it is sent with the step's other writes once the step ends."""
        if self._pending is None:
            self._pending = [data]
            self._loop.call_soon(self._flush)
        else:
            self._pending.append(data)

    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        """Send what is queued, then close."""
        self._flush()
        self._transport.close()

    def is_closing(self) -> bool:
        """Whether the transport is closing or closed."""
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol writing through a `OneWriteTransport`: one `send()` per response."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Set up the connection as uvicorn does, then coalesce its writes."""
        super().connection_made(transport)
        self.transport = OneWriteTransport(transport, self.loop)  # type: ignore[assignment]


def server_config(
    app: Any, *, host: str, port: int, access_log: bool, log_level: str, shutdown_timeout: int
) -> uvicorn.Config:
    """The uvicorn configuration `proctor serve` runs `app` with.

    Args:
        app: The ASGI app (`create_app`).
        host: Address to listen on.
        port: Port to listen on.
        access_log: Log every request (and honour `X-Forwarded-For` from trusted proxies for it).
        log_level: uvicorn's log level.
        shutdown_timeout: On SIGTERM, seconds to let requests in flight finish.
    """
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="auto",
        http=OneWriteHttpToolsProtocol,
        ws="none",
        proxy_headers=access_log,
        access_log=access_log,
        log_level=log_level,
        timeout_graceful_shutdown=shutdown_timeout,
        lifespan="on",
    )
