"""How a trial's graph address reaches agents that take no template variables: request headers.

When Proctor starts the graph a trial's state assertions read (its embedded FalkorDB, see
`proctor.state`), the agent must write there. Targets that render templates (`http`) or call Python
(`python`) get the address as the variables `graph_uri`, `graph_name`, `graph_label` and
`graph_backend`; the `embabel`, `openai` and `lobu` targets send the same values as these headers on
every request of the trial's session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GRAPH_HEADERS", "graph_headers"]

GRAPH_HEADERS = {
    "graph_backend": "X-Proctor-Graph-Backend",
    "graph_uri": "X-Proctor-Graph-Uri",
    "graph_name": "X-Proctor-Graph-Name",
    "graph_label": "X-Proctor-Graph-Label",
}
"""Session variable -> the request header that carries it."""


def graph_headers(variables: Mapping[str, Any]) -> dict[str, str]:
    """The `X-Proctor-Graph-*` headers for a session's variables (empty when the trial has no graph).

    Args:
        variables: The session's `SessionContext.variables`.
    """
    if not variables.get("graph_uri"):
        return {}
    return {header: str(variables[key]) for key, header in GRAPH_HEADERS.items() if variables.get(key) is not None}
