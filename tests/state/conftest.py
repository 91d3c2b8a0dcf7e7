"""Fixtures for the state tests (the shared FalkorDB server is `falkordb_uri` in the root conftest)."""

from __future__ import annotations

import itertools

import pytest

_names = itertools.count(1)


@pytest.fixture
def graph_name() -> str:
    """A graph name no other test uses."""
    return f"test-{next(_names)}"
