"""The `tools:` block: tools Proctor serves to the agent over MCP during each trial.

Each tool has a name (the mapping's key), a description and a JSON-Schema input (written in the block,
or imported from the real server's or the cassette's tool list; `schema_from` imports them for mocked
and simulated tools), and one behaviour:

- `mock`: a fixed result; a string is a sandboxed Jinja template over the call's arguments; or a mapping
  with a `result`, a sequence of `results`, a `table` of rows keyed by argument match (the journey's
  argument matchers: `strict`, `optional`, `ignore`, `fuzzy`), a `cypher` statement on the trial's
  graph (state through tools), an injected `error` and `latency_ms`;
- `proxy`: forward each call to a real MCP server (`command` over stdio, or a streamable HTTP `url`),
  recording every call and result into `cassette` when one is named;
- `replay`: answer from a cassette, deterministically; a call it does not hold is an error result (and
  the trial's), unless `record: new` forwards it to the `proxy` and adds it to the cassette;
- `simulate`: a model plays the tool from its description and the arguments (skipped without a model).

Example:
    ```yaml
    tools:
      get_weather:
        description: Current weather for a city
        input: {type: object, properties: {city: {type: string}}, required: [city]}
        mock: "Sunny, 21 C in {{ city }}"
    ```
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, WithJsonSchema, model_validator

from proctor.suite._defaults import new_list
from proctor.suite._journey import ArgStrategy, MatchingSpec

__all__ = [
    "MockRow",
    "MockSpec",
    "ToolServerSpec",
    "ToolSimulateSpec",
    "ToolSpec",
    "ToolsBlock",
    "merge_tools",
    "valid_tool_names",
]

_TOOL_NAME = r"^[A-Za-z0-9_.-]{1,128}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # see _model.suite_file_spec


class MockRow(_Strict):
    """One row of a mock's table: when the call's arguments match `args`, answer with `result` (or `error`)."""

    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments to match; `{"IGNORE": null}` matches any call."""
    arg_matching: dict[str, ArgStrategy] = Field(default_factory=dict)
    """Per-argument strategy (`strict` unless named: `optional`, `ignore`, `fuzzy`)."""
    result: Any = None
    """The result (a string is a template over the arguments)."""
    error: str | None = None
    """Answer with this error instead of a result."""


class MockSpec(_Strict):
    """A mocked tool's answers: the first of `table` (a matching row), `results` (in turn), `result`."""

    result: Any = None
    """The result; a string is a sandboxed Jinja template over the arguments (`{{ city }}`, `{{ args }}`)."""
    results: list[Any] | None = Field(default=None, min_length=1)
    """Results in call order within a trial; after the last one, the last repeats (or `cycle`)."""
    cycle: bool = False
    """Start `results` over after the last one instead of repeating it."""
    table: list[MockRow] = Field(default_factory=new_list)
    """Rows keyed by argument match, tried in order; no matching row falls to `results`/`result`, else an error."""
    matching: MatchingSpec = Field(default_factory=MatchingSpec)
    """How the table's arguments are compared (case, list order, numeric strings, fuzzy threshold)."""
    error: str | None = None
    """Inject an error: every call answers with this error (the tool call fails, the agent sees why)."""
    error_on: list[int] = Field(default_factory=new_list)
    """Inject `error` only on these calls (1-based, within a trial); empty means every call."""
    latency_ms: float = Field(default=0.0, ge=0, le=600_000)
    """Wait this long before answering (an injected delay)."""
    cypher: str | None = Field(default=None, min_length=1)
    """Run this Cypher on the trial's graph, the call's arguments as parameters (`$city`); the rows are
    the result. The tool reads and writes the state the case's state assertions check."""

    @model_validator(mode="after")
    def _something_to_answer(self) -> "MockSpec":
        answers = (self.result, self.results, self.table or None, self.error, self.cypher)
        if all(value is None for value in answers):
            raise ValueError("a mock needs a 'result', 'results', a 'table', an 'error' or a 'cypher' statement")
        if self.error_on and self.error is None:
            raise ValueError("'error_on' needs an 'error' to inject")
        return self


def _mock_shape(value: Any) -> str:
    return "MockSpec" if isinstance(value, dict | MockSpec) else "value"


# A mapping is validated as a `MockSpec` nested in the tool, so its errors are located at the mock's keys
# (`tools.t.mock.reslt`, with the mock's fields); any other value is a fixed result or a template, as is.
# The tag is the model's name, the label pydantic gives a union member, which the loader drops from locations.
MockField = Annotated[
    Annotated[MockSpec, Tag("MockSpec")]
    | Annotated[Any, Tag("value"), WithJsonSchema({"not": {"type": "object"}})],  # `oneOf`: exclusive shapes
    Discriminator(_mock_shape),
]
"""A tool's `mock`: a `MockSpec` (from a mapping), else the fixed result or template itself."""


class ToolServerSpec(_Strict):
    """A real MCP server: a `command` Proctor starts (stdio) or a streamable HTTP `url`."""

    command: list[str] | None = Field(default=None, min_length=1)
    """The server's command line, started once per run (stdio); runs code, so the suite must be trusted."""
    url: str | None = Field(default=None, pattern=r"^https?://")
    """The server's streamable HTTP endpoint, e.g. `http://127.0.0.1:8000/mcp`."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the `command` (`${VAR}` is read from Proctor's environment)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers for the `url` (`${VAR}` is read from the environment)."""
    tool: str | None = None
    """The server's name for the tool, when it differs from the key in `tools:`."""

    @model_validator(mode="after")
    def _one_transport(self) -> "ToolServerSpec":
        if (self.command is None) == (self.url is None):
            raise ValueError("a tool server needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        return self


class ToolSimulateSpec(_Strict):
    """A model plays the tool."""

    model: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+/.+$")
    """`provider/model`; default the run's simulator, else its judge model."""
    instructions: str | None = None
    """What the tool knows and how it behaves, added to its description."""


class ToolSpec(_Strict):
    """One tool served to the agent: what it is, and what answers its calls."""

    description: str | None = None
    """What the tool does, as the agent sees it (default: the real server's or the cassette's)."""
    input: dict[str, Any] | None = None
    """The tool's JSON-Schema input (default: the real server's or the cassette's; else any object)."""
    mock: MockField = None
    """A fixed result, a template string, or a `MockSpec` mapping."""
    proxy: ToolServerSpec | None = None
    """Forward calls to this real server."""
    replay: str | None = None
    """A cassette file (relative to the suite) to answer from."""
    cassette: str | None = None
    """With `proxy`: the cassette file to record every call and result into."""
    record: Literal["none", "new"] = "none"
    """With `replay`: `new` forwards calls the cassette lacks to the `proxy` and records them."""
    simulate: ToolSimulateSpec | bool | None = None
    """A model plays the tool (`true`, or `{model, instructions}`)."""
    schema_from: ToolServerSpec | str | None = None
    """For `mock` and `simulate`: take the description and input schema the block does not give from a
    real server's tool list (`{url}` or `{command}`) or from a cassette (a file name)."""

    @model_validator(mode="before")
    @classmethod
    def _short_mock(cls, data: Any) -> Any:
        return data if isinstance(data, dict) else {"mock": data}

    @model_validator(mode="after")
    def _one_behaviour(self) -> "ToolSpec":
        chosen = [
            name
            for name, present in (
                ("mock", self.mock is not None),
                ("replay", self.replay is not None),
                ("simulate", self.simulate not in (None, False)),
            )
            if present
        ]
        if self.proxy is not None and self.replay is None:
            chosen.append("proxy")
        if len(chosen) != 1:
            found = ", ".join(chosen) or "none"
            raise ValueError(f"a tool needs exactly one of 'mock', 'proxy', 'replay' or 'simulate'; found {found}")
        if self.record == "new" and (self.replay is None or self.proxy is None):
            raise ValueError("'record: new' needs a 'replay' cassette and a 'proxy' to record from")
        if self.cassette is not None and self.proxy is None:
            raise ValueError("'cassette' records a 'proxy'; to answer from a cassette use 'replay'")
        if self.schema_from is not None and (self.proxy is not None or self.replay is not None):
            raise ValueError("'schema_from' is for 'mock' and 'simulate'; a proxy or replay has its own schemas")
        return self

    def simulator_model(self, *fallbacks: str | None) -> str | None:
        """The model that plays this simulated tool: its own `simulate.model`, else the first fallback given.

        Args:
            *fallbacks: Model names in order of preference (e.g. `--simulator`, `simulator:`, the judge's).
        """
        own = self.simulate.model if isinstance(self.simulate, ToolSimulateSpec) else None
        return next((name for name in (own, *fallbacks) if name), None)

    @property
    def uses_graph(self) -> bool:
        """Whether the tool reads or writes the trial's graph (a `cypher` mock)."""
        mock = self.mock_spec
        return mock is not None and mock.cypher is not None

    @property
    def mock_spec(self) -> MockSpec | None:
        """The mock as a `MockSpec` (a fixed value or template becomes its `result`)."""
        if self.mock is None:
            return None
        if isinstance(self.mock, MockSpec):
            return self.mock  # a mapping, validated with the tool
        return MockSpec(result=self.mock)


def merge_tools(*blocks: dict[str, ToolSpec] | None) -> dict[str, ToolSpec]:
    """The tools of a case: later blocks (the case's) override earlier ones (the file's) by name."""
    merged: dict[str, ToolSpec] = {}
    for block in blocks:
        merged.update(block or {})
    return merged


ToolsBlock = dict[str, ToolSpec]
"""A `tools:` block: tool name -> spec."""


def valid_tool_names(tools: dict[str, Any]) -> dict[str, Any]:
    """Reject tool names MCP clients cannot call (letters, digits, `_`, `-`, `.`; 1-128 characters)."""
    for name in tools:
        if not re.match(_TOOL_NAME, name):
            raise ValueError(f"tool name {name!r} must be 1-128 letters, digits, '_', '-' or '.'")
    return tools
