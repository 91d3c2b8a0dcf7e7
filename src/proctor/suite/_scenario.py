"""What a scenario script (`script:`) needs from the rest of a case at load time."""

from __future__ import annotations

from collections.abc import Sequence

from proctor.suite._model import ScriptStep
from proctor.suite._simulate import SimulateSpec

__all__ = ["scenario_simulate"]


def scenario_simulate(simulate: SimulateSpec | None, script: Sequence[ScriptStep] | None) -> SimulateSpec | None:
    """The case's `simulate:` block, or a default one when its script has simulated stretches.

    A stretch's simulated user takes its persona, prompt and facts from the case's `simulate:` block; a
    script with stretches and no such block gets the defaults (one conversation: arm `supplied`), so the
    run gives the case a simulator as it does any simulated case.
    """
    if simulate is not None or not script or not any(step.simulate is not None for step in script):
        return simulate
    return SimulateSpec(arms=["supplied"])
