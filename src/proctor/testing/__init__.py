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

A case that passed while an LLM-judged check went unjudged (no judge model: `judge=`, else
`PROCTOR_JUDGE_MODEL`, else the suite's `judge:`) fails `assert_passed()`, naming the check, unless
`allow_skipped=True` (to `run_case` or `assert_passed`) or `PROCTOR_ALLOW_SKIPPED=1` allows it; the
plugin's items are skips then, unless `--proctor-allow-skipped`. Both read `PROCTOR_JUDGE_MODEL` as the
CLI's `--judge` does (an empty or blank value is no judge).

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
