"""Agents that write to the trial's graph (importable as `helpers.graph_agents:<name>`).

They read the graph's address from the session context (`graph_uri`, `graph_name`, `graph_label`), as a
real agent would read it from a template variable or an environment variable.
"""

from __future__ import annotations

import re
from typing import Any

from falkordb import FalkorDB

from proctor.targets import SessionContext

_REMIND = re.compile(r"remind me to (.+?)\.?$", re.IGNORECASE)


def _graph(context: SessionContext) -> Any:
    uri = str(context.variables["graph_uri"]).replace("falkordb://", "redis://")
    return FalkorDB.from_url(uri), context.variables["graph_name"]


def _write(context: SessionContext, query: str, params: dict[str, Any]) -> list[list[Any]]:
    db, name = _graph(context)
    try:
        label = context.variables.get("graph_label")
        if label:
            query = query.replace(":Reminder", f":Reminder:`{label}`")
        return list(db.select_graph(name).query(query, params).result_set)
    finally:
        db.close()


def reminders(messages: list[dict[str, str]], context: SessionContext) -> dict[str, Any]:
    """Creates a Reminder node for "remind me to ...", and says so."""
    match = _REMIND.search(messages[-1]["content"])
    if match is None:
        count = _write(context, "MATCH (r:Reminder) RETURN count(r)", {})[0][0]
        return {"text": f"You have {count} reminders."}
    title = match.group(1)
    _write(
        context, "CREATE (r:Reminder) SET r.title = $title, r.trial = $trial", {"title": title, "trial": context.trial}
    )
    return {
        "text": f"Done: I will remind you to {title}.",
        "tool_calls": [{"name": "create_reminder", "arguments": {"title": title}}],
    }


def boastful(messages: list[dict[str, str]], context: SessionContext) -> str:
    """Claims to create the reminder, and writes nothing."""
    match = _REMIND.search(messages[-1]["content"])
    return f"Done: I will remind you to {match.group(1) if match else 'do that'}."


def object_context(messages: list[dict[str, str]], context: SessionContext) -> dict[str, Any]:
    """Embabel-shaped object context: the reminders in the graph as entities."""
    rows = _write(context, "MATCH (r:Reminder) RETURN r.title", {})
    entities = [{"type": "Reminder", "title": row[0]} for row in rows]
    return {"resources": [{"kind": "conversation", "messages": len(messages)}], "entities": entities}
