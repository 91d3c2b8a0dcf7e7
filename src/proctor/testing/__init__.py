"""Proctor in pytest: suite files collected as tests, and a helper to run a case from an ordinary test.

The pytest plugin (`proctor.testing._plugin`, entry point `pytest11`) collects the suite files named on
the command line, or found under the folders of the `proctor_suites` ini option, one test per case:

```
pytest evals/capitals.yaml -k France -x
```

From an ordinary test, `run_case` (or the `proctor_case` fixture, the same function) runs one case,
optionally against a Python agent given as a function, and returns a `CaseOutcome`:

```python
def test_capitals(proctor_case):
    outcome = proctor_case("evals/capitals.yaml", "capital[France]", agent=my_agent)
    outcome.assert_passed()          # fails with the failing checks' reasons and a transcript excerpt
```

Names load on first use, so pytest's start-up (which imports the plugin) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from proctor.testing._helper import CaseOutcome, run_case, run_loaded_case

_LAZY = {
    "CaseOutcome": "proctor.testing._helper",
    "run_case": "proctor.testing._helper",
    "run_loaded_case": "proctor.testing._helper",
}

__getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = ["CaseOutcome", "run_case", "run_loaded_case"]
