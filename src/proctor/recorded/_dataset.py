"""`AgentDataset`: load, stream and export `AgentData` records (NovaEval's dataset API).

```python
dataset = AgentDataset()
dataset.ingest_from_csv("runs.csv", agent_task="question")   # field=column for renamed columns
for chunk in dataset.stream_from_csv("big.csv", chunk_size=1000):
    ...                                                        # at most one chunk in memory
dataset.export_to_json("runs.json")
```

A record that cannot be read is reported with its line number: by default it is fatal (`DatasetError`);
with `on_error="skip"` it is left out and added to `dataset.errors` (and logged), never dropped silently.
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Literal

from proctor.agent_data import FIELDS, AgentData
from proctor.recorded._readers import DatasetError, RecordReader, RowError

__all__ = ["AgentDataset", "OnError"]

logger = logging.getLogger("proctor.recorded")

OnError = Literal["raise", "skip"]
"""What a record that cannot be read does: stop with `DatasetError` (`raise`), or be skipped and reported."""

PathLike = str | os.PathLike[str]


class AgentDataset:
    """A list of `AgentData` records, with NovaEval's ingest, stream and export methods.

    Args:
        data: Records to start with.
        on_error: The default for every method's `on_error`: `raise` or `skip`.
    """

    def __init__(self, data: Iterable[AgentData] = (), *, on_error: OnError = "raise") -> None:
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        self.data: list[AgentData] = list(data)
        """The records loaded so far (streaming does not add to it)."""
        self.errors: list[RowError] = []
        """Records skipped with `on_error="skip"`, with their file and line."""
        self.on_error: OnError = on_error

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[AgentData]:
        return iter(self.data)

    def get_data(self) -> list[AgentData]:
        """Return a copy of the records."""
        return list(self.data)

    def get_datapoint(self) -> Iterator[AgentData]:
        """Yield the records one by one."""
        yield from self.data

    def _records(
        self, path: PathLike, fmt: str | None, on_error: OnError | None, columns: dict[str, str]
    ) -> Iterator[AgentData]:
        policy = on_error or self.on_error
        reader = RecordReader(path, fmt, columns)
        with closing(iter(reader)) as records:
            for record in records:
                if record.data is not None:
                    yield record.data
                    continue
                error = RowError(str(reader.path), record.line, record.error or "unreadable record")
                if policy == "raise":
                    raise DatasetError(f"{error} (skip bad records with on_error='skip')")
                self.errors.append(error)
                logger.warning("skipped a bad record: %s", error)

    def ingest_from_csv(self, file_path: PathLike, *, on_error: OnError | None = None, **columns: str) -> None:
        """Add every record of a CSV file (one header row; list and object fields as JSON text).

        Args:
            file_path: The file.
            on_error: `raise` or `skip` for records that cannot be read (default: the dataset's).
            **columns: Columns not named after their field, as `field="column"` (e.g. `agent_task="question"`).

        Raises:
            DatasetError: The file cannot be read, a mapped column is missing, or a bad record with `raise`.
        """
        self.data.extend(self._records(file_path, "csv", on_error, columns))

    def ingest_from_json(self, file_path: PathLike, *, on_error: OnError | None = None, **columns: str) -> None:
        """Add every record of a JSON file: an array of objects, or JSON Lines (one object per line).

        Args:
            file_path: The file.
            on_error: `raise` or `skip` for records that cannot be read (default: the dataset's).
            **columns: Keys not named after their field, as `field="key"`.

        Raises:
            DatasetError: The file cannot be read, a mapped key is in none of its records (or no record has
                a key naming a field), or a bad record with `raise` (a repeated key and `NaN` make a record
                bad).
        """
        self.data.extend(self._records(file_path, _json_kind(file_path), on_error, columns))

    def stream_from_csv(
        self, file_path: PathLike, chunk_size: int = 1000, *, on_error: OnError | None = None, **columns: str
    ) -> Iterator[list[AgentData]]:
        """Yield the records of a CSV file in lists of up to `chunk_size`, holding one list at a time.

        Args:
            file_path: The file.
            chunk_size: Records per chunk.
            on_error: `raise` or `skip` for records that cannot be read (default: the dataset's).
            **columns: Columns not named after their field, as `field="column"`.

        Raises:
            DatasetError: As `ingest_from_csv`, when the bad record is reached.
        """
        return _chunks(self._records(file_path, "csv", on_error, columns), chunk_size)

    def stream_from_json(
        self, file_path: PathLike, chunk_size: int = 1000, *, on_error: OnError | None = None, **columns: str
    ) -> Iterator[list[AgentData]]:
        """Yield the records of a JSON array or JSON Lines file in lists of up to `chunk_size`.

        The array is parsed incrementally, so memory stays bounded whatever the file's size.

        Args:
            file_path: The file.
            chunk_size: Records per chunk.
            on_error: `raise` or `skip` for records that cannot be read (default: the dataset's).
            **columns: Keys not named after their field, as `field="key"`.

        Raises:
            DatasetError: As `ingest_from_json`, when the bad record is reached.
        """
        return _chunks(self._records(file_path, _json_kind(file_path), on_error, columns), chunk_size)

    def stream_from_jsonl(
        self, file_path: PathLike, chunk_size: int = 1000, *, on_error: OnError | None = None, **columns: str
    ) -> Iterator[list[AgentData]]:
        """Yield the records of a JSON Lines file in lists of up to `chunk_size` (see `stream_from_json`)."""
        return _chunks(self._records(file_path, "jsonl", on_error, columns), chunk_size)

    def export_to_csv(self, file_path: PathLike) -> None:
        """Write the records as CSV: one column per field, list and object fields as JSON text."""
        with Path(file_path).open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(FIELDS))
            writer.writeheader()
            for record in self.data:
                writer.writerow(record.to_row())

    def export_to_json(self, file_path: PathLike) -> None:
        """Write the records as a JSON array, or as JSON Lines when the name ends in `.jsonl`/`.ndjson`."""
        path = Path(file_path)
        lines = path.suffix.lower() in (".jsonl", ".ndjson")
        with path.open("w", encoding="utf-8") as handle:
            if lines:
                for record in self.data:
                    handle.write(record.model_dump_json() + "\n")
                return
            handle.write("[")
            for index, record in enumerate(self.data):
                handle.write(("," if index else "") + "\n  " + record.model_dump_json())
            handle.write("\n]\n")


def _json_kind(path: PathLike) -> str | None:
    """`jsonl` for `.jsonl`/`.ndjson` names; otherwise left to the first character (`[`: an array)."""
    return "jsonl" if Path(path).suffix.lower() in (".jsonl", ".ndjson") else _sniff(Path(path))


def _sniff(path: Path) -> str:
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return "json" if head.startswith(b"[") else "jsonl"


def _chunks(records: Iterator[AgentData], size: int) -> Iterator[list[AgentData]]:
    if size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {size}")
    chunk: list[AgentData] = []
    for record in records:
        chunk.append(record)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
