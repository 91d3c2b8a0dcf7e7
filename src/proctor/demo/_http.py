"""Small helpers shared by the demo's HTTP endpoints."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

__all__ = ["read_json"]


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
