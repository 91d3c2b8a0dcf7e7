"""Serving the viewer: bind, print the address, open a browser when there is one, serve until Ctrl-C."""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import uvicorn

from proctor.errors import ConfigError
from proctor.view._app import ViewOptions, create_app
from proctor.view._gate import is_loopback

__all__ = ["browser_available", "new_token", "serve", "view_url"]


def new_token() -> str:
    """A fresh token for sharing the viewer beyond this machine."""
    return secrets.token_urlsafe(24)


def view_url(host: str, port: int, path: str = "/", token: str | None = None) -> str:
    """The address to open (with `?token=` when one is needed)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host  # a bind-all address is opened locally
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}{path}" + (f"?token={token}" if token else "")


def browser_available() -> bool:
    """Whether a graphical browser can be opened (never a text browser taking over the terminal)."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class _Server(uvicorn.Server):
    """uvicorn, telling the viewer's event streams to end as soon as a shutdown starts."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopping.set()
        super().handle_exit(sig, frame)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (try --port 0 for any free port)"
        ) from None
    sock.listen(128)
    return sock


def serve(
    history: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    results_dirs: list[Path] | None = None,
    path: str = "/",
    open_browser: bool = True,
    any_port_if_taken: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the viewer until interrupted.

    Args:
        history: The run history database.
        host: The address to bind (loopback by default; any other needs `token`).
        port: The port (0: any free one).
        token: The token requests must carry (required off loopback).
        results_dirs: More directories where runs in progress keep their journals.
        path: The page to open first (e.g. a run's page).
        open_browser: Open the address in a browser when one is available.
        any_port_if_taken: Take any free port when `port` is in use (else that is an error).
        announce: Where to print the address.

    Raises:
        ConfigError: The address cannot be bound, or a non-loopback host has no token.
    """
    loopback = is_loopback(host)
    if not loopback and not token:
        raise ConfigError(f"--host {host} shares the viewer beyond this machine: it needs a token")
    try:
        sock = _listen(host, port)
    except ConfigError:
        if not any_port_if_taken:
            raise
        sock = _listen(host, 0)
    bound = sock.getsockname()[1]
    options = ViewOptions(token=token, loopback=loopback)
    app = create_app(history, results_dirs=results_dirs, options=options)
    url = view_url(host, bound, path, token)
    announce(f"Proctor view: {url}  (history {history}; Ctrl-C stops it)")
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", ws="none", timeout_graceful_shutdown=1
    )
    server = _Server(config, options.stopping)
    if open_browser and browser_available():
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it shut down on: stopping the viewer is how it ends
    finally:
        sock.close()
