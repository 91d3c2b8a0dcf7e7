"""CLI tests run suites that name their own test agents (python targets in `tests/helpers`).

A user trusts the suites of their own project (`--trust`, or `trusted: true` in `proctor.yaml`); these
tests do the same through `PROCTOR_TRUST`. The trust policy itself is tested with it unset
(`tests/cli/test_run_trust.py`).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _trust_the_test_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_TRUST", "1")
