"""Who speaks for the user: the scripted user, the simulated user, and scenario scripts.

`script` plays fixed turns, `simulator` a simulated user, and `scenario` scripts composing both with
checks and judge checkpoints.

Each returns one `Conversation`; a simulated arm with scripted turns first is `play_script` followed by
`Simulator.converse` on the same conversation. The simulator loads on first use, so importing
`proctor.drivers` costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from proctor.drivers.conversation import Conversation, exchange
    from proctor.drivers.scenario import Checkpoint, ScenarioRun, play_scenario
    from proctor.drivers.script import play_script
    from proctor.drivers.simulator import NO_SIMULATOR_HINT, Simulator, simulator_checks

_LAZY = {
    "NO_SIMULATOR_HINT": "proctor.drivers.simulator",
    "Checkpoint": "proctor.drivers.scenario",
    "ScenarioRun": "proctor.drivers.scenario",
    "play_scenario": "proctor.drivers.scenario",
    "Conversation": "proctor.drivers.conversation",
    "Simulator": "proctor.drivers.simulator",
    "exchange": "proctor.drivers.conversation",
    "play_script": "proctor.drivers.script",
    "simulator_checks": "proctor.drivers.simulator",
}


__getattr__ = _lazy_attributes(__name__, _LAZY)


__all__ = [
    "NO_SIMULATOR_HINT",
    "Checkpoint",
    "Conversation",
    "ScenarioRun",
    "Simulator",
    "exchange",
    "play_scenario",
    "play_script",
    "simulator_checks",
]
