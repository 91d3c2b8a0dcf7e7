"""The canonical suite model: what a suite file may say.

A Lobu eval file is a valid suite as it is (one case whose turns sit at the top level). A file may also
hold several cases under `cases:`, with file-level values (`trials`, `timeout`, `tags`, `scoring`,
`rubric`, `target`) as their defaults. Unknown keys are errors everywhere.
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

import functools
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from proctor.suite._defaults import new_list
from proctor.suite._journey import JourneySpec
from proctor.suite._simulate import SeedSpec, SimulateSpec
from proctor.suite._state import SetupSpec, StateSpec, shorthand_assertion
from proctor.suite._targets import TargetSpec, parse_target_string
from proctor.suite._tools import ToolSpec, valid_tool_names

__all__ = [
    "MAX_WEIGHT",
    "AssertionOptions",
    "AssertionSpec",
    "CaseSpec",
    "CheckCatalog",
    "DatasetSpec",
    "JudgeSpec",
    "ScoringSpec",
    "ScriptStep",
    "StretchSpec",
    "SuiteFileSpec",
    "TurnSpec",
    "suite_file_spec",
]


class CheckCatalog(Protocol):
    """What the suite model needs to know about check types to validate assertions at load time.

    The check registry (`proctor.checks`) implements it; it is passed in the validation context under
    the key `"checks"` so that the suite layer never imports the checks layer.
    """

    def check_type(self, name: str) -> None:
        """Raise `ValueError` naming the valid choices (and the closest one) when `name` is unknown."""
        ...

    def check_value(self, name: str, value: Any) -> Any:
        """Return `value` validated (and normalised) for check type `name`, or raise `ValueError`."""
        ...

    def check_scope(self, name: str, where: str) -> None:
        """Raise `ValueError` when check type `name` cannot be used `where` (`turn` or `case`)."""
        ...


def _catalog(info: ValidationInfo) -> CheckCatalog | None:
    context = info.context
    if type(context) is dict:  # the loader's context; `isinstance` of an ABC costs more, per check
        return context.get("checks")
    return context.get("checks") if isinstance(context, Mapping) else None


TYPES_SEEN = "types"
"""The validation context's key for a `set` that collects the `type` of every assertion validated.

The loader passes one, so that it knows which check types a file names without walking its cases again
(`proctor.suite._policy.assertion_types` walks them).
"""


MAX_WEIGHT = 1e6
"""The largest `weight` a check may have.

Weights are relative, so a bound costs nothing a suite can mean: one check a million times another is
expressible, and a check that should not count has weight 0. It keeps the trial score computable: the
weighted average sums `score x weight` and the weights over every check of a trial, and weights near the
float limit overflow that sum to `inf`: two checks of 1e308, one passed and one failed, scored 0.0, not
0.5. `.inf` and `.nan` are rejected as not finite (an infinite weight made the score `nan`)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)  # see suite_file_spec


class AssertionOptions(_Strict):
    """Options that change how an assertion matches (frozen: assertions without options share one)."""

    model_config = ConfigDict(frozen=True)

    case_insensitive: bool | None = None
    """Compare ignoring case. Default: false for text checks, true for `regex` (as Lobu)."""
    threshold: float | None = Field(default=None, ge=0, le=1)
    """For scored judges: the score (0..1) at which the check passes."""


# `model_construct`: the defaults, as `AssertionOptions()` makes them, without building the model's own validator
# (and pydantic's plugin scan) when the package is imported; loading validates options in the suite's validator
_NO_OPTIONS = AssertionOptions.model_construct()
"""The options of an assertion that gives none: one frozen instance for all (a default pydantic never copies)."""


def _no_default_shown(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # the JSON Schema shows no default for `options`, as with a factory


class AssertionSpec(_Strict):
    """One check on a turn's reply, e.g. `{type: contains, value: Acme, weight: 0.5}`."""

    type: str
    """The check type (`proctor list --checks`); prefix `not-` to negate any deterministic check."""
    value: Any = Field(default=None, validate_default=True)
    """What the check compares against: a substring, a pattern, a list, a schema, a number of ms."""
    weight: float = Field(default=1.0, ge=0, le=MAX_WEIGHT, allow_inf_nan=False)
    """Relative weight of this check in the trial score: a finite number from 0 to `MAX_WEIGHT`."""
    options: AssertionOptions = Field(default=_NO_OPTIONS, json_schema_extra=_no_default_shown)
    """Matching options."""
    name: str | None = None
    """A display name; defaults to the type and value."""

    @model_validator(mode="before")
    @classmethod
    def _embabel_shapes(cls, data: Any) -> Any:
        # `{cypher: ..., expected: 1}` and `{expression: ...}` (Embabel) name their check by their keys
        return shorthand_assertion(data)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str, info: ValidationInfo) -> str:
        context = info.context
        if type(context) is dict:  # the loader's context
            seen = context.get(TYPES_SEEN)
            if seen is not None:
                seen.add(value)
            catalog = context.get("checks")
        else:
            catalog = _catalog(info)
        if catalog is not None:
            catalog.check_type(value)
        return value

    @field_validator("value")
    @classmethod
    def _valid_value(cls, value: Any, info: ValidationInfo) -> Any:
        context = info.context
        catalog = context.get("checks") if type(context) is dict else _catalog(info)  # the loader's: a dict
        if catalog is not None:
            data = info.data
            if "type" in data:  # absent when the type itself was invalid
                return catalog.check_value(data["type"], value)
        return value

    def display_name(self) -> str:
        """The name shown in reports: `name`, else `type: value` shortened."""
        if self.name:
            return self.name
        if self.value is None:
            return self.type
        text = self.value if isinstance(self.value, str) else repr(self.value)
        return f"{self.type}: {text if len(text) <= 60 else text[:57] + '...'}"


def _check_scopes(assertions: list[AssertionSpec], where: str, info: ValidationInfo) -> list[AssertionSpec]:
    if not assertions:
        return assertions
    catalog = _catalog(info)
    if catalog is not None:
        for assertion in assertions:
            catalog.check_scope(assertion.type, where)
    return assertions


class TurnSpec(_Strict):
    """One user message and the checks on the agent's reply to it."""

    content: str
    """The user message to send."""
    assert_: list[AssertionSpec] = Field(default_factory=new_list, alias="assert")
    """Checks on the reply; a turn without any is sent but not graded."""

    @field_validator("assert_")
    @classmethod
    def _turn_scope(cls, value: list[AssertionSpec], info: ValidationInfo) -> list[AssertionSpec]:
        return _check_scopes(value, "turn", info)


class StretchSpec(_Strict):
    """A simulated stretch of a scenario script: the simulated user pursues a goal for some turns."""

    goal: str = Field(min_length=1)
    """What the simulated user wants in this stretch (given to the simulator as its task)."""
    max_turns: int = Field(default=5, ge=1)
    """The most user messages the simulator sends in this stretch."""
    until: str | None = None
    """A judge checkpoint after each reply: the conversation ends as soon as this criterion is met."""


class ScriptStep(_Strict):
    """One step of a scenario script (`script:`): exactly one of `user`, `simulate`, `check` or `judge`.

    Example:
        ```yaml
        script:
          - user: I want to change my flight.            # a scripted user turn
            assert: [{type: contains, value: booking}]   # checks on its reply
          - simulate: {goal: give the booking reference ABC123 when asked, max_turns: 4}
          - check: [{type: tool-called, value: find_booking}]   # on the last reply (`on: conversation`: so far)
          - judge: The agent offered at least one new flight   # ends the conversation when met
          - user: Book the first one.
        ```
    """

    user: str | None = None
    """A scripted user message."""
    assert_: list[AssertionSpec] = Field(default_factory=new_list, alias="assert")
    """With `user`: checks on the agent's reply to it."""
    simulate: StretchSpec | None = None
    """A simulated stretch."""
    check: list[AssertionSpec] | None = None
    """Checks at this point: on the last reply, or (`on: conversation`) on the conversation so far."""
    on: Literal["reply", "conversation"] = "reply"
    """With `check`: what the checks look at."""
    judge: str | None = None
    """A judge checkpoint: the criterion; when the judge finds it met the conversation ends here."""

    @model_validator(mode="after")
    def _one_kind(self) -> "ScriptStep":
        kinds = [k for k in ("user", "simulate", "check", "judge") if getattr(self, k) is not None]
        if len(kinds) != 1:
            found = ", ".join(kinds) or "none"
            raise ValueError(f"a script step has exactly one of user, simulate, check, judge; found {found}")
        if self.assert_ and self.user is None:
            raise ValueError("'assert' goes with a 'user' step (use 'check' for checks at any point)")
        return self

    @field_validator("assert_")
    @classmethod
    def _reply_scope(cls, value: list[AssertionSpec], info: ValidationInfo) -> list[AssertionSpec]:
        return _check_scopes(value, "turn", info)

    @model_validator(mode="after")
    def _scoped(self, info: ValidationInfo) -> "ScriptStep":
        if self.check is not None:
            _check_scopes(self.check, "turn" if self.on == "reply" else "case", info)
        return self

    def assertions(self) -> list[AssertionSpec]:
        """The step's checks (`assert` of a user step, or `check`)."""
        return [*self.assert_, *(self.check or [])]


class ScoringSpec(_Strict):
    """Pass thresholds."""

    pass_threshold: float = Field(default=0.8, ge=0, le=1)
    """Minimum trial score (0..1) for a trial to pass."""
    min_pass_rate: float = Field(default=0.8, ge=0, le=1)
    """Minimum fraction of passing trials for the case to pass."""


class JudgeSpec(_Strict):
    """The judge model for LLM-judged checks (`--judge` and `PROCTOR_JUDGE_MODEL` override `model`).

    Example:
        ```yaml
        judge: openai/gpt-4.1-mini            # short form
        judge: {model: ollama/llama3.1, concurrency: 4, prompts: {relevance: prompts/relevance.j2}}
        ```
    """

    model: str = Field(pattern=r"^[A-Za-z0-9_.-]+/.+$")
    """`provider/model`, e.g. `openai/gpt-4.1-mini`; never the agent under test unless you name it."""
    prompts: dict[str, str] = Field(default_factory=dict)
    """Prompt template overrides by check type: a Jinja file (relative to the suite) or the text itself."""
    concurrency: int = Field(default=8, ge=1)
    """Judge calls in flight at once (separate from the agent's limits)."""
    rpm: int | None = Field(default=None, ge=1)
    """Judge requests per minute, if the provider limits them."""


class DatasetSpec(_Strict):
    """Where a parametrised case's rows come from (`proctor.suite._expander`), in its long form."""

    path: str | None = None
    """A CSV, JSONL, JSON or YAML file, relative to the suite file."""
    rows: list[dict[str, Any]] | None = None
    """The rows themselves."""
    name_from: str | None = None
    """The column each expanded case is named by (`name[value]`); default the row number (`name[1]`)."""


class _CaseFields(_Strict):
    assert_: list[AssertionSpec] = Field(default_factory=new_list, alias="assert")
    """Checks over the whole conversation (tool-call trajectories, state), run after its last turn."""
    name: str | None = None
    description: str | None = None
    trials: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    tags: list[str] = Field(default_factory=new_list)
    rubric: str | None = None
    scoring: ScoringSpec | None = None
    expect: JourneySpec | None = None
    """The expected tool-call journey (goal graph, arguments, final answer): adds a `journey` check."""
    assertions: list[AssertionSpec] = Field(default_factory=new_list)
    """Embabel's name for conversation checks: entries are added to `assert` (e.g. `{cypher, expected}`)."""
    setups: list[SetupSpec] = Field(default_factory=new_list)
    """Cypher run before each trial in a clean graph (file-level setups run first)."""
    simulate: SimulateSpec | None = None
    """A simulated user plays the conversation (after the scripted `turns`, if any)."""
    seeds: list[SeedSpec] = Field(default_factory=new_list)
    """Memory seeds delivered before each conversation (file-level seeds come first)."""
    seed_session: Literal["prior", "same"] = "prior"
    """Where conversation seeds are replayed: a `prior` session of their own, or the `same` session."""
    tools: dict[str, ToolSpec] = Field(default_factory=dict)
    """Tools Proctor serves the agent over MCP in each trial (a case's override the file's by name)."""

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: dict[str, ToolSpec]) -> dict[str, ToolSpec]:
        return valid_tool_names(value)

    vars: dict[str, Any] = Field(default_factory=dict)
    """Template variables (`{{ name }}`) for the case's strings; the suite's are every case's defaults."""
    script: list[ScriptStep] | None = Field(default=None, min_length=1)
    """A scenario script: scripted turns, simulated stretches, checks and judge checkpoints, in order."""
    dataset: str | list[dict[str, Any]] | DatasetSpec | None = None
    """Rows that expand the case into one case per row (a file path, a list, or `{path|rows, name_from}`)."""

    @field_validator("assert_", "assertions")
    @classmethod
    def _case_scope(cls, value: list[AssertionSpec], info: ValidationInfo) -> list[AssertionSpec]:
        return _check_scopes(value, "case", info)


class CaseSpec(_CaseFields):
    """One case inside a multi-case file's `cases:` list."""

    name: str  # required here, optional at file level
    """Case name, unique within the file (used in reports and `--case`)."""
    target: TargetSpec | None = None
    """This case's agent, replacing the file's `target:` (e.g. one per dataset row); `--target` overrides it."""
    turns: list[TurnSpec] = Field(default_factory=new_list)
    """The conversation: user messages in order (may be empty when the case has `simulate:`)."""

    @field_validator("target", mode="before")
    @classmethod
    def _case_target_string(cls, value: Any) -> Any:
        return parse_target_string(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _turns_or_simulate(self) -> "CaseSpec":
        if not self.turns and self.simulate is None and self.script is None:
            raise ValueError(f"case {self.name!r} needs 'turns', 'simulate' or 'script'")
        if self.turns and self.script is not None:
            raise ValueError(f"case {self.name!r} has 'turns' and 'script': a script holds its turns (user steps)")
        return self


class SuiteFileSpec(_CaseFields):
    """A whole suite file: either one case (Lobu's layout, `turns:` at the top) or `cases:`."""

    version: int | str | None = None
    """Format version, accepted and recorded; Proctor reads Lobu files of any version."""
    turns: list[TurnSpec] | None = Field(default=None, min_length=1)
    """The single case's turns (Lobu layout)."""
    cases: list[CaseSpec] | None = Field(default=None, min_length=1)
    """Several cases; file-level fields are their defaults."""
    target: TargetSpec | None = None
    """The agent to evaluate; `--target` overrides it."""
    judge: JudgeSpec | None = None
    """The judge model for LLM-judged checks."""
    state: StateSpec | None = None
    """The agent's knowledge graph and trial isolation; default: an embedded FalkorDB when a case needs one."""
    simulator: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+/.+$")
    """The model (`provider/model`) that plays simulated users; default the judge model."""

    # json_schema_input_type: `proctor schema` shows the string forms (`target: http://host/v1`, `judge: p/m`)
    @field_validator("target", mode="before", json_schema_input_type=str | TargetSpec | None)
    @classmethod
    def _target_string(cls, value: Any) -> Any:
        return parse_target_string(value) if isinstance(value, str) else value

    @field_validator("judge", mode="before", json_schema_input_type=str | JudgeSpec | None)
    @classmethod
    def _judge_string(cls, value: Any) -> Any:
        return {"model": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _turns_or_cases(self) -> "SuiteFileSpec":
        single = self.turns is not None or (
            (self.simulate is not None or self.script is not None) and self.cases is None
        )
        if not single and self.cases is None:
            raise ValueError("a suite needs 'turns' or 'simulate' (one case) or 'cases' (several); found neither")
        if self.turns is not None and self.cases is not None:
            raise ValueError("a suite has either 'turns' (one case) or 'cases', not both")
        if self.script is not None and (self.cases is not None or self.turns is not None):
            raise ValueError("a file-level 'script' is the one case's: with 'cases' or 'turns', give each case its own")
        if single and not self.name:
            raise ValueError("a single-case suite needs a 'name'")
        if self.cases is not None:
            seen: set[str] = set()
            for case in self.cases:
                if case.name in seen:
                    raise ValueError(f"case name {case.name!r} is used twice; names must be unique")
                seen.add(case.name)
        return self


@functools.cache
def suite_file_spec() -> type[SuiteFileSpec]:
    """`SuiteFileSpec` with its validator built: once, at the first suite loaded.

    The suite's models are `defer_build`: pydantic would otherwise build a validator and a serializer
    for each of ~50 models at import, where loading needs the one of the whole file (which holds every
    nested model's schema). A model validated on its own (`MockSpec`, `ProjectConfig`) builds its own at
    its first use.
    """
    SuiteFileSpec.model_rebuild()
    return SuiteFileSpec
