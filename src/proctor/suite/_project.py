"""The project: `proctor.yaml` at its root, its defaults, and the one run store it keeps.

A project is found upwards from a directory, as git finds a repository: the nearest directory holding
`proctor.yaml`, else the nearest holding `.git`, else the directory itself. Its store (every run,
rescore and report reads and writes it) is `.proctor/history.db` at the root, unless `history:` in
`proctor.yaml` names another place or the `PROCTOR_HOME` environment variable moves the `.proctor`
directory. Options given on the command line (or their environment variables) override the file.
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

import difflib
import glob
import os
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.errors import SuiteError, SuiteIssue
from proctor.suite._defaults import new_list
from proctor.suite._yaml import syntax_mark, syntax_message

if TYPE_CHECKING:
    from ruamel.yaml.comments import CommentedMap

__all__ = [
    "HOME_ENV",
    "PROJECT_FILE",
    "STORE_DIR",
    "ProjectConfig",
    "ProjectInfo",
    "default_store_path",
    "find_project_root",
    "load_project",
    "read_project_config",
]

PROJECT_FILE = "proctor.yaml"
"""The project config file; its directory is the project root."""
STORE_DIR = ".proctor"
"""The store's directory at the project root."""
STORE_FILE = "history.db"
"""The store's database inside `STORE_DIR`."""
HOME_ENV = "PROCTOR_HOME"
"""Environment variable naming the store's directory (instead of `<root>/.proctor`)."""
MAX_CONFIG_BYTES = 1024 * 1024
"""Largest `proctor.yaml` read."""


class MatrixConfig(BaseModel):
    """`matrix:` in `proctor.yaml`: models and targets `proctor run` crosses when the command line names none."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use

    models: list[str] = Field(default_factory=new_list)
    """Models sent to the agent (`--model`, repeated)."""
    targets: list[str] = Field(default_factory=new_list)
    """Agents (`--target`, repeated)."""


class ProjectConfig(BaseModel):
    """What `proctor.yaml` may hold; every key is optional and a command-line option overrides it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use

    trusted: bool = Field(default=False, strict=True)
    """Suites of this project may run the code they name (python targets, hooks, plugin checks).

    Strict: only YAML's `true`/`false` grant or refuse trust (a quoted `"yes"` or `1` is an error, not a yes).
    """
    target: str | None = Field(default=None, min_length=1)
    """The agent to evaluate, as `--target` takes it (a base URL, `python:mod:fn`, `lobu:URL`, ...)."""
    model: str | None = Field(default=None, min_length=1)
    """The model sent to the agent (`--model`): names the runs."""
    judge: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+/.+$")
    """The judge model for LLM-judged checks, `provider/model` (`--judge`)."""
    suites: list[str] | None = Field(default=None, min_length=1)
    """Glob patterns of the suite files (relative to the root) `proctor run` loads when given no paths."""
    results: str | None = Field(default=None, min_length=1)
    """Where results files go, relative to the root (default: `.results/` beside each suite directory)."""
    history: str | None = Field(default=None, min_length=1)
    """The run store, relative to the root: a `.db` file, or the directory to keep `history.db` in (default
    `.proctor/history.db`)."""
    concurrency: int | None = Field(default=None, ge=1)
    """Trials in flight (`--concurrency`)."""
    matrix: MatrixConfig | None = None
    """Models and targets to cross (`--model`/`--target` repeated); wins over `model:`/`target:`."""


@dataclass(frozen=True, slots=True)
class ProjectInfo:
    """A project root, its config file (when there is one) and the config read from it."""

    root: Path
    config_file: Path | None
    config: ProjectConfig

    @property
    def trusted(self) -> bool:
        """Whether `proctor.yaml` trusts the project's suites."""
        return self.config.trusted

    @property
    def store(self) -> Path:
        """The run store: `PROCTOR_HOME`, else `history:` of the config, else `<root>/.proctor/history.db`."""
        home = os.environ.get(HOME_ENV)
        if home:
            return Path(home).expanduser().absolute() / STORE_FILE
        if self.config.history is not None:
            place = Path(os.path.normpath(self.root / self.config.history))  # `../.proctor`: no `..` shown
            return place if place.suffix == ".db" else place / STORE_FILE
        return self.root / STORE_DIR / STORE_FILE

    @property
    def results_dir(self) -> Path | None:
        """The results directory the config names (absolute), or `None` for the default."""
        return None if self.config.results is None else self.root / self.config.results

    def suite_paths(self) -> list[Path]:
        """The files the config's `suites:` globs match (sorted, each once); empty without `suites:`."""
        found: dict[Path, None] = {}
        for pattern in self.config.suites or []:
            for match in sorted(glob.glob(pattern, root_dir=self.root, recursive=True)):
                found.setdefault(self.root / match, None)
        return list(found)


def _start_dir(start: Path | None) -> Path:
    path = (start or Path.cwd()).absolute()
    return path if path.is_dir() or not path.suffix else path.parent


def find_project_root(start: Path | None = None) -> tuple[Path, Path | None]:
    """The project a path is in: `(root, proctor.yaml or None)`.

    The nearest directory upwards holding `proctor.yaml`, else holding `.git`, else the start
    directory (a file's directory).

    Args:
        start: A file or directory (default: the working directory).
    """
    directory = _start_dir(start)
    for candidate in (directory, *directory.parents):
        config = candidate / PROJECT_FILE
        if config.is_file():
            return candidate, config
        if (candidate / ".git").exists():
            return candidate, None
    return directory, None


def load_project(start: Path | None = None) -> ProjectInfo:
    """Find the project of a path and read its `proctor.yaml` (see `find_project_root`).

    Raises:
        SuiteError: The config file cannot be read or is invalid (file, line, column and field).
    """
    root, config_file = find_project_root(start)
    config = read_project_config(config_file) if config_file is not None else ProjectConfig()
    return ProjectInfo(root, config_file, config)


def default_store_path(start: Path | None = None) -> Path:
    """The run store of the project a path is in (default: the working directory's project).

    `PROCTOR_HOME` when set (its `history.db`), else `history:` of the project's `proctor.yaml`, else
    `<project root>/.proctor/history.db`. The file may not exist yet.

    Raises:
        SuiteError: The project's `proctor.yaml` is invalid.
    """
    return load_project(start).store


class ProjectConfigError(SuiteError):
    """`proctor.yaml` cannot be read or is invalid: a `SuiteError` whose heading names the project config."""

    def __init__(self, issues: list[SuiteIssue]) -> None:
        super().__init__(issues)
        count = len(issues)
        lines = "\n".join(f"  {issue}" for issue in issues)
        self.args = (f"{count} problem{'s' if count != 1 else ''} in the project config {PROJECT_FILE}:\n{lines}",)


def _undecodable(name: str, data: bytes, exc: UnicodeDecodeError) -> SuiteIssue:
    """The first byte that is not UTF-8, located by line and column (as a suite file's is)."""
    before = data[: exc.start]
    line = before.count(b"\n") + 1
    column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
    message = f"{PROJECT_FILE} is not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded ({exc.reason})"
    return SuiteIssue(name, line, column, "", message)


def read_project_config(path: Path) -> ProjectConfig:
    """Read and validate a `proctor.yaml`.

    Raises:
        SuiteError: It cannot be read, is not YAML, not a mapping, or a field is wrong (each located).
    """
    name = str(path)
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ProjectConfigError([SuiteIssue(name, None, None, "", f"cannot read the project config: {exc}")]) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ProjectConfigError([SuiteIssue(name, None, None, "", "larger than 1 MiB: not a project config")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProjectConfigError([_undecodable(name, raw, exc)]) from None
    # must stay fast: ruamel.yaml loads only for a project that has a `proctor.yaml`
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import MarkedYAMLError
    from ruamel.yaml.error import YAMLError as RuamelError

    try:
        document = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = syntax_mark(exc)
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ProjectConfigError([SuiteIssue(name, line, column, "", syntax_message(exc))]) from None
    except (RuamelError, ValueError) as exc:
        raise ProjectConfigError([SuiteIssue(name, None, None, "", f"invalid YAML: {exc}")]) from None
    if document is None:
        return ProjectConfig()
    if not isinstance(document, CommentedMap):
        raise ProjectConfigError([SuiteIssue(name, 1, 1, "", "expected a mapping of settings (trusted, target, ...)")])
    try:
        return ProjectConfig.model_validate(_plain(document))
    except ValidationError as exc:
        raise ProjectConfigError([_issue(name, document, error) for error in exc.errors(include_url=False)]) from None


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(key): _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(value) for value in node]
    return node


def _issue(name: str, document: "CommentedMap", error: Any) -> SuiteIssue:
    """One validation error, located at the field it is about (`matrix.models`), with the value found there."""
    loc = list(error["loc"])
    unknown = error["type"] == "extra_forbidden"
    node: Any = document
    line = column = None
    model: type[BaseModel] = ProjectConfig
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(node, dict) and part in node and hasattr(node, "lc"):
            at = node.lc.key(part) if unknown and last else node.lc.value(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node) and hasattr(node, "lc"):
            at = node.lc.item(part)
        else:
            break  # a missing field: located at the mapping that lacks it
        line, column = at[0] + 1, at[1] + 1
        node = node[part]
        if not last:
            field = model.model_fields.get(str(part))
            inner = (
                [arg for arg in (field.annotation, *typing.get_args(field.annotation)) if _is_model(arg)]
                if field
                else []
            )
            model = inner[0] if inner else model
    field_path = ".".join(str(part) for part in loc)
    if unknown:
        key = str(loc[-1]) if loc else ""
        known = list(model.model_fields)
        close = [match for match in difflib.get_close_matches(key, known, n=1) if match != key]
        hint = f"; did you mean {close[0]!r}?" if close else ""
        what = "setting" if len(loc) == 1 else "field"
        where = "" if len(loc) == 1 else f" in {'.'.join(str(part) for part in loc[:-1])!r}"
        return SuiteIssue(
            name, line, column, field_path, f"unknown {what} {key!r}{where}{hint} (known: {', '.join(known)})"
        )
    if error["type"] == "missing":
        return SuiteIssue(name, line, column, field_path, "required field is missing")
    return SuiteIssue(name, line, column, field_path, f"{error['msg']} (found {_plain(error.get('input'))!r})")


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
