"""The Neo4j backend: query and result mapping (unit), a Bolt smoke test, and a real Neo4j when NEO_URI is set.

No Neo4j server can be installed here; FalkorDB's Bolt listener (`BOLT_PORT`) accepts the official driver
for CREATE, MATCH, count, parameters and relationships, which is enough to smoke-test the Bolt path.
Dialect and error tests stay on the native client (`test_falkordb.py`): the listener's error messages
and database selection differ from Neo4j's.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from neo4j.exceptions import ClientError
from neo4j.graph import Graph as DriverGraph
from neo4j.graph import Node, Relationship
from neo4j.graph import Path as DriverPath
from neo4j.time import DateTime

from proctor.state import (
    EmbeddedFalkorDB,
    Neo4jBackend,
    QueryError,
    StateError,
    StateManager,
    StateUnavailable,
    neo4j_value,
)
from proctor.suite import Case, SetupStep, StateSpec, TurnSpec

pytestmark = pytest.mark.anyio


def test_nodes_relationships_paths_and_temporal_values_become_plain_data() -> None:
    graph = DriverGraph()
    alice = Node(graph, "n1", 1, ["Person"], {"name": "Alice"})
    bob = Node(graph, "n2", 2, ["Person"], {"name": "Bob"})
    knows = graph.relationship_type("KNOWS")(graph, "r1", 3, {"since": 2020})
    knows._start_node, knows._end_node = alice, bob
    assert neo4j_value(alice) == {"name": "Alice"}
    assert neo4j_value(knows) == {"since": 2020}
    assert neo4j_value(DriverPath(alice, knows)) == [{"name": "Alice"}, {"since": 2020}, {"name": "Bob"}]
    assert neo4j_value(DateTime(2025, 1, 5, 9, 30)) == dt.datetime(2025, 1, 5, 9, 30)  # noqa: DTZ001
    assert neo4j_value(7) == 7
    assert isinstance(knows, Relationship)


@dataclass
class _Record:
    values: dict[str, Any]

    def items(self) -> list[tuple[str, Any]]:
        return list(self.values.items())


@dataclass
class _Session:
    driver: _FakeDriver
    database: str | None

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(self, query: str, params: dict[str, Any]) -> list[_Record]:
        self.driver.calls.append((self.database, query, params))
        if "BROKEN" in query:
            raise ClientError._hydrate_neo4j(code="Neo.ClientError.Statement.SyntaxError", message="Invalid input 'B'")
        if "CREATE DATABASE" in query and self.driver.community:
            raise ClientError._hydrate_neo4j(
                code="Neo.ClientError.Statement.UnsupportedAdministrationCommand",
                message="Unsupported administration command",
            )
        return [_Record(row) for row in self.driver.rows]


@dataclass
class _FakeDriver:
    rows: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str | None, str, dict[str, Any]]] = field(default_factory=list)
    community: bool = False
    closed: bool = False

    def session(self, database: str | None = None) -> _Session:
        return _Session(self, database)

    def verify_connectivity(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


async def test_queries_go_to_the_trials_database_with_their_parameters() -> None:
    node = Node(DriverGraph(), "n1", 1, ["Reminder"], {"title": "x"})
    driver = _FakeDriver(rows=[{"r": node, "count": 1}])
    backend = Neo4jBackend("bolt://db:7687", driver=driver)
    await backend.start()
    graph = backend.graph("proctor-ab-1", owned=True, label="L1")
    assert await graph.run("MATCH (r:Reminder) RETURN r, count(r) AS count", {"x": 1}) == [
        {"r": {"title": "x"}, "count": 1}
    ]
    await graph.reset()
    await backend.create_database("proctor-ab-2")
    await graph.close()
    assert driver.calls == [
        ("proctor-ab-1", "MATCH (r:Reminder) RETURN r, count(r) AS count", {"x": 1}),
        ("proctor-ab-1", "MATCH (n:`L1`) DETACH DELETE n", {}),
        ("system", "CREATE DATABASE `proctor-ab-2` IF NOT EXISTS WAIT", {}),
        ("system", "DROP DATABASE `proctor-ab-1` IF EXISTS", {}),
    ]
    default = backend.graph(None)
    await default.reset()
    assert driver.calls[-1] == (None, "MATCH (n) DETACH DELETE n", {})
    await backend.aclose()
    assert driver.closed


async def test_errors_carry_the_servers_message() -> None:
    driver = _FakeDriver(community=True)
    backend = Neo4jBackend("bolt://db:7687", driver=driver)
    await backend.start()
    with pytest.raises(QueryError) as caught:
        await backend.graph(None).run("BROKEN")
    assert caught.value.message == "Invalid input 'B'"
    with pytest.raises(StateError, match=r"Unsupported administration command.*isolation 'serial' or 'label'"):
        await backend.create_database("proctor-x-1")


async def test_missing_driver_and_unreachable_server(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StateUnavailable, match=r"cannot reach Neo4j at bolt://127\.0\.0\.1:"):
        from servers._serve import closed_port

        await Neo4jBackend(f"bolt://127.0.0.1:{closed_port()}").start()
    monkeypatch.setitem(sys.modules, "neo4j", None)
    with pytest.raises(StateUnavailable, match=r"pip install 'proctor-eval\[neo4j\]'"):
        await Neo4jBackend("bolt://127.0.0.1:1").start()


def _bolt_port() -> int:
    """A port FalkorDB's Bolt listener accepts (it takes ports up to 32767) that is free on all interfaces."""
    for port in range(20000 + os.getpid() % 10000, 32768):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port for the Bolt listener")  # pragma: no cover


@pytest.fixture
async def bolt_uri() -> Any:
    port = _bolt_port()
    server = EmbeddedFalkorDB(extra_args=("BOLT_PORT", str(port)))
    await server.start()
    yield f"bolt://127.0.0.1:{port}"
    await server.aclose()


async def test_bolt_smoke_against_falkordbs_listener(bolt_uri: str) -> None:
    """The real driver over Bolt: connect, CREATE with parameters and a relationship, MATCH, count."""
    backend = Neo4jBackend(bolt_uri, user="falkordb", password="")
    await backend.start()
    try:
        graph = backend.graph(None)  # the listener always uses its graph named "falkordb"
        await graph.run(
            "CREATE (:Person {name: $a})-[:KNOWS {since: $y}]->(:Person {name: 'Bob'})", {"a": "Al", "y": 2020}
        )
        rows = await graph.run("MATCH (p:Person)-[k:KNOWS]->(q) RETURN p, k, q.name AS name, count(*) AS n")
        assert rows == [{"p": {"name": "Al"}, "k": {"since": 2020}, "name": "Bob", "n": 1}]
        assert await graph.run("MATCH (r:Reminder) RETURN count(r) AS count") == [{"count": 0}]
    finally:
        await backend.aclose()


@pytest.fixture
def neo4j_uri(real_neo4j_env: dict[str, str]) -> Iterator[str]:
    uri = real_neo4j_env.get("NEO_URI")
    if not uri:
        pytest.skip(
            "a real Neo4j runs only when NEO_URI is set (with NEO_USERNAME and NEO_PASSWORD); none is installable here"
        )
    yield uri


async def test_real_neo4j_setups_isolation_and_assertions(neo4j_uri: str) -> None:
    """Against a real Neo4j: label isolation (nothing else in the database is touched), setups, cleanup."""
    case = Case(
        name="neo4j",
        file=Path("suite.yaml"),
        suite="s",
        turns=(TurnSpec(content="hi"),),
        setups=(SetupStep("CREATE (:ProctorSeed:`{{ graph_label }}` {name: $name})", {"name": "Alice"}, "setups[0]"),),
        state=StateSpec(backend="neo4j", isolation="label"),
    )
    manager = StateManager()
    manager.add(case)
    await manager.start()
    try:
        async with manager.trial(case) as lease:
            label = lease.variables["graph_label"]
            await lease.graph.run(f"CREATE (:Reminder:`{label}` {{title: 'x'}})")
            rows = await lease.graph.run(
                f"MATCH (r:Reminder:`{label}`) MATCH (p:ProctorSeed:`{label}`) RETURN count(r) AS count, p.name AS name"
            )
            assert rows == [{"count": 1, "name": "Alice"}]
            with pytest.raises(QueryError):
                await lease.graph.run("MATCH (r:Reminder RETURN r")
        assert await lease.graph.run(f"MATCH (n:`{label}`) RETURN count(n) AS n") == [{"n": 0}]
    finally:
        await manager.aclose()
