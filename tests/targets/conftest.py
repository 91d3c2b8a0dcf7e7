from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parents[1])
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from servers import chat, lobu, rest  # noqa: E402
from servers._serve import serve_app  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def chat_server() -> Iterator[chat.ChatServer]:
    server = chat.ChatServer()
    with serve_app(chat.build_app(server)) as base_url:
        server.base_url = base_url
        yield server


@pytest.fixture(scope="session")
def rest_server() -> Iterator[rest.RestServer]:
    server = rest.RestServer()
    with serve_app(rest.build_app(server)) as base_url:
        server.base_url = base_url
        yield server


@pytest.fixture(scope="session")
def lobu_gateway() -> Iterator[lobu.LobuGateway]:
    gateway = lobu.LobuGateway()
    with serve_app(lobu.build_app(gateway)) as base_url:
        gateway.base_url = base_url
        yield gateway
