"""State backends: the agent's knowledge graph, which state assertions query.

`neo4j` reaches a Neo4j server over Bolt through the official driver (the `neo4j` extra); `falkordb`
reaches a FalkorDB server, or starts an embedded one for the run (the `graph` extra), the default when a
suite configures nothing. Both sit behind one small protocol, `Graph`: run a Cypher statement with
parameters and get rows back as dicts. The driver and the engine load on first use.

Example:
    ```python
    from proctor.state import StateManager

    states = StateManager()
    states.add(case)              # a case with setups or Cypher assertions
    await states.start()          # starts the embedded FalkorDB
    async with states.trial(case) as lease:
        rows = await lease.graph.run("MATCH (r:Reminder) RETURN count(r) AS count")
    await states.aclose()
    ```
"""

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes
from proctor.state._base import (
    BlockingGraph,
    Graph,
    QueryError,
    StateError,
    StateUnavailable,
    logger,
    plain,
    render_cypher,
)

if TYPE_CHECKING:
    from proctor.state._falkordb import EmbeddedFalkorDB, FalkorDBBackend, FalkorDBGraph
    from proctor.state._neo4j import DEFAULT_NEO4J_URI, Neo4jBackend, Neo4jGraph, neo4j_value
    from proctor.state._plan import EMBEDDED, GraphSource, StatePlan, graph_override, plan_state, state_notices
    from proctor.state._service import (
        ENV_BACKEND,
        ENV_GRAPH,
        ENV_LABEL,
        ENV_URI,
        StateManager,
        StateService,
        StateSettings,
        TrialState,
        resolve_settings,
        start_states,
    )

_LAZY = {
    "DEFAULT_NEO4J_URI": "_neo4j",
    "EMBEDDED": "_plan",
    "ENV_BACKEND": "_service",
    "ENV_GRAPH": "_service",
    "ENV_LABEL": "_service",
    "ENV_URI": "_service",
    "EmbeddedFalkorDB": "_falkordb",
    "FalkorDBBackend": "_falkordb",
    "FalkorDBGraph": "_falkordb",
    "GraphSource": "_plan",
    "Neo4jBackend": "_neo4j",
    "Neo4jGraph": "_neo4j",
    "StateManager": "_service",
    "StatePlan": "_plan",
    "StateService": "_service",
    "StateSettings": "_service",
    "TrialState": "_service",
    "graph_override": "_plan",
    "neo4j_value": "_neo4j",
    "plan_state": "_plan",
    "resolve_settings": "_service",
    "start_states": "_service",
    "state_notices": "_plan",
}
"""The names whose modules load on first use: graph backends, plan and service (a run with no graph needs none)."""

__all__ = [
    "DEFAULT_NEO4J_URI",
    "EMBEDDED",
    "ENV_BACKEND",
    "ENV_GRAPH",
    "ENV_LABEL",
    "ENV_URI",
    "BlockingGraph",
    "EmbeddedFalkorDB",
    "FalkorDBBackend",
    "FalkorDBGraph",
    "Graph",
    "GraphSource",
    "Neo4jBackend",
    "Neo4jGraph",
    "QueryError",
    "StateError",
    "StateManager",
    "StatePlan",
    "StateService",
    "StateSettings",
    "StateUnavailable",
    "TrialState",
    "graph_override",
    "logger",
    "neo4j_value",
    "plain",
    "plan_state",
    "render_cypher",
    "resolve_settings",
    "start_states",
    "state_notices",
]

__getattr__ = _lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return list(__all__)
