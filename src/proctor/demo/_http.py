"""Small helpers shared by the demo's HTTP endpoints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.requests import Request

from proctor.demo._graph import GraphSink

__all__ = ["RestSession", "read_json"]


async def read_json(request: Request) -> dict[str, Any] | None:
    """The request's JSON object body; `{}` when empty, `None` when it is not a JSON object."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


@dataclass(slots=True)
class RestSession:
    """One conversation of the REST and Embabel endpoints: its history and the graph it writes to."""

    id: str
    user: str | None
    history: list[dict[str, str]] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    sink: GraphSink = field(default_factory=GraphSink)
