"""Fixtures of the viewer tests: the shared run store, and the viewer over it (uvicorn on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from viewstore import Store, make_store

from proctor.view import ViewOptions, create_app
from servers._serve import serve_app


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return make_store(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="session")
def viewer(store: Store) -> Iterator[str]:
    """The viewer over the shared store, on loopback without a token; yields its base URL."""
    with serve_app(create_app(store.history, options=ViewOptions(poll_seconds=0.05))) as url:
        yield url
