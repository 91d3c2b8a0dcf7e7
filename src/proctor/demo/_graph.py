"""What the demo agent really does: its reminders and the people they are for, written to a graph.

A REST session opened with `graph_uri` and `graph_name` (Proctor hands a trial's graph to the target as
those template variables) makes the agent write, for every reminder it creates, a `(:Reminder)` node
linked from the `(:Person)` it is for. A session opened with `"forgetful": true` plays an agent that
claims actions it never performs: it answers the same, and writes nothing. The object context (the
agent's own record of what it did, Embabel-style) lists the reminders it really created.

The graph client (`falkordb`, extra `graph`) is imported on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proctor.transcript import ToolCall

__all__ = ["GraphSink"]


@dataclass
class GraphSink:
    """Where one session's side effects go."""

    uri: str | None = None
    """`falkordb://host:port` or `redis://host:port`; `None` keeps the effects in memory only."""
    graph: str | None = None
    """The graph (database) name."""
    label: str | None = None
    """An extra label on every node (for label-isolated shared graphs)."""
    forgetful: bool = False
    """Claim actions without performing them (a defective agent, for the demo)."""
    created: list[dict[str, Any]] = field(default_factory=list)
    """The reminders this session really created."""

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> GraphSink:
        """Read the sink from a session-open body (`graph_uri`, `graph_name`, `graph_label`, `forgetful`)."""

        def text(key: str) -> str | None:
            value = body.get(key)
            return value if isinstance(value, str) and value else None

        return cls(text("graph_uri"), text("graph_name"), text("graph_label"), body.get("forgetful") is True)

    def apply(self, user: str | None, calls: list[ToolCall]) -> None:
        """Perform the side effects of a reply's tool calls (blocking: run it in a worker thread)."""
        if self.forgetful:
            return
        for call in calls:
            if call.name != "create_reminder" or not isinstance(call.result, dict):
                continue
            reminder = {"type": "Reminder", **call.result, "for": user or "unknown"}
            self.created.append(reminder)
            if self.uri and self.graph:
                self._write(reminder)

    def _write(self, reminder: dict[str, Any]) -> None:
        from falkordb import FalkorDB

        extra = f":`{self.label}`" if self.label else ""
        query = (
            f"MERGE (p:Person{extra} {{name: $person}}) "
            f"CREATE (r:Reminder{extra}) SET r.text = $text, r.day = $day, r.id = $id "
            "CREATE (p)-[:HAS_REMINDER]->(r)"
        )
        params = {
            "person": reminder["for"],
            "text": str(reminder.get("text", "")),
            "day": str(reminder.get("day") or ""),
            "id": str(reminder.get("id", "")),
        }
        db = FalkorDB.from_url(self.uri.replace("falkordb://", "redis://", 1) if self.uri else "")
        try:
            db.select_graph(self.graph).query(query, params)
        finally:
            db.close()

    def object_context(self) -> dict[str, Any]:
        """The agent's record of what it did: Embabel's `resources` and typed `entities`."""
        return {"resources": list(self.created), "entities": list(self.created)}
