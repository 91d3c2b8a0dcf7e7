"""The Go Eval Agent README's request bodies, verbatim, and helpers to vary them."""

from __future__ import annotations

import copy
import json
from typing import Any

SEED_EVALUATE = (
    """{
    "event_id": "evt-001",
    "event_type": "agent_response",
    "agent": {
      "name": "my-agent",
      "type": "rag",
      "version": "1.0.0"
    },
    "interaction": {
      "user_query": "What is the capital of France?",
      "context": "France is a country in Western Europe. Its capital city is Paris, """
    """which is also the largest city in the country.",
      "answer": "The capital of France is Paris."
    }
  }"""
)
SEED_EARLY_EXIT = """{
    "event_id": "evt-002",
    "event_type": "agent_response",
    "agent": { "name": "my-agent", "type": "rag", "version": "1.0.0" },
    "interaction": {
      "user_query": "Explain the theory of relativity in detail",
      "context": "Einstein developed the theory of relativity.",
      "answer": "ok"
    }
  }"""


def event(base: str = SEED_EVALUATE, event_id: str | None = None, **interaction: str) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(json.loads(base))
    if event_id is not None:
        data["event_id"] = event_id
    data["interaction"].update(interaction)
    return data
