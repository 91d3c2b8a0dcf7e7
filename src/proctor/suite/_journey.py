"""Expected journeys: a goal dependency graph of tool calls and text answers, and how to match arguments.

This is the value of the `journey` check. Native suites write it as an `expect:` block on a case (or the
file); a watsonx ground-truth dataset (`proctor.suite.formats.watsonx`) is translated into it. The
vocabulary is watsonx's, so a dataset's `goals` and `goal_details` can be pasted into `expect:` as they
are:

```yaml
expect:
  goals:                       # goal -> the goals that depend on it; omit it for "in the listed order"
    get_assignment_id-1: [get_timeoff_schedule-1]
    get_timeoff_schedule-1: [summarize]
  goal_details:
    - {type: tool_call, name: get_assignment_id-1, tool_name: get_assignment_id, args: {username: nwaters}}
    - type: tool_call
      name: get_timeoff_schedule-1
      tool_name: get_timeoff_schedule
      args: {assignment_id: "15778303", start_date: "2025-01-01", query: time off}
      arg_matching: {query: fuzzy, start_date: optional}
    - {type: text, name: summarize, response: "Your time off is on January 5, 2025.", keywords: [January 5]}
  similarity_threshold: 0.8    # watsonx-style matching options
  enable_fuzzy_matching: true
```
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

import difflib
import itertools
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from proctor.suite._defaults import new_list

__all__ = [
    "IGNORE_ALL",
    "ArgStrategy",
    "JourneySpec",
    "MatchingSpec",
    "TextGoal",
    "ToolCallGoal",
    "goal_graph_problems",
]

ArgStrategy = Literal["strict", "optional", "ignore", "fuzzy"]
"""How one argument is compared: `strict` (default: equal after normalisation), `optional` (if present it
must match), `ignore` (never compared) or `fuzzy` (same meaning: judge, else embeddings, else token
similarity)."""

IGNORE_ALL = "IGNORE"
"""`args: {"IGNORE": null}` matches a call to the tool whatever its arguments (watsonx's convention)."""

Loc = tuple[str | int, ...]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # see _model.suite_file_spec


class MatchingSpec(_Strict):
    """How tool-call arguments and text answers are matched (watsonx's config keys, plus Proctor's own)."""

    similarity_threshold: float = Field(default=0.8, ge=0, le=1)
    """Fuzzy matches need at least this similarity (embedding cosine, or token similarity / 100)."""
    enable_fuzzy_matching: bool = False
    """Also require a text goal's `response` to match the agent's answer in meaning (keywords always count)."""
    case_insensitive: bool = False
    """Compare strings ignoring case in `strict` and `optional` arguments."""
    ignore_list_order: bool = False
    """Compare lists as multisets in `strict` and `optional` arguments."""
    numeric_strings: bool = False
    """Let a string holding a number equal that number (`"1" == 1`); `1 == 1.0` always holds."""


class ToolCallGoal(_Strict):
    """A tool call the agent must make: same tool, matching arguments, after its prerequisites."""

    type: Literal["tool_call"] = "tool_call"
    name: str = Field(min_length=1)
    """The goal's name, unique in the journey (e.g. `get_assignment_id_hr_agent-1`)."""
    tool_name: str = Field(min_length=1)
    """The tool the agent must call."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The expected arguments; `{"IGNORE": null}` accepts any."""
    arg_matching: dict[str, ArgStrategy] = Field(default_factory=dict)
    """Per-argument strategy; arguments not named here are `strict`."""

    @property
    def ignores_all_arguments(self) -> bool:
        """Whether `args` is `{"IGNORE": null}`."""
        return IGNORE_ALL in self.args


class TextGoal(_Strict):
    """An answer the agent must give: every keyword present, and (with fuzzy matching on) the same meaning."""

    type: Literal["text"] = "text"
    name: str = Field(min_length=1)
    """The goal's name, unique in the journey (watsonx uses `summarize`)."""
    response: str = ""
    """The expected answer."""
    keywords: list[str] = Field(default_factory=new_list)
    """Words the answer must contain, compared in normalised forms (case, spacing, dates in any spelling)."""

    @model_validator(mode="after")
    def _something_to_match(self) -> "TextGoal":
        if not self.response.strip() and not self.keywords:
            raise ValueError(f"text goal {self.name!r} needs a 'response' or 'keywords' to match")
        return self


def _goal_type(value: Any) -> str | None:
    """The goal's `type`, inferred from its fields when absent."""
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind is not None:
            return str(kind)
        return "tool_call" if "tool_name" in value else "text"
    return getattr(value, "type", None)


Goal = Annotated[
    Annotated[ToolCallGoal, Tag("tool_call")] | Annotated[TextGoal, Tag("text")],
    Discriminator(_goal_type, custom_error_type="goal_type", custom_error_message="type must be tool_call or text"),
]


class JourneySpec(MatchingSpec):
    """The expected journey: goals, their dependency graph, and the matching options (a `journey` value)."""

    goals: dict[str, list[str]] | None = None
    """Goal name -> the goals that depend on it (watsonx's layout). Omitted: each goal depends on the one
    listed before it. `{}`: the goals are independent."""
    goal_details: list[Goal] = Field(min_length=1)
    """The goals: `tool_call` and `text` entries."""

    @model_validator(mode="after")
    def _valid_graph(self) -> "JourneySpec":
        problems = goal_graph_problems(self.goals, self.goal_details)
        if problems:
            raise ValueError("; ".join(message for _, message in problems))
        return self

    def prerequisites(self) -> dict[str, list[str]]:
        """Goal name -> the goals it depends on, in `goal_details` order."""
        names = [goal.name for goal in self.goal_details]
        before: dict[str, list[str]] = {name: [] for name in names}
        if self.goals is None:
            for earlier, later in itertools.pairwise(names):
                before[later].append(earlier)
            return before
        for goal, dependents in self.goals.items():
            for dependent in dependents:
                if goal not in before[dependent]:
                    before[dependent].append(goal)
        return before

    def order(self) -> list[ToolCallGoal | TextGoal]:
        """The goals in a dependency order (prerequisites first; ties in `goal_details` order)."""
        before = self.prerequisites()
        done: set[str] = set()
        out: list[ToolCallGoal | TextGoal] = []
        while len(out) < len(self.goal_details):
            ready = next(
                (g for g in self.goal_details if g.name not in done and all(p in done for p in before[g.name])),
                None,
            )
            if ready is None:  # a cycle (only reachable by bypassing validation): keep the listed order
                return out + [g for g in self.goal_details if g.name not in done]
            done.add(ready.name)
            out.append(ready)
        return out


def goal_graph_problems(
    goals: Mapping[str, Sequence[str]] | None, details: Sequence[ToolCallGoal | TextGoal]
) -> list[tuple[Loc, str]]:
    """Every problem of a goal graph, each with the location of the offending value.

    Checks: goal names unique; every name in `goals` (keys and dependents) is a goal in `details`;
    no cycles; every goal appears in a non-empty `goals` map (else no path reaches it); `arg_matching`
    names only expected arguments; `{"IGNORE": null}` stands alone.
    """
    problems: list[tuple[Loc, str]] = []
    names: list[str] = []
    for index, detail in enumerate(details):
        if detail.name in names:
            problems.append((("goal_details", index, "name"), f"goal name {detail.name!r} is used twice"))
        names.append(detail.name)
        if isinstance(detail, ToolCallGoal):
            problems.extend(_argument_problems(detail, index))
    known = set(names)

    def unknown(name: str) -> str:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown goal {name!r}: no goal_details entry has this name{hint}"

    if goals is None:
        return problems
    edges: dict[str, list[str]] = {}
    for goal, dependents in goals.items():
        if goal not in known:
            problems.append((("goals", goal), unknown(goal)))
        for position, dependent in enumerate(dependents):
            if dependent not in known:
                problems.append((("goals", goal, position), unknown(dependent)))
            elif dependent == goal:
                problems.append((("goals", goal, position), f"goal {goal!r} depends on itself"))
        edges[goal] = [d for d in dependents if d in known and d != goal]
    cycle = _find_cycle(edges)
    if cycle:
        path = " -> ".join([*cycle, cycle[0]])
        problems.append((("goals", cycle[0]), f"the goals form a cycle: {path}; no order can satisfy it"))
    if goals:
        mentioned = set(goals) | {d for dependents in goals.values() for d in dependents}
        for index, name in enumerate(names):
            if name not in mentioned:
                problems.append(
                    (
                        ("goal_details", index, "name"),
                        f"goal {name!r} is not in the 'goals' graph, so no path reaches it: add it as a key "
                        f"(with [] when nothing depends on it) or as a dependent of another goal",
                    )
                )
    return problems


def _argument_problems(goal: ToolCallGoal, index: int) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []
    if goal.ignores_all_arguments and len(goal.args) > 1:
        problems.append(
            (("goal_details", index, "args"), f"{{{IGNORE_ALL!r}: null}} ignores every argument: it must stand alone")
        )
    for argument, strategy in goal.arg_matching.items():
        if argument not in goal.args and strategy != "ignore" and not goal.ignores_all_arguments:
            problems.append(
                (
                    ("goal_details", index, "arg_matching", argument),
                    f"argument {argument!r} has strategy {strategy!r} but no expected value in 'args'",
                )
            )
    return problems


def _find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One cycle of the graph as a list of nodes, or `None` (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for root in edges:
        if state.get(root):
            continue
        path: list[str] = [root]
        iterators = [iter(edges.get(root, ()))]
        state[root] = 1
        while iterators:
            step = next(iterators[-1], None)
            if step is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(step) == 1:
                return path[path.index(step) :]
            elif not state.get(step):
                state[step] = 1
                path.append(step)
                iterators.append(iter(edges.get(step, ())))
    return None
