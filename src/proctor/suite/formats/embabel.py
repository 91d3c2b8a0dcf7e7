"""Embabel Agent Eval job files, read as Proctor suites as they are.

A job (`evaluator`, `target: {user, chatbot}`, `aspirationalAverage`, `greetings`, `tasks`, `facts`,
`assertions`, `setups`) is recognised by its keys and becomes a one-case suite named after the file:
`evaluator`, `greetings`, `tasks`, `facts` and `aspirationalAverage` become the case's `simulate:` block
(with Embabel's defaults for whatever the job leaves out), `target` becomes an `embabel` target, and
`assertions` (Cypher and object-context) and `setups` keep their meaning on Proctor's state machinery.
A job runs once (`trials: 1`) unless it says otherwise. Memory `seeds` keep their meaning: conversation
seeds are replayed to the agent in a prior session, text seeds are posted to the target's `ingest_url`
(without one they are a load error, never a silent skip).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EMBABEL_KEYS", "MOVED", "embabel_to_suite", "is_embabel_job", "moved_location"]

MOVED: dict[str, tuple[str, ...]] = {
    "evaluator": ("simulate", "persona"),
    "greetings": ("simulate", "greetings"),
    "tasks": ("simulate", "tasks"),
    "facts": ("simulate", "facts"),
    "aspirationalAverage": ("simulate", "aspirationalAverage"),
}
"""Where a job's keys go in the canonical suite."""
EMBABEL_KEYS = frozenset({*MOVED, "target", "assertions", "setups", "seeds"})
"""The keys of an Embabel job."""
_MARKERS = frozenset({"evaluator", "tasks", "aspirationalAverage", "greetings", "facts"})
_CANONICAL = frozenset({"turns", "cases", "simulate"})


def is_embabel_job(data: Any) -> bool:
    """Whether a parsed YAML document is an Embabel job (it has a job key and no Proctor layout key)."""
    return isinstance(data, Mapping) and bool(_MARKERS & set(data)) and not (_CANONICAL & set(data))


def embabel_to_suite(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Translate a job into the canonical suite layout (other keys are kept, so typos are reported).

    Args:
        data: The job as parsed.
        name: The suite's name when the job has none (the file's stem).
    """
    out: dict[str, Any] = {"name": name, "trials": 1}
    simulate: dict[str, Any] = {}
    for key, value in data.items():
        if key in MOVED:
            simulate[MOVED[key][1]] = {} if value is None and key == "evaluator" else value
        elif key == "target" and isinstance(value, Mapping) and "type" not in value:
            out["target"] = {"type": "embabel", **value}
        else:
            out[key] = value
    out["simulate"] = simulate
    return out


def moved_location(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """A location in the job, as a location in the translated suite."""
    if loc and isinstance(loc[0], str) and loc[0] in MOVED:
        return (*MOVED[loc[0]], *loc[1:])
    if loc and loc[0] == "target":
        return loc
    return loc
