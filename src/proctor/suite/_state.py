"""State specifications: the agent's knowledge graph, setup scripts, and how trials are kept apart.

```yaml
state:                         # optional; without it an embedded FalkorDB is started when needed
  backend: neo4j               # or falkordb; default: from the uri's scheme, else the embedded engine
  uri: ${NEO_URI}              # bolt://, neo4j://, falkordb://, redis://; default NEO_URI for neo4j
  isolation: serial            # graph | label | serial | shared (default: graph, or serial on Neo4j)
setups:                        # Embabel's setup scripts: run before each trial, in a clean graph
  - cypher: "CREATE (:Person {name: 'Alice'})"
assertions:                    # Embabel's assertions, recognised by their keys (same as `assert`)
  - cypher: "MATCH (r:Reminder) RETURN count(r) AS count"
    expected: 1
    weight: 3
  - expression: 'objectContext.entities.any { it.type == "Reminder" }'
```
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from proctor.suite._defaults import new_list
from proctor.suite._trust import FileRefError, read_named_text

__all__ = [
    "CYPHER_KEYS",
    "EXPRESSION_KEYS",
    "Isolation",
    "SetupSpec",
    "SetupStep",
    "StateSpec",
    "setup_steps",
    "shorthand_assertion",
    "split_statements",
]

CYPHER_KEYS = frozenset({"cypher", "params", "expected", "expected_rows", "ordered", "tolerance", "string_numbers"})
"""Keys of a Cypher assertion (Embabel's `{cypher, expected}` plus Proctor's options)."""
EXPRESSION_KEYS = frozenset({"expression"})
"""Keys of an object-context assertion (Embabel's `{expression}`)."""

Isolation = Literal["graph", "label", "serial", "shared", "keep"]
"""How trials are kept apart in the graph:

* `graph`: a fresh graph per trial (FalkorDB: a graph per trial; Neo4j: a database per trial, which needs
  an edition with several databases), dropped after the trial. Trials run concurrently.
* `label`: one graph; each trial gets its own label (`graph_label`, and `{{ graph_label }}` in Cypher),
  whose nodes are deleted after the trial (or the `teardown` runs). Trials run concurrently: the agent must
  put the label on what it writes.
* `serial`: one graph; trials that use it run one at a time, each in a clean graph (everything is deleted
  before the trial, unless a `teardown` is declared, which then runs after each trial instead).
* `shared`: one graph, trials concurrent, nothing deleted (the `teardown` runs if declared): only when
  the suite says trials may share it.
* `keep`: one graph, trials one at a time, nothing deleted by Proctor (the setups prepare it, and the
  `teardown` runs if declared): Embabel's behaviour, and the default on a graph that only the environment
  (`NEO_URI`) or Embabel's default address names, since that graph is the agent's, not Proctor's.
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # see _model.suite_file_spec


class SetupSpec(_Strict):
    """One setup (or teardown) script: Cypher run before each trial (Embabel's `setups`).

    Example:
        ```yaml
        setups:
          - cypher: "CREATE (:Person {name: $name})"
            params: {name: Alice}
          - file: fixtures/people.cypher      # statements separated by ';'
        ```
    """

    cypher: str | None = None
    """Cypher text; several statements may be separated by `;`."""
    file: str | None = None
    """A file of Cypher statements separated by `;`, relative to the suite file."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Query parameters (`$name` in the Cypher)."""

    @model_validator(mode="after")
    def _one_source(self) -> "SetupSpec":
        if (self.cypher is None) == (self.file is None):
            raise ValueError("a setup needs exactly one of 'cypher' or 'file'")
        if self.cypher is not None and not split_statements(self.cypher):
            raise ValueError("the setup's 'cypher' holds no statement")
        return self


@dataclass(frozen=True, slots=True)
class SetupStep:
    """One resolved setup statement, ready to run."""

    statement: str
    """A single Cypher statement."""
    params: dict[str, Any] = field(default_factory=dict)
    """Its parameters."""
    source: str = ""
    """Where it came from (e.g. `setups[0]` or a file path), for error messages."""


class StateSpec(_Strict):
    """Where the agent's state lives and how trials are kept apart (one per suite file).

    Connection values may use `${VAR}` to read the environment.
    """

    backend: Literal["falkordb", "neo4j"] | None = None
    """`neo4j` (official driver, Bolt) or `falkordb`; default from `uri`'s scheme, else the embedded FalkorDB."""
    uri: str | None = None
    """The server. Neo4j: `bolt://`, `neo4j://` (+s/+ssc), default `NEO_URI` or `bolt://localhost:7687`.
    FalkorDB: `falkordb://host:port` or `redis://host:port`; none means an embedded FalkorDB started by
    Proctor for the run."""
    user: str | None = None
    """User name; Neo4j default `NEO_USERNAME` or `neo4j`."""
    password_env: str = "NEO_PASSWORD"
    """Environment variable holding the password (never the password itself)."""
    graph: str | None = None
    """The graph (FalkorDB) or database (Neo4j) used by `label`, `serial` and `shared` isolation; default
    the server's default database (Neo4j) or `proctor` (FalkorDB)."""
    isolation: Isolation | None = None
    """How trials are kept apart; default `graph` on FalkorDB, `serial` on Neo4j named by the suite, `keep`
    on a Neo4j named only by `NEO_URI` (see `Isolation`)."""
    teardown: list[SetupSpec] = Field(default_factory=new_list)
    """Cypher run after each trial (for `label`, `serial` and `shared` isolation)."""
    data_dir: str | None = None
    """Embedded engine only: where its data lives (default: a temporary directory removed after the run)."""
    query_timeout: float = Field(default=30.0, gt=0)
    """Seconds one setup or assertion query may take."""

    @model_validator(mode="after")
    def _consistent(self) -> "StateSpec":
        if self.data_dir is not None and self.uri is not None:
            raise ValueError("'data_dir' is for the embedded engine; a server given by 'uri' keeps its own data")
        if self.backend == "falkordb" and self.uri and self.uri.split(":", 1)[0] in ("bolt", "neo4j"):
            raise ValueError(f"backend 'falkordb' cannot use the Bolt uri {self.uri!r}; set backend: neo4j")
        return self


def setup_steps(
    specs: Sequence[SetupSpec], base: Path, where: str, root: Path | None = None
) -> tuple[list[SetupStep], list[tuple[int, str]]]:
    """Resolve setup scripts into single statements, reading `file:` scripts relative to `base`.

    Args:
        specs: The `setups` (or `teardown`) entries.
        base: The suite file's directory.
        where: The field's name, for each step's `source` (e.g. `setups`).
        root: The project root scripts must lie in (`None`: anywhere); regular files of bounded size only.

    Returns:
        The steps in order, and the problems found as `(index of the entry, message)`.
    """
    steps: list[SetupStep] = []
    problems: list[tuple[int, str]] = []
    for index, spec in enumerate(specs):
        text, source = spec.cypher, f"{where}[{index}]"
        if spec.file is not None:
            script = base / spec.file
            try:
                text = read_named_text(spec.file, base, root, "setup script")
            except FileRefError as exc:
                problems.append((index, str(exc)))
                continue
            source = str(script)
        statements = split_statements(text or "")
        if not statements:
            problems.append((index, f"{source} holds no Cypher statement"))
        steps.extend(SetupStep(statement, dict(spec.params), source) for statement in statements)
    return steps, problems


def shorthand_assertion(data: Any) -> Any:
    """Turn Embabel's assertion shapes into Proctor's `{type, value, weight}` (other data is returned as is).

    `{cypher: ..., expected: 1, weight: 3}` becomes `{type: cypher, value: {cypher: ..., expected: 1},
    weight: 3}`; `{expression: "...", weight: 2}` becomes `{type: expression, value: "...", weight: 2}`.
    The same keys are accepted beside an explicit `type: cypher` or `type: expression` without `value`.
    """
    if not isinstance(data, dict) or "value" in data:
        return data
    kind = data.get("type")
    if kind in (None, "cypher") and "cypher" in data:
        value = {key: data[key] for key in data if key in CYPHER_KEYS}
        rest = {key: data[key] for key in data if key not in CYPHER_KEYS}
        return {**rest, "type": "cypher", "value": value}
    if kind in (None, "expression") and "expression" in data:
        rest = {key: data[key] for key in data if key not in EXPRESSION_KEYS}
        return {**rest, "type": "expression", "value": data["expression"]}
    return data


def split_statements(text: str) -> list[str]:
    """Split Cypher text into statements at `;` outside strings, quoted names and comments.

    Args:
        text: One or more Cypher statements.

    Returns:
        The non-empty statements, stripped, without their `;`.
    """
    statements: list[str] = []
    current: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char in "'\"`":
            end = index + 1
            while end < length and text[end] != char:
                end += 2 if text[end] == "\\" and char != "`" else 1
            current.append(text[index : end + 1])
            index = end + 1
            continue
        if text.startswith("//", index):
            end = text.find("\n", index)
            index = length if end < 0 else end
            continue
        if text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = length if end < 0 else end + 2
            continue
        if char == ";":
            statements.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    statements.append("".join(current))
    return [statement.strip() for statement in statements if statement.strip()]
