"""`proctor.service`'s public names, and what importing it costs."""

from __future__ import annotations

import subprocess
import sys

import proctor.service


def test_every_exported_name_resolves_and_nothing_else_is_public() -> None:
    for name in proctor.service.__all__:
        getattr(proctor.service, name)
    assert sorted(proctor.service.__all__) == sorted(proctor.service._LAZY)
    assert dir(proctor.service) == sorted(proctor.service.__all__)


def test_importing_the_package_loads_neither_the_web_stack_nor_redis() -> None:
    code = (
        "import sys, proctor.service; from proctor.service import Pipeline, score_events; "
        "print([m for m in ('starlette', 'uvicorn', 'redis') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
