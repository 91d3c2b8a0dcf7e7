"""Results: versioned result models, the run journal, and writers (JSON, JUnit)."""

from proctor.results._journal import Journal, read_previous_trials
from proctor.results._model import RESULTS_VERSION, CaseResult, RunResult, TrialResult
from proctor.results._writers import write_json, write_junit, write_output

__all__ = [
    "RESULTS_VERSION",
    "CaseResult",
    "Journal",
    "RunResult",
    "TrialResult",
    "read_previous_trials",
    "write_json",
    "write_junit",
    "write_output",
]
