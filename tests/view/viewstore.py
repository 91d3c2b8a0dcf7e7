"""The viewer tests' run store: the report fixtures' two runs, an older run, and a run full of hostile text.

The runs are Proctor's own results files (written by `proctor.results`), indexed by the real history store.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.checks import CheckResult
from proctor.results import CaseResult, HistoryStore, RunResult, TrialResult, write_json
from proctor.transcript import Message, ToolCall

DATA = Path(__file__).parents[1] / "results" / "data"
GPT = "gpt-4-1-mini_20261101T090000Z"
CLAUDE = "claude-sonnet-4_20261102T090000Z"
OLDER = "gpt-4-1-mini_20261025T090000Z"
HOSTILE = "hostile_20261103T090000Z"
SCRIPT = "<script>window.__pwned = 1</script>"
"""Text an agent (or a suite author) may put anywhere: it must show as text, never run."""


def hostile_run() -> dict[str, Any]:
    """A run whose names, transcript, tool calls, reasons and judge output all carry markup."""
    key = f"evil.yaml::{SCRIPT}"
    check = CheckResult(
        f"contains {SCRIPT}",
        "contains",
        "failed",
        0.0,
        1.0,
        f'<img src=x onerror="window.__pwned = 2"> not found {SCRIPT}',
        0,
        {
            "judge": {"model": SCRIPT, "usage": {"prompt": 1, "completion": 1}},
            "verdict": {"why": SCRIPT},
            "raw_outputs": [SCRIPT],
        },
    )
    trial = TrialResult(
        case_key=key,
        trial=1,
        status="failed",
        score=0.0,
        turns=[
            Message("user", f"say {SCRIPT}"),
            Message("assistant", f"here: {SCRIPT}", [ToolCall(SCRIPT, {"q": f"</pre>{SCRIPT}"}, "c1", SCRIPT)], 5.0),
        ],
        checks=[check],
        duration_ms=10.0,
    )
    run = RunResult(
        run_id=HOSTILE,
        started_at="2026-11-03T09:00:00+00:00",
        finished_at="2026-11-03T09:00:01+00:00",
        model=f"evil/{SCRIPT}",
        target=f"http POST http://127.0.0.1:1/{{{{ session_id }}}}/{SCRIPT}",
        cases=[CaseResult(SCRIPT, f"suite {SCRIPT}", "evil.yaml", [SCRIPT], 1.0, [trial], SCRIPT)],
        planned_trials=1,
    )
    return run.to_dict()


def older_run() -> dict[str, Any]:
    """The GPT run a week earlier (the same cases, all passed): a trend point and a baseline to compare."""
    data = json.loads((DATA / f"{GPT}.json").read_text(encoding="utf-8"))
    data["run_id"], data["started_at"], data["finished_at"] = OLDER, "2026-10-25T09:00:00+00:00", None
    return data


@dataclass(frozen=True)
class Store:
    root: Path
    history: Path
    results: Path


def make_store(root: Path) -> Store:
    results = root / ".results"
    results.mkdir(parents=True)
    for name in (GPT, CLAUDE):
        shutil.copy(DATA / f"{name}.json", results / f"{name}.json")
    write_json(results / f"{OLDER}.json", older_run())
    write_json(results / f"{HOSTILE}.json", hostile_run())
    history = root / ".proctor" / "history.db"
    with HistoryStore(history) as store:
        assert store.scan(results) == 4
    return Store(root, history, results)
