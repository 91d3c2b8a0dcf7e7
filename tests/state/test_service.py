"""Trial isolation, setups and teardowns (StateManager/StateService) against the embedded engine."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from proctor.errors import ConfigError
from proctor.state import (
    ENV_GRAPH,
    ENV_LABEL,
    ENV_URI,
    FalkorDBBackend,
    StateError,
    StateManager,
    StateService,
    resolve_settings,
)
from proctor.suite import Case, SetupStep, StateSpec, TurnSpec

pytestmark = pytest.mark.anyio


def _case(name: str = "c", setups: tuple[str, ...] = (), state: StateSpec | None = None) -> Case:
    return Case(
        name=name,
        file=Path("suite.yaml"),
        suite="s",
        turns=(TurnSpec(content="hi"),),
        setups=tuple(SetupStep(statement, {}, f"setups[{i}]") for i, statement in enumerate(setups)),
        state=state,
    )


def test_defaults_are_an_embedded_falkordb_with_a_graph_per_trial() -> None:
    settings = resolve_settings(None, {})
    assert (settings.backend, settings.uri, settings.isolation, settings.graph) == (
        "falkordb",
        None,
        "graph",
        "proctor",
    )


def test_neo4j_settings_come_from_the_suite_then_the_environment() -> None:
    env = {"NEO_URI": "bolt://db:7687", "NEO_USERNAME": "ann", "NEO_PASSWORD": "pw", "MINE": "neo4j+s://x:7687"}
    settings = resolve_settings(StateSpec(backend="neo4j"), env)
    assert (settings.uri, settings.user, settings.password, settings.isolation) == (
        "bolt://db:7687",
        "ann",
        "pw",
        "serial",
    )
    assert resolve_settings(StateSpec(backend="neo4j"), {}).uri == "bolt://localhost:7687"
    assert resolve_settings(StateSpec(backend="neo4j"), {}).user == "neo4j"
    explicit = resolve_settings(StateSpec(uri="${MINE}", user="bob", password_env="MY_PW", isolation="label"), env)
    assert (explicit.backend, explicit.uri, explicit.user, explicit.password, explicit.isolation) == (
        "neo4j",
        "neo4j+s://x:7687",
        "bob",
        "",
        "label",
    )
    assert resolve_settings(StateSpec(uri="redis://127.0.0.1:6379"), {}).backend == "falkordb"


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="environment variable NOPE is not set"):
        resolve_settings(StateSpec(uri="${NOPE}"), {})
    with pytest.raises(ConfigError, match="unknown scheme"):
        resolve_settings(StateSpec(uri="http://x"), {})
    with pytest.raises(ValueError, match="Bolt uri"):
        StateSpec(backend="falkordb", uri="bolt://x:7687")
    with pytest.raises(ValueError, match="data_dir"):
        StateSpec(uri="redis://x:1", data_dir="d")


async def test_concurrent_trials_never_see_each_others_writes() -> None:
    """The default: one embedded server for the run, a fresh graph per trial, dropped afterwards."""
    case = _case(setups=("CREATE (:Person {name: 'Alice'})",))
    manager = StateManager()
    manager.add(case)
    await manager.start()
    seen: dict[int, Any] = {}
    names: list[str] = []
    both_written = anyio.Event()
    written = 0

    async def trial(number: int) -> None:
        nonlocal written
        async with manager.trial(case) as lease:
            names.append(lease.variables["graph_name"])
            assert lease.environment[ENV_GRAPH] == lease.variables["graph_name"]
            await lease.graph.run("CREATE (:Reminder {trial: $n})", {"n": number})
            written += 1
            if written == 2:
                both_written.set()
            await both_written.wait()  # both trials have written before either reads
            seen[number] = await lease.graph.run(
                "MATCH (r:Reminder) WITH collect(r.trial) AS trials MATCH (p:Person) RETURN trials, count(p) AS people"
            )

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(trial, 1)
            group.start_soon(trial, 2)
        assert seen == {1: [{"trials": [1], "people": 1}], 2: [{"trials": [2], "people": 1}]}
        assert len(set(names)) == 2
        backend = manager.service(case).backend
        assert isinstance(backend, FalkorDBBackend)
        graphs = await anyio.to_thread.run_sync(backend._db.list_graphs)
        assert not set(names) & set(graphs)  # every trial's graph was dropped
        assert manager.environment[ENV_URI] == backend.uri
    finally:
        await manager.aclose()


async def test_serial_isolation_runs_trials_one_at_a_time_in_a_clean_graph(falkordb_uri: str, graph_name: str) -> None:
    spec = StateSpec(uri=falkordb_uri, isolation="serial", graph=graph_name)
    case = _case(setups=("CREATE (:Seed)",), state=spec)
    manager = StateManager()
    manager.add(case)
    manager.add(replace(case, name="other"))  # same settings: the same service, the same lock
    await manager.start()
    inside = 0
    most = 0
    counts: list[Any] = []

    async def trial() -> None:
        nonlocal inside, most
        async with manager.trial(case) as lease:
            inside += 1
            most = max(most, inside)
            counts.append(await lease.graph.run("MATCH (n) RETURN count(n) AS n"))
            await lease.graph.run("CREATE (:Leftover)")
            await anyio.sleep(0.02)
            inside -= 1

    try:
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(trial)
        assert most == 1
        assert counts == [[{"n": 1}]] * 3  # each trial starts with only its setup's node
        assert ENV_GRAPH in manager.environment
    finally:
        await manager.aclose()


async def test_label_isolation_and_teardown(falkordb_uri: str, graph_name: str) -> None:
    spec = StateSpec(uri=falkordb_uri, isolation="label", graph=graph_name)
    case = _case(setups=("CREATE (:Seed:`{{ graph_label }}`)",), state=spec)
    manager = StateManager()
    manager.add(case)
    await manager.start()
    try:
        service = manager.service(case)
        async with service.trial(case.setups) as first, service.trial(case.setups) as second:
            label = first.variables["graph_label"]
            assert label != second.variables["graph_label"] and first.environment[ENV_LABEL] == label
            assert await first.graph.run(f"MATCH (n:`{label}`) RETURN count(n) AS n") == [{"n": 1}]
            assert await first.graph.run("MATCH (n:Seed) RETURN count(n) AS n") == [{"n": 2}]  # one graph, shared
        assert await first.graph.run("MATCH (n) RETURN count(n) AS n") == [{"n": 0}]  # labelled nodes deleted
    finally:
        await manager.aclose()


async def test_a_declared_teardown_runs_and_its_failure_is_a_warning(falkordb_uri: str, graph_name: str) -> None:
    spec = StateSpec(
        uri=falkordb_uri,
        isolation="shared",
        graph=graph_name,
        teardown=[{"cypher": "MATCH (n:Temp) DELETE n; MATCH (n:Broken RETURN n"}],  # type: ignore[list-item]
    )
    case = _case(state=spec)
    manager = StateManager()
    manager.add(case)
    await manager.start()
    try:
        async with manager.trial(case) as lease:
            await lease.graph.run("CREATE (:Temp), (:Keep)")
        assert await lease.graph.run("MATCH (n) RETURN labels(n)[0] AS label") == [{"label": "Keep"}]
        assert len(lease.warnings) == 1 and lease.warnings[0].startswith("state teardown teardown[0] failed")
    finally:
        await manager.aclose()


async def test_a_failing_setup_names_the_setup_and_the_database_message(falkordb_uri: str) -> None:
    case = _case(setups=("CREATE (:Ok)", "CREATE (:Bad"), state=StateSpec(uri=falkordb_uri))
    manager = StateManager()
    manager.add(case)
    await manager.start()
    try:
        with pytest.raises(StateError, match=r"setup setups\[1\] failed: errMsg: .* \(query: CREATE \(:Bad\)"):
            async with manager.trial(case):
                pass  # pragma: no cover - never entered
    finally:
        await manager.aclose()


async def test_unplanned_cases_and_failed_starts() -> None:
    manager = StateManager()
    with pytest.raises(StateError, match="no state was planned"):
        manager.service(_case())
    from servers._serve import closed_port

    broken = StateManager(StateSpec(uri=f"redis://127.0.0.1:{closed_port()}"))
    broken.add(_case())
    with pytest.raises(StateError, match="cannot reach FalkorDB"):
        await broken.start()


async def test_services_share_backends_and_an_override_replaces_suite_settings(falkordb_uri: str) -> None:
    override = StateSpec(uri=falkordb_uri, isolation="shared")
    manager = StateManager(override)
    manager.add(_case("a", state=StateSpec(backend="neo4j")))  # the override wins: no Neo4j is contacted
    manager.add(_case("b"))
    await manager.start()
    try:
        assert manager.service(_case("a")) is manager.service(_case("b"))
        service = manager.service(_case("a"))
        assert isinstance(service, StateService) and service.settings.isolation == "shared"
    finally:
        await manager.aclose()
