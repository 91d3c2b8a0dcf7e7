"""One local Ray instance for the cluster tests (bound to 127.0.0.1, own temp dir, capped object store).

Started once per session (`ray.init` takes seconds and ~700 MB), by the code `--cluster auto` runs; each
test's run then borrows the connection and starts its own worker actors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# read by Ray when it is imported (these tests' modules import it): the local instance binds to 127.0.0.1
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
pytest.importorskip("ray", reason="the ray extra is not installed (it is part of the dev extra)")


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    """A local Ray instance (`proctor.cluster._connect.connect("auto")`), shut down after the session."""
    from proctor.cluster._connect import connect

    connection = connect("auto")
    try:
        assert connection.owned and connection.temp_dir is not None
        import ray

        assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}  # loopback only
        yield
    finally:
        connection.close()
    assert not Path(connection.temp_dir).exists()
    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
