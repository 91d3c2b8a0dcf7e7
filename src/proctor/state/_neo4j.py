"""Neo4j over Bolt, through the official `neo4j` driver (the `neo4j` extra)."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio.to_thread

from proctor.state._base import BlockingGraph, QueryError, StateError, StateUnavailable, plain

__all__ = ["DEFAULT_NEO4J_URI", "Neo4jBackend", "Neo4jGraph", "neo4j_value"]

DEFAULT_NEO4J_URI = "bolt://localhost:7687"
"""Where Neo4j is looked for when neither the suite nor `NEO_URI` says."""
EXTRA_HINT = "the Neo4j backend needs the 'neo4j' extra: pip install 'proctor-eval[neo4j]'"


def neo4j_value(value: Any) -> Any:
    """The driver's nodes and relationships as property maps, paths as lists, temporal values as Python's."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node | Relationship):
        return dict(value.items())
    if isinstance(value, Path):
        items: list[Any] = [dict(value.start_node.items())]
        for relationship in value.relationships:
            items.append(dict(relationship.items()))
            if relationship.end_node is not None:
                items.append(dict(relationship.end_node.items()))
        return items
    to_native = getattr(value, "to_native", None)
    if callable(to_native):  # neo4j.time.Date/DateTime/Time/Duration
        return to_native()
    return value


class Neo4jBackend:
    """Databases on a Neo4j server, reached with the official driver."""

    kind = "neo4j"

    def __init__(self, uri: str, *, user: str = "neo4j", password: str = "", driver: Any = None) -> None:
        """Describe the connection; nothing connects until `start`.

        Args:
            uri: `bolt://`, `neo4j://` (or their `+s`/`+ssc` forms).
            user: The user name.
            password: The password.
            driver: An already built driver (for tests); `start` then does not build one.
        """
        self.uri = uri
        self._auth = (user, password)
        self._driver: Any = driver

    async def start(self) -> None:
        """Build the driver and check that the server answers.

        Raises:
            StateUnavailable: The extra is missing or the server cannot be reached.
        """
        if self._driver is None:
            try:
                import neo4j
            except ImportError:
                raise StateUnavailable(EXTRA_HINT) from None
            try:
                self._driver = neo4j.GraphDatabase.driver(self.uri, auth=self._auth, connection_timeout=10)
            except Exception as exc:  # bad URI scheme, bad options
                raise StateUnavailable(f"cannot use Neo4j at {self.uri}: {exc}") from None
        try:
            await anyio.to_thread.run_sync(self._driver.verify_connectivity)
        except Exception as exc:
            await self.aclose()
            raise StateUnavailable(f"cannot reach Neo4j at {self.uri}: {exc}") from None

    def graph(self, name: str | None, **options: Any) -> Neo4jGraph:
        """A handle on database `name` (`None`: the server's default database).

        Args:
            name: The database.
            **options: `label`, `variables`, `timeout` and `owned`, as `BlockingGraph` takes them.
        """
        if self._driver is None:
            raise StateUnavailable("the Neo4j backend is not started")
        return Neo4jGraph(self._driver, name, **options)

    async def create_database(self, name: str) -> None:
        """Create database `name` and wait until it is online (needs an edition with several databases).

        Raises:
            StateError: The server refused (e.g. Neo4j Community has one database).
        """
        try:
            await self.graph("system").run(f"CREATE DATABASE `{name}` IF NOT EXISTS WAIT")
        except QueryError as exc:
            raise StateError(
                f"cannot create database {name!r} for the trial: {exc.message} (isolation 'graph' needs several "
                "databases; on Neo4j Community use isolation 'serial' or 'label')"
            ) from None

    async def aclose(self) -> None:
        """Close the driver."""
        driver, self._driver = self._driver, None
        if driver is not None:
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(driver.close)


class Neo4jGraph(BlockingGraph):
    """One Neo4j database; `reset` deletes its nodes, `close` drops it when it was made for the trial."""

    def __init__(self, driver: Any, name: str | None, **options: Any) -> None:
        super().__init__(name or "(default)", **options)
        self.database = name
        """The database the session uses; `None` for the server's default."""
        self._driver = driver

    def _execute(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        from neo4j.exceptions import DriverError, Neo4jError

        try:
            with self._driver.session(database=self.database) as session:
                result = session.run(query, params)
                return [{key: plain(value, neo4j_value) for key, value in record.items()} for record in result]
        except Neo4jError as exc:
            raise QueryError(exc.message or str(exc), query) from None
        except DriverError as exc:
            raise QueryError(f"{type(exc).__name__}: {exc}", query) from None

    def _drop(self) -> None:
        if self.database is None:
            raise StateError("cannot drop the default database")
        Neo4jGraph(self._driver, "system")._execute(f"DROP DATABASE `{self.database}` IF EXISTS", {})
