"""The state protocol: a graph that runs Cypher with parameters and returns rows as plain dicts.

Both backends (the embedded or a remote FalkorDB, and Neo4j over Bolt) have blocking clients, so each
query runs in a worker thread; every query is logged on the `proctor.state` logger with its timing
(`proctor run -v` shows them).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.to_thread

from proctor.errors import ProctorError

__all__ = [
    "BlockingGraph",
    "Graph",
    "QueryError",
    "StateError",
    "StateUnavailable",
    "logger",
    "plain",
    "render_cypher",
]

logger = logging.getLogger("proctor.state")
"""Logs every Cypher statement Proctor runs (setups, assertions, teardowns) with its timing, at INFO."""

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")


class StateError(ProctorError):
    """The state backend could not do what was asked (start, connect, create a graph, run a query)."""


class StateUnavailable(StateError):
    """The backend cannot be used: its extra is not installed, or its server cannot be started or reached."""


class QueryError(StateError):
    """A Cypher statement failed; `message` is the database's own message."""

    def __init__(self, message: str, query: str) -> None:
        super().__init__(message)
        self.message = message
        """What the database said."""
        self.query = query
        """The statement that failed."""


@runtime_checkable
class Graph(Protocol):
    """One graph (or database) a trial's agent writes to and its assertions read.

    Example:
        ```python
        rows = await graph.run("MATCH (r:Reminder) RETURN count(r) AS count")
        assert rows == [{"count": 1}]
        ```
    """

    name: str
    """The graph's (FalkorDB) or database's (Neo4j) name."""

    async def run(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one Cypher statement and return its rows as `{column: value}` dicts.

        Nodes and relationships come back as their property maps, paths as lists of those, temporal
        values as Python `datetime` values.

        Raises:
            QueryError: The statement failed or timed out (with the database's message).
        """
        ...

    async def reset(self) -> None:
        """Delete everything in this graph (within the trial's label, under `label` isolation)."""
        ...

    async def close(self) -> None:
        """Release the graph; a graph made for one trial is dropped."""
        ...


def render_cypher(query: str, variables: Mapping[str, Any]) -> str:
    """Replace `{{ name }}` with the trial's variables (e.g. `graph_label`); other text is left alone.

    Args:
        query: Cypher text.
        variables: The values, e.g. `{"graph_label": "ProctorTrial_1a2b_3"}`.

    Returns:
        The text with every known variable replaced.
    """
    if "{{" not in query:
        return query

    def value(match: re.Match[str]) -> str:
        found = variables.get(match.group(1))
        return match.group(0) if found is None else str(found)

    return _VARIABLE.sub(value, query)


def plain(value: Any, special: Callable[[Any], Any] | None = None) -> Any:
    """Turn a driver's value into plain data: dicts, lists, scalars and `datetime` values.

    Args:
        value: A value from a result row.
        special: Converts the driver's own types (nodes, relationships, paths); returns `value` itself
            for values it does not know.

    Returns:
        The plain value.
    """
    if value is None or isinstance(value, bool | int | float | str | _dt.date | _dt.time | _dt.timedelta):
        return value
    if isinstance(value, Mapping):
        return {str(key): plain(item, special) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, special) for item in value]
    if special is not None:
        converted = special(value)
        if converted is not value:
            return plain(converted, special)
    return value


class BlockingGraph(ABC):
    """Base of the backends' graphs: runs a blocking client's query in a worker thread, with a timeout.

    Subclasses implement `_execute` (one statement, blocking) and `_drop` (for graphs owned by a trial).
    """

    def __init__(
        self,
        name: str,
        *,
        label: str | None = None,
        variables: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
        owned: bool = False,
    ) -> None:
        """Describe the graph.

        Args:
            name: The graph's or database's name.
            label: Under `label` isolation, the trial's label (`reset` deletes only its nodes).
            variables: Values for `{{ name }}` in queries.
            timeout: Seconds one statement may take.
            owned: Whether the graph was made for one trial (then `close` drops it).
        """
        self.name = name
        self.label = label
        self.variables = dict(variables or {})
        self.timeout = timeout
        self.owned = owned

    async def run(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one statement in a worker thread and log it with its timing.

        Raises:
            QueryError: The statement failed, or took longer than the timeout.
        """
        text = render_cypher(query, self.variables)
        started = time.perf_counter()
        outcome = "failed"
        try:
            with anyio.fail_after(self.timeout):
                rows = await anyio.to_thread.run_sync(self._execute, text, dict(params or {}), abandon_on_cancel=True)
            outcome = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
            return rows
        except TimeoutError:
            raise QueryError(f"no answer within {self.timeout:g} s", text) from None
        finally:
            if logger.isEnabledFor(logging.INFO):
                took = (time.perf_counter() - started) * 1000
                logger.info("cypher %s: %.1f ms, %s: %s", self.name, took, outcome, " ".join(text.split()))

    async def reset(self) -> None:
        """Delete every node and relationship (only the trial label's nodes under `label` isolation)."""
        if self.label is not None:
            await self.run(f"MATCH (n:`{self.label}`) DETACH DELETE n")
        else:
            await self._wipe()

    async def close(self) -> None:
        """Drop the graph when it was made for one trial."""
        if self.owned:
            await anyio.to_thread.run_sync(self._drop)

    async def _wipe(self) -> None:
        await self.run("MATCH (n) DETACH DELETE n")

    @abstractmethod
    def _execute(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one statement (blocking; called in a worker thread) and return its rows."""

    @abstractmethod
    def _drop(self) -> None:
        """Delete the graph (blocking); only called for graphs owned by one trial."""
