"""The history store: every run indexed in an embedded SQLite database.

The results JSON stays the interchange format; the store keeps each run's figures, its cases and its
trials' outcomes, so `proctor runs`, `proctor report` (choosing runs) and `proctor compare` never
re-parse every results file. There is one store per project: `.proctor/history.db` at the project root
(`proctor.suite.default_store_path`: the directory of `proctor.yaml`, else of `.git`; `PROCTOR_HOME`
moves it). Several processes may write it at once (WAL journal, busy timeout).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import asdict, fields
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from proctor.errors import ConfigError, SuiteError
from proctor.results._model import RunResult, round_figure
from proctor.results._summary import (
    CaseParts,
    RunSummary,
    StoredCase,
    case_identity,
    case_parts,
    known_cost,
    load_run,
)
from proctor.suite import default_store_path

__all__ = [
    "HISTORY_FILE",
    "HistoryStore",
    "default_history_path",
    "index_run",
    "resolve_history_path",
]

HISTORY_FILE = Path(".proctor") / "history.db"
"""Where the store lives, relative to the project root."""

SCHEMA_VERSION = 2
"""`PRAGMA user_version` of the store's tables."""

_log = logging.getLogger("proctor.history")

_RUN_FIELDS = [f.name for f in fields(RunSummary)]
"""The `runs` columns that hold a `RunSummary`, in its field order."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    model TEXT,
    target TEXT,
    status TEXT,
    started_at TEXT,
    finished_at TEXT,
    cases INTEGER,
    passed INTEGER,
    failed INTEGER,
    errored INTEGER,
    pass_rate REAL,
    trials_run INTEGER,
    trials_passed INTEGER,
    trials_failed INTEGER,
    trials_errored INTEGER,
    avg_score REAL,
    p50_latency_ms REAL,
    tokens INTEGER,
    cost_usd REAL,
    rescored_from TEXT,
    run_group TEXT,
    path TEXT NOT NULL,
    results_version INTEGER,
    file_mtime_ns INTEGER,
    file_size INTEGER,
    indexed_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_path ON runs(path);
CREATE INDEX IF NOT EXISTS runs_run_id ON runs(run_id);
CREATE INDEX IF NOT EXISTS runs_model ON runs(model, started_at);
CREATE TABLE IF NOT EXISTS cases (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_key TEXT NOT NULL,
    name TEXT NOT NULL,
    suite TEXT,
    file TEXT,
    tags TEXT,
    status TEXT,
    pass_rate REAL,
    avg_score REAL,
    p50_latency_ms REAL,
    tokens INTEGER,
    cost_usd REAL,
    PRIMARY KEY (run, case_key)
);
CREATE TABLE IF NOT EXISTS trials (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_key TEXT NOT NULL,
    trial INTEGER NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    duration_ms REAL,
    tokens INTEGER,
    cost_usd REAL,
    PRIMARY KEY (run, case_key, trial)
);
"""


def default_history_path(results_dir: Path) -> Path:
    """The store of the project a results directory belongs to (its suites' directory's project).

    The run is written when this is asked, so a project config that cannot be read does not fail it: the
    store then goes beside the suites (`<results_dir>/../.proctor/history.db`), with a warning.
    """
    try:
        return default_store_path(results_dir.parent)
    except SuiteError as exc:
        _log.warning("the run store of %s is beside the suites: %s", results_dir, exc)
        return results_dir.parent / HISTORY_FILE


def resolve_history_path(value: Path | None) -> Path:
    """Where the store is: a `.db` file as given, `<dir>/.proctor/history.db` for a directory, else the project's.

    The project's store is that of the working directory (`proctor.suite.default_store_path`).

    Raises:
        SuiteError: The project's `proctor.yaml` is invalid.
    """
    if value is None:
        return default_store_path()
    if value.is_dir():
        return value / HISTORY_FILE
    return value


def _create_store(path: Path) -> None:
    """Create an empty store at `path`, unless another process creates one first.

    SQLite's own creation (the switch to WAL and the schema's commit, each through a synced rollback
    journal) waited ~24 ms on fdatasync here, at every run that starts without a store (a fresh CI
    checkout). The store is built in a temporary file without syncs (it holds nothing yet), made durable
    by one fsync, then hard-linked into place: a crash leaves no store or a whole one, and a store another
    process made meanwhile is kept, never replaced. Where hard links fail, SQLite creates it as before.
    """
    # a name no one else uses; SQLite creates the file, with the mode it gives a store (not mkstemp's 0600)
    name = str(path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    try:
        db = sqlite3.connect(name)
        try:
            db.execute("PRAGMA synchronous=OFF")
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                db.executescript(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        finally:
            db.close()  # the last connection: SQLite merges and deletes the temporary WAL
        with open(name, "rb") as file:
            os.fsync(file.fileno())
        with contextlib.suppress(OSError):  # FileExistsError: another process's store, kept
            os.link(name, path)
    except (sqlite3.Error, OSError) as exc:  # e.g. a full disk at the fsync: SQLite then tries, and reports
        _log.debug("history store not pre-created (%s); SQLite creates it", exc)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


class HistoryStore:
    """The SQLite history of runs.

    Use as a context manager, or call `close()`:

    ```python
    with HistoryStore(Path("evals/.proctor/history.db")) as store:
        for run in store.runs(limit=10):
            print(run.run_id, run.pass_rate)
    ```

    Args:
        path: The database file (created with its directory when missing, unless `create` is false).
        create: Whether a missing store may be created.

    Raises:
        ConfigError: The store is missing and `create` is false, or the file is not a Proctor history.
    """

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        if not path.exists():
            if not create:
                raise ConfigError(
                    f"no run history at {path}: run `proctor run` first, pass --history DIR or FILE, "
                    "or name results files instead of run ids"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            _create_store(path)
        try:
            self._db = sqlite3.connect(path, timeout=30)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the run history {path}: {exc}") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL stays consistent; the results JSON is the record
            self._db.execute("PRAGMA foreign_keys=ON")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise ConfigError(f"{path} was written by a newer Proctor (history schema {version}): upgrade")
            if version < SCHEMA_VERSION:
                with self._db:
                    if version == 1:  # version 2 added the run's group (a matrix)
                        self._db.execute("ALTER TABLE runs ADD COLUMN run_group TEXT")
                    self._db.executescript(_SCHEMA)
                    self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ConfigError(f"{path} is not a Proctor run history ({exc})") from None
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # writing

    def add(self, path: Path, data: dict[str, Any] | RunResult | None = None) -> RunSummary:
        """Index a run's results file (re-indexing replaces what the store had for that file).

        Args:
            path: The results JSON.
            data: Its content, when the caller has it already (no re-read): the JSON, or the `RunResult`
                it was written from (read through `RunResult.parts`, without building the JSON).
        """
        if data is None:
            data = load_run(path)
        resolved = path.resolve()
        if isinstance(data, RunResult) and (rows := _result_rows(data)) is not None:
            # a run being recorded: its rows straight from its cases, no JSON parts built
            head = data.head_fields()
            statuses, scores, latencies, trial_count, case_rows, trial_rows = rows
            summary = RunSummary.from_figures(head, statuses, scores, latencies, trial_count, resolved)
        else:
            head, cases = data.parts() if isinstance(data, RunResult) else (data, case_parts(data))
            summary = RunSummary.from_parts(head, cases, resolved)
            case_rows, trial_rows = _rows(cases)
        stat = resolved.stat()
        row = asdict(summary)
        columns = [*_RUN_FIELDS, "results_version", "file_mtime_ns", "file_size", "indexed_at"]
        values = [
            *(row[name] for name in _RUN_FIELDS),
            head.get("version"),
            stat.st_mtime_ns,
            stat.st_size,
            datetime.now(UTC).isoformat(timespec="seconds"),
        ]
        with self._db:
            self._db.execute("DELETE FROM runs WHERE path = ?", (str(resolved),))
            cursor = self._db.execute(
                f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values
            )
            run = int(cursor.lastrowid or 0)  # an integer, written into the statements: not bound once a row
            # Plain INSERT (~20 % less SQLite time than INSERT OR REPLACE): the run is new, and the rows
            # already hold only the last of two rows with one key, as REPLACE would have.
            _insert(self._db, "cases", f"({run},?,?,?,?,?,?,{_N},{_N},{_N},?,{_N})", case_rows)
            _insert(self._db, "trials", f"({run},?,?,?,{_N},{_N},?,{_N})", trial_rows)
        return summary

    def scan(self, directory: Path) -> int:
        """Index every results file under `directory` that is new or changed since it was indexed.

        Journals and files that are not Proctor results are passed over. Returns how many were indexed.
        """
        known = {
            path: (mtime, size)
            for path, mtime, size in self._db.execute("SELECT path, file_mtime_ns, file_size FROM runs")
        }
        count = 0
        for path in sorted(directory.rglob("*.json")):
            resolved = path.resolve()
            stat = resolved.stat()
            if known.get(str(resolved)) == (stat.st_mtime_ns, stat.st_size):
                continue
            try:
                data = load_run(resolved)
            except ConfigError:
                continue
            self.add(resolved, data)
            count += 1
        return count

    def remove_missing(self) -> int:
        """Forget runs whose results file no longer exists; returns how many."""
        gone = [(rid,) for rid, path in self._db.execute("SELECT id, path FROM runs") if not os.path.exists(path)]
        with self._db:
            self._db.executemany("DELETE FROM runs WHERE id = ?", gone)
        return len(gone)

    # reading

    def _select(self, where: str = "", params: tuple[Any, ...] = (), limit: int | None = None) -> list[RunSummary]:
        sql = f"SELECT {', '.join(_RUN_FIELDS)} FROM runs {where} ORDER BY started_at DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        out = []
        for row in self._db.execute(sql, params):
            out.append(RunSummary(**dict(zip(_RUN_FIELDS, row, strict=True))))
        return out

    def runs(self, *, model: str | None = None, limit: int | None = None) -> list[RunSummary]:
        """Runs, newest first; only `model`'s when given."""
        if model is not None:
            return self._select("WHERE model = ?", (model,), limit)
        return self._select(limit=limit)

    def latest_per_model(self) -> list[RunSummary]:
        """The newest run of each model (runs without a model count as one model), oldest first.

        Runs started in the same second keep the order in which they were indexed.
        """
        latest: dict[str | None, RunSummary] = {}
        for run in self._select():  # newest first
            latest.setdefault(run.model, run)
        return list(reversed(latest.values()))

    def comparable_latest(self) -> tuple[list[RunSummary], list[str]]:
        """The newest run of each model, preferring runs that cover the same cases; and what was chosen why.

        When the newest runs cover different cases (one was a `--case` or single-file run), each model whose
        newest run misses cases the others ran takes instead its newest run that covers all of them, when it
        has one. Oldest first, as `latest_per_model`. The notes say which run replaced which.
        """
        latest = self.latest_per_model()
        covered = {run.path: self.case_keys(run) for run in latest}
        union = frozenset().union(*covered.values()) if covered else frozenset()
        if all(keys == union for keys in covered.values()):
            return latest, []
        chosen: list[RunSummary] = []
        notes: list[str] = []
        for run in latest:
            if covered[run.path] >= union:
                chosen.append(run)
                continue
            wider = next((r for r in self.runs(model=run.model) if self.case_keys(r) >= union), None)
            if run.model is None or wider is None:
                chosen.append(run)
                continue
            chosen.append(wider)
            notes.append(
                f"{run.model}: its newest run {run.run_id} covers {_cases(len(covered[run.path]))} of {len(union)}; "
                f"reporting its newest run that covers them all, {wider.run_id} (name run ids to choose)"
            )
        return chosen, notes

    def case_keys(self, run: RunSummary) -> frozenset[str]:
        """The cases a stored run covered (their keys, `<file>::<name>`)."""
        return frozenset(
            key
            for (key,) in self._db.execute(
                "SELECT case_key FROM cases WHERE run = (SELECT id FROM runs WHERE path = ?)", (run.path,)
            )
        )

    def get(self, ref: str) -> RunSummary:
        """Find a run by id, by results file path, or by a unique prefix of its id.

        Raises:
            ConfigError: No run matches, or several do (their paths are listed).
        """
        candidate = Path(ref)
        if candidate.suffix == ".json" and candidate.exists():
            found = self._select("WHERE path = ?", (str(candidate.resolve()),))
            if found:
                return found[0]
        matches = self._select("WHERE run_id = ?", (ref,))
        if not matches:
            escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            matches = self._select("WHERE run_id LIKE ? ESCAPE '\\'", (escaped + "%",))
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ConfigError(f"no run {ref!r} in the history {self.path} (see `proctor runs`)")
        listing = "; ".join(f"{m.run_id} ({m.path})" for m in matches[:5])
        raise ConfigError(f"{ref!r} matches {len(matches)} runs: {listing}; give the results file or the full id")

    def cases(self, run: RunSummary) -> list[StoredCase]:
        """A stored run's cases with their trials' outcomes, in the run's order."""
        rows = self._db.execute("SELECT id FROM runs WHERE path = ?", (run.path,)).fetchone()
        if rows is None:
            raise ConfigError(f"run {run.run_id} is not in the history {self.path}")
        ident = rows[0]
        trials: dict[str, dict[int, tuple[str, float | None]]] = {}
        for key, number, status, score in self._db.execute(
            "SELECT case_key, trial, status, score FROM trials WHERE run = ? ORDER BY rowid", (ident,)
        ):
            trials.setdefault(key, {})[number] = (status, score)
        return [
            StoredCase(key, name, suite or "", json.loads(tags or "[]"), status or "error", trials.get(key, {}))
            for key, name, suite, tags, status in self._db.execute(
                "SELECT case_key, name, suite, tags, status FROM cases WHERE run = ? ORDER BY rowid", (ident,)
            )
        ]

    def __iter__(self) -> Iterator[RunSummary]:
        return iter(self._select())


_NULL = ""
"""What a row holds for a `None` in a REAL column (pass rate, score, latency, duration, cost): `nullif(?, '')`
(`_N`) stores it as NULL. Binding `None` itself costs the sqlite3 module ~2,000 instructions (it looks for an
adapter of `NoneType`, formatting an `AttributeError` on the way), a `str` ~100; these columns never hold text."""

_N = "nullif(?,'')"


_ROWS_PER_STATEMENT = 32
"""Rows one `INSERT` statement takes (`_insert`): as few instructions a row as longer statements (measured up to
1,000 rows: within 1 %), and a small prepared statement (SQLite keeps it: 90 rows cost ~0.8 MB of peak RSS)."""


def _insert(db: sqlite3.Connection, table: str, row: str, rows: list[tuple[Any, ...]]) -> None:
    """`db.executemany(f"INSERT INTO {table} VALUES {row}", rows)`, several rows a statement: the same rows, in order.

    One `INSERT ... VALUES (...),(...),...` per `_ROWS_PER_STATEMENT` rows (`row` has one `?` a value; SQLite
    takes up to 999 in one statement): a statement run per row costs the sqlite3 module and SQLite ~3,500
    instructions more a row (W2: 10,000 rows) than its share of a longer one.
    """
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        chunk = rows[start : start + _ROWS_PER_STATEMENT]
        db.execute(f"INSERT INTO {table} VALUES {','.join([row] * len(chunk))}", [value for r in chunk for value in r])


def _rows(cases: Sequence[CaseParts]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A run's `cases` and `trials` rows without the run's id (the statement has it; `_CASE_ROW`, `_TRIAL_ROW`).

    Of two rows with one key the last, placed last (as REPLACE does).
    """
    case_rows: dict[str, tuple[Any, ...]] = {}
    trial_rows: dict[tuple[str, Any], tuple[Any, ...]] = {}
    encoded: dict[tuple[str, ...], str] = {}  # cases mostly share their tags: encode each set once
    for case, trials in cases:
        key = case_identity(case)
        tags = tuple(case.get("tags") or ())
        if tags not in encoded:
            encoded[tags] = json.dumps(tags)
        case_rows.pop(key, None)  # a key seen again: its last row, placed last
        case_rows[key] = (
            key,
            case["name"],
            case.get("suite"),
            case.get("file"),
            encoded[tags],
            case.get("status"),
            _real(case.get("pass_rate")),
            _real(case.get("avg_score")),
            _real((case.get("latency_ms") or {}).get("p50")),
            (case.get("tokens") or {}).get("total", 0),
            _real(known_cost(case.get("costs"))),
        )
        for number, status, score, duration_ms, tokens, costs, _ in trials:
            trial_rows.pop((key, number), None)
            row = (key, number, status, _real(score), _real(duration_ms), tokens, _real(known_cost(costs)))
            trial_rows[key, number] = row
    return list(case_rows.values()), list(trial_rows.values())


_ResultRows = tuple[list[str], list[float], list[float], int, list[tuple[Any, ...]], list[tuple[Any, ...]]]
"""What `_result_rows` gives: the cases' statuses, their average scores (those not `None`), every reply
latency, the number of trials, then the `cases` and `trials` rows (as `_rows` makes them)."""


def _result_rows(result: RunResult) -> _ResultRows | None:
    """What `HistoryStore.add` reads of a run being recorded, in one pass over its cases, from its JSON fields.

    The values `_rows` and `RunSummary.from_parts` read from the JSON: each case's fields before its
    trials (`CaseResult.aggregate_fields`, made for the results file already) and its trials' `figures`.
    `None` when two cases share a key or a case has two trials with one number: the general path then
    keeps the last of them, as it does for a file.
    """
    k = result.k
    statuses: list[str] = []
    scores: list[float] = []
    latencies: list[float] = []
    case_rows: list[tuple[Any, ...]] = []
    trial_rows: list[tuple[Any, ...]] = []
    encoded: dict[tuple[str, ...], str] = {}
    keys = set()
    for case in result.cases:  # once per case and trial: no call that is not needed (`_real` written out)
        fields = case.aggregate_fields(k)
        name, file = case.name, case.file
        key = f"{file}::{name}"
        keys.add(key)
        tags = tuple(case.tags)
        tags_json = encoded.get(tags)
        if tags_json is None:
            tags_json = encoded[tags] = json.dumps(tags)
        status, avg_score, costs = fields["status"], fields["avg_score"], fields["costs"]
        pass_rate, p50 = fields["pass_rate"], fields["latency_ms"]["p50"]
        cost = known_cost(costs)
        cost_value = _NULL if cost is None else cost
        statuses.append(status)
        if avg_score is not None:
            scores.append(avg_score)
        case_rows.append(
            (
                key,
                name,
                case.suite,
                file,
                tags_json,
                status,
                _NULL if pass_rate is None else pass_rate,
                _NULL if avg_score is None else avg_score,
                _NULL if p50 is None else p50,
                fields["tokens"]["total"],
                cost_value,
            )
        )
        trials = case.trials
        if len(trials) > 1:
            trials = case.ordered_trials()
            if len({t.trial for t in trials}) < len(trials):
                return None
        for trial in trials:  # `trial.figures()`, read in place
            score, usage, own = trial.score, trial.usage, trial.costs()
            duration, replies = trial.rounded()
            trial_rows.append(
                (
                    key,
                    trial.trial,
                    trial.status,
                    _NULL if score is None else round_figure(score),
                    _NULL if duration is None else duration,
                    usage.prompt_tokens + usage.completion_tokens,
                    # a one-trial case shares its trial's costs dict (`_aggregate._one_trial_costs`): summed once
                    cost_value if own is costs else _real(known_cost(own)),
                )
            )
            latencies += replies
    if len(keys) < len(case_rows):
        return None
    return statuses, scores, latencies, len(trial_rows), case_rows, trial_rows


def _real(value: Any) -> Any:
    """A REAL column's value as a row holds it: `_NULL` for `None`."""
    return _NULL if value is None else value


def _cases(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"


def index_run(history: Path, results_file: Path, data: dict[str, Any] | RunResult) -> bool:
    """Index a finished run in the store at `history`; a store that cannot be written is logged, not raised.

    The results file is already written when this runs, so a locked or read-only store must not turn a
    complete run into a failure. `data` is the file's JSON or the `RunResult` it was written from.
    Returns whether the run was indexed.
    """
    try:
        with HistoryStore(history) as store:
            store.add(results_file, data)
    except (ConfigError, OSError, sqlite3.Error) as exc:
        run_id = data.run_id if isinstance(data, RunResult) else data.get("run_id")
        _log.warning("run %s not added to the history %s: %s", run_id, history, exc)
        return False
    return True
