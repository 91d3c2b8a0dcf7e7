"""How a trial's graph address reaches agents that take no template variables: request headers.

When Proctor starts the graph a trial's state assertions read (its embedded FalkorDB, see
`proctor.state`), the agent must write there. Targets that render templates (`http`) or call Python
(`python`) get the address as the variables `graph_uri`, `graph_name`, `graph_label` and
`graph_backend`; the `embabel`, `openai` and `lobu` targets send the same values as these headers on
every request of the trial's session. The trial's tool server endpoint (`tools_url`, see
`proctor.tools`) travels the same way, as `X-Proctor-Tools-Url`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GRAPH_HEADERS", "TOOLS_HEADER", "graph_headers"]

GRAPH_HEADERS = {
    "graph_backend": "X-Proctor-Graph-Backend",
    "graph_uri": "X-Proctor-Graph-Uri",
    "graph_name": "X-Proctor-Graph-Name",
    "graph_label": "X-Proctor-Graph-Label",
}
"""Session variable -> the request header that carries it."""
TOOLS_HEADER = "X-Proctor-Tools-Url"
"""The header carrying the trial's tool server endpoint (session variable `tools_url`)."""


def graph_headers(variables: Mapping[str, Any]) -> dict[str, str]:
    """The `X-Proctor-Graph-*` and `X-Proctor-Tools-Url` headers for a session's variables.

    Empty when the trial has neither a graph nor tools.

    Args:
        variables: The session's `SessionContext.variables`.
    """
    headers = {TOOLS_HEADER: str(variables["tools_url"])} if variables.get("tools_url") else {}
    if not variables.get("graph_uri"):
        return headers
    graph = {header: str(variables[key]) for key, header in GRAPH_HEADERS.items() if variables.get(key) is not None}
    return {**graph, **headers}
