"""Load suite files into `Suite` objects, reporting every problem with file, line, column and field."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import gc
import os
import re
import reprlib
import stat
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from proctor.errors import SuiteError, SuiteIssue
from proctor.suite._journey import JourneySpec
from proctor.suite._model import (
    TYPES_SEEN,
    AssertionSpec,
    CaseSpec,
    CheckCatalog,
    ScoringSpec,
    SuiteFileSpec,
    suite_file_spec,
)
from proctor.suite._params import Expansion, uses_params
from proctor.suite._policy import assertion_types, code_problems, judge_prompts, python_files, with_python_files
from proctor.suite._scenario import scenario_simulate
from proctor.suite._simulate import SimulateSpec, unsupported_seeds
from proctor.suite._state import SetupSpec, SetupStep, StateSpec, setup_steps
from proctor.suite._suite import DEFAULT_TIMEOUT, DEFAULT_TRIALS, Case, Rubric, Suite
from proctor.suite._trust import PROJECT_FILE, FileRefError, Trust, find_project, read_named_text
from proctor.suite._yaml import (
    MAX_DEPTH,
    DuplicateKeyError,
    Positions,
    YamlProblem,
    fast_load,
    located_load,
    or_pyyaml_error,
    prescan,
    syntax_mark,
    syntax_message,
    top_level_keys,
)
from proctor.suite.formats.embabel import (
    JOB_KEYS,
    embabel_to_suite,
    is_embabel_job,
    is_recall_eval,
    location_mover,
    recall_problems,
)
from proctor.suite.formats.goeval import is_judges_file, judges_file_message
from proctor.suite.formats.watsonx import adk_config_kind, adk_test_paths, load_watsonx_file, select_suite_files

__all__ = ["SUITE_MARKERS", "discover_suite_files", "is_suite_text", "load_suite_file", "load_suites"]

SUITE_SUFFIXES = (".yaml", ".yml")
SKIPPED_DIRS = frozenset({".results", ".git", ".venv", "node_modules", "__pycache__", ".proctor"})

Loc = tuple[str | int, ...]


def _skipped_dir(parts: tuple[str, ...]) -> bool:
    """Whether a directory search leaves a file out: under a hidden folder (`.github/`, ...) or `SKIPPED_DIRS`.

    A file named on the command line is always loaded.
    """
    return any(part.startswith(".") or part in SKIPPED_DIRS for part in parts)


_ALIAS = re.compile(r"(?:^|[\s\[{,:])\*[^\s,\[\]{}]")
"""Where a YAML alias (`*name`) may stand; a false match only costs the file a scan."""
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def discover_suite_files(paths: Iterable[str | Path], *, on_skip: Callable[[Path], None] | None = None) -> list[Path]:
    """Expand files and directories into suite files, in a stable order.

    Directories are searched recursively for the files that are suites: `*.yaml` and `*.yml` of a known
    suite shape (`is_suite_text`) and `*.json` watsonx datasets (`proctor.suite.formats.watsonx`),
    skipping hidden folders, `.results/` and other tool directories. Other YAML files there (a
    `docker-compose.yml`, a CI workflow) are passed over quietly; `on_skip` hears of each. A file named
    directly is loaded, and is an error when it is plainly not a suite.

    Raises:
        SuiteError: A path does not exist, a directory holds no suite files, or a named file is not a suite.
    """
    found, issues = _discover(paths, on_skip)
    if issues:
        raise SuiteError(issues)
    return found


SUITE_MARKERS = frozenset({"cases", "turns", "simulate", "script"}) | JOB_KEYS
"""Top-level keys that make a YAML file a suite in a directory search (Proctor, Lobu, Embabel layouts)."""
_SUITE_FIELDS = frozenset(
    {*SuiteFileSpec.model_fields, *(f.alias for f in SuiteFileSpec.model_fields.values() if f.alias)} - {"version"}
)


def is_suite_text(text: str) -> bool:
    """Whether a YAML text has a suite's shape: a top-level `cases:`, `turns:`, `simulate:` or Embabel job key.

    A flow-style or multi-document text cannot be told apart cheaply and counts as a suite (its load says more).
    """
    keys = top_level_keys(text)
    return keys is None or bool(keys & SUITE_MARKERS)


def _not_a_suite(path: Path) -> SuiteIssue | None:
    """The error for a file named directly whose top-level keys are none a suite has (`None`: load it)."""
    try:
        with path.open("rb") as file:
            keys = top_level_keys(file.read(MAX_SUITE_BYTES).decode("utf-8", "replace"))
    except OSError:
        return None  # the load reports it
    if not keys or keys & (_SUITE_FIELDS | JOB_KEYS):
        return None
    found = ", ".join(sorted(keys)[:8])
    message = (
        "not a suite file: a suite has 'cases:' (or 'turns:' or 'simulate:' for one case) at the top level; "
        f"found {found}"
    )
    return SuiteIssue(str(path), 1, 1, "", message)


def _is_judges_file(path: Path, text: str | None = None) -> bool:
    """`is_judges_file`, asked only of a file whose text has the word `judges` (or a backslash).

    A judges file's key is spelt out (`is_judges_file` reads its top-level keys as written, so an escaped
    spelling was never one): a text without the word is no judges file, told by a substring search
    (~0.1 ms a MB) instead of the top-level scan `is_judges_file` makes of the file it reads again
    (~5 ms a MB). A backslash still asks it, so the answer stays its own whatever it does with escapes.
    """
    if text is None:
        try:
            data = path.read_bytes()
        except OSError:
            return is_judges_file(path)  # it says what an unreadable file is
        if b"judges" not in data and b"\\" not in data:
            return False
    elif "judges" not in text and "\\" not in text:
        return False
    return is_judges_file(path)


def _is_suite_file(path: Path) -> bool:
    if path.suffix == ".json":
        return True  # watsonx datasets were chosen by select_suite_files
    try:
        with path.open("rb") as file:
            return is_suite_text(file.read(MAX_SUITE_BYTES).decode("utf-8", "replace"))
    except OSError:
        return True  # the load reports it


def _discover(
    paths: Iterable[str | Path], on_skip: Callable[[Path], None] | None = None
) -> tuple[list[Path], list[SuiteIssue]]:
    found: list[Path] = []
    issues: list[SuiteIssue] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            candidates = sorted(
                p
                for p in path.rglob("*")
                if (p.suffix in SUITE_SUFFIXES or p.suffix == ".json")
                and p.name != PROJECT_FILE  # the project config, not a suite
                and p.is_file()
                and not _skipped_dir(p.relative_to(path).parts[:-1])
            )
            files = select_suite_files(candidates)  # JSON only when a watsonx dataset; not a watsonx config
            files = [p for p in files if p.suffix == ".json" or not _is_judges_file(p)]  # Go judges.yaml
            files = [p for p in files if _is_suite_file(p)]
            if on_skip is not None:
                kept = set(files)
                for skipped in (p for p in candidates if p not in kept):
                    on_skip(skipped)
            if not files:
                message = "no suite files found (YAML files with 'cases:' or 'turns:', or watsonx *.json datasets)"
                issues.append(SuiteIssue(str(path), None, None, "", message))
            found.extend(files)
        elif path.is_file() and path.suffix != ".json" and adk_config_kind(path) is not None:
            # an ADK configuration or environment manager names its datasets: run those
            tests = adk_test_paths(path)
            if not tests:
                issues.append(SuiteIssue(str(path), 1, 1, "test_paths", "an ADK configuration with no test_paths"))
            more, problems = _discover(tests, on_skip)
            found.extend(more)
            issues.extend(problems)
        elif path.is_file():
            problem = None if path.suffix == ".json" or _is_judges_file(path) else _not_a_suite(path)
            if problem is not None:
                issues.append(problem)
            else:
                found.append(path)
        else:
            issues.append(SuiteIssue(str(path), None, None, "", "no such file or directory"))
    return list(dict.fromkeys(found)), issues


def load_suites(
    paths: Iterable[str | Path],
    checks: CheckCatalog | None = None,
    *,
    trust: Trust | None = None,
    simulate: bool | None = None,
    on_skip: Callable[[Path], None] | None = None,
) -> list[Suite]:
    """Load every suite under `paths`, collecting the problems of all files before raising.

    Args:
        paths: Suite files and directories (an ADK configuration stands for its `test_paths`).
        checks: Validates assertion types and values; without it any `type` is accepted.
        simulate: For watsonx datasets: play each story with a simulated user (`True`, the CLI's
            `--simulate`), or not; `None` leaves it to the `simulate:` of a `config.yaml` beside them.
        trust: What the suites may make Proctor do (`proctor.suite.Trust`): with one, code a suite names
            is a load error unless trusted, and the files it names must lie in its project root (the
            nearest `proctor.yaml` above each path, else the path itself). Without one, as before.
        on_skip: Told of each file a directory search passed over (not a suite); `proctor run -v` lists them.

    Raises:
        SuiteError: With every problem of every file.
    """
    suites: list[Suite] = []
    missing: list[SuiteIssue] = []  # paths that hold no suite: reported first
    issues: list[SuiteIssue] = []
    seen: set[Path] = set()
    for raw in paths:
        files, problems = _discover([raw], on_skip)
        missing.extend(problems)
        policy = trust
        if trust is not None and files:
            try:
                project = find_project(Path(raw))
            except FileRefError as exc:
                issues.append(SuiteIssue(str(raw), None, None, "", str(exc)))
                continue
            policy = Trust(trust.trusted or project.trusted, trust.target_from_command_line, trust.root or project.root)
        for path in files:
            if path in seen:
                continue
            seen.add(path)
            issues.extend(_load_one(path, checks, policy, suites, simulate))
    if missing or issues:
        raise SuiteError([*missing, *issues])
    return suites


def _load_one(
    path: Path, checks: CheckCatalog | None, trust: Trust | None, suites: list[Suite], simulate: bool | None
) -> list[SuiteIssue]:
    """Load one file into `suites`; return its problems (never raise: one file never stops the others)."""
    try:
        suites.append(load_suite_file(path, checks, trust=trust, simulate=simulate))
    except SuiteError as exc:
        return list(exc.issues)
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError) as exc:
        # A backstop: a file no reader path foresaw is reported, and never stops the other files.
        return [SuiteIssue(str(path), None, None, "", f"cannot load this file: {type(exc).__name__}: {str(exc)[:200]}")]
    return []


# The reading order of one file, in one place: project and trust, size, format, the scan, the fast path,
# then the located slow path; each step is a call, the length is their error handling.
def load_suite_file(
    path: str | Path, checks: CheckCatalog | None = None, *, trust: Trust | None = None, simulate: bool | None = None
) -> Suite:
    """Load and validate one suite file (`trust`, `simulate`: as `load_suites` says).

    Args:
        path: The file.
        checks: Validates assertion types and values; without it any `type` is accepted.
        trust: As in `load_suites`; without a `root`, the nearest `proctor.yaml` above the file, else its
            directory, is the project root.
        simulate: As in `load_suites`, for watsonx datasets.

    Raises:
        SuiteError: With every problem found in the file.
    """
    with _gc_paused():  # a file's values are all kept: collecting while building them only costs time
        return _load_file(Path(path), checks, trust, simulate)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: building 100,000 values triggers full collections that find nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load_file(path: Path, checks: CheckCatalog | None, trust: Trust | None, simulate: bool | None) -> Suite:
    name = str(path)
    if trust is not None and trust.root is None:
        try:
            project = find_project(path)
        except FileRefError as exc:
            raise SuiteError([SuiteIssue(name, None, None, "", str(exc))]) from None
        trust = Trust(trust.trusted or project.trusted, trust.target_from_command_line, project.root)
    text = _read_text(path)
    if path.suffix == ".json":
        return load_watsonx_file(path, text, checks, simulate=simulate)
    if _is_judges_file(path, text):
        raise SuiteError([SuiteIssue(name, 1, 1, "judges", judges_file_message())])
    # The scan finds what would crash or hang a reader, located, before anything is built. The fast path
    # is safe without it unless aliases can multiply the document (libyaml refuses unsafe tags, stops at
    # 1,000 levels, and int() refuses huge integers), so a clean file is scanned only when it has aliases.
    aliased = "*" in text and _ALIAS.search(text) is not None  # `in` first: ~100x sooner over a file without any
    problems = prescan(text) if aliased else []
    if problems and not (len(problems) == 1 and problems[0].syntax):
        raise SuiteError([SuiteIssue(name, p.line, p.column, "", p.message) for p in problems])
    parsed = False
    if not problems:
        suite, parsed = _fast_path(path, text, checks, trust)
        if suite is not None:
            return suite
    # The slow path locates every problem. A text the fast path parsed, without aliases, needs no scan
    # (what it finds would have stopped that parse) unless it is nested too deep: `located_load` says.
    located = located_load(text, max_depth=MAX_DEPTH) if parsed and not aliased else None
    if located is None and not problems:  # the slow path reads with ruamel, which needs the scan's protection
        problems = prescan(text)
        if problems and not (len(problems) == 1 and problems[0].syntax):
            raise SuiteError([SuiteIssue(name, p.line, p.column, "", p.message) for p in problems])
    if located is not None:
        _require_mapping(name, located[0])
    data, positions, key_positions = located or _read_located(name, text, problems)
    source = "embabel" if is_embabel_job(data) else None
    if source and is_recall_eval(data):
        bad: list[SuiteIssue] = []
        for key, message in recall_problems(data):
            line, col = key_positions.get((key,), (None, None))
            bad.append(SuiteIssue(name, line, col, key, message))
        if bad:
            raise SuiteError(bad)
    if source:
        move = location_mover(data)
        data = embabel_to_suite(data, path.stem)
        positions = {move(loc): at for loc, at in positions.items()}
        key_positions = {move(loc): at for loc, at in key_positions.items()}
    expansion = _expand(data, path, trust, positions, key_positions)  # `vars:` and `dataset:` rows
    data, positions, key_positions = expansion.data, expansion.positions, expansion.key_positions
    try:
        types: set[str] = set()
        spec = suite_file_spec().model_validate(data, context={"checks": checks, TYPES_SEEN: types})
        return _resolve(path, spec, positions, source, trust, checks, types=types)
    except (ValidationError, SuiteError) as exc:  # an expanded case's problems are named by its template and row
        issues = (
            list(exc.issues)
            if isinstance(exc, SuiteError)
            else [_issue(name, err, data, positions, key_positions) for err in _errors(exc)]
        )
        raise SuiteError(expansion.relabel(issues)) from None


def _read_located(name: str, text: str, problems: list[YamlProblem]) -> tuple[dict[str, Any], Positions, Positions]:
    """The file's mapping as plain values, with where each value and key stands (for located errors).

    libyaml's composer reads it (`located_load`, about 20x faster than a round trip); ruamel.yaml reads
    what that leaves: a syntax error (`problems`: the scan's, which ruamel words better), merge keys,
    collection keys, a repeated key.

    Raises:
        SuiteError: The text is not YAML, or not a mapping.
    """
    located = None if problems else located_load(text, max_depth=MAX_DEPTH)
    if located is not None:
        document, positions, key_positions = located
        _require_mapping(name, document)
        return document, positions, key_positions
    # must stay fast: ruamel.yaml loads only for a file libyaml's composer cannot locate
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning
    from ruamel.yaml.error import YAMLError as RuamelError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReusedAnchorWarning)  # YAML lets an anchor be redefined
            document = YAML(typ="rt").load(text)
        if problems:  # libyaml found a syntax error that ruamel let pass: the scan stopped there
            raise SuiteError([SuiteIssue(name, p.line, p.column, "", p.message) for p in problems])
    except MarkedYAMLError as exc:
        mark = syntax_mark(exc)
        message = syntax_message(exc)
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise SuiteError([SuiteIssue(name, line, col, "", message)]) from None
    except (RuamelError, ValueError, RecursionError, LookupError, TypeError, AttributeError) as exc:
        # what the scan let through and ruamel refuses, or trips over (`: !!int ` raised an IndexError)
        if problems:  # libyaml's word (e.g. its own nesting limit, hit before the scan's)
            raise SuiteError([SuiteIssue(name, p.line, p.column, "", p.message) for p in problems]) from None
        raise SuiteError([SuiteIssue(name, None, None, "", f"invalid YAML: {exc}")]) from None
    _require_mapping(name, document)
    positions = {}
    key_positions = {}
    return _plain(document, (), positions, key_positions), positions, key_positions


def _require_mapping(name: str, document: Any) -> None:
    """Raise the located error for a document that is not a mapping of suite fields."""
    if isinstance(document, Mapping):
        return
    kinds = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    found = (
        "an empty file"
        if document is None
        else next((label for kind, label in kinds.items() if isinstance(document, kind)), "a scalar")
    )
    raise SuiteError([SuiteIssue(name, 1, 1, "", f"expected a mapping of suite fields, found {found}")])


MAX_SUITE_BYTES = 32 * 1024 * 1024
"""Largest suite file read (a 5,000-case file is about 1 MB)."""


def _fast_path(path: Path, text: str, checks: CheckCatalog | None, trust: Trust | None) -> tuple[Suite | None, bool]:
    """Parse and validate: the suite of a clean file, else `None` for the slow path, which locates problems.

    Returns:
        The suite (or `None`) and whether the text parsed as YAML.
    """
    parsed = False
    try:
        fast = fast_load(text)
        parsed = True
        source = "embabel" if is_embabel_job(fast) else None
        if source:
            fast = embabel_to_suite(fast, path.stem)
        if isinstance(fast, dict):
            fast = _expand(fast, path, trust).data  # `vars:` and `dataset:` rows
            types: set[str] = set()
            spec = suite_file_spec().model_validate(fast, context={"checks": checks, TYPES_SEEN: types})
            del fast  # the parsed containers, freed: the cases built next take their memory (-2 MB RSS on W2)
            return _resolve(path, spec, {}, source, trust, checks, types=types, fail_fast=True), parsed
    except or_pyyaml_error(DuplicateKeyError, ValidationError, SuiteError, ValueError, TypeError, RecursionError):
        pass
    return None, parsed


def _expand(
    data: Any,
    path: Path,
    trust: Trust | None,
    positions: Mapping[Loc, tuple[int, int]] | None = None,
    key_positions: Mapping[Loc, tuple[int, int]] | None = None,
) -> Expansion:
    """`proctor.suite._expander.expand_params`, loaded only for a document that declares parameters."""
    if not uses_params(data):
        return Expansion(data, dict(positions or {}), dict(key_positions or {}))
    # must stay fast: Jinja and ruamel load only for a suite with `vars:` or `dataset:`
    from proctor.suite._expander import expand_params

    return expand_params(data, path, trust, positions, key_positions)


def _read_text(path: Path) -> str:
    """The file's text: a regular file of at most `MAX_SUITE_BYTES`, UTF-8, else a located error."""
    name = str(path)
    try:
        with path.open("rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise SuiteError([SuiteIssue(name, None, None, "", "not a regular file")])
            data = file.read(MAX_SUITE_BYTES + 1)
    except OSError as exc:
        raise SuiteError([SuiteIssue(name, None, None, "", f"cannot read file: {exc}")]) from None
    if len(data) > MAX_SUITE_BYTES:
        message = f"larger than {MAX_SUITE_BYTES // (1024 * 1024)} MiB: not read"
        raise SuiteError([SuiteIssue(name, None, None, "", message)])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        message = f"not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded ({exc.reason})"
        raise SuiteError([SuiteIssue(name, line, column, "", message)]) from None


def _plain(
    node: Any,
    loc: Loc,
    positions: dict[Loc, tuple[int, int]],
    key_positions: dict[Loc, tuple[int, int]],
    seen: dict[int, Any] | None = None,
) -> Any:
    """Copy ruamel nodes into plain Python values, remembering where each value and key stands.

    A node met again through an alias is copied once and shared (as YAML means it), so aliases cost
    no more than their anchor; a problem inside a repeat is located at the alias.
    """
    from ruamel.yaml.comments import CommentedMap, CommentedSeq  # loaded already: `_read_located` read the nodes

    seen = {} if seen is None else seen
    if isinstance(node, CommentedMap | CommentedSeq) and id(node) in seen:
        return seen[id(node)]
    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key, value in node.items():
            child = (*loc, str(key))
            if key in node.lc.data:
                key_line, key_col = node.lc.key(key)
                value_line, value_col = node.lc.value(key)
            else:  # merged in by `<<: *defaults`: located at the mapping that merges it
                key_line, key_col = value_line, value_col = node.lc.line, node.lc.col
            key_positions[child] = (key_line + 1, key_col + 1)
            positions[child] = (value_line + 1, value_col + 1)
            out[str(key) if not isinstance(key, str | int | float | bool) else key] = _plain(
                value, child, positions, key_positions, seen
            )
        seen[id(node)] = out
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for index, value in enumerate(node):
            child = (*loc, index)
            line, col = node.lc.item(index)
            positions[child] = key_positions[child] = (line + 1, col + 1)
            items.append(_plain(value, child, positions, key_positions, seen))
        seen[id(node)] = items
        return items
    if isinstance(node, str):
        return str(node)
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node


def _data_loc(data: Any, loc: Sequence[str | int]) -> Loc:
    """Drop the discriminator tags pydantic inserts into error locations of tagged unions."""
    out: list[str | int] = []
    current = data
    for part in loc:
        if isinstance(current, Mapping) and part in current:
            current = current[part]
            out.append(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
            out.append(part)
        elif isinstance(current, Mapping) and current.get("type") == part:
            continue  # the union's tag: not a key of the input
        elif isinstance(current, Mapping | list) and isinstance(part, str) and _MEMBER_LABEL.match(part):
            continue  # the union member pydantic tried (`ToolSimulateSpec`, `bool`): not a key either
        else:
            out.append(part)
            current = None
    return tuple(out)


def _format_loc(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _issue(
    file: str,
    error: ErrorDetails,
    data: Any,
    positions: Mapping[Loc, tuple[int, int]],
    key_positions: Mapping[Loc, tuple[int, int]],
) -> SuiteIssue:
    loc = _data_loc(data, error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        line, col = key_positions.get(loc, (None, None))
        message = _unknown_field_message(str(loc[-1]), _place_at(error["loc"][:-1]))
    else:
        message = _message(error)
        if kind == "value_error" and not loc and "is used twice" in message:
            loc = _repeated_case_name(data) or loc  # the model names the case; the data says where it repeats
        line, col = _nearest(loc, positions)
    return SuiteIssue(file, line, col, _format_loc(loc), message)


def _repeated_case_name(data: Any) -> Loc | None:
    """Where the first case name used twice is written the second time (`cases[2].name`)."""
    cases = data.get("cases") if isinstance(data, Mapping) else None
    seen: set[Any] = set()
    for index, case in enumerate(cases if isinstance(cases, list) else []):
        name = case.get("name") if isinstance(case, Mapping) else None
        if name is not None and name in seen:
            return ("cases", index, "name")
        seen.add(name)
    return None


def _errors(exc: ValidationError) -> list[ErrorDetails]:
    """The errors worth showing: a union member's "not this type" is dropped when another member took the mapping.

    `simulate: {modle: x}` is about the mapping's fields, not "should be a valid boolean".
    """
    errors = exc.errors()
    members: dict[tuple[str | int, ...], set[str]] = {}
    for error in errors:
        for index, part in enumerate(error["loc"]):
            if isinstance(part, str) and _member_name(part) is not None:
                members.setdefault(tuple(error["loc"][:index]), set()).add(part)
    kept = [
        error
        for error in errors
        if not (
            error["type"].endswith("_type")
            and isinstance(error.get("input"), dict)
            and error["loc"]
            and isinstance(error["loc"][-1], str)
            and members.get(tuple(error["loc"][:-1]))
        )
    ]
    return kept or errors


def _nearest(loc: Loc, positions: Mapping[Loc, tuple[int, int]]) -> tuple[int | None, int | None]:
    """The position of `loc`, or of its closest ancestor that has one (for missing fields)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in positions:
            return positions[loc[:end]]
    return (1, 1)


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    found = error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error":
        return str(error["ctx"]["error"]) if "ctx" in error else error["msg"]
    if kind == "union_tag_invalid":
        expected = error.get("ctx", {}).get("expected_tags", "")
        return f"unknown target type {error.get('ctx', {}).get('tag')!r}; expected one of {expected}"
    if kind == "union_tag_not_found":
        return "a target mapping needs a 'type' (openai, http, lobu, python, embabel)"
    short = _SHORT.repr(found)  # bounded: an aliased value may be huge once expanded
    if len(short) > 60:
        short = short[:57] + "..."
    return f"{error['msg'][0].lower()}{error['msg'][1:]}; found {short}"


_MEMBER_LABEL = re.compile(
    r"^(?:function-(?:after|before|wrap|plain)\[.*\b(?P<wrapped>\w+)\]|(?P<model>[A-Z][A-Za-z0-9_]*)"
    r"|bool|str|int|float|none|(?:list|dict|tuple|set|literal|nullable|union|tagged-union)\[.*\])$"
)
"""The labels pydantic puts in an error's location for the member of a union that was tried
(`ToolSimulateSpec`, `function-after[_one_transport(), ToolServerSpec]`, `bool`): not keys of the input."""


def _member_name(label: str) -> str | None:
    """The model a union member label names (`ToolServerSpec`), or `None` for a scalar member or a key."""
    match = _MEMBER_LABEL.match(label)
    return (match.group("wrapped") or match.group("model")) if match else None


@dataclasses.dataclass(frozen=True, slots=True)
class _Place:
    """The model that validates a mapping, and how the walk to it went (for the unknown-field message)."""

    model: type[BaseModel]
    field: str | None = None
    """The field (or the name) whose value the mapping is."""
    named: tuple[str, str] | None = None
    """`(container, name)` when the mapping is the value of a named entry (`tools: {proxy: ...}`)."""
    shape: str | None = None
    """When the field takes several shapes (a union): the one the mapping was read as."""


def _alternatives(annotation: Any) -> list[Any]:
    """The members of a union (`X | None` -> `[X, None]`), `Annotated` unwrapped; else `[annotation]`."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [member for arg in typing.get_args(annotation) for member in _alternatives(arg)]
    if origin is typing.Annotated:
        return _alternatives(typing.get_args(annotation)[0])
    return [annotation]


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _place_at(loc: Sequence[str | int]) -> _Place | None:
    """The pydantic model that validates the value at `loc` (pydantic's own location, tags included).

    A `dict[str, X]` field's keys are names, not fields: `tools.proxy` is the tool named `proxy`.
    """
    options: list[Any] = [SuiteFileSpec]
    field: str | None = None
    named: tuple[str, str] | None = None
    shape: str | None = None
    for part in loc:
        alternatives = [alt for option in options for alt in _alternatives(option)]
        models = [alt for alt in alternatives if _is_model(alt)]
        if isinstance(part, int):
            options = [
                typing.get_args(alt)[0]
                for alt in alternatives
                if typing.get_origin(alt) in (list, tuple, set, Sequence) and typing.get_args(alt)
            ]
            continue
        tagged = [model for model in models if _tag_of(model) == part]
        member = _member_name(part)
        chosen = tagged or [model for model in models if member is not None and model.__name__ == member]
        if chosen:
            if len(alternatives) > 1 and not tagged:
                shape = chosen[0].__name__
            options = chosen[:1]
            continue
        owner = next((model for model in models if part in _fields_by_alias(model)), None)
        values = [typing.get_args(alt)[1] for alt in alternatives if typing.get_origin(alt) in (dict, Mapping)]
        if owner is not None:
            options, field, named, shape = [_fields_by_alias(owner)[part]], part, None, None
        elif values:
            options, named, field, shape = values, ((field or "", part) if field else None), part, None
        else:
            return None
    models = [alt for option in options for alt in _alternatives(option) if _is_model(alt)]
    if len(models) != 1:
        return None
    if shape is None and len([alt for option in options for alt in _alternatives(option) if alt is not type(None)]) > 1:
        shape = models[0].__name__
    return _Place(models[0], field, named, shape)


def _fields_by_alias(model: type[BaseModel]) -> dict[str, Any]:
    return {(info.alias or name): info.annotation for name, info in model.model_fields.items()}


def _tag_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("type")
    if field is None:
        return None
    args = typing.get_args(field.annotation)
    return str(args[0]) if typing.get_origin(field.annotation) is typing.Literal and args else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, typing.Annotated) or origin is not None:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _unknown_field_message(key: str, place: _Place | None) -> str:
    """What is wrong with an unknown field, and where a field of that name belongs when it is one level down.

    Never suggests the same name: a field valid one level down (inside a field of this mapping, or under
    a name left out: `tools: {proxy: {command: ...}}`) is said to belong there.
    """
    if place is None:
        return f"unknown field {key!r}"
    fields = _fields_by_alias(place.model)
    valid = sorted(fields)
    holders = sorted(
        name for name, annotation in fields.items() if any(key in _fields_by_alias(m) for m in _models_in(annotation))
    )
    if place.named is not None and place.named[1] in holders:
        container, name = place.named
        example = f"{container}: {{NAME: {{{name}: {{{key}: ...}}}}}}"
        hint = (
            f"; the keys under {container!r} are names, so {name!r} was read as the name of an entry, and "
            f"{key!r} belongs inside an entry's {name!r} (a name is missing: {example})."
        )
    elif holders:
        hint = f"; {key!r} belongs one level down, inside {' or '.join(repr(holder) for holder in holders)}."
    else:
        close = [match for match in difflib.get_close_matches(key, valid, n=2) if match != key]
        hint = f"; did you mean {close[0]!r}?" if close else "."
    what = "Valid fields"
    if place.shape is not None and place.field is not None:
        what = f"{place.field!r} takes several shapes; as a mapping ({place.shape}) its valid fields are"
    return f"unknown field {key!r}{hint} {what}: {', '.join(valid)}"


def _journey(expect: JourneySpec | None) -> tuple[AssertionSpec, ...]:
    """The `journey` check an `expect:` block adds (a case's block replaces the file's)."""
    return () if expect is None else (AssertionSpec(type="journey", value=expect, name="journey"),)


def _state(
    spec: StateSpec | None,
    path: Path,
    setups: Callable[[list[SetupSpec], Loc], list[SetupStep]],
    trust: Trust | None,
    report: Callable[[Loc, str], None],
) -> StateSpec | None:
    """The file's state settings with `teardown` scripts read and `data_dir` relative to the suite."""
    if spec is None:
        return None
    update: dict[str, Any] = {}
    if any(step.file is not None for step in spec.teardown):
        steps = setups(spec.teardown, ("state", "teardown"))
        update["teardown"] = [SetupSpec(cypher=step.statement, params=step.params) for step in steps]
    if spec.data_dir is not None:
        data_dir = path.parent / spec.data_dir
        root = trust.root if trust is not None else None
        if root is not None and not data_dir.resolve().is_relative_to(root.resolve()):
            report(("state", "data_dir"), f"data_dir {spec.data_dir!r} is outside the project root {root}")
        update["data_dir"] = str(data_dir)
    return spec.model_copy(update=update) if update else spec


def _simulate(
    spec: SimulateSpec | None, path: Path, trust: Trust | None, report: Callable[[str], None]
) -> SimulateSpec | None:
    """The `simulate:` block with a `prompt` file read (relative to the suite file, inside the project)."""
    if spec is None or spec.prompt is None or "\n" in spec.prompt:
        return spec
    prompt_path = path.parent / spec.prompt
    if trust is None:
        if prompt_path.is_file():
            return spec.model_copy(update={"prompt": prompt_path.read_text(encoding="utf-8")})
        return spec
    if not prompt_path.exists():
        return spec  # the prompt text itself
    try:
        return spec.model_copy(update={"prompt": read_named_text(spec.prompt, path.parent, trust.root, "prompt")})
    except FileRefError as exc:
        report(str(exc))
        return spec


def _reporter(report: Callable[[Loc, str], None], loc: Loc) -> Callable[[str], None]:
    return lambda message: report(loc, message)


# Long because each case's fields are listed once, in one constructor call, beside the file-level
# defaults they fall back to; the helpers it uses (`rubric`, `setups`) close over the file's reporter.
def _resolve(
    path: Path,
    spec: SuiteFileSpec,
    positions: Mapping[Loc, tuple[int, int]],
    source: str | None = None,
    trust: Trust | None = None,
    checks: CheckCatalog | None = None,
    *,
    types: set[str] | None = None,
    fail_fast: bool = False,
) -> Suite:
    """Apply file-level defaults to each case, read the files the suite names and apply the trust policy.

    Args:
        path: The suite file.
        spec: Its validated contents.
        positions: Where each value stands in the file, for located errors.
        source: The foreign format the file was translated from (`embabel`), kept as the cases'
            `metadata["format"]`.
        trust: The trust policy (`None`: everything allowed, as before trust levels).
        checks: The check catalog, to tell plugin checks (which need trust) from built-ins.
        types: The `type` of every assertion in `spec`, when its validation collected them (`TYPES_SEEN`);
            else they are looked for.
        fail_fast: Raise at the first file-level problem, before building the cases (the fast path only
            needs to know that the file has problems: the slow path finds them all, located).
    """
    name = spec.name or path.stem
    issues: list[SuiteIssue] = []
    root = trust.root if trust is not None else None

    def report(loc: Loc, message: str) -> None:
        line, col = _nearest(loc, positions) if positions else (None, None)
        issues.append(SuiteIssue(str(path), line, col, _format_loc(loc), message))

    def rubric(value: str | None, loc: Loc) -> Rubric | None:
        if value is None:
            return None
        rubric_path = path.parent / value
        try:
            text = read_named_text(value, path.parent, root, "rubric")
        except FileRefError as exc:
            report(loc, f"rubric file not found: {rubric_path}" if not rubric_path.exists() else str(exc))
            return None
        if not text.strip():  # a blank rubric has no criteria: its check could only error, after the agent ran
            report(loc, f"the rubric file {value} is empty: it has no criteria (expected one or more, e.g. '- Polite')")
            return None
        return Rubric(rubric_path.resolve(), text)

    def setups(specs: list[SetupSpec], loc: Loc) -> list[SetupStep]:
        if not specs:
            return []  # most cases: nothing to read (and no `_format_loc` per case)
        steps, problems = setup_steps(specs, path.parent, _format_loc(loc), root)
        for index, message in problems:
            report((*loc, index), message)
        return steps

    types = assertion_types(spec) if types is None else types
    for loc, message in code_problems(spec, trust, checks, types):
        report(loc, message)
    resolved_python, python_problems = python_files(spec, path.parent, root, types)  # `type: python` file functions
    for loc, message in python_problems:
        report(loc, message)
    prompts, problems = judge_prompts(spec, path.parent, trust)
    for loc, message in problems:
        report(loc, message)
    if issues and fail_fast:
        raise SuiteError(issues)
    judge = (
        spec.judge.model_copy(update={"prompts": prompts}) if spec.judge is not None and problems == [] else spec.judge
    )
    seeds = list(spec.seeds)
    for case in spec.cases or ():
        if case.seeds:
            seeds.extend(case.seeds)
    problem = unsupported_seeds(spec.target, seeds)
    if problem is not None:
        line, col = positions.get(("seeds",), (None, None))
        issues.append(SuiteIssue(str(path), line, col, "seeds", problem))
    file_rubric = rubric(spec.rubric, ("rubric",))
    file_setups = tuple(setups(spec.setups, ("setups",)))
    state = _state(spec.state, path, setups, trust, report)
    is_single = spec.cases is None
    case_specs = (
        spec.cases
        if spec.cases is not None
        else [CaseSpec(name=name, turns=spec.turns or [], simulate=spec.simulate, vars=spec.vars, script=spec.script)]
    )
    # What a case without a value of its own takes, made once for the file's cases (tuples: shared as they are)
    scoring = spec.scoring or ScoringSpec()  # one default for the file's cases (as the file's own is shared)
    trials = spec.trials or DEFAULT_TRIALS
    timeout = spec.timeout or DEFAULT_TIMEOUT
    file_tags = tuple(dict.fromkeys(spec.tags))
    file_asserts = (*spec.assert_, *spec.assertions)  # file-level checks apply to every case (Embabel's name too)
    file_journey = spec.expect is not None
    file_seeds = tuple(spec.seeds)
    target, simulator, seed_session, tools = spec.target, spec.simulator, spec.seed_session, spec.tools
    cases = []
    for index, case in enumerate(case_specs):
        at: Loc = () if is_single else ("cases", index)
        own = case.__dict__  # its fields' values: read ~3x sooner than through the model's attributes
        # Positional, in `Case`'s field order: a call of more than 15 keywords builds a dict first (~2 µs here)
        built = Case(
            own["name"],  # name
            path,  # file
            name,  # suite
            tuple(own["turns"]),  # turns
            own["trials"] or trials,  # trials
            own["timeout"] or timeout,  # timeout
            tuple(dict.fromkeys([*spec.tags, *own["tags"]])) if own["tags"] else file_tags,  # tags
            own["scoring"] or scoring,  # scoring
            own["description"] if not is_single else spec.description,  # description
            rubric(own["rubric"], (*at, "rubric")) if own["rubric"] else file_rubric,  # rubric
            own["target"] or target,  # target
            judge,  # judge
            # assert_: a case's own checks after the file's; `expect:` adds a journey check (a case's replaces)
            (*file_asserts, *own["assert_"], *own["assertions"], *_journey(own["expect"] or spec.expect))
            if own["assert_"] or own["assertions"] or own["expect"] is not None or file_journey
            else file_asserts,
            {"format": source} if source else {},  # metadata
            # setups: the file's run first (a case without any of its own shares the file's tuple)
            (*file_setups, *setups(own["setups"], (*at, "setups"))) if own["setups"] else file_setups,
            state,  # state
            None  # simulate
            if own["simulate"] is None and own["script"] is None
            else scenario_simulate(
                _simulate(own["simulate"], path, trust, _reporter(report, (*at, "simulate", "prompt")))
                if own["simulate"] is not None
                else None,
                own["script"],
            ),
            simulator,  # simulator
            (*file_seeds, *own["seeds"]) if own["seeds"] else file_seeds,  # seeds
            own["seed_session"] if own["seeds"] else seed_session,  # seed_session
            {**tools, **own["tools"]},  # tools: `merge_tools`, the case's override the file's by name
            own["vars"],  # vars
            tuple(own["script"]) if own["script"] else (),  # script
        )
        cases.append(with_python_files(built, resolved_python) if resolved_python else built)
    if issues:
        raise SuiteError(issues)
    return Suite(name=name, path=path, cases=tuple(cases), target=spec.target)
