"""Read `AgentData` records from CSV, JSON Lines or a JSON array, one at a time, in bounded memory.

Every record knows the line it starts on. A record that cannot be read (bad JSON, a wrong number of CSV
fields, a value `AgentData` rejects) comes back as a `Record` with an `error`, so the caller decides
whether it is skipped (and reported) or fatal; only damage that makes the rest of the file unreadable
(a JSON array broken mid-way, a CSV quoting error) raises `DatasetError`.

A JSON array is read incrementally (a block at a time, one element decoded at once), so neither it nor a
CSV or JSON Lines file is ever held in memory whole.
"""

from __future__ import annotations

import csv
import difflib
import json
import os
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError

from proctor.agent_data import FIELDS, AgentData
from proctor.errors import ProctorError

__all__ = [
    "DataFormat",
    "DatasetError",
    "Record",
    "RecordReader",
    "RowError",
    "check_columns",
    "describe_validation",
    "detect_format",
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
                    f"{self.path}: column {column!r} (mapped to {field}) is not in the header; "
                    f"columns: {', '.join(names)}"
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
            positions = {name: index for index, name in enumerate(header)}
            pairs = [(field, positions[column]) for field, column in self._pairs(header)]
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

    def _from_object(self, index: int, line: int, item: Any, pairs: list[tuple[str, str]]) -> Record:
        if not isinstance(item, dict):
            return Record(index, line, None, f"expected a JSON object, found {type(item).__name__}")
        data, error = _validate({field: item[key] for field, key in pairs if key in item})
        return Record(index, line, data, error)

    def _jsonl(self) -> Generator[Record, None, None]:
        pairs = self._pairs(None)
        with self.path.open("rb") as handle:
            self._binary = handle
            index = 0
            for line, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                index += 1
                try:
                    item = json.loads(raw)
                except ValueError as exc:
                    yield Record(index, line, None, f"not valid JSON: {exc}")
                    continue
                yield self._from_object(index, line, item, pairs)

    def _json_array(self) -> Generator[Record, None, None]:
        pairs = self._pairs(None)
        with self.path.open("rb") as raw:
            self._binary = raw
            for index, (line, item) in enumerate(iter_json_array(raw, str(self.path)), 1):
                yield self._from_object(index, line, item, pairs)


# One streaming scanner (strings, escapes, nesting, line numbers) in one loop: split up, it runs slower.
def iter_json_array(raw: IO[bytes], name: str, *, partial: bool = False) -> Iterator[tuple[int, Any]]:  # noqa: C901
    """Yield `(line, element)` for each element of a JSON array, reading a block at a time.

    Args:
        raw: The file, opened in binary mode.
        name: The file's name, for messages.
        partial: Stop quietly at a cut-off end (a file still being written) instead of raising.

    Raises:
        DatasetError: The file is not a JSON array, or it is broken at some line.
    """
    import codecs

    decode = codecs.getincrementaldecoder("utf-8-sig")().decode
    decoder = json.JSONDecoder()
    buffer, pos, line, eof, first = "", 0, 1, False, True

    def more() -> bool:
        nonlocal buffer, eof
        if eof:
            return False
        block = raw.read(max(_BLOCK, len(buffer)))
        buffer += decode(block, final=not block)
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
            if partial:
                return
            raise DatasetError(f"{name}:{line}: the JSON array is not closed (the file is cut off)")
        if buffer[pos] == "]":
            return
        if not first:
            if buffer[pos] != ",":
                raise DatasetError(f"{name}:{line}: expected ',' or ']' between array elements")
            pos += 1
            if not skip_space():
                if partial:
                    return
                raise DatasetError(f"{name}:{line}: the JSON array is not closed (the file is cut off)")
        first = False
        while True:
            try:
                item, end = decoder.raw_decode(buffer, pos)
            except ValueError as exc:
                if len(buffer) - pos > _MAX_RECORD:
                    raise DatasetError(
                        f"{name}:{line}: broken JSON, or an element over {_MAX_RECORD >> 20} MiB: {exc.args[0]}"
                    ) from None
                if more():
                    continue
                if partial:
                    return
                raise DatasetError(f"{name}:{line}: broken JSON: {exc.args[0]}") from None
            if end == len(buffer) and more():
                continue  # a number or literal that ends the block may continue in the next one
            break
        yield line, item
        line += buffer.count("\n", pos, end)
        pos = end
        if pos > _BLOCK:  # drop what has been read, now and then (not per element: that copies the block)
            buffer, pos = buffer[pos:], 0
