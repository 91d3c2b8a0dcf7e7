"""Resolved suites and cases: what the runner works with after loading."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor._slots import slot_init
from proctor.suite._model import AssertionSpec, JudgeSpec, ScoringSpec, ScriptStep, TurnSpec
from proctor.suite._simulate import SeedSpec, SimulateSpec
from proctor.suite._state import SetupStep, StateSpec
from proctor.suite._targets import TargetSpec
from proctor.suite._tools import ToolSpec

__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_TRIALS", "Case", "Rubric", "Suite"]

DEFAULT_TRIALS = 3
"""Trials per case when neither the file nor the command line says (Lobu's default)."""
DEFAULT_TIMEOUT = 120.0
"""Per-turn timeout in seconds when neither the file nor the command line says (Lobu's default)."""


@dataclass(frozen=True, slots=True)
class Rubric:
    """A rubric file graded by an LLM judge over the whole conversation."""

    path: Path
    """Where the rubric was read from."""
    text: str
    """The rubric's markdown."""


@slot_init  # built 3.5x sooner than by the frozen dataclass's own `__init__` (a suite builds 5,000)
@dataclass(frozen=True, slots=True)
class Case:
    """One eval: a conversation and its checks, with every default resolved."""

    name: str
    """Case name, unique within its file."""
    file: Path
    """The file the case came from."""
    suite: str
    """Name of the suite the case belongs to."""
    turns: tuple[TurnSpec, ...]
    """The scripted user messages with their checks."""
    trials: int = DEFAULT_TRIALS
    """How many independent trials to run."""
    timeout: float = DEFAULT_TIMEOUT
    """Per-turn timeout in seconds."""
    tags: tuple[str, ...] = ()
    """Tags for filtering with `--tag`."""
    scoring: ScoringSpec = field(default_factory=ScoringSpec)
    """Pass thresholds."""
    description: str | None = None
    """What the case tests."""
    rubric: Rubric | None = None
    """A rubric over the whole conversation, blended 50/50 with the assertions."""
    target: TargetSpec | None = None
    """The target named in the file, if any."""
    judge: JudgeSpec | None = None
    """The judge named in the file, if any."""
    assert_: tuple[AssertionSpec, ...] = ()
    """Checks over the whole conversation, run after the last turn."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Format-specific data kept from the source file (e.g. a watsonx dataset's `story`)."""
    setups: tuple[SetupStep, ...] = ()
    """Cypher statements run before each trial in a clean graph (Embabel's `setups`)."""
    state: StateSpec | None = None
    """The suite's graph settings; `None` means an embedded FalkorDB when the case needs a graph."""
    simulate: SimulateSpec | None = None
    """A simulated user that plays the conversation after the scripted turns (if any)."""
    simulator: str | None = None
    """The suite's simulator model (`provider/model`), if it names one."""
    seeds: tuple[SeedSpec, ...] = ()
    """Memory seeds delivered before each conversation (Embabel's `seeds`)."""
    seed_session: str = "prior"
    """`prior` (conversation seeds in a session of their own) or `same` (in the evaluated session)."""
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    """Tools Proctor serves the agent over MCP in each trial (`proctor.tools`); empty: none."""
    vars: dict[str, Any] = field(default_factory=dict)
    """The template variables the case was rendered with (a dataset row's columns among them)."""
    script: tuple[ScriptStep, ...] = ()
    """A scenario script (`proctor.drivers.scenario`); when given, `turns` is empty."""

    @property
    def check_count(self) -> int:
        """Number of checks declared on the case (the rubric counts as one)."""
        turns = sum(len(turn.assert_) for turn in self.turns)
        script = sum(len(step.assertions()) + (step.judge is not None) for step in self.script)
        return turns + script + len(self.assert_) + (1 if self.rubric else 0)


@dataclass(frozen=True, slots=True)
class Suite:
    """The cases of one suite file."""

    name: str
    """The file's `name`, or the file stem for multi-case files without one."""
    path: Path
    """The suite file."""
    cases: tuple[Case, ...]
    """Its cases, in file order."""
    target: TargetSpec | None = None
    """The file-level target, if any."""
