"""Embabel Agent Eval job files, read as Proctor suites as they are.

A job (`evaluator`, `target: {user, chatbot}`, `aspirationalAverage`, `greetings`, `tasks`, `facts`,
`assertions`, `setups`) is recognised by its keys and becomes a one-case suite named after the file:
`evaluator`, `greetings`, `tasks`, `facts` and `aspirationalAverage` become the case's `simulate:` block
(with Embabel's defaults for whatever the job leaves out), `target` becomes an `embabel` target, and
`assertions` (Cypher and object-context) and `setups` keep their meaning on Proctor's state machinery.
A job runs once (`trials: 1`) unless it says otherwise. Memory `seeds` keep their meaning: conversation
seeds are replayed to the agent in a prior session, text seeds are posted to the target's `ingest_url`
(without one they are a load error, never a silent skip).

Embabel's consumers write a second layout, read by their own tests rather than Embabel's runner (e.g.
`embabel/urbot`'s `ConversationEvalIT`): `seeds`, `tasks`, `facts` and optionally `minTaskScore` and
`minAverageScore`, with no `evaluator`, `greetings` or `aspirationalAverage`. Its meaning there: the
seeds are replayed first, then each task's text is asked as it is, in order, in a fresh session; the
transcript judge scores every task against its acceptance criteria (the facts as ground truth); the eval
passes when every task scores at least `minTaskScore` (default 0.5) and their mean at least
`minAverageScore` (default 0.6). Proctor reads it the same way: the tasks become scripted turns and one
`tasks` check (`proctor.checks`) holds the tasks, facts and thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "EMBABEL_KEYS",
    "JOB_KEYS",
    "MOVED",
    "URBOT_MOVED",
    "embabel_to_suite",
    "is_embabel_job",
    "is_recall_eval",
    "location_mover",
    "moved_location",
    "recall_problems",
]

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
URBOT_MOVED: dict[str, tuple[str | int, ...]] = {
    "tasks": ("assert", 0, "value", "tasks"),
    "facts": ("assert", 0, "value", "facts"),
    "minTaskScore": ("assert", 0, "value", "min_task_score"),
    "minAverageScore": ("assert", 0, "value", "min_average_score"),
}
"""Where a consumer's recall eval (urbot's layout) puts its keys: the one `tasks` check's value."""
_MARKERS = frozenset({"evaluator", "tasks", "aspirationalAverage", "greetings", "facts"})
JOB_KEYS = _MARKERS
"""Top-level keys that mark an Embabel job (one of them, and no Proctor layout key)."""
_CANONICAL = frozenset({"turns", "cases", "simulate"})
_SIMULATION = frozenset({"evaluator", "greetings", "aspirationalAverage"})
_THRESHOLDS = frozenset({"minTaskScore", "minAverageScore"})


def is_embabel_job(data: Any) -> bool:
    """Whether a parsed YAML document is an Embabel job (it has a job key and no Proctor layout key)."""
    return isinstance(data, Mapping) and bool(_MARKERS & set(data)) and not (_CANONICAL & set(data))


def is_recall_eval(data: Any) -> bool:
    """Whether an Embabel-style file is a consumer's recall eval (urbot's layout), not a runner job.

    It has `tasks`, none of the simulated user's keys (`evaluator`, `greetings`, `aspirationalAverage`,
    which Embabel's own job requires), and either a threshold (`minTaskScore`, `minAverageScore`) or both
    `seeds` and `facts`.
    """
    if not is_embabel_job(data) or "tasks" not in data or _SIMULATION & set(data):
        return False
    return bool(_THRESHOLDS & set(data)) or {"seeds", "facts"} <= set(data)


def embabel_to_suite(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Translate a job into the canonical suite layout (other keys are kept, so typos are reported).

    Args:
        data: The job as parsed.
        name: The suite's name when the job has none (the file's stem).
    """
    if is_recall_eval(data):
        return _recall_to_suite(data, name)
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


def _recall_to_suite(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "trials": 1}
    value: dict[str, Any] = {}
    for key, item in data.items():
        if key in URBOT_MOVED:
            value[str(URBOT_MOVED[key][-1])] = item
        elif key == "target" and isinstance(item, Mapping) and "type" not in item:
            out["target"] = {"type": "embabel", **item}
        else:
            out[key] = item
    tasks = data.get("tasks")
    turns = [
        {"content": task["task"]}
        for task in (tasks if isinstance(tasks, list) else [])
        if isinstance(task, Mapping) and isinstance(task.get("task"), str) and task["task"]
    ]
    if turns:
        out["turns"] = turns
    low, mean = value.get("min_task_score", 0.5), value.get("min_average_score", 0.6)
    check = {"type": "tasks", "name": f"tasks: each >= {low}, mean >= {mean}", "value": value}
    out["assert"] = [check, *(out.get("assert") or [])] if isinstance(out.get("assert", []), list) else [check]
    return out


def recall_problems(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Problems with a recall eval's thresholds, as `(key, message)` (located by the loader at the key).

    Args:
        data: The file as parsed (a recall eval, `is_recall_eval`).
    """
    problems: list[tuple[str, str]] = []
    for key in sorted(_THRESHOLDS & set(data)):
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            problems.append((key, f"expected a task score from 0 to 1 (as urbot compares them); found {value!r}"))
    return problems


def location_mover(data: Any) -> Callable[[tuple[str | int, ...]], tuple[str | int, ...]]:
    """How locations in a file of either Embabel layout become locations in its translated suite."""
    if not is_recall_eval(data):
        return moved_location

    def move(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
        if loc and isinstance(loc[0], str) and loc[0] in URBOT_MOVED:
            return (*URBOT_MOVED[loc[0]], *loc[1:])
        return loc

    return move


def moved_location(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """A location in the job, as a location in the translated suite."""
    if loc and isinstance(loc[0], str) and loc[0] in MOVED:
        return (*MOVED[loc[0]], *loc[1:])
    if loc and loc[0] == "target":
        return loc
    return loc
