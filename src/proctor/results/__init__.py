"""Results: result models, journal, writers (JSON, JUnit), history store, statistics, comparisons, reports.

The history store, statistics, comparison and report names load on first use (PEP 562): importing
`proctor.results` for a run does not pay for SQLite or the report code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes
from proctor.results._aggregate import CaseAggregate, FailingCheck, RunAggregate, TrialCounts
from proctor.results._journal import Journal, read_previous_trials
from proctor.results._model import RESULTS_VERSION, CaseResult, RunResult, TrialResult, with_k
from proctor.results._writers import write_bytes, write_json, write_junit, write_output

if TYPE_CHECKING:
    from proctor.results._comparison import CaseComparison, Comparison, compare_runs, restrict_run, shared_case_keys
    from proctor.results._format import results_json_schema
    from proctor.results._history import HistoryStore, default_history_path, index_run, resolve_history_path
    from proctor.results._report import write_report
    from proctor.results._stats import BootstrapInterval, mcnemar_exact, paired_bootstrap, pass_at_k, wilson_interval
    from proctor.results._summary import Report, RunSummary, StoredCase, build_report, load_run

_LAZY = {
    "BootstrapInterval": "proctor.results._stats",
    "CaseComparison": "proctor.results._comparison",
    "Comparison": "proctor.results._comparison",
    "HistoryStore": "proctor.results._history",
    "Report": "proctor.results._summary",
    "RunSummary": "proctor.results._summary",
    "StoredCase": "proctor.results._summary",
    "build_report": "proctor.results._summary",
    "compare_runs": "proctor.results._comparison",
    "default_history_path": "proctor.results._history",
    "index_run": "proctor.results._history",
    "load_run": "proctor.results._summary",
    "mcnemar_exact": "proctor.results._stats",
    "paired_bootstrap": "proctor.results._stats",
    "pass_at_k": "proctor.results._stats",
    "resolve_history_path": "proctor.results._history",
    "restrict_run": "proctor.results._comparison",
    "shared_case_keys": "proctor.results._comparison",
    "wilson_interval": "proctor.results._stats",
    "write_report": "proctor.results._report",
    "results_json_schema": "proctor.results._format",
}

__all__ = [
    "RESULTS_VERSION",
    "BootstrapInterval",
    "CaseAggregate",
    "CaseComparison",
    "CaseResult",
    "Comparison",
    "FailingCheck",
    "HistoryStore",
    "Journal",
    "Report",
    "RunAggregate",
    "RunResult",
    "RunSummary",
    "StoredCase",
    "TrialCounts",
    "TrialResult",
    "build_report",
    "compare_runs",
    "default_history_path",
    "index_run",
    "load_run",
    "mcnemar_exact",
    "paired_bootstrap",
    "pass_at_k",
    "read_previous_trials",
    "resolve_history_path",
    "restrict_run",
    "results_json_schema",
    "shared_case_keys",
    "wilson_interval",
    "with_k",
    "write_bytes",
    "write_json",
    "write_junit",
    "write_output",
    "write_report",
]


__getattr__ = _lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
