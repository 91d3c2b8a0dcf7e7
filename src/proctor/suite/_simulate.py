"""The `simulate:` block: a simulated user (an LLM) plays the user instead of scripted turns.

Defaults are Embabel Agent Eval's (persona Socrates, temperature 0.5, max 20 messages, five greetings).

```yaml
simulator: openai/gpt-4.1-mini        # suite level; --simulator / PROCTOR_SIMULATOR_MODEL override it
simulate:
  persona: {name: Socrates, voice: "You speak like a friendly, relaxed human", temperature: 0.5,
            signoff: "So Long, and Thanks for All the Fish"}
  greetings: [Hello, Hi]
  tasks:
    - {type: task, task: "Create a reminder for tomorrow at 9am", acceptanceCriteria: "A reminder is made"}
  facts: ["The user's timezone is Australia/Sydney"]
  story: "You want to know your time off schedule."       # watsonx user story (optional)
  starting_sentence: "I want to know my time off schedule" # opens the conversation instead of a greeting
  max_turns: 20                       # messages (user and agent) before the conversation is aborted
  arms: [withheld, supplied]          # which arms run
  aspirationalAverage: 3000           # ms; the timing score's target
  scoring: {weights: {timing: 1, tasks: 2, assertions: 4}}
```
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from proctor.suite._defaults import new_list

__all__ = [
    "DEFAULT_GREETINGS",
    "DEFAULT_SIGNOFF",
    "Arm",
    "CompositeWeights",
    "PersonaSpec",
    "SeedMessage",
    "SeedSpec",
    "SimulateScoring",
    "SimulateSpec",
    "SimulatedTask",
    "unsupported_seeds",
]

DEFAULT_SIGNOFF = "So Long, and Thanks for All the Fish"
"""Embabel's sign-off: the conversation ends when the simulated user's message contains it."""
DEFAULT_GREETINGS = ("Hello", "Hi", "Greetings", "Yo", "Hey")
"""Embabel's greetings; one is picked at random (seeded) to open the conversation."""

Arm = Literal["withheld", "supplied"]
"""`withheld`: the simulated user does not know the facts; `supplied`: it knows them and reveals one only
when the agent asks for it."""
ALL_ARMS: tuple[Arm, ...] = ("withheld", "supplied")
"""Both arms, in the order they run by default."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)  # see _model.suite_file_spec


class PersonaSpec(_Strict):
    """Who the simulated user is (Embabel's `evaluator`)."""

    name: str = "Socrates"
    """The persona's name."""
    voice: str = "You speak like a friendly, relaxed human"
    """How it speaks."""
    signoff: str = Field(default=DEFAULT_SIGNOFF, min_length=1)
    """The phrase that ends the conversation (matched case-insensitively)."""
    temperature: float = Field(default=0.5, ge=0, le=2)
    """The simulator model's sampling temperature."""


class SimulatedTask(_Strict):
    """One thing the simulated user wants done or asked."""

    type: Literal["task", "question"] = "task"
    """`task` (something to do) or `question` (something to ask)."""
    task: str = Field(min_length=1)
    """What the user wants, in the simulator's words."""
    acceptance_criteria: str = Field(default="", alias="acceptanceCriteria")
    """What the transcript judge checks the agent's work against."""


class CompositeWeights(_Strict):
    """Weights of the composite score's dimensions (Embabel: 1, 2, 4)."""

    timing: float = Field(default=1.0, ge=0)
    """min(1, aspirationalAverage / mean agent response time)."""
    tasks: float = Field(default=2.0, ge=0)
    """The transcript judge's mean task score."""
    assertions: float = Field(default=4.0, ge=0)
    """The weighted pass rate of the case's assertions."""


class SimulateScoring(_Strict):
    """How a simulated conversation is scored."""

    weights: CompositeWeights = Field(default_factory=CompositeWeights)
    """The dimensions' weights; a dimension with nothing to score is left out and the rest renormalised."""
    penalty_per_failure: float = Field(default=0.3, ge=0)
    """Subtracted per failed agent call attempt (retried or not)."""
    max_penalty: float = Field(default=0.5, ge=0)
    """The most the failure penalty subtracts."""


class SeedMessage(_Strict):
    """One message of a conversation seed."""

    role: Literal["user", "assistant"] = "user"
    """Who said it; only `user` messages are sent (the agent speaks for itself)."""
    content: str = Field(min_length=1)
    """The message."""


class SeedSpec(_Strict):
    """Memory seeding before the evaluated conversation (Embabel's `seeds`): a text or a conversation.

    Example:
        ```yaml
        seeds:
          - text: "The user's name is Alice and she lives in Sydney."   # posted to the target's ingest_url
          - conversation: [{role: user, content: "My name is Alice"}]    # replayed in a prior session
        seed_session: prior          # or `same`: replayed in the evaluated session, before it starts
        ```
    """

    text: str | None = Field(default=None, min_length=1)
    """A document for the agent to ingest (`embabel` target with `ingest_url`)."""
    conversation: list[SeedMessage] | None = Field(default=None, min_length=1)
    """A prior conversation to replay to the agent."""

    @model_validator(mode="after")
    def _one_kind(self) -> "SeedSpec":
        if (self.text is None) == (self.conversation is None):
            raise ValueError("a seed needs exactly one of 'text' or 'conversation'")
        return self


class SimulateSpec(_Strict):
    """A simulated user: persona, tasks, facts (withheld or supplied), limits and scoring."""

    persona: PersonaSpec = Field(default_factory=PersonaSpec)
    """The simulated user's persona (Embabel's `evaluator`)."""
    greetings: list[str] = Field(default_factory=lambda: list(DEFAULT_GREETINGS), min_length=1)
    """Openers, one picked at random (seeded) unless `starting_sentence` is given."""
    tasks: list[SimulatedTask] = Field(default_factory=new_list)
    """What the user wants done, in a natural order."""
    facts: list[str] = Field(default_factory=new_list)
    """Ground truth the user may reveal when asked (arm `supplied`) or does not know (arm `withheld`)."""
    story: str | None = None
    """A watsonx user story the simulated user follows."""
    starting_sentence: str | None = None
    """The first user message (watsonx); otherwise a greeting opens."""
    max_turns: int = Field(default=20, ge=2)
    """Messages (user and agent together) before the conversation is stopped and marked aborted."""
    arms: list[Arm] = Field(default_factory=lambda: list(ALL_ARMS), min_length=1)
    """Which arms run, each in a fresh agent session."""
    prompt: str | None = None
    """A Jinja template replacing the simulator's prompt: a file relative to the suite, or the text itself."""
    reruns: int = Field(default=1, ge=0)
    """Times a trial made inconclusive by the simulator is re-run with a new seed."""
    aspirational_average: float | None = Field(default=None, gt=0, alias="aspirationalAverage")
    """Target mean agent response time in ms; without it the timing dimension is left out."""
    scoring: SimulateScoring = Field(default_factory=SimulateScoring)
    """Composite score weights and the failure penalty."""

    @field_validator("arms")
    @classmethod
    def _distinct(cls, value: list[Arm]) -> list[Arm]:
        if len(set(value)) != len(value):
            raise ValueError("each arm may be listed once")
        return value


def unsupported_seeds(target: Any, seeds: Sequence[SeedSpec]) -> str | None:
    """Why `target` cannot take these seeds (`None` when it can, or when no target is known yet).

    Conversation seeds work with every target (they are replayed as messages); text seeds need an
    ingestion request: an `embabel` target's `ingest_url`, an `http` target's `ingest` request, or a
    `python` target's `seed` hook.
    """
    if target is None or not any(seed.text is not None for seed in seeds):
        return None
    kind = getattr(target, "type", None) or (target.get("type") if isinstance(target, dict) else "?")
    field = {"embabel": "ingest_url", "python": "seed", "http": "ingest"}.get(str(kind))
    given = target.get(field) if isinstance(target, dict) else getattr(target, field, None) if field else None
    if given:
        return None
    return (
        f"text seeds need an ingestion request, which the {kind!r} target does not have: give an embabel "
        "target 'ingest_url', an http target 'ingest' or a python target 'seed', or use conversation seeds"
    )
