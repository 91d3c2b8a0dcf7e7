"""Scored rows on disk: written as they finish (CSV, JSON Lines or a JSON array), read back to resume.

A scored row is `{"row", "line", "user_id", "task_id", "turn_id", "agent_name", "error", "scores":
{scorer: {"status", "score", "raw_score", "reason", "details"}}}`; `error` is set (and `scores` empty)
for an input record that could not be read. CSV flattens `scores` into `<scorer>_status`,
`<scorer>_score`, `<scorer>_raw_score` and `<scorer>_reason` columns (no details).

The writer appends and flushes at most every 0.2 s, never rewriting what it wrote, except once when a
run resumes: the rows worth keeping are copied to a new file that replaces the old one (a cut-off last
row, and rows with errors, are left out, to be scored again). A JSON array is closed when the run ends;
while it runs (or after a crash) it lacks its closing `]`, which the resume reader accepts.

What the reader accepts as a scores file is what the writer writes: every row a JSON object with a
positive integer `row` and `line`, `error` (null or text) and `scores` (an object of objects), or for
CSV a header beginning `row,line` and rows of its width; the one exception is a cut-off last line (no
newline after it, and nothing in it that a row could not begin with). Anything else is not a scores file,
and neither resuming into it nor overwriting it is allowed (`read_scored`, `check_overwrite`): its content
was not written by `proctor score`, and replacing it would lose it.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
import time
from collections.abc import Generator, Iterable
from contextlib import closing
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from proctor.recorded._readers import DatasetError, InvalidJSON, iter_json_array, not_utf8

__all__ = [
    "OutputFormat",
    "ScoreWriter",
    "check_overwrite",
    "check_writable",
    "output_format",
    "read_scored",
    "row_complete",
    "same_file",
    "scores_row_problem",
]

OutputFormat = Literal["csv", "jsonl", "json"]
"""A scored output's format, from its suffix."""

ID_FIELDS = ("user_id", "task_id", "turn_id", "agent_name")
_SCORE_KEYS = ("status", "score", "raw_score", "reason")
_FLUSH_EVERY = 0.2
_ROW_START = '{"row":'
"""How every JSON row the writer writes begins (`row` is its first key)."""
_EXPECTED = "expected a JSON object with row, line, error and scores, as proctor score writes"


def _encoded(row: dict[str, Any]) -> str:
    """`row` as compact JSON text; values JSON has no form for are written as their `str()`.

    orjson (~10x faster than `json.dumps` per row); the standard library where orjson refuses a value (a
    non-string key, an integer beyond 64 bits, a lone surrogate). NaN and infinities become `null`.
    """
    try:
        return orjson.dumps(row, default=str).decode()
    except TypeError:
        return json.dumps(row, ensure_ascii=False, default=str, separators=(",", ":"))


def output_format(path: Path) -> OutputFormat:
    """The output format for a path: `.csv`, `.json` or `.jsonl` (`.ndjson`).

    Raises:
        DatasetError: Another suffix.
    """
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    raise DatasetError(f"--output {path}: use a .csv, .json or .jsonl file")


def csv_columns(scorers: Iterable[str]) -> list[str]:
    """The CSV header for these scorers."""
    columns = ["row", "line", *ID_FIELDS, "error"]
    for name in scorers:
        columns.extend(f"{name}_{key}" for key in _SCORE_KEYS)
    return columns


def row_complete(row: dict[str, Any], scorers: Iterable[str]) -> bool:
    """Whether a scored row can be kept on resume: read, and every scorer present and not an error."""
    if row.get("error"):
        return False
    scores = row.get("scores") or {}
    return all(name in scores and scores[name].get("status") not in (None, "", "error") for name in scorers)


class ScoreWriter:
    """Writes scored rows to one file as they finish.

    Args:
        path: The output file.
        scorers: The scorers, in column order (for CSV).
    """

    def __init__(self, path: Path, scorers: list[str]) -> None:
        self.path = path
        self.format = output_format(path)
        self.scorers = scorers
        self.rows = 0
        self._handle: IO[str] | None = None
        self._csv: Any = None
        self._flushed = time.monotonic()

    def start(self, kept: Iterable[dict[str, Any]] = ()) -> int:
        """Begin the file with the rows `kept` from a previous run; returns how many there were.

        The kept rows go to a temporary file that then replaces `path`, so the old file is intact until
        the new one is complete.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        self._open(temporary, "w")
        if self.format == "json":
            self._write("[")
        elif self.format == "csv":
            self._csv.writerow(csv_columns(self.scorers))
        for row in kept:
            self.write(row)
        kept_rows = self.rows
        self.close(final=False)
        os.replace(temporary, self.path)
        self._open(self.path, "a")
        self.rows = kept_rows
        return kept_rows

    def _open(self, path: Path, mode: str) -> None:
        self._handle = path.open(mode, encoding="utf-8", newline="")
        if self.format == "csv":
            self._csv = csv.writer(self._handle, lineterminator="\n")

    def _write(self, text: str) -> None:
        assert self._handle is not None
        self._handle.write(text)

    def write(self, row: dict[str, Any]) -> None:
        """Append one scored row (flushed within 0.2 s)."""
        if self.format == "jsonl":
            self._write(_encoded(row) + "\n")
        elif self.format == "json":
            self._write(("," if self.rows else "") + "\n" + _encoded(row))
        else:
            self._csv.writerow(_flatten(row, self.scorers))
        self.rows += 1
        now = time.monotonic()
        if now - self._flushed >= _FLUSH_EVERY:
            assert self._handle is not None
            self._handle.flush()
            self._flushed = now

    def close(self, *, final: bool = True) -> None:
        """Finish the file (closing a JSON array when `final`) and close it."""
        if self._handle is None:
            return
        if final and self.format == "json":
            self._write("\n]\n")
        self._handle.close()
        self._handle = None


def _flatten(row: dict[str, Any], scorers: list[str]) -> list[Any]:
    cells: list[Any] = [row["row"], row["line"], *(row.get(key) or "" for key in ID_FIELDS), row.get("error") or ""]
    scores = row.get("scores") or {}
    for name in scorers:
        entry = scores.get(name) or {}
        cells.extend("" if entry.get(key) is None else entry[key] for key in _SCORE_KEYS)
    return cells


def _number(text: str) -> float | None:
    return float(text) if text else None


def _unflatten(cells: dict[str, str], scorers: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "row": int(cells["row"]),
        "line": int(cells["line"]),
        **{key: cells.get(key) or None for key in ID_FIELDS},
        "error": cells.get("error") or None,
        "scores": {},
    }
    for name in scorers:
        status = cells.get(f"{name}_status") or ""
        if status:
            row["scores"][name] = {
                "status": status,
                "score": _number(cells.get(f"{name}_score", "")),
                "raw_score": _number(cells.get(f"{name}_raw_score", "")),
                "reason": cells.get(f"{name}_reason", ""),
            }
    return row


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def scores_row_problem(item: Any) -> str | None:
    """What keeps `item` (a parsed JSON value) from being a row `proctor score` writes; `None` if it is one."""
    if not isinstance(item, dict):
        return f"found a JSON {_json_type(item)}"
    missing = [key for key in ("row", "line", "error", "scores") if key not in item]
    if missing:
        keys = ", ".join(list(item)[:8]) or "none"
        return f"found an object without {', '.join(missing)} (its keys: {keys})"
    if not _whole(item["row"]) or not _whole(item["line"]):
        return f"found row {item['row']!r} and line {item['line']!r} (positive whole numbers expected)"
    if item["error"] is not None and not isinstance(item["error"], str):
        return f"found an error that is a JSON {_json_type(item['error'])} (null or text expected)"
    scores = item["scores"]
    if not isinstance(scores, dict) or not all(isinstance(entry, dict) for entry in scores.values()):
        return "found scores that are not an object of scorer results"
    return None


def _could_start_row(text: str) -> bool:
    """Whether cut-off text (a last line with no newline) could be the start of a row the writer wrote."""
    if "\n" in text:
        return False
    start = "".join(text[:64].split())[: len(_ROW_START)]
    return _ROW_START.startswith(start)


def _snippet(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _not_a_row(path: Path, line: int, problem: str) -> DatasetError:
    return DatasetError(f"{path}:{line}: not a scores row: {_EXPECTED}; {problem}")


def read_scored(path: Path) -> tuple[list[str] | None, Generator[dict[str, Any], None, None]]:
    """Read a scored output back: its scorers (when the file tells) and its rows.

    A cut-off last row (a run killed mid-write) is left out. An empty file has no rows.

    Raises:
        DatasetError: The file is not a scored output: its header (CSV), or the first line that is not a
            scores row, named with its line (raised as the rows are read).
    """
    fmt = output_format(path)
    complete_end = _ends_with_newline(path)
    if path.stat().st_size == 0:
        return None, _no_rows()
    if fmt == "csv":
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                header = next(csv.reader(handle), None)
        except UnicodeDecodeError as exc:
            raise not_utf8(path, exc) from None
        if not header or header[:2] != ["row", "line"]:
            raise DatasetError(
                f"{path}:1: not a scored output of proctor score: its header is {header}, "
                "where one beginning row,line is expected"
            )
        scorers = [column[: -len("_status")] for column in header if column.endswith("_status")]
        return scorers, _csv_rows(path, header, scorers, complete_end)
    if fmt == "jsonl":
        return None, _jsonl_rows(path, complete_end)
    return None, _json_rows(path)


def _no_rows() -> Generator[dict[str, Any], None, None]:
    yield from ()


def _csv_rows(
    path: Path, header: list[str], scorers: list[str], complete_end: bool
) -> Generator[dict[str, Any], None, None]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, strict=True)  # strict: a row cut off inside a quoted reason is an error
        next(reader, None)
        pending: tuple[int, list[str]] | None = None
        previous = reader.line_num
        whole = complete_end  # whether the last row read is whole: a cut-off one has no newline after it
        try:
            for cells in reader:
                line, previous = previous + 1, reader.line_num
                if pending is not None:
                    yield _csv_row(path, *pending, header, scorers)
                pending = (line, cells) if cells else None
        except UnicodeDecodeError as exc:
            raise not_utf8(path, exc) from None
        except csv.Error as exc:
            if "unexpected end of data" not in str(exc):
                raise DatasetError(f"{path}:{previous + 1}: not a scored output of proctor score: {exc}") from None
            whole = True  # the row after `pending` is the one cut off, inside a quoted field (a long reason)
        if pending is not None and whole:
            yield _csv_row(path, *pending, header, scorers)


def _csv_row(path: Path, line: int, cells: list[str], header: list[str], scorers: list[str]) -> dict[str, Any]:
    if len(cells) != len(header):
        raise DatasetError(f"{path}:{line}: not a scores row: it has {len(cells)} fields, the header {len(header)}")
    values = dict(zip(header, cells, strict=True))
    if not all(values[key].isdigit() and int(values[key]) >= 1 for key in ("row", "line")):
        raise DatasetError(
            f"{path}:{line}: not a scores row: row {values['row']!r} and line {values['line']!r} "
            "(positive whole numbers expected)"
        )
    try:
        return _unflatten(values, scorers)
    except ValueError as exc:
        raise DatasetError(f"{path}:{line}: not a scores row: {exc}") from None


def _jsonl_rows(path: Path, complete_end: bool) -> Generator[dict[str, Any], None, None]:
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n") and not complete_end:
                if _could_start_row(raw.decode("utf-8", "replace")):
                    return  # cut off mid-write
                raise _not_a_row(path, line, f"found {_snippet(raw)} (and no newline after it)")
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                raise _not_a_row(path, line, f"found {_snippet(raw)}, which is not JSON") from None
            problem = scores_row_problem(row)
            if problem is not None:
                raise _not_a_row(path, line, problem)
            yield row


def _json_rows(path: Path) -> Generator[dict[str, Any], None, None]:
    with path.open("rb") as handle:
        for line, row in iter_json_array(handle, str(path), cut_off=_could_start_row):
            problem = row.message if isinstance(row, InvalidJSON) else scores_row_problem(row)
            if problem is not None:
                raise _not_a_row(path, line, problem)
            yield row


def check_overwrite(path: Path) -> None:
    """Refuse to replace an existing file that `proctor score` did not write (judged by its first row).

    An empty file, or one whose first row (CSV: header) is a scores row, may be overwritten: scoring again
    without `--resume` replaces an earlier output, as documented. Anything else would be lost.

    Raises:
        DatasetError: `path` exists and is not a scores file (naming its first line that is not a row).
    """
    if not path.is_file():
        return
    try:
        _, rows = read_scored(path)
        with closing(rows):
            next(rows, None)
    except DatasetError as exc:
        raise DatasetError(
            f"--output {path} exists and is not a scores file of proctor score, so it is not overwritten "
            f"({exc}); choose another --output, or delete the file"
        ) from None


def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: the same resolved path, or (both existing) the same inode.

    A symbolic link, `..` or a hard link to the file are all caught.
    """
    if first.resolve() == second.resolve():
        return True
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


def check_writable(path: Path, label: str) -> None:
    """Check before any work that a file can be written at `path` (missing folders are created then).

    Its folder, or the nearest one that exists, must be a folder where a file can be created (tried with a
    temporary file, removed at once), and `path` must not be a folder. An existing file that is not a
    regular one (`/dev/stdout`) is left to the user.

    Raises:
        DatasetError: `path` cannot be written, saying why.
    """
    if path.is_dir():
        raise DatasetError(f"{label} {path}: is a folder; name a file")
    if path.exists() and not path.is_file():
        return
    folder = path.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise DatasetError(f"{label} {path}: {folder} is not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".proctor-write-check-"):
            pass
    except OSError as exc:
        raise DatasetError(f"{label} {path}: cannot create a file in {folder} ({exc.strerror or exc})") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise DatasetError(f"{label} {path}: the file is read-only")
