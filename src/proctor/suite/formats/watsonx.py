"""watsonx Orchestrate ground-truth datasets, read as Proctor cases as they are.

A dataset is one JSON file: `agent`, `goals` (goal -> the goals that depend on it), `goal_details`
(`tool_call` goals with `tool_name`, `args` and optional `arg_matching`; `text` goals with `response` and
`keywords`), `story`, `starting_sentence`, and optionally `runtime_context` and `max_user_turns`. It
becomes a one-case suite named after the file: the `starting_sentence` is the scripted first turn, and a
case-level `journey` check holds the goal graph and the matching options, so nothing downstream needs to
know the format. The rest of the file (`story`, `agent`, ...) is kept in `Case.metadata` for a simulated
user to play.

The matching options come from a watsonx test configuration beside the datasets (`config.yaml` or
`config.yml`; its `similarity_threshold` and `enable_fuzzy_matching`, plus Proctor's `case_insensitive`,
`ignore_list_order` and `numeric_strings`; other keys are watsonx's and ignored). With Proctor's
`simulate: true` there, each dataset's story is played by a simulated user instead (it opens with the
`starting_sentence`; `max_user_turns` bounds it; arm `supplied` only), the journey check still applies. In
a directory that holds datasets, that file is configuration, not a suite.

Problems are reported with the file, the JSON path, and the line and column.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from proctor.errors import SuiteError, SuiteIssue
from proctor.suite._journey import Goal, JourneySpec, MatchingSpec, goal_graph_problems
from proctor.suite._model import AssertionSpec, CheckCatalog, TurnSpec
from proctor.suite._simulate import SimulateSpec
from proctor.suite._suite import Case, Suite
from proctor.suite._yaml import fast_load

__all__ = [
    "CONFIG_NAMES",
    "WatsonxDataset",
    "is_watsonx_dataset",
    "load_watsonx_file",
    "matching_config",
    "select_suite_files",
]

CONFIG_NAMES = ("config.yaml", "config.yml")
"""The watsonx test configuration's file names, looked for beside the datasets."""
FORMAT = "watsonx"

Loc = tuple[str | int, ...]


class WatsonxDataset(BaseModel):
    """A watsonx ground-truth dataset. Unknown top-level keys are kept (in `Case.metadata["extra"]`)."""

    model_config = ConfigDict(extra="allow")

    agent: str | None = None
    """The agent the dataset was written for."""
    goals: dict[str, list[str]]
    """Goal -> the goals that depend on it."""
    goal_details: list[Goal] = Field(min_length=1)
    """The tool-call and text goals."""
    story: str = ""
    """The user's story, for a simulated user."""
    starting_sentence: str = Field(min_length=1)
    """The user's first message."""
    runtime_context: Any = None
    """Context the watsonx runtime passes to the agent (kept, not sent)."""
    max_user_turns: int | None = Field(default=None, ge=1)
    """A simulated user's turn limit."""


def is_watsonx_dataset(path: Path) -> bool:
    """Whether a `.json` file is a watsonx dataset (an object with `goal_details`).

    A file that mentions `goal_details` but is not valid JSON counts, so that loading reports its problem.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if '"goal_details"' not in text:
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return True
    return isinstance(data, dict) and "goal_details" in data


def select_suite_files(files: Sequence[Path]) -> list[Path]:
    """Keep the suite files of a directory search.

    `.json` files stay only when they are watsonx datasets; a watsonx `config.yaml` beside datasets goes.
    """
    datasets = {p for p in files if p.suffix == ".json" and is_watsonx_dataset(p)}
    folders = {p.parent for p in datasets}
    return [
        p
        for p in files
        if (p.suffix != ".json" or p in datasets) and not (p.name in CONFIG_NAMES and p.parent in folders)
    ]


def matching_config(folder: Path) -> tuple[dict[str, Any], list[SuiteIssue]]:
    """The matching options of the watsonx configuration in `folder` (none: `{}`), with its problems."""
    for name in CONFIG_NAMES:
        path = folder / name
        if path.is_file():
            options, issues = _read_config(str(path), path.stat().st_mtime_ns)
            return dict(options), list(issues)  # copies: the cached values are shared
    return {}, []


@lru_cache(maxsize=64)
def _read_config(path: str, mtime_ns: int) -> tuple[dict[str, Any], list[SuiteIssue]]:
    try:
        data = fast_load(Path(path).read_text(encoding="utf-8"))
    except Exception as exc:  # any YAML or read error: one located issue
        return {}, [SuiteIssue(path, None, None, "", f"cannot read the watsonx configuration: {exc}")]
    if not isinstance(data, dict):
        return {}, [SuiteIssue(path, 1, 1, "", "a watsonx configuration must be a mapping of settings")]
    options = {key: data[key] for key in MatchingSpec.model_fields if key in data}
    try:
        MatchingSpec.model_validate(options)
    except ValidationError as exc:
        return {}, [SuiteIssue(path, None, None, _format_loc(tuple(e["loc"])), _message(e)) for e in exc.errors()]
    if "simulate" in data:  # Proctor's: play each dataset's story with a simulated user
        if not isinstance(data["simulate"], bool):
            return {}, [SuiteIssue(path, None, None, "simulate", "'simulate' must be true or false")]
        options["simulate"] = data["simulate"]
    return options, []


def load_watsonx_file(path: Path, text: str, checks: CheckCatalog | None = None) -> Suite:
    """Translate one watsonx dataset into a one-case suite.

    Args:
        path: The dataset file.
        text: Its contents.
        checks: Validates the `journey` check; without it, it is accepted as is.

    Raises:
        SuiteError: With every problem found (file, JSON path, line and column).
    """
    name = str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError([SuiteIssue(name, exc.lineno, exc.colno, "", f"invalid JSON: {exc.msg}")]) from None
    if not isinstance(data, dict) or "goal_details" not in data:
        message = "not a watsonx dataset (a JSON object with 'goal_details'); Proctor's own suites are YAML"
        raise SuiteError([SuiteIssue(name, 1, 1, "", message)])
    config, issues = matching_config(path.parent)
    try:
        dataset = WatsonxDataset.model_validate(data)
    except ValidationError as exc:
        positions = _positions(text)
        issues += [_located(name, tuple(e["loc"]), _message(e), positions, data) for e in exc.errors()]
        raise SuiteError(issues) from None
    problems = goal_graph_problems(dataset.goals, dataset.goal_details)
    if problems:
        positions = _positions(text)
        issues += [_located(name, loc, message, positions, data) for loc, message in problems]
    if issues:
        raise SuiteError(issues)
    simulate = config.pop("simulate", False)
    journey = JourneySpec(goals=dataset.goals, goal_details=dataset.goal_details, **config)
    try:
        check = AssertionSpec.model_validate(
            {"type": "journey", "value": journey, "name": "journey"}, context={"checks": checks}
        )
    except ValidationError as exc:
        raise SuiteError([SuiteIssue(name, None, None, "", _message(e)) for e in exc.errors()]) from None
    metadata: dict[str, Any] = {
        "format": FORMAT,
        "agent": dataset.agent,
        "story": dataset.story,
        "starting_sentence": dataset.starting_sentence,
    }
    if dataset.runtime_context is not None:
        metadata["runtime_context"] = dataset.runtime_context
    if dataset.max_user_turns is not None:
        metadata["max_user_turns"] = dataset.max_user_turns
    if dataset.model_extra:
        metadata["extra"] = dict(dataset.model_extra)
    story = None
    if simulate:  # the simulated user opens with the starting sentence and follows the story
        max_turns = 2 * dataset.max_user_turns if dataset.max_user_turns else 20
        story = SimulateSpec(
            story=dataset.story, starting_sentence=dataset.starting_sentence, arms=["supplied"], max_turns=max_turns
        )
    case = Case(
        name=path.stem,
        file=path,
        suite=path.stem,
        turns=() if simulate else (TurnSpec(content=dataset.starting_sentence),),
        simulate=story,
        tags=tuple(dict.fromkeys(t for t in (FORMAT, dataset.agent) if t)),
        description=dataset.story or None,
        assert_=(check,),
        metadata=metadata,
    )
    return Suite(name=path.stem, path=path, cases=(case,))


def _message(error: ErrorDetails) -> str:
    if error["type"] == "missing":
        return "required field is missing"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"]) if "ctx" in error else error["msg"]
    found = repr(error.get("input"))
    found = found if len(found) <= 60 else found[:57] + "..."
    return f"{error['msg'][0].lower()}{error['msg'][1:]}; found {found}"


def _format_loc(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _data_loc(data: Any, loc: Loc) -> Loc:
    """Drop the union tags pydantic puts in error locations (`goal_details.0.tool_call.args`)."""
    out: list[str | int] = []
    current = data
    for part in loc:
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif part in ("tool_call", "text") and isinstance(current, Mapping):
            continue
        else:
            current = None
        out.append(part)
    return tuple(out)


def _located(file: str, loc: Loc, message: str, positions: Mapping[Loc, tuple[int, int]], data: Any) -> SuiteIssue:
    loc = _data_loc(data, loc)
    line: int | None = None
    column: int | None = None
    for end in range(len(loc), -1, -1):
        if loc[:end] in positions:
            line, column = positions[loc[:end]]
            break
    return SuiteIssue(file, line, column, _format_loc(loc), message)


def _positions(text: str) -> dict[Loc, tuple[int, int]]:
    """Line and column (1-based) of every value in a JSON text, by reading it as YAML (JSON is YAML 1.2).

    Only used to explain a problem; a text ruamel.yaml cannot read gives no positions.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    try:
        document = YAML(typ="rt").load(text)
    except Exception:  # positions are a courtesy: the problem is still reported without them
        return {}
    positions: dict[Loc, tuple[int, int]] = {}

    def walk(node: Any, loc: Loc) -> None:
        if isinstance(node, CommentedMap):
            for key, value in node.items():
                line, column = node.lc.value(key)
                positions[(*loc, str(key))] = (line + 1, column + 1)
                walk(value, (*loc, str(key)))
        elif isinstance(node, CommentedSeq):
            for index, value in enumerate(node):
                line, column = node.lc.item(index)
                positions[(*loc, index)] = (line + 1, column + 1)
                walk(value, (*loc, index))

    positions[()] = (1, 1)  # the document: where missing top-level fields are reported
    walk(document, ())
    return positions
