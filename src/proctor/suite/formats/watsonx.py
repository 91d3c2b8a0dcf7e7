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

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from proctor.errors import SuiteError, SuiteIssue
from proctor.suite._defaults import new_list
from proctor.suite._journey import Goal, JourneySpec, MatchingSpec, goal_graph_problems
from proctor.suite._model import AssertionSpec, CheckCatalog, TurnSpec
from proctor.suite._simulate import SimulateSpec
from proctor.suite._suite import Case, Suite
from proctor.suite._yaml import fast_load, top_level_keys

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


class FileUpload(BaseModel):
    """A dataset's `file_upload`: the file the ADK uploads to the agent before the first message."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built at first use

    file_path: str = Field(min_length=1)
    """The file, relative to the working directory (as the ADK reads it) or to the dataset's folder."""
    file_id: str | None = None
    """The id the agent knows the file by."""
    content_type: str = "application/octet-stream"
    """Its media type."""


class WatsonxDataset(BaseModel):
    """A watsonx ground-truth dataset. Unknown top-level keys are kept (in `Case.metadata["extra"]`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built at first use

    agent: str | None = None
    """The agent the dataset was written for."""
    goals: dict[str, list[str]] = Field(default_factory=dict)
    """Goal -> the goals that depend on it."""
    goal_details: list[Goal] = Field(default_factory=new_list)
    """The tool-call and text goals (empty in a quick-eval dataset: no expected journey)."""
    story: str = ""
    """The user's story, for a simulated user."""
    starting_sentence: str = Field(min_length=1)
    """The user's first message."""
    runtime_context: dict[str, Any] | None = None
    """Context variables the watsonx runtime passes to the agent (sent with every turn: see
    `proctor.targets` `context`)."""
    max_user_turns: int | None = Field(default=None, ge=1)
    """A simulated user's turn limit."""
    file_upload: FileUpload | None = None
    """A file the user uploads before the conversation (sent by targets that can carry files)."""


def is_watsonx_dataset(path: Path) -> bool:
    """Whether a `.json` file is a watsonx dataset (an object with `goal_details`).

    A file that mentions `goal_details` but is not valid JSON counts, so that loading reports its problem.
    """
    try:
        raw = path.read_bytes()
    except OSError:
        return False
    if b'"goal_details"' not in raw:  # searched in the bytes: a directory's results files are not decoded
        return False
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return False
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
        if (p.suffix != ".json" or p in datasets)
        and not (p.name in CONFIG_NAMES and p.parent in folders)
        and not (p.suffix != ".json" and adk_config_kind(p) is not None)
    ]


ADK_TEST_CONFIG_KEYS = frozenset(
    {
        "test_paths", "output_dir", "auth_config", "wxo_lite_version", "max_user_turns", "provider_config",
        "llm_user_config", "custom_metrics_config", "extractors_config", "text_match_config",
        "skip_available_results", "data_annotation_run", "num_workers", "n_runs", "enable_verbose_logging",
        "enable_manual_user_input", "similarity_threshold", "enable_fuzzy_matching", "is_strict",
        "enable_recursive_search", "tags", "error_keywords", "skip_legacy_evaluation", "collection_name",
        "operator_configs", "metrics", "langfuse_enabled", "evaluation_model", "is_adk", "attack_paths",
        "attacks_list", "datasets_path", "agents_list_or_path", "target_agent_name", "max_variants",
        "data_path", "tool_definition_path", "mode", "generate_report", "run", "test_names", "test_pattern",
        "agent_names", "log_path", "seed_data_path", "service_url", "tenant_name", "token", "max_retries",
        "context_variables",
    }
)  # fmt: skip
"""Top-level keys of the ADK's configuration files (`agentops.arg_configs`: test, attack, analyze, ...)."""
_ADK_MARKERS = frozenset({"auth_config", "provider_config", "llm_user_config", "wxo_lite_version", "output_dir"})
_ENV_MANAGER_KEYS = frozenset({"agent", "tools", "knowledge", "test_paths", "clean_up", "enabled"})
_PROCTOR_KEYS = frozenset({"cases", "turns", "target", "expect", "assert", "assertions", "simulate", "judge"})
_SUITE_KEYS = frozenset({"name", "trials", "tasks", "evaluator", "scoring", "rubric", "setups", "seeds"})
"""Keys of Proctor suites and Embabel jobs that no ADK file has at its top."""


def adk_config_kind(path: Path) -> str | None:
    """What kind of ADK file `path` is: `config`, `env_manager` or `None` (not an ADK file).

    `None` covers anything else too: a Proctor suite, an Embabel job, unreadable YAML.

    An ADK configuration has only ADK keys, at least one of them one that only the ADK uses
    (`auth_config`, `provider_config`, `llm_user_config`, `wxo_lite_version`, `output_dir`) or
    `test_paths`; an environment-manager file maps environment names to `{agent, tools, test_paths, ...}`.
    """
    try:
        text = path.read_text(encoding="utf-8")
        keys = top_level_keys(text)
        if keys is not None and keys & (_PROCTOR_KEYS | _SUITE_KEYS):
            return None  # a suite, decided without parsing it (this runs for every file found)
        data = fast_load(text)
    except Exception:  # not readable YAML: the suite loader reports it
        return None
    if not isinstance(data, dict) or not data or _PROCTOR_KEYS & set(data):
        return None
    keys = {str(k) for k in data}
    if keys <= ADK_TEST_CONFIG_KEYS and (keys & _ADK_MARKERS or "test_paths" in keys):
        return "config"
    if all(isinstance(v, dict) and v and {str(k) for k in v} <= _ENV_MANAGER_KEYS for v in data.values()):
        return "env_manager"
    return None


def adk_test_paths(path: Path) -> list[Path]:
    """The datasets an ADK configuration names (`test_paths`; an environment manager's per environment).

    Each is resolved against the working directory as the ADK does, else against the configuration's folder.
    """
    data = fast_load(path.read_text(encoding="utf-8"))
    raw: list[Any] = []
    entries = [data] if adk_config_kind(path) == "config" else [v for v in data.values() if v.get("enabled", True)]
    for entry in entries:
        value = entry.get("test_paths") or []
        raw.extend(value if isinstance(value, list) else [value])
    out: list[Path] = []
    for item in raw:
        candidate = Path(str(item))
        if not candidate.is_absolute() and not candidate.exists() and (path.parent / candidate).exists():
            candidate = path.parent / candidate
        out.append(candidate)
    return out


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
    return options, _run_options(path, data, options)


_SIMULATOR_PROVIDERS = ("openai", "ollama", "anthropic", "bedrock", "gemini", "litellm", "llamacpp")
"""Proctor's built-in model providers: an ADK `llm_user_config.model_id` starting with one is usable."""


def _run_options(path: str, data: Mapping[str, Any], options: dict[str, Any]) -> list[SuiteIssue]:
    """Read the ADK keys that mean something to a Proctor run into `options`; return their problems.

    `n_runs` becomes each case's trials, `max_user_turns` the simulated user's default turn limit, and
    `llm_user_config.model_id` its model when it names a Proctor provider (`openai/...`); otherwise the
    model is kept in the case metadata (`llm_user_model`) and `--simulator` chooses.
    """
    issues: list[SuiteIssue] = []
    for key in ("n_runs", "max_user_turns"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                issues.append(
                    SuiteIssue(path, None, None, key, f"'{key}' must be a whole number >= 1; found {value!r}")
                )
            else:
                options[key] = value
    user = data.get("llm_user_config")
    if isinstance(user, Mapping) and isinstance(user.get("model_id"), str):
        options["llm_user_model"] = user["model_id"]
    return issues


def load_watsonx_file(
    path: Path, text: str, checks: CheckCatalog | None = None, *, simulate: bool | None = None
) -> Suite:
    """Translate one watsonx dataset into a one-case suite.

    A quick-eval dataset (empty `goal_details`) has no expected journey: its case has no `journey`
    check (IBM's reference-free quick-eval metrics are not computed; add checks in a Proctor suite).

    Args:
        path: The dataset file.
        text: Its contents.
        checks: Validates the `journey` check; without it, it is accepted as is.
        simulate: Play the story with a simulated user (`--simulate`); `None`: as the configuration's
            Proctor-only `simulate:` says.

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
    configured = config.pop("simulate", False)
    simulate = configured if simulate is None else simulate
    trials = config.pop("n_runs", None)
    max_user_turns = dataset.max_user_turns or config.pop("max_user_turns", None)
    config.pop("max_user_turns", None)
    user_model = config.pop("llm_user_model", None)
    checks_ = _journey_check(name, dataset, config, checks)
    metadata: dict[str, Any] = {
        "format": FORMAT,
        "agent": dataset.agent,
        "story": dataset.story,
        "starting_sentence": dataset.starting_sentence,
    }
    if dataset.runtime_context is not None:
        metadata["runtime_context"] = dataset.runtime_context
    if max_user_turns is not None:
        metadata["max_user_turns"] = max_user_turns
    if not dataset.goal_details:
        metadata["quick_eval"] = True
    if dataset.file_upload is not None:
        metadata["file_upload"] = _file_upload(path, text, data, dataset.file_upload)
    if user_model is not None:
        metadata["llm_user_model"] = user_model
    if dataset.model_extra:
        metadata["extra"] = dict(dataset.model_extra)
    story = None
    if simulate:  # the simulated user opens with the starting sentence and follows the story
        max_turns = 2 * max_user_turns if max_user_turns else 20
        story = SimulateSpec(
            story=dataset.story, starting_sentence=dataset.starting_sentence, arms=["supplied"], max_turns=max_turns
        )
    case = Case(
        name=path.stem,
        file=path,
        suite=path.stem,
        turns=() if simulate else (TurnSpec(content=dataset.starting_sentence),),
        simulate=story,
        simulator=user_model if user_model and user_model.split("/")[0] in _SIMULATOR_PROVIDERS else None,
        tags=tuple(dict.fromkeys(t for t in (FORMAT, dataset.agent, "quick-eval" if not checks_ else "") if t)),
        description=dataset.story or None,
        assert_=checks_,
        metadata=metadata,
        **({"trials": trials} if trials else {}),
    )
    return Suite(name=path.stem, path=path, cases=(case,))


def _file_upload(path: Path, text: str, data: Any, upload: FileUpload) -> dict[str, Any]:
    """The upload with its file resolved; a missing file is a located error.

    Looked for in the working directory first (as the ADK does), then the dataset's folder, then by name
    beside the dataset.
    """
    given = Path(upload.file_path)
    for candidate in (given, path.parent / given, path.parent / given.name):
        if candidate.is_file():
            return {**upload.model_dump(), "file_path": str(candidate.resolve())}
    loc: Loc = ("file_upload", "file_path")
    message = (
        f"the file to upload is not found ({upload.file_path}; looked in the working directory and beside the dataset)"
    )
    raise SuiteError([_located(str(path), loc, message, _positions(text), data)])


def _journey_check(
    name: str, dataset: WatsonxDataset, config: dict[str, Any], checks: CheckCatalog | None
) -> tuple[AssertionSpec, ...]:
    """The case's `journey` check (none for a quick-eval dataset, which has no goals)."""
    if not dataset.goal_details:
        return ()
    journey = JourneySpec(goals=dataset.goals, goal_details=dataset.goal_details, **config)
    try:
        check = AssertionSpec.model_validate(
            {"type": "journey", "value": journey, "name": "journey"}, context={"checks": checks}
        )
    except ValidationError as exc:
        raise SuiteError([SuiteIssue(name, None, None, "", _message(e)) for e in exc.errors()]) from None
    return (check,)


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
