"""Who speaks for the user: scripted turns (the trial runner) and the simulated user (`simulator`).

The simulator loads on first use, so importing `proctor.drivers` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proctor.drivers.simulator import (
        NO_SIMULATOR_HINT,
        Conversation,
        Simulator,
        simulator_checks,
    )

_LAZY = {
    "NO_SIMULATOR_HINT": "proctor.drivers.simulator",
    "Conversation": "proctor.drivers.simulator",
    "Simulator": "proctor.drivers.simulator",
    "simulator_checks": "proctor.drivers.simulator",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'proctor.drivers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["NO_SIMULATOR_HINT", "Conversation", "Simulator", "simulator_checks"]
