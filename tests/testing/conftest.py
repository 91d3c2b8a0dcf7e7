"""Fixtures of the pytest-plugin tests.

`pytester` runs pytest in this process and, when a test ends, drops every module first imported during it
from `sys.modules`. The check registry outlives that (it was imported before), so a check module dropped
that way would register its types a second time when a later test imports it again ("check type ... is
already registered"). Every built-in check type is loaded before the first of these tests: none of their
modules is first imported, or dropped, here.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _check_types_loaded() -> None:
    from proctor.checks import registry

    list(registry)  # imports every built-in check module (and the installed plugins')
