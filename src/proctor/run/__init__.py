"""The flow of a run, one module per stage.

`plan` (suites and options -> trials), `execute` (the one batch executor), `prepare` (graph, session,
seeds), `trial` (prepare -> converse -> check -> score), `arms` (simulated users), `record` (journal,
results, history), `rescore` (the check and score stages again over stored transcripts), `services`
(the models a run uses besides the agent), `batch` (the whole run).

```python
from proctor.run import RunOptions, run_sync

outcome = run_sync(proctor.load_suites(["evals/"]), RunOptions(model="gpt-4.1-mini"))
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from proctor.run.batch import run, run_sync
    from proctor.run.execute import Ending, execute
    from proctor.run.options import RunObserver, RunOptions
    from proctor.run.plan import filter_cases
    from proctor.run.record import RunOutcome
    from proctor.run.rescore import rescore, rescore_sync

# Names load on first use (PEP 562): `proctor score` and the service use the executor alone, without the
# targets, graphs and drivers a suite run builds.
_LAZY = {
    "Ending": "proctor.run.execute",
    "RunObserver": "proctor.run.options",
    "RunOptions": "proctor.run.options",
    "RunOutcome": "proctor.run.record",
    "execute": "proctor.run.execute",
    "filter_cases": "proctor.run.plan",
    "rescore": "proctor.run.rescore",
    "rescore_sync": "proctor.run.rescore",
    "run": "proctor.run.batch",
    "run_sync": "proctor.run.batch",
}


__getattr__ = _lazy_attributes(__name__, _LAZY)


__all__ = [
    "Ending",
    "RunObserver",
    "RunOptions",
    "RunOutcome",
    "execute",
    "filter_cases",
    "rescore",
    "rescore_sync",
    "run",
    "run_sync",
]
