"""Which graph a case's setups and state assertions use, and what the run says about it at start.

Assertions read the graph the agent writes. In order:

1. The run's override (`--graph URI|embedded`, `RunOptions.state`), else the suite's `state:`.
2. `NEO_URI` in the environment (Embabel's variable for the agent's Neo4j, with `NEO_USERNAME` and
   `NEO_PASSWORD`): that Neo4j, over Bolt.
3. An Embabel job with Cypher setups or assertions and nothing above: the agent's Neo4j where Embabel
   looks for it, `bolt://localhost:7687` (Embabel's own default). An agent built on Embabel writes
   there; if nothing answers there the run stops with an error saying so, never with a failed count.
   `state: {backend: falkordb}` asks for Proctor's embedded graph instead.
4. Otherwise Proctor's embedded FalkorDB, whose address reaches the agent as the trial's variables
   (`graph_uri`, ... for `http` templates and `python` callables) and as `X-Proctor-Graph-*` headers
   (`embabel`, `openai`, `lobu`).

A graph named by the environment or by Embabel's default belongs to the agent, not to Proctor: it gets
isolation `keep` (trials one at a time, nothing deleted; the job's setups prepare the graph, as in
Embabel) unless the suite says otherwise. `state_notices` says at start where each case's assertions
read, and when the agent may not have been told.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from proctor.state._neo4j import DEFAULT_NEO4J_URI
from proctor.suite import Case, StateSpec

__all__ = ["EMBEDDED", "GraphSource", "StatePlan", "graph_override", "plan_state", "state_notices"]

EMBEDDED = "embedded"
"""The `--graph` value that asks for Proctor's embedded FalkorDB."""

GraphSource = Literal["override", "suite", "environment", "embabel", "embedded"]
"""Who named the graph: `--state`, the suite's `state:`, `NEO_URI`, Embabel's default, or nobody."""

_CYPHER_TYPES = frozenset({"cypher"})


@dataclass(frozen=True, slots=True)
class StatePlan:
    """The state settings a case's trials use, and where they came from."""

    spec: StateSpec | None
    """The settings to resolve (`None`: the embedded FalkorDB with Proctor's defaults)."""
    source: GraphSource
    """Who named the graph."""


def _agents_neo4j(uri: str, environ: Mapping[str, str]) -> StateSpec:
    """The agent's own Neo4j, kept as it is (isolation `keep`).

    A user written into the URI (`bolt://neo4j@host`, the form of Embabel's default) becomes the user name
    unless `NEO_USERNAME` is set.
    """
    parts = urlsplit(uri)
    user = None
    if parts.username and parts.hostname:
        user = environ.get("NEO_USERNAME") or parts.username
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        uri = urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))
    return StateSpec(backend="neo4j", uri=uri, user=user, isolation="keep")


def graph_override(value: str) -> StateSpec:
    """The state settings `--graph VALUE` stands for: the agent's graph at a URI, or `embedded`.

    A URI (`bolt://`, `neo4j://`, `falkordb://`, `redis://`) names the agent's own graph, kept as it is
    (isolation `keep`; Neo4j credentials from `NEO_USERNAME`/`NEO_PASSWORD`); `embedded` is Proctor's
    FalkorDB with a graph per trial.

    Raises:
        ValueError: The value is neither a URI nor `embedded`.
    """
    if value == EMBEDDED:
        return StateSpec(backend="falkordb")
    if "://" not in value:
        raise ValueError(f"--graph {value!r}: expected a bolt://, neo4j://, falkordb:// or redis:// URI, or 'embedded'")
    if value.split("://", 1)[0].lower() in ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"):
        return _agents_neo4j(value, os.environ)
    return StateSpec(uri=value, isolation="keep")


def _uses_cypher(case: Case) -> bool:
    return bool(case.setups) or any(spec.type in _CYPHER_TYPES for spec in case.assert_)


def plan_state(case: Case, override: StateSpec | None = None, environ: Mapping[str, str] | None = None) -> StatePlan:
    """Decide which graph `case`'s setups and state assertions use (see the module's order).

    Args:
        case: A case whose trials need a graph.
        override: The run's state settings (`--graph`, `RunOptions.state`), which replace every suite's.
        environ: Where `NEO_URI` is read (default `os.environ`).
    """
    env = os.environ if environ is None else environ
    if override is not None:
        return StatePlan(override, "override")
    if case.state is not None:
        return StatePlan(case.state, "suite")
    if env.get("NEO_URI"):
        return StatePlan(_agents_neo4j(env["NEO_URI"], env), "environment")
    if case.metadata.get("format") == "embabel" and _uses_cypher(case):
        return StatePlan(_agents_neo4j(DEFAULT_NEO4J_URI, env), "embabel")
    return StatePlan(None, "embedded")


def _untold(target: Any) -> str | None:
    """Why the agent behind `target` may not learn the embedded graph's address (`None`: it is told).

    `target` is a built target or a target spec. A python spec (its callable not imported yet) and a
    missing target get the benefit of the doubt; a built target of an unknown kind does not.
    """
    spec = getattr(target, "spec", target)
    kind = getattr(spec, "type", None)
    if kind == "http":
        told = "graph_" in spec.model_dump_json()
        return None if told else "the http target's requests use none of the graph_* variables"
    if kind == "python":
        if spec is target or getattr(target, "wants_context", False):
            return None
        return "the python callable takes no `context` (where `context.variables['graph_uri']` is)"
    if kind in ("embabel", "openai", "lobu"):
        return f"the {kind} target tells the agent only through X-Proctor-Graph-* headers, which it must read"
    return None if target is None else "the target has no way to tell the agent"


def _embedded(plan: StatePlan) -> bool:
    """Whether the plan's graph is Proctor's embedded FalkorDB (whoever asked for it)."""
    spec = plan.spec
    return spec is None or (spec.uri is None and spec.backend != "neo4j")


def state_notices(plans: Iterable[tuple[Case, StatePlan, str | None, Any]]) -> list[str]:
    """What the run says at start about the graphs its state assertions read.

    Args:
        plans: Per case needing a graph: the case, its plan, the graph's address once started (`None`
            before), and the case's target (built).

    Returns:
        One line per distinct situation: a graph named by the environment or Embabel's default (Proctor
        deletes nothing there), and an embedded graph the agent may not have been told about.
    """
    notices: dict[str, list[str]] = {}
    for case, plan, address, target in plans:
        where = address or (plan.spec.uri if plan.spec is not None else None) or "Proctor's embedded graph"
        if plan.source == "environment":
            text = (
                f"state: Cypher setups and assertions run on the agent's Neo4j at {where} (named by NEO_URI); trials "
                "run one at a time and Proctor deletes nothing there (isolation 'keep')"
            )
        elif plan.source == "embabel":
            text = (
                f"state: these Embabel jobs' Cypher setups and assertions run on the agent's Neo4j at {where}, "
                "Embabel's default (set NEO_URI, NEO_USERNAME and NEO_PASSWORD, or the suite's state:, to name "
                "another); trials run one at a time and Proctor deletes nothing there"
            )
        elif _embedded(plan) and (why := _untold(target)) is not None:
            text = (
                f"state: assertions read Proctor's embedded graph at {where}, which the agent may not know about: "
                f"{why}; an agent writing elsewhere fails them"
            )
        else:
            continue
        notices.setdefault(text, []).append(case.name)
    return [f"{text} (cases: {', '.join(dict.fromkeys(names))})" for text, names in notices.items()]
