"""Read `AgentData` records from CSV, JSON Lines or a JSON array, one at a time, in bounded memory.

Every record knows the line it starts on. A record that cannot be read (bad JSON, a wrong number of CSV
fields, a value `AgentData` rejects) comes back as a `Record` with an `error`, so the caller decides
whether it is skipped (and reported) or fatal; only damage that makes the rest of the file unreadable
(a JSON array broken mid-way, a CSV quoting error) raises `DatasetError`, as do mistakes that concern the
whole file: a `--map` column (CSV) or key (JSON) no record has, no column or key naming an `AgentData`
field, a column that is read appearing twice in a CSV header.

JSON is read as its standard says: a key repeated in an object, or `NaN`/`Infinity` (not JSON, though
Python's parser accepts them), makes the record bad, never silently "the later value wins" or `"nan"`.

A JSON array is read incrementally (a block at a time, one element decoded at once), so neither it nor a
CSV or JSON Lines file is ever held in memory whole.
"""

from __future__ import annotations

import csv
import difflib
import json
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError

from proctor.agent_data import FIELDS, AgentData
from proctor.errors import ProctorError

__all__ = [
    "DataFormat",
    "DatasetError",
    "InvalidJSON",
    "Record",
    "RecordReader",
    "RowError",
    "check_columns",
    "describe_validation",
    "detect_format",
    "not_utf8",
]

DataFormat = Literal["csv", "jsonl", "json"]
"""An input format: CSV with a header row, JSON Lines, or a JSON array of objects."""

_BLOCK = 1 << 16
_MAX_RECORD = 64 << 20
"""The largest record (CSV field or JSON element) read, in characters: past it a broken quote or bracket
would otherwise pull the rest of the file into memory."""


class DatasetError(ProctorError, ValueError):
    """A data file cannot be read, a mapping is wrong, or a bad record was fatal (exit code 2)."""


@dataclass(frozen=True, slots=True)
class RowError:
    """A record that could not be read: where it is and why."""

    path: str
    """The file."""
    line: int
    """The 1-based line the record starts on."""
    message: str
    """What is wrong with it."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(slots=True)
class Record:
    """One input record: its `AgentData`, or why it could not be read."""

    index: int
    """1-based position among the file's records (header and blank lines not counted)."""
    line: int
    """The 1-based line the record starts on."""
    data: AgentData | None
    """The record; `None` when it could not be read."""
    error: str | None = None
    """Why it could not be read."""


@dataclass(frozen=True, slots=True)
class InvalidJSON:
    """A JSON value that parses but is not valid JSON data: a repeated key, or `NaN`/`Infinity`."""

    message: str
    """What is wrong with it."""
    value: Any = None
    """The value as Python's parser reads it (the later of two equal keys wins, `NaN` is `None`)."""


class _StrictJSON:
    """Decodes JSON as the standard says: a key repeated in an object, or `NaN`/`Infinity`, is a problem.

    Python's parser lets the later of two equal keys win and reads `NaN` as a float; here either leaves
    `problem` set (the first one met), and the value decodes as usual for the caller to reject.
    """

    def __init__(self) -> None:
        self.problem: str | None = None
        self.decoder = json.JSONDecoder(object_pairs_hook=self._object, parse_constant=self._constant)

    def _object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs) and self.problem is None:
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    self.problem = f"the key {key!r} appears twice in one JSON object: which value counts is unclear"
                    break
                seen.add(key)
        return out

    def _constant(self, name: str) -> None:
        if self.problem is None:
            self.problem = f"not valid JSON: {name} (JSON has no NaN or Infinity; write null)"

    def loads(self, raw: bytes) -> Any:
        """One JSON document (a JSON Lines line); an `InvalidJSON` when it has a problem.

        Raises:
            ValueError: The text is not JSON at all.
        """
        self.problem = None
        item = self.decoder.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
        return item if self.problem is None else InvalidJSON(self.problem, item)


def _close_names(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _listed(names: list[str], limit: int = 30) -> str:
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f", ... ({more} more)" if more > 0 else "")


def not_utf8(path: Path, exc: UnicodeDecodeError) -> DatasetError:
    """The error for a text file that is not UTF-8, naming the first line that is not (found on failure only)."""
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return DatasetError(f"{path}:{line}: not UTF-8 text ({exc.reason}); save the file as UTF-8")
    return DatasetError(f"{path}: not UTF-8 text ({exc.reason}); save the file as UTF-8")


def describe_validation(exc: ValidationError) -> str:
    """One line naming every invalid field and why."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "record"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def detect_format(path: Path, fmt: str | None = None) -> DataFormat:
    """Decide a file's format: `fmt` if given, else by suffix (`.csv`, `.jsonl`/`.ndjson`, `.json`).

    A `.json` file whose first character is not `[` is read as JSON Lines.

    Raises:
        DatasetError: The format is unknown or cannot be told from the name.
    """
    if fmt is not None:
        if fmt not in ("csv", "jsonl", "json"):
            raise DatasetError(f"unknown data format {fmt!r}: use csv, jsonl or json")
        return fmt  # type: ignore[return-value]
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
        return "json" if head.startswith(b"[") else "jsonl"
    raise DatasetError(f"{path}: cannot tell the format from the name: use .csv, .jsonl or .json, or give the format")


def check_columns(columns: Mapping[str, str]) -> dict[str, str]:
    """Validate a field -> column mapping (the seed's `agent_task="question"` keywords).

    Raises:
        DatasetError: A key is not an `AgentData` field (the message suggests the closest one).
    """
    for field in columns:
        if field not in FIELDS:
            close = difflib.get_close_matches(field, FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise DatasetError(f"unknown AgentData field {field!r}{hint}; fields: {', '.join(FIELDS)}")
    return dict(columns)


def _validate(values: dict[str, Any]) -> tuple[AgentData | None, str | None]:
    try:
        return AgentData.model_validate(values), None
    except ValidationError as exc:
        return None, describe_validation(exc)


class RecordReader:
    """Iterate a file's records; `fraction` tells how far through the file the reading is.

    Args:
        path: The data file.
        fmt: `csv`, `jsonl` or `json`; default from the name (`detect_format`).
        columns: Which column (CSV) or key (JSON) holds each field, for fields not stored under their
            own name: `{"agent_task": "question"}`.
    """

    def __init__(self, path: str | os.PathLike[str], fmt: str | None = None, columns: Mapping[str, str] | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise DatasetError(f"{self.path}: no such file")
        self.format = detect_format(self.path, fmt)
        self.columns = check_columns(columns or {})
        self.size = self.path.stat().st_size
        self._binary: IO[bytes] | None = None

    @property
    def fraction(self) -> float:
        """How much of the file has been read, 0..1 (by bytes)."""
        if self._binary is None or self.size == 0 or self._binary.closed:
            return 0.0
        return min(1.0, self._binary.tell() / self.size)

    def __iter__(self) -> Generator[Record, None, None]:
        """The records, in file order (close the generator to close the file early)."""
        if self.format == "csv":
            return self._csv()
        if self.format == "jsonl":
            return self._jsonl()
        return self._json_array()

    def _pairs(self, names: list[str] | None) -> list[tuple[str, str]]:
        """(field, source name) for every field to read; with a CSV header, checks mapped columns exist."""
        pairs = [(field, self.columns.get(field, field)) for field in FIELDS]
        if names is None:
            return pairs
        present = set(names)
        for field, column in self.columns.items():
            if column not in present:
                raise DatasetError(
                    f"{self.path}: column {column!r} (mapped to {field}) is not in the header"
                    f"{_close_names(column, names)}; columns: {_listed(names)}"
                )
        found = [(field, column) for field, column in pairs if column in present]
        if not found:
            raise DatasetError(
                f"{self.path}: no column names an AgentData field; columns: {', '.join(names)}. "
                "Map them with --map COLUMN=FIELD (Python: agent_task='question')"
            )
        return found

    def _csv(self) -> Generator[Record, None, None]:
        if csv.field_size_limit() < _MAX_RECORD:  # traces and tool lists outgrow the 128 KiB default
            csv.field_size_limit(_MAX_RECORD)
        with self.path.open(encoding="utf-8-sig", newline="") as handle:
            self._binary = handle.buffer  # type: ignore[assignment]  # a BufferedReader: has tell()
            dialect: type[csv.Dialect] = csv.excel_tab if self.path.suffix.lower() == ".tsv" else csv.excel
            reader = csv.reader(handle, dialect)
            try:
                header = next(reader)
            except StopIteration:
                raise DatasetError(f"{self.path}: the file is empty (a header row is needed)") from None
            except UnicodeDecodeError as exc:
                raise not_utf8(self.path, exc) from None
            positions = {name: index for index, name in enumerate(header)}
            named = self._pairs(header)
            self._check_header(header, named, reader.line_num)
            pairs = [(field, positions[column]) for field, column in named]
            width, index, previous = len(header), 0, reader.line_num
            try:
                for cells in reader:
                    line, previous = previous + 1, reader.line_num
                    if not cells:
                        continue
                    index += 1
                    if len(cells) != width:
                        message = f"the row has {len(cells)} fields, the header has {width}"
                        yield Record(index, line, None, message)
                        continue
                    data, error = _validate({field: cells[at] for field, at in pairs if cells[at]})
                    yield Record(index, line, data, error)
            except csv.Error as exc:
                raise DatasetError(f"{self.path}:{reader.line_num}: unreadable CSV: {exc}") from None
            except UnicodeDecodeError as exc:
                raise not_utf8(self.path, exc) from None

    def _check_header(self, header: list[str], named: list[tuple[str, str]], line: int) -> None:
        """A column that is read must appear once: with two, which one holds the field is a guess.

        Columns nothing reads may repeat (spreadsheets export several unnamed ones).
        """
        for field, column in named:
            where = [str(at) for at, name in enumerate(header, 1) if name == column]
            if len(where) > 1:
                mapped = "" if column == field else f" (mapped to {field})"
                raise DatasetError(
                    f"{self.path}:{line}: column {column!r}{mapped} appears {len(where)} times in the header "
                    f"(columns {', '.join(where)}); rename or remove all but one"
                )

    def _objects(self) -> Generator[Any, None, None]:
        """Every record of a JSON Lines or JSON array file as parsed, unvalidated (unparsable lines skipped)."""
        if self.format == "jsonl":
            with self.path.open("rb") as handle:
                for raw in handle:
                    if raw.strip():
                        try:
                            yield json.loads(raw)
                        except ValueError:
                            continue
            return
        with self.path.open("rb") as handle:
            for _line, item in iter_json_array(handle, str(self.path)):
                yield item.value if isinstance(item, InvalidJSON) else item

    def _check_keys(self, pairs: list[tuple[str, str]]) -> None:
        """In a JSON file, some record must have each `--map` key, and some record a key that is read.

        Streaming: this stops at the first record that settles both (usually the first record), so a file is
        read through only when a key is in none of its records, which is an error. With no record at all it
        says nothing (the caller reports an empty file).

        Raises:
            DatasetError: A mapped key no record has (the keys the records have, the closest one), or no
                record with a key that names an `AgentData` field.
        """
        unseen = dict.fromkeys(self.columns.values())
        read = {key for _, key in pairs}
        keys: dict[str, None] = {}
        records, feeds = 0, False
        with closing(self._objects()) as items:
            for item in items:
                records += 1
                if not isinstance(item, dict):
                    continue
                if len(keys) < 1000:
                    keys.update(dict.fromkeys(item))
                for key in [key for key in unseen if key in item]:
                    del unseen[key]
                feeds = feeds or not read.isdisjoint(item)
                if feeds and not unseen:
                    return
        if not records:
            return
        names = list(keys)
        for key in unseen:
            field = next(field for field, column in self.columns.items() if column == key)
            raise DatasetError(
                f"{self.path}: key {key!r} (mapped to {field}) is in none of its {records} records"
                f"{_close_names(key, names)}; keys: {_listed(names) or '(none)'}"
            )
        raise DatasetError(
            f"{self.path}: none of its {records} records is an object with a key that names an AgentData field; keys: "
            f"{_listed(names) or '(none)'}. Map them with --map KEY=FIELD (Python: agent_task='question')"
        )

    def describe_empty(self) -> str:
        """Why a file that yielded no record has none (for "no records to score")."""
        if self.format == "csv":
            return "it has a header row and no data rows"
        if self.format == "json":
            return "its JSON array is empty"
        return "the file is empty" if self.size == 0 else "it has only blank lines"

    def _from_object(self, index: int, line: int, item: Any, pairs: list[tuple[str, str]]) -> Record:
        if isinstance(item, InvalidJSON):
            return Record(index, line, None, item.message)
        if not isinstance(item, dict):
            return Record(index, line, None, f"expected a JSON object, found {type(item).__name__}")
        data, error = _validate({field: item[key] for field, key in pairs if key in item})
        return Record(index, line, data, error)

    def _jsonl(self) -> Generator[Record, None, None]:
        pairs = self._pairs(None)
        self._check_keys(pairs)
        strict = _StrictJSON()
        with self.path.open("rb") as handle:
            self._binary = handle
            index = 0
            for line, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                index += 1
                try:
                    item = strict.loads(raw)
                except ValueError as exc:
                    yield Record(index, line, None, f"not valid JSON: {exc}")
                    continue
                yield self._from_object(index, line, item, pairs)

    def _json_array(self) -> Generator[Record, None, None]:
        pairs = self._pairs(None)
        self._check_keys(pairs)
        with self.path.open("rb") as raw:
            self._binary = raw
            for index, (line, item) in enumerate(iter_json_array(raw, str(self.path)), 1):
                yield self._from_object(index, line, item, pairs)


# One streaming scanner (strings, escapes, nesting, line numbers) in one loop: split up, it runs slower.
def iter_json_array(  # noqa: C901
    raw: IO[bytes], name: str, *, cut_off: Callable[[str], bool] | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield `(line, element)` for each element of a JSON array, reading a block at a time.

    An element with a repeated key or `NaN`/`Infinity` comes as an `InvalidJSON` (the caller decides).

    Args:
        raw: The file, opened in binary mode.
        name: The file's name, for messages.
        cut_off: For a file still being written (or whose writer was killed): at an end cut off mid-way,
            called with the unparsed rest (`""` when the array just lacks its `]`); true stops quietly,
            false raises as without it.

    Raises:
        DatasetError: The file is not a JSON array, or it is broken at some line.
    """
    import codecs

    decode = codecs.getincrementaldecoder("utf-8-sig")().decode
    strict = _StrictJSON()
    decoder = strict.decoder
    buffer, pos, line, eof, first = "", 0, 1, False, True

    def more() -> bool:
        nonlocal buffer, eof
        if eof:
            return False
        block = raw.read(max(_BLOCK, len(buffer)))
        try:
            buffer += decode(block, final=not block)
        except UnicodeDecodeError as exc:
            at = line + buffer.count("\n", pos) + block[: exc.start].count(b"\n")
            raise DatasetError(f"{name}:{at}: not UTF-8 text ({exc.reason}); save the file as UTF-8") from None
        eof = not block
        return True

    def skip_space() -> bool:
        """Advance past whitespace; False at the end of the input."""
        nonlocal pos, line
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n":
                line += buffer[pos] == "\n"
                pos += 1
            if pos < len(buffer):
                return True
            if not more():
                return False

    if not skip_space() or buffer[pos] != "[":
        raise DatasetError(f"{name}:{line}: expected a JSON array ('[')")
    pos += 1
    while True:
        if not skip_space():
            if cut_off is not None and cut_off(""):
                return
            raise DatasetError(f"{name}:{line}: the JSON array is not closed (the file is cut off)")
        if buffer[pos] == "]":
            return
        if not first:
            if buffer[pos] != ",":
                raise DatasetError(f"{name}:{line}: expected ',' or ']' between array elements")
            pos += 1
            if not skip_space():
                if cut_off is not None and cut_off(""):
                    return
                raise DatasetError(f"{name}:{line}: the JSON array is not closed (the file is cut off)")
        first = False
        while True:
            strict.problem = None
            try:
                item, end = decoder.raw_decode(buffer, pos)
            except ValueError as exc:
                if len(buffer) - pos > _MAX_RECORD:
                    raise DatasetError(
                        f"{name}:{line}: broken JSON, or an element over {_MAX_RECORD >> 20} MiB: {exc.args[0]}"
                    ) from None
                if more():
                    continue
                if cut_off is not None and cut_off(buffer[pos:]):
                    return
                raise DatasetError(f"{name}:{line}: broken JSON: {exc.args[0]}") from None
            if end == len(buffer) and more():
                continue  # a number or literal that ends the block may continue in the next one
            break
        yield line, (item if strict.problem is None else InvalidJSON(strict.problem, item))
        line += buffer.count("\n", pos, end)
        pos = end
        if pos > _BLOCK:  # drop what has been read, now and then (not per element: that copies the block)
            buffer, pos = buffer[pos:], 0
