"""The expansion of parametrised cases (`vars:`, `dataset:`): loaded only for suites that declare them.

The rules are `proctor.suite._params`'s (its module doc); this module holds what needs Jinja and ruamel:
the sandboxed environment, the dataset readers and the row templating.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError as RuamelError

from proctor._jinja import LimitedSandbox, evaluate
from proctor._jinja import render as render_template
from proctor.errors import SuiteError, SuiteIssue
from proctor.suite._params import Expansion, Loc, Position, Row, uses_params
from proctor.suite._trust import FileRefError, Trust, read_named_text
from proctor.suite._yaml import DuplicateKeyError, fast_load, prescan

__all__ = ["DATASET_SUFFIXES", "MAX_ROWS", "expand_params"]

DATASET_SUFFIXES = (".csv", ".jsonl", ".json", ".yaml", ".yml")
"""The dataset file formats, by suffix."""
MAX_ROWS = 100_000
"""Most rows one dataset may expand into."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MARKERS = ("{{", "{%", "{#")
_SINGLE = re.compile(r"\{\{-?\s*((?:(?!\{\{|\}\}).)+?)\s*-?\}\}", re.DOTALL)
_FILE_LEVEL_SKIPPED = frozenset({"judge", "state", "simulator", "version", "cases", "target", "vars", "dataset"})
"""File-level keys never rendered with the suite's variables (`target` is rendered by its own rule)."""
_SINGLE_CASE_KEYS = ("turns", "simulate", "script", "assert", "assertions", "expect", "description")
"""What moves into the case when a single-case (Lobu layout) file has a `dataset:`."""


def expand_params(
    data: Any,
    path: Path,
    trust: Trust | None = None,
    positions: Mapping[Loc, Position] | None = None,
    key_positions: Mapping[Loc, Position] | None = None,
) -> Expansion:
    """Expand a suite document's parametrised cases (see the module doc).

    Args:
        data: The document as plain values.
        path: The suite file (datasets are relative to its directory).
        trust: The trust policy; its `root` confines dataset files (`None`: anywhere).
        positions: Where each value stands in the suite file (empty on the fast path).
        key_positions: Where each key stands.

    Returns:
        The expanded document; unchanged (the same object) when it declares no `vars:` or `dataset:`.

    Raises:
        SuiteError: Every problem found, located in the suite file or the dataset file.
    """
    positions = dict(positions or {})
    key_positions = dict(key_positions or {})
    if not uses_params(data):
        return Expansion(data, positions, key_positions)
    expander = _Expander(path, trust, positions)
    expansion = expander.expand(data, key_positions)
    if expander.issues:  # located at the templates and rows already
        raise SuiteError(expander.issues)
    return expansion


class _Expander:
    """One file's expansion: the Jinja environment, the compiled templates, the problems found."""

    def __init__(self, path: Path, trust: Trust | None, positions: Mapping[Loc, Position]) -> None:
        self.path = path
        self.root = trust.root if trust is not None else None
        self.positions = positions
        self.issues: list[SuiteIssue] = []
        self._reported: set[tuple[Any, ...]] = set()
        # Sandboxed: templates come from suite files, which are data (no attribute walk to os.popen).
        # Bounded too (`proctor._jinja`): no template may ask for unbounded work or memory.
        self.env = LimitedSandbox(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
        self._compiled: dict[str, Callable[[Mapping[str, Any]], Any] | str] = {}
        self._names: dict[str, frozenset[str]] = {}

    # -- problems ------------------------------------------------------------------------------------

    def report(self, loc: Loc, message: str) -> None:
        """Record a problem at `loc` in the suite file (once per location and message)."""
        key = (loc, message)
        if key in self._reported:
            return
        self._reported.add(key)
        line, column = _nearest(loc, self.positions)
        self.issues.append(SuiteIssue(str(self.path), line, column, _format_loc(loc), message))

    def report_at(self, file: str, line: int | None, column: int | None, where: str, message: str) -> None:
        """Record a problem in a dataset file."""
        key = (file, line, column, message)
        if key not in self._reported:
            self._reported.add(key)
            self.issues.append(SuiteIssue(file, line, column, where, message))

    # -- the document --------------------------------------------------------------------------------

    def expand(self, data: dict[str, Any], key_positions: dict[Loc, Position]) -> Expansion:
        data = dict(data)
        suite_vars = self.variables(data.pop("vars", None), ("vars",)) or {}
        file_dataset = data.pop("dataset", None)
        cases, moved = self._cases(data, file_dataset)
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in _FILE_LEVEL_SKIPPED:
                out[key] = value
            else:
                out[key] = self.render(value, (key,), suite_vars, None)
        if "target" in data:
            out["target"] = self.render_target(data["target"], suite_vars)
        if not moved and "cases" not in data:  # a single case: its variables are the suite's
            out["vars"] = suite_vars
        positions = dict(self.positions)
        keys = dict(key_positions)
        origins: dict[int, tuple[int, Row | None]] = {}
        if cases is not None:
            expanded: list[Any] = []
            for index, case in enumerate(cases):
                template = ("cases", index) if not moved else ()
                for new_case, row in self.case(case, template, suite_vars, file_dataset, moved):
                    origins[len(expanded)] = (index, row)
                    expanded.append(new_case)
            out["cases"] = expanded
            positions = _moved(self.positions, origins, moved)
            keys = _moved(key_positions, origins, moved)
            self.positions = positions
        return Expansion(out, positions, keys, origins)

    def _cases(self, data: dict[str, Any], file_dataset: Any) -> tuple[list[Any] | None, bool]:
        """The case templates, and whether a single-case file's case was moved into a `cases:` list."""
        cases = data.get("cases")
        if isinstance(cases, list):
            return cases, False
        if cases is not None or file_dataset is None:
            return None, False
        # A single-case file with a dataset: its case becomes the template of a `cases:` list
        case = {key: data.pop(key) for key in _SINGLE_CASE_KEYS if key in data}
        case["name"] = data.get("name") or self.path.stem
        data["cases"] = [case]
        return [case], True

    def case(
        self, case: Any, loc: Loc, suite_vars: Mapping[str, Any], file_dataset: Any, moved: bool
    ) -> Iterator[tuple[Any, Row | None]]:
        """The cases one template expands into, each with the row it came from."""
        if not isinstance(case, dict):
            yield case, None  # validation reports it
            return
        case = dict(case)
        case_vars = {**suite_vars, **(self.variables(case.pop("vars", None), (*loc, "vars")) or {})}
        own = case.pop("dataset", None)
        dataset, dataset_loc = (own, (*loc, "dataset")) if own is not None else (file_dataset, ("dataset",))
        if moved:
            dataset_loc = ("dataset",)
        target = case.pop("target", None)
        if dataset is None:
            rendered = self.render(case, loc, case_vars, None)
            if target is not None:
                rendered["target"] = self.render_target(target, case_vars, (*loc, "target"))
            yield {**rendered, "vars": case_vars}, None
            return
        rows, name_from = self.rows(dataset, dataset_loc)
        known = frozenset(name for row in rows for name in row.values)
        names: dict[str, Row] = {}
        for row in rows:
            variables = {**case_vars, **row.values}
            rendered = self.render(case, loc, variables, row, known)
            rendered["name"] = self.case_name(case.get("name"), rendered.get("name"), row, name_from, loc)
            rendered["vars"] = variables
            if target is not None:
                rendered["target"] = self.render_target(target, variables, (*loc, "target"))
            if isinstance(rendered["name"], str):
                if rendered["name"] in names:
                    first = names[rendered["name"]]
                    message = (
                        f"case name {rendered['name']!r} is used twice (first by row {first.number}, "
                        f"{first.where()}); names must be unique"
                    )
                    self.report_at(row.file, row.line, row.column, f"row {row.number}", message)
                names[rendered["name"]] = row
            yield rendered, row

    def case_name(self, template: Any, rendered: Any, row: Row, name_from: str | None, loc: Loc) -> Any:
        """A row's case name: the rendered template name, else `name[column value]`, else `name[row]`."""
        if not isinstance(template, str):
            return template  # missing or not text: validation reports it
        if any(marker in template for marker in _MARKERS):
            return rendered
        if name_from is not None:
            if name_from not in row.values:
                self.report_at(
                    row.file, row.line, row.column, f"row {row.number}", f"no column {name_from!r} to name the case by"
                )
                return f"{template}[{row.number}]"
            return f"{template}[{row.values[name_from]}]"
        return f"{template}[{row.number}]"

    def variables(self, value: Any, loc: Loc) -> dict[str, Any] | None:
        """A `vars:` mapping, checked: variable names are identifiers."""
        if value is None:
            return None
        if not isinstance(value, dict):
            self.report(loc, f"'vars' is a mapping of variable names to values; found {type(value).__name__}")
            return None
        for name in value:
            if not isinstance(name, str) or not _NAME.match(name):
                self.report(
                    (*loc, str(name)),
                    f"variable name {name!r} is not a name (letters, digits and _, not first a digit)",
                )
        return dict(value)

    # -- rendering -----------------------------------------------------------------------------------

    def render(
        self,
        value: Any,
        loc: Loc,
        variables: Mapping[str, Any],
        row: Row | None,
        known: frozenset[str] = frozenset(),
    ) -> Any:
        """`value` with every template string rendered (a case's `simulate.prompt` is left alone)."""
        if isinstance(value, str):
            return self.render_string(value, loc, variables, row, known)
        if isinstance(value, dict):
            return {
                key: item
                if (key == "prompt" and len(loc) >= 1 and loc[-1] == "simulate")
                else self.render(item, (*loc, key), variables, row, known)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.render(item, (*loc, index), variables, row, known) for index, item in enumerate(value)]
        return value

    def render_string(
        self, source: str, loc: Loc, variables: Mapping[str, Any], row: Row | None, known: frozenset[str]
    ) -> Any:
        if not any(marker in source for marker in _MARKERS):
            return source
        render = self.compile(source, loc)
        if isinstance(render, str):
            return render  # a syntax error, reported
        try:
            return render(variables)
        except jinja2.UndefinedError as exc:
            self.undefined(source, loc, variables, row, known, exc)
        except jinja2.exceptions.SecurityError as exc:
            self.report(loc, f"template {_short(source)} is not allowed: {exc}")
        except (jinja2.TemplateError, ArithmeticError, TypeError, ValueError, LookupError, RecursionError) as exc:
            where = f" for row {row.number} ({row.where()})" if row is not None else ""
            self.report(loc, f"cannot render {_short(source)}{where}: {type(exc).__name__}: {exc}")
        return source

    def undefined(
        self,
        source: str,
        loc: Loc,
        variables: Mapping[str, Any],
        row: Row | None,
        known: frozenset[str],
        exc: jinja2.UndefinedError,
    ) -> None:
        """Report an undefined name: at the row when other rows define it, else at the template."""
        missing = sorted(self.names(source) - set(variables))
        name = missing[0] if missing else None
        if row is not None and name is not None and name in known:
            message = f"no variable {name!r}, which {_format_loc(loc)} uses ({_short(source)})"
            self.report_at(row.file, row.line, row.column, f"row {row.number}", message)
            return
        defined = ", ".join(sorted(variables)) or "none"
        what = f"undefined variable {name!r}" if name is not None else str(exc.message)
        self.report(loc, f"{what} in {_short(source)}; variables: {defined}")

    def compile(self, source: str, loc: Loc) -> Callable[[Mapping[str, Any]], Any] | str:
        """The render function of a template string (compiled once per file); the source on a syntax error."""
        cached = self._compiled.get(source)
        if cached is not None:
            return cached
        try:
            single = _SINGLE.fullmatch(source)
            if single is not None:
                expression = self.env.compile_expression(single.group(1), undefined_to_none=False)
                render: Callable[[Mapping[str, Any]], Any] | str = _native(expression)
            else:
                template = self.env.from_string(source)
                render = lambda variables: render_template(template, variables)  # noqa: E731
        except jinja2.TemplateSyntaxError as exc:
            self.report(loc, f"bad template {_short(source)}: {exc.message} (template line {exc.lineno})")
            render = source
        self._compiled[source] = render
        return render

    def names(self, source: str) -> frozenset[str]:
        """The variable names a template uses."""
        if source not in self._names:
            try:
                self._names[source] = frozenset(jinja2.meta.find_undeclared_variables(self.env.parse(source)))
            except jinja2.TemplateSyntaxError:
                self._names[source] = frozenset()
        return self._names[source]

    def render_target(self, value: Any, variables: Mapping[str, Any], loc: Loc = ("target",)) -> Any:
        """The suite's target: a string is rendered when every name it uses is a variable, else kept.

        A target's own templates (`{{ session_id }}`, `{{ message }}`, `{{ env.X }}`) are rendered by
        the target at run time; a string that mixes them with suite variables is an error.
        """
        if isinstance(value, dict):
            return {key: self.render_target(item, variables, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [self.render_target(item, variables, (*loc, i)) for i, item in enumerate(value)]
        if not isinstance(value, str) or not any(marker in value for marker in _MARKERS):
            return value
        used = self.names(value)
        ours = used & set(variables)
        if not ours:
            return value
        if used - ours:
            theirs = ", ".join(sorted(used - ours))
            self.report(
                loc,
                f"{_short(value)} mixes suite variables ({', '.join(sorted(ours))}) with names the target "
                f"renders at run time ({theirs}); put the variable part in a variable of its own field",
            )
            return value
        return self.render_string(value, loc, variables, None, frozenset())

    # -- datasets ------------------------------------------------------------------------------------

    def rows(self, dataset: Any, loc: Loc) -> tuple[list[Row], str | None]:
        """The rows of a `dataset:` (a path, an inline list, or `{path|rows, name_from}`) and its name column."""
        name_from: str | None = None
        source = dataset
        if isinstance(dataset, dict):
            unknown = sorted(set(dataset) - {"path", "rows", "name_from"})
            if unknown:
                self.report(
                    (*loc, unknown[0]), f"unknown field {unknown[0]!r}; a dataset has path or rows, and name_from"
                )
            name_from = dataset.get("name_from")
            if name_from is not None and not isinstance(name_from, str):
                self.report((*loc, "name_from"), "name_from is a column name")
                name_from = None
            if ("path" in dataset) == ("rows" in dataset):
                self.report(loc, "a dataset mapping has either 'path' (a file) or 'rows' (a list), not both or neither")
                return [], name_from
            source = dataset.get("path", dataset.get("rows"))
            loc = (*loc, "path" if "path" in dataset else "rows")
        if isinstance(source, list):
            return self.inline_rows(source, loc), name_from
        if isinstance(source, str):
            return self.file_rows(source, loc), name_from
        self.report(
            loc, f"a dataset is a file path, a list of rows, or {{path|rows, name_from}}; found {type(source).__name__}"
        )
        return [], name_from

    def inline_rows(self, items: list[Any], loc: Loc) -> list[Row]:
        rows: list[Row] = []
        for index, item in enumerate(items):
            line, column = _nearest((*loc, index), self.positions) if self.positions else (None, None)
            if not isinstance(item, dict):
                self.report((*loc, index), f"a dataset row is a mapping of variables; found {type(item).__name__}")
                continue
            rows.append(Row(index + 1, item, str(self.path), line, column))
            self.check_names(rows[-1], (*loc, index))
        if not rows and not self.issues:
            self.report(loc, "the dataset has no rows")
        return rows

    def check_names(self, row: Row, loc: Loc | None = None) -> None:
        for name in row.values:
            if not isinstance(name, str) or not _NAME.match(name):
                message = f"column {name!r} is not a variable name (letters, digits and _, not first a digit)"
                if loc is not None and not self.positions:
                    self.report(loc, message)
                else:
                    self.report_at(row.file, row.line, row.column, f"row {row.number}", message)

    def file_rows(self, value: str, loc: Loc) -> list[Row]:
        file = self.path.parent / value
        suffix = file.suffix.lower()
        if suffix not in DATASET_SUFFIXES:
            self.report(
                loc,
                f"dataset {value!r}: unknown format {suffix or '(no suffix)'!r}; "
                f"expected one of {', '.join(DATASET_SUFFIXES)}",
            )
            return []
        try:
            text = read_named_text(value, self.path.parent, self.root, "dataset")
        except FileRefError as exc:
            self.report(loc, str(exc))
            return []
        readers = {
            ".csv": _csv_rows,
            ".jsonl": _jsonl_rows,
            ".json": _json_rows,
            ".yaml": _yaml_rows,
            ".yml": _yaml_rows,
        }
        try:
            rows = readers[suffix](text, str(file))
        except _RowError as exc:
            self.report_at(str(file), exc.line, exc.column, exc.where, exc.message)
            return []
        if not rows:
            self.report(loc, f"dataset {value!r} has no rows")
        if len(rows) > MAX_ROWS:
            self.report(loc, f"dataset {value!r} has {len(rows):,} rows; at most {MAX_ROWS:,}")
            return []
        for row in rows:
            self.check_names(row)
        return rows


class _RowError(ValueError):
    """A dataset file problem, located."""

    def __init__(self, line: int | None, column: int | None, where: str, message: str) -> None:
        super().__init__(message)
        self.line, self.column, self.where, self.message = line, column, where, message


def _csv_rows(text: str, file: str) -> list[Row]:
    """CSV with a header row; every value is a string; `line` is the row's first line, `column` its field."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return []
        for index, name in enumerate(header):
            if not _NAME.match(name):
                raise _RowError(
                    1,
                    index + 1,
                    "header",
                    f"column {name!r} is not a variable name (letters, digits and _, not first a digit)",
                )
            if name in header[:index]:
                raise _RowError(1, index + 1, "header", f"column {name!r} appears twice")
        rows: list[Row] = []
        start = reader.line_num + 1
        for fields in reader:
            line, start = start, reader.line_num + 1
            if not fields:
                continue  # a blank line
            if len(fields) != len(header):
                column = min(len(fields), len(header)) + 1
                message = f"row has {len(fields)} fields; the header has {len(header)} ({', '.join(header)})"
                raise _RowError(line, column, f"row {len(rows) + 1}", message)
            rows.append(Row(len(rows) + 1, dict(zip(header, fields, strict=True)), file, line, 1))
    except csv.Error as exc:
        raise _RowError(reader.line_num, None, "", f"invalid CSV: {exc}") from None
    return rows


def _jsonl_rows(text: str, file: str) -> list[Row]:
    rows: list[Row] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _RowError(line_number, exc.colno, f"row {len(rows) + 1}", f"invalid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            message = f"a row is a JSON object of variables; found {type(value).__name__}"
            raise _RowError(line_number, 1, f"row {len(rows) + 1}", message)
        rows.append(Row(len(rows) + 1, value, file, line_number, 1))
    return rows


def _json_rows(text: str, file: str) -> list[Row]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _RowError(exc.lineno, exc.colno, "", f"invalid JSON: {exc.msg}") from None
    return _list_rows(value, text, file)


def _yaml_rows(text: str, file: str) -> list[Row]:
    problems = prescan(text)
    if problems:
        raise _RowError(problems[0].line, problems[0].column, "", problems[0].message)
    try:
        value = fast_load(text)
    except (yaml.YAMLError, DuplicateKeyError, ValueError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        raise _RowError(line, column, "", f"invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    return _list_rows(value, text, file)


def _list_rows(value: Any, text: str, file: str) -> list[Row]:
    """Rows of a JSON or YAML list of mappings, each located (JSON is YAML: one round-trip read finds them)."""
    if not isinstance(value, list):
        raise _RowError(1, 1, "", f"a dataset file holds a list of rows (mappings); found {type(value).__name__}")
    places = _item_positions(text, len(value))
    rows: list[Row] = []
    for index, item in enumerate(value):
        line, column = places[index] if index < len(places) else (None, None)
        if not isinstance(item, dict):
            raise _RowError(
                line, column, f"row {index + 1}", f"a row is a mapping of variables; found {type(item).__name__}"
            )
        rows.append(Row(index + 1, item, file, line, column))
    return rows


def _item_positions(text: str, count: int) -> list[tuple[int | None, int | None]]:
    """The line and column of each item of a top-level list (none when the reader cannot tell)."""
    try:
        document = YAML(typ="rt").load(text)
    except (RuamelError, ValueError, RecursionError, LookupError, TypeError, AttributeError):
        return []
    if not isinstance(document, CommentedSeq):
        return []
    out: list[tuple[int | None, int | None]] = []
    for index in range(min(count, len(document))):
        line, column = document.lc.item(index)
        item = document[index]
        if isinstance(item, CommentedMap | CommentedSeq):
            line, column = item.lc.line, item.lc.col
        out.append((line + 1, column + 1))
    return out


def _native(expression: Any) -> Callable[[Mapping[str, Any]], Any]:
    def render(variables: Mapping[str, Any]) -> Any:
        value = evaluate(expression, variables)
        if isinstance(value, jinja2.Undefined):
            str(value)  # StrictUndefined raises, naming the missing variable
            raise jinja2.UndefinedError("the value is undefined")
        return value

    return render


def _moved(
    positions: Mapping[Loc, Position], origins: Mapping[int, tuple[int, Row | None]], moved: bool
) -> dict[Loc, Position]:
    """Positions with each expanded case located at its template (a moved single case: at the top level)."""
    by_template: dict[int, list[tuple[Loc, Position]]] = {}
    out: dict[Loc, Position] = {}
    for loc, at in positions.items():
        if moved:
            if loc and loc[0] in _SINGLE_CASE_KEYS:
                by_template.setdefault(0, []).append((loc, at))
            out[loc] = at
        elif len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            by_template.setdefault(loc[1], []).append((loc[2:], at))
        else:
            out[loc] = at
    for new_index, (template, _row) in origins.items():
        if moved:
            case_at = positions.get(("name",), (1, 1))
            out[("cases", new_index)] = case_at
        for rest, at in by_template.get(template, []):
            out[("cases", new_index, *rest)] = at
    return out


def _nearest(loc: Loc, positions: Mapping[Loc, Position]) -> tuple[int | None, int | None]:
    if not positions:
        return (None, None)
    for end in range(len(loc), -1, -1):
        if loc[:end] in positions:
            return positions[loc[:end]]
    return (1, 1)


def _format_loc(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _short(source: str) -> str:
    return repr(source if len(source) <= 60 else source[:57] + "...")
