"""The state of a run: a backend per suite setting, an isolated graph per trial, setups and teardowns."""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from pydantic import ValidationError

from proctor.errors import ConfigError
from proctor.state._base import BlockingGraph, Graph, QueryError, StateError, StateUnavailable, logger
from proctor.state._falkordb import EmbeddedFalkorDB, FalkorDBBackend
from proctor.state._neo4j import DEFAULT_NEO4J_URI, Neo4jBackend
from proctor.state._plan import StatePlan, plan_state, state_notices
from proctor.suite import Case, Isolation, SetupStep, StateSpec, split_statements

__all__ = [
    "ENV_BACKEND",
    "ENV_GRAPH",
    "ENV_LABEL",
    "ENV_URI",
    "StateManager",
    "StateService",
    "StateSettings",
    "TrialState",
    "resolve_settings",
    "start_states",
]

ENV_URI = "PROCTOR_GRAPH_URI"
"""Environment variable with the graph server's address, for agent processes Proctor launches."""
ENV_GRAPH = "PROCTOR_GRAPH_NAME"
"""Environment variable with the graph (FalkorDB) or database (Neo4j) the agent should write to."""
ENV_LABEL = "PROCTOR_GRAPH_LABEL"
"""Environment variable with the trial's label under `label` isolation."""
ENV_BACKEND = "PROCTOR_GRAPH_BACKEND"
"""Environment variable with the backend's kind: `falkordb` or `neo4j`."""

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NEO4J_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
_FALKORDB_SCHEMES = ("falkordb", "falkor", "redis", "rediss")

Backend = FalkorDBBackend | Neo4jBackend


@dataclass(frozen=True, slots=True)
class StateSettings:
    """A suite's `state:` with every default resolved from the environment."""

    backend: Literal["falkordb", "neo4j"]
    """Which client talks to the graph."""
    uri: str | None
    """The server; `None` means an embedded FalkorDB."""
    user: str | None
    """User name (Neo4j)."""
    password: str
    """Password (read from the environment)."""
    graph: str | None
    """The graph or database used by `label`, `serial` and `shared` isolation."""
    isolation: Isolation
    """How trials are kept apart."""
    teardown: tuple[SetupStep, ...]
    """Cypher run after each trial."""
    data_dir: str | None
    """Embedded engine's data directory."""
    timeout: float
    """Seconds per query."""

    def backend_key(self) -> str:
        """Settings with an equal key share one backend (one embedded server, one driver)."""
        return json.dumps([self.backend, self.uri, self.user, self.password, self.data_dir])


def _expand(value: str | None, where: str, environ: Mapping[str, str]) -> str | None:
    if value is None:
        return None

    def replace(match: re.Match[str]) -> str:
        found = environ.get(match.group(1))
        if found is None:
            raise ConfigError(f"environment variable {match.group(1)} is not set (used in state.{where})")
        return found

    return _ENV_REFERENCE.sub(replace, value)


def resolve_settings(spec: StateSpec | None, environ: Mapping[str, str] | None = None) -> StateSettings:
    """Fill in a suite's state settings from the environment and the backends' defaults.

    Args:
        spec: The suite's `state:`, or `None` for the defaults (an embedded FalkorDB, a graph per trial).
        environ: Where `${VAR}`, `NEO_URI`, `NEO_USERNAME` and the password are read (default `os.environ`).

    Raises:
        ConfigError: A `${VAR}` is unset, or the uri's scheme is unknown.
    """
    env = os.environ if environ is None else environ
    spec = spec or StateSpec()
    uri = _expand(spec.uri, "uri", env) or None
    backend = spec.backend
    if uri is not None:
        scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
        if scheme not in _NEO4J_SCHEMES + _FALKORDB_SCHEMES:
            raise ConfigError(
                f"state.uri {uri!r}: unknown scheme; expected bolt://, neo4j:// (Neo4j) or falkordb://, redis:// "
                "(FalkorDB)"
            )
        backend = backend or ("neo4j" if scheme in _NEO4J_SCHEMES else "falkordb")
    backend = backend or "falkordb"
    if backend == "neo4j" and uri is None:
        uri = env.get("NEO_URI") or DEFAULT_NEO4J_URI
    user = _expand(spec.user, "user", env)
    if backend == "neo4j" and user is None:
        user = env.get("NEO_USERNAME") or "neo4j"
    return StateSettings(
        backend=backend,
        uri=uri,
        user=user,
        password=env.get(spec.password_env, ""),
        graph=_expand(spec.graph, "graph", env) or ("proctor" if backend == "falkordb" else None),
        isolation=spec.isolation or ("serial" if backend == "neo4j" else "graph"),
        teardown=tuple(
            SetupStep(statement, dict(step.params), f"teardown[{index}]")
            for index, step in enumerate(spec.teardown)
            for statement in split_statements(step.cypher or "")
        ),
        data_dir=spec.data_dir,
        timeout=spec.query_timeout,
    )


@dataclass(slots=True)
class TrialState:
    """What one trial gets: its graph, and how to tell the agent where that graph is."""

    graph: Graph
    """The trial's graph (what state assertions query)."""
    variables: dict[str, Any]
    """Template variables for targets: `graph_backend`, `graph_uri`, `graph_name`, `graph_label`."""
    environment: dict[str, str]
    """The same as environment variables (`PROCTOR_GRAPH_URI`, ...), for agent processes."""
    warnings: list[str] = field(default_factory=list)
    """Problems after the trial (a failed teardown), filled in when the trial's state is released."""


class StateService:
    """The trials of the suites that share one state setting: a graph per trial, setups, teardowns."""

    def __init__(self, settings: StateSettings, backend: Backend, lock: anyio.Lock | None = None) -> None:
        """Wire a setting to its (shared) backend.

        Args:
            settings: The resolved settings.
            backend: The backend (started by the manager).
            lock: Held through each trial under `serial` isolation (shared by services on the same graph).
        """
        self.settings = settings
        self.backend = backend
        self._lock = lock
        self._run = secrets.token_hex(3)
        self._numbers = itertools.count(1)

    @asynccontextmanager
    async def trial(self, setups: Sequence[SetupStep] = ()) -> AsyncIterator[TrialState]:
        """Give one trial its graph in a clean state with the setups run; tear down afterwards.

        Raises:
            StateError: The graph could not be made ready or a setup failed (the trial cannot run).
        """
        settings = self.settings
        if self._lock is not None:
            await self._lock.acquire()
        try:
            number = next(self._numbers)
            graph, variables = await self._open(number)
            environment = {
                key: str(variables[name])
                for key, name in ((ENV_BACKEND, "graph_backend"), (ENV_URI, "graph_uri"), (ENV_GRAPH, "graph_name"))
                if variables[name] is not None
            }
            if variables["graph_label"] is not None:
                environment[ENV_LABEL] = variables["graph_label"]
            lease = TrialState(graph, variables, environment)
            try:
                if settings.isolation == "serial" and not settings.teardown:
                    await _step(graph.reset(), "cleaning the graph before the trial")
                for step in setups:
                    await _step(graph.run(step.statement, step.params), f"setup {step.source}")
                yield lease
            finally:
                with anyio.CancelScope(shield=True):
                    await self._release(graph, lease)
        finally:
            if self._lock is not None:
                self._lock.release()

    async def _open(self, number: int) -> tuple[BlockingGraph, dict[str, Any]]:
        settings, backend = self.settings, self.backend
        label = f"ProctorTrial_{self._run}_{number}" if settings.isolation == "label" else None
        name = f"proctor-{self._run}-{number}" if settings.isolation == "graph" else settings.graph
        variables: dict[str, Any] = {
            "graph_backend": settings.backend,
            "graph_uri": backend.uri,
            "graph_name": name,
            "graph_label": label,
        }
        options: dict[str, Any] = {"label": label, "variables": variables, "timeout": settings.timeout}
        owned = settings.isolation == "graph"
        if isinstance(backend, Neo4jBackend):
            if owned:
                await backend.create_database(str(name))
            return backend.graph(name, owned=owned, **options), variables
        return backend.graph(str(name), owned=owned, **options), variables

    async def _release(self, graph: BlockingGraph, lease: TrialState) -> None:
        settings = self.settings
        for step in settings.teardown:
            try:
                await graph.run(step.statement, step.params)
            except StateError as exc:
                lease.warnings.append(f"state teardown {step.source} failed: {exc}")
        try:
            if settings.isolation == "label" and not settings.teardown:
                await graph.reset()
            await graph.close()
        except StateError as exc:
            lease.warnings.append(f"could not clean up graph {graph.name!r} after the trial: {exc}")


async def _step(pending: Any, what: str) -> None:
    try:
        await pending
    except QueryError as exc:
        raise StateError(f"{what} failed: {exc.message} (query: {' '.join(exc.query.split())})") from None


class StateManager:
    """Every state backend of one run: built for the cases that need one, started once, closed at the end.

    Example:
        ```python
        states = StateManager()
        states.add(case)
        await states.start()
        async with states.trial(case) as lease:
            await lease.graph.run("MATCH (n) RETURN count(n) AS n")
        await states.aclose()
        ```
    """

    def __init__(self, override: StateSpec | None = None, environ: Mapping[str, str] | None = None) -> None:
        """Nothing starts until `start`.

        Args:
            override: State settings that replace every suite's `state:` (e.g. from the command line).
            environ: Where settings read the environment (default `os.environ`).
        """
        self._override = override
        self._environ = environ
        self._services: dict[str, StateService] = {}
        self._backends: dict[str, Backend] = {}
        self._settings: dict[str, StateSettings] = {}
        self._cases: dict[str, list[Case]] = {}

    def plan(self, case: Case) -> StatePlan:
        """Which graph `case` uses and who named it (`proctor.state._plan`)."""
        return plan_state(case, self._override, self._environ)

    def _key(self, case: Case) -> str:
        spec = self.plan(case).spec
        return "" if spec is None else spec.model_dump_json()

    def add(self, case: Case) -> None:
        """Plan state for `case` (its suite's settings are resolved now, so mistakes show before any trial).

        Raises:
            ConfigError: The case's state settings cannot be resolved.
        """
        key = self._key(case)
        self._cases.setdefault(key, []).append(case)
        if key not in self._settings:
            self._settings[key] = resolve_settings(self.plan(case).spec, self._environ)

    def _plans_of(self, key: str) -> list[StatePlan]:
        return [self.plan(case) for case in self._cases.get(key, [])]

    def notices(self, targets: Mapping[str, Any] | None = None) -> list[str]:
        """What the run should say at start about where state assertions read (see `state_notices`).

        Args:
            targets: The built target of each case, by case name (to tell whether the agent learns the
                embedded graph's address); a case without one counts as not told.
        """
        found: list[tuple[Case, StatePlan, str | None, Any]] = []
        for key, cases in self._cases.items():
            service = self._services.get(key)
            address = service.backend.uri if service is not None else None
            found.extend((case, self.plan(case), address, (targets or {}).get(case.name)) for case in cases)
        return state_notices(found)

    async def start(self) -> None:
        """Start the embedded servers and connect to every backend.

        Raises:
            StateUnavailable: A backend's extra is missing or its server cannot be started or reached.
        """
        locks: dict[str, anyio.Lock] = {}
        try:
            for key, settings in self._settings.items():
                backend_key = settings.backend_key()
                if backend_key not in self._backends:
                    backend = _build_backend(settings)
                    self._backends[backend_key] = backend
                    try:
                        await backend.start()
                    except StateUnavailable as exc:
                        raise StateUnavailable(f"{exc}{_named_by(self._plans_of(key))}") from None
                lock = None
                if settings.isolation in ("serial", "keep"):
                    lock = locks.setdefault(json.dumps([backend_key, settings.graph]), anyio.Lock())
                self._services[key] = StateService(settings, self._backends[backend_key], lock)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.aclose()
            raise

    def service(self, case: Case) -> StateService:
        """The service that gives `case`'s trials their graphs."""
        service = self._services.get(self._key(case))
        if service is None:
            raise StateError(f"no state was planned for case {case.name!r} (call add() and start() first)")
        return service

    def trial(self, case: Case) -> Any:
        """`async with manager.trial(case) as lease:` the trial's graph with the case's setups run."""
        return self.service(case).trial(case.setups)

    @property
    def environment(self) -> dict[str, str]:
        """Run-level variables for an agent process started once for the run (the first backend's address)."""
        for service in self._services.values():
            settings = service.settings
            out = {ENV_BACKEND: settings.backend, ENV_URI: service.backend.uri}
            if settings.isolation != "graph" and settings.graph is not None:
                out[ENV_GRAPH] = settings.graph
            return out
        return {}

    async def aclose(self) -> None:
        """Close every backend (stopping embedded servers)."""
        backends, self._backends = list(self._backends.values()), {}
        self._services = {}
        for backend in backends:
            await backend.aclose()


def _named_by(plans: Sequence[StatePlan]) -> str:
    """Why Proctor looked for the graph where it did, for the error when nothing answers there."""
    sources = {plan.source for plan in plans}
    if "environment" in sources:
        return " (named by NEO_URI; the state assertions read the agent's own graph there)"
    if "embabel" in sources:
        return (
            " (Embabel's default address of the agent's Neo4j, used for an Embabel job's Cypher setups and "
            "assertions: set NEO_URI, NEO_USERNAME and NEO_PASSWORD to where the agent writes, or give the job "
            "'state: {backend: falkordb}' for Proctor's embedded graph)"
        )
    return ""


def _build_backend(settings: StateSettings) -> Backend:
    if settings.backend == "neo4j":
        assert settings.uri is not None
        return Neo4jBackend(settings.uri, user=settings.user or "neo4j", password=settings.password)
    if settings.uri is None:
        return FalkorDBBackend(embedded=EmbeddedFalkorDB(settings.data_dir))
    return FalkorDBBackend(settings.uri, password=settings.password or None)


async def start_states(
    cases: Sequence[Case], override: Any = None, targets: Mapping[str, Any] | None = None
) -> StateManager:
    """Plan and start the state backends of `cases` (what a run does before its first trial).

    Args:
        cases: The cases whose trials need a graph.
        override: State settings (a `StateSpec` or a mapping) replacing every suite's `state:`.
        targets: The built target of each case by case name, to judge whether the agent learns the
            embedded graph's address; default each case's own target spec.

    The notices of `StateManager.notices` are logged as warnings on the `proctor.state` logger, so they
    show at start.

    Raises:
        ConfigError: The override does not validate, or a suite's settings cannot be resolved.
        StateUnavailable: A backend's extra is missing or its server cannot be started or reached.
    """
    try:
        spec = None if override is None else StateSpec.model_validate(override)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'state'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"state settings: {problems}") from None
    manager = StateManager(spec)
    for case in cases:
        manager.add(case)
    await manager.start()
    for line in manager.notices(targets if targets is not None else {case.name: case.target for case in cases}):
        logger.warning("%s", line)
    return manager
