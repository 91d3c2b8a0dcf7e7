"""Scored rows on disk: written as they finish (CSV, JSON Lines or a JSON array), read back to resume.

A scored row is `{"row", "line", "user_id", "task_id", "turn_id", "agent_name", "error", "scores":
{scorer: {"status", "score", "raw_score", "reason", "details"}}}`; `error` is set (and `scores` empty)
for an input record that could not be read. CSV flattens `scores` into `<scorer>_status`,
`<scorer>_score`, `<scorer>_raw_score` and `<scorer>_reason` columns (no details).

The writer appends and flushes at most every 0.2 s, never rewriting what it wrote, except once when a
run resumes: the rows worth keeping are copied to a new file that replaces the old one (a cut-off last
row, and rows with errors, are left out, to be scored again). A JSON array is closed when the run ends;
while it runs (or after a crash) it lacks its closing `]`, which the resume reader accepts.
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from proctor.recorded._readers import DatasetError, iter_json_array

__all__ = ["OutputFormat", "ScoreWriter", "output_format", "read_scored", "row_complete"]

OutputFormat = Literal["csv", "jsonl", "json"]
"""A scored output's format, from its suffix."""

ID_FIELDS = ("user_id", "task_id", "turn_id", "agent_name")
_SCORE_KEYS = ("status", "score", "raw_score", "reason")
_FLUSH_EVERY = 0.2


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


def read_scored(path: Path) -> tuple[list[str] | None, Iterator[dict[str, Any]]]:
    """Read a scored output back: its scorers (when the file tells) and its rows.

    A cut-off last row (a run killed mid-write) is left out.

    Raises:
        DatasetError: The file is not a scored output.
    """
    fmt = output_format(path)
    complete_end = _ends_with_newline(path)
    if fmt == "csv":
        with path.open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), None)
        if not header or header[:2] != ["row", "line"]:
            raise DatasetError(f"{path}: not a scored output of proctor score (its header is {header})")
        scorers = [column[: -len("_status")] for column in header if column.endswith("_status")]
        return scorers, _csv_rows(path, scorers, complete_end)
    if fmt == "jsonl":
        return None, _jsonl_rows(path, complete_end)
    return None, _json_rows(path)


def _csv_rows(path: Path, scorers: list[str], complete_end: bool) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        pending: dict[str, str] | None = None
        for cells in reader:
            if pending is not None:
                yield _unflatten(pending, scorers)
            pending = cells if None not in cells and None not in cells.values() else None
        if pending is not None and complete_end:
            yield _unflatten(pending, scorers)


def _jsonl_rows(path: Path, complete_end: bool) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n") and not complete_end:
                return  # cut off mid-write
            if raw.strip():
                try:
                    row = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(row, dict) and "row" in row:
                    yield row


def _json_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        for _line, row in iter_json_array(handle, str(path), partial=True):
            if isinstance(row, dict) and "row" in row:
                yield row
