"""The check registry: every check type by name, with its value schema and implementation.

Built-in checks register here exactly as a plugin does (`register_check`); third-party packages add
theirs through the `proctor.checks` entry-point group. The suite JSON Schema, `proctor list --checks`
and load-time validation are all derived from this one registry.

A built-in family module is imported the first time one of its check types is asked for (`BUILTINS`
maps each name to its module), so a run whose suites use `contains` never loads the judges, the
NovaEval scorers or the state checks; listing every type (`names`, iterating) imports them all.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter, ValidationError

from proctor._slots import slot_init
from proctor.checks._result import CheckResult
from proctor.suite import AssertionSpec, Rubric
from proctor.transcript import AgentReply, Message

if TYPE_CHECKING:
    from proctor.checks._judging import Judge

__all__ = [
    "BUILTINS",
    "NEGATION_PREFIX",
    "CheckContext",
    "CheckFunction",
    "CheckRegistry",
    "CheckType",
    "Outcome",
    "register_check",
    "registry",
]

NEGATION_PREFIX = "not-"

_FAMILIES: dict[str, tuple[str, ...]] = {
    "_agent_scorers": (
        "context-relevancy", "conversation-coherence", "goal-achievement", "parameter-correctness",
        "role-adherence", "task-progression", "tool-correctness", "tool-correctness-exact", "tool-relevancy",
    ),
    "_expression": ("expression",),
    "_format": ("is-json", "json-schema"),
    "_geval": ("g-eval",),
    "_judges": ("coherence", "completeness", "faithfulness", "instruction", "llm-rubric", "relevance", "rubric"),
    "_prechecks": ("format-checker", "length-checker", "overlap-checker"),
    "_python": ("python",),
    "_state": ("cypher",),
    "_text": ("contains", "contains-all", "contains-any", "equals", "icontains", "regex", "starts-with"),
    "_timing": ("latency",),
    "_tool_checks": ("tool-args-match", "tool-call-f1", "tool-called", "tool-not-called", "tool-sequence"),
    "_trajectory": ("journey",),
    "_transcript": ("tasks",),
}  # fmt: skip
BUILTINS: Mapping[str, str] = {
    name: f"proctor.checks.{module}" for module, names in _FAMILIES.items() for name in names
}
"""Every built-in check type -> the module that registers it (on import); `tests/checks/test_registry.py`
holds it equal to what the modules register."""


@slot_init  # one per turn checked: built ~4x sooner than by the frozen dataclass's own `__init__`
@dataclass(frozen=True, slots=True)
class CheckContext:
    """Everything a check may look at."""

    reply: AgentReply | None
    """The reply being checked; `None` for checks over the whole conversation."""
    turn: int | None
    """0-based turn index, or `None` for conversation checks."""
    transcript: list[Message]
    """The conversation so far (for a turn check: up to and including this reply)."""
    case: str
    """The case name."""
    rubric: Rubric | None = None
    """The case's rubric file, for the `rubric` check."""
    judge: Judge | None = None
    """The judge model for LLM-judged checks; `None` when none is configured (they are then skipped)."""
    object_context: Any = None
    """The agent's object context, fetched from the target after the conversation (when it offers one)."""
    state: Any = None
    """The trial's state backend (e.g. its knowledge graph), for state assertions; `None` when unused."""


@slot_init  # one per deterministic check run
@dataclass(frozen=True, slots=True)
class Outcome:
    """What a deterministic check observed; the registry turns it into a `CheckResult`.

    The reason reads `expected reply {expectation}; {observation}` (with `not` for negated checks),
    so `observation` must state a fact that is true whichever way the check went.
    """

    ok: bool
    """Whether the condition holds."""
    expectation: str
    """The condition, phrased to follow "expected reply", e.g. "to contain 'Acme'"."""
    observation: str
    """What was found, e.g. "found 'Acme' at offset 12"."""
    score: float | None = None
    """A partial score in 0..1; defaults to 1 or 0 from `ok`."""
    details: dict[str, Any] = field(default_factory=dict)
    """Extra data for the result."""


CheckFunction = Callable[[AssertionSpec, CheckContext], "Outcome | CheckResult | Awaitable[CheckResult]"]
"""A check implementation: sync returning an `Outcome` (deterministic checks) or a `CheckResult`, or
async returning a `CheckResult` (checks that call a model). The registry negates an `Outcome` for the
`not-` form; a check that returns its own `CheckResult` and is `negatable` applies the `not-` form
itself (`spec.type` says which form was asked for), as the tool-call checks do."""


@dataclass(frozen=True, slots=True)
class CheckType:
    """A registered check type."""

    name: str
    """The YAML `type`, kebab-case."""
    family: str
    """The family module it belongs to (`text`, `format`, `timing`, `judges`, ...)."""
    description: str
    """One line for `proctor list --checks` and the JSON Schema."""
    function: CheckFunction
    """The implementation."""
    value: TypeAdapter[Any] | None = None
    """Validates the assertion's `value`; `None` means the check takes no value."""
    value_required: bool = True
    """Whether `value` must be given (only when `value` is not `None`)."""
    negatable: bool = True
    """Whether a `not-` form exists."""
    needs_model: bool = False
    """Whether the check calls an LLM (judge)."""
    scope: Literal["turn", "conversation", "any"] = "turn"
    """Where it may be used: on one reply (a turn's `assert`), on the whole conversation (the case's
    `assert`, run after the last turn), or both (`any`: e.g. `tool-called` on one turn's calls or on all)."""
    internal: bool = False
    """Set by Proctor itself, never written in a suite (e.g. `rubric`, from the case's `rubric:` file)."""
    needs_state: bool = False
    """Whether the check queries the trial's state backend (the runner then gives each trial a graph)."""


class CheckRegistry:
    """Check types by name. Implements `proctor.suite.CheckCatalog` for load-time validation."""

    def __init__(self, modules: Mapping[str, str] | None = None) -> None:
        """A registry, empty or with check types that load on first use.

        Args:
            modules: Check type name -> the module that registers it when imported; the module is imported
                the first time the name is resolved (or every type is listed).
        """
        self._types: dict[str, CheckType] = {}
        self._pending: dict[str, str] = dict(modules or {})
        self._plugins_loaded = False
        self._plugins: dict[str, str] = {}
        self._valid: set[str] = set()
        """Names `check_type` accepted: an answer no later registration changes (types are never removed)."""
        self._in_scope: set[tuple[str, str]] = set()
        """`(name, where)` pairs `check_scope` accepted, likewise."""
        self._any_text: dict[str, bool] = {}
        """Per type: whether its value adapter is a bare `str` (it returns any `str` as it is)."""

    def register(self, check: CheckType) -> CheckType:
        """Add a check type.

        Raises:
            ValueError: The name is taken (a built-in's name too, loaded or not) or starts with `not-`.
        """
        module = self._pending.get(check.name)
        if module is not None:
            if module in sys.modules:  # the built-in's module registering it, while it is imported
                del self._pending[check.name]
            else:  # another claims a built-in's name: load the built-in, so that the name is taken
                self._load(module)
        if check.name in self._types:
            raise ValueError(f"check type {check.name!r} is already registered")
        if check.name.startswith(NEGATION_PREFIX):
            raise ValueError(f"check type names may not start with {NEGATION_PREFIX!r}: {check.name!r}")
        self._types[check.name] = check
        return check

    def __iter__(self) -> Iterator[CheckType]:
        for module in sorted(set(self._pending.values())):
            self._load(module)
        self._load_plugins()
        return iter(sorted(self._types.values(), key=lambda c: (c.family, c.name)))

    def names(self) -> list[str]:
        """Every valid `type`, `not-` forms included, sorted."""
        names = []
        for check in self:
            if check.internal:
                continue
            names.append(check.name)
            if check.negatable:
                names.append(NEGATION_PREFIX + check.name)
        return sorted(names)

    def resolve(self, name: str) -> tuple[CheckType, bool]:
        """Return the check type for `name` and whether it is negated.

        Raises:
            ValueError: Unknown name; the message lists the valid choices and the closest one.
        """
        check = self._known(name)
        if check is not None:
            return check, False
        if name.startswith(NEGATION_PREFIX):
            base = self._known(name[len(NEGATION_PREFIX) :])
            if base is not None and base.negatable:
                return base, True
        self._load_plugins()
        if name in self._types:
            return self._types[name], False
        valid = self.names()
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        raise ValueError(f"unknown check type {name!r}{hint} Valid types: {', '.join(valid)}")

    # CheckCatalog
    def check_type(self, name: str) -> None:
        """Raise `ValueError` when `name` is not a valid assertion type."""
        if name in self._valid:  # asked once per assertion at load time: the answer once per name
            return
        check, _ = self.resolve(name)
        if check.internal:
            raise ValueError(f"{name!r} is set by the case's '{name}:' field, not as an assertion")
        self._valid.add(name)

    def check_scope(self, name: str, where: str) -> None:
        """Raise `ValueError` when `name` cannot be used in a turn's (`turn`) or the case's (`case`) `assert`."""
        if (name, where) in self._in_scope:
            return
        try:
            check, _ = self.resolve(name)
        except ValueError:
            return  # reported by check_type
        if where == "turn" and check.scope == "conversation":
            raise ValueError(f"{name!r} checks the whole conversation: put it in the case's 'assert', not a turn's")
        if where == "case" and check.scope == "turn":
            raise ValueError(f"{name!r} checks one reply: put it in a turn's 'assert', not the case's")
        self._in_scope.add((name, where))

    def check_value(self, name: str, value: Any) -> Any:
        """Validate an assertion's value for check type `name`."""
        check = self._types.get(name)  # a registered type's own name: no need to resolve it
        if check is None:
            check, _ = self.resolve(name)
        if check.value is None:
            if value is not None:
                raise ValueError(f"check type {name!r} takes no value; found {value!r}")
            return None
        if value is None:
            if check.value_required:
                raise ValueError(f"check type {name!r} needs a value: {check.description}")
            return None
        if type(value) is str and self._takes_any_text(check):
            return value  # what a bare `str` adapter returns for it (W2: 5,000 values, one pydantic call each)
        try:
            return check.value.validator.validate_python(value)  # what `TypeAdapter.validate_python` calls
        except ValidationError as exc:
            problems = "; ".join(err["msg"].removeprefix("Value error, ") for err in exc.errors())
            found = repr(value)
            found = found if len(found) <= 200 else f"{found[:197]}..."
            raise ValueError(f"bad value for check type {name!r}: {problems}; found {found}") from None

    def _takes_any_text(self, check: CheckType) -> bool:
        """Whether `check`'s value adapter is `TypeAdapter(str)` with no constraints and no config."""
        known = self._any_text.get(check.name)
        if known is None:
            try:
                known = check.value is not None and (
                    check.value.core_schema == {"type": "str"} and getattr(check.value, "_config", ...) is None
                )
            except Exception:  # a schema not built yet, or not comparable: validate as before
                known = False
            self._any_text[check.name] = known
        return known

    def _known(self, name: str) -> CheckType | None:
        """The registered type `name`, importing its built-in module first when it has not loaded yet."""
        check = self._types.get(name)
        if check is None and name in self._pending:
            self._load(self._pending[name])
            check = self._types.get(name)
        return check

    def _load(self, module: str) -> None:
        """Import a built-in family module (it registers its types); its names are no longer pending."""
        importlib.import_module(module)
        for name in [name for name, owner in self._pending.items() if owner == module]:
            del self._pending[name]  # registered by the import; never import twice for a stale entry

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group="proctor.checks"):
            loaded = entry.load()
            for check in loaded if isinstance(loaded, list | tuple) else [loaded]:
                if isinstance(check, CheckType) and check.name not in self._types and check.name not in self._pending:
                    self.register(check)
                    self._plugins[check.name] = f"{entry.value} (entry point {entry.name!r})"

    def plugin_of(self, name: str) -> str | None:
        """The plugin a check type comes from (its entry point), or `None` for a built-in one.

        The loader asks: a suite may use a plugin's check types only when the user trusts it.
        """
        return self._plugins.get(name.removeprefix(NEGATION_PREFIX))


registry = CheckRegistry(BUILTINS)
"""The process-wide registry the loader and runner use; the built-in checks load on first use."""


def register_check(check: CheckType) -> CheckType:
    """Register a check type in the process-wide registry (what built-ins and plugins both do).

    Example:
        ```python
        def _no_apology(spec, context):
            text = context.reply.text.lower()
            return Outcome("sorry" not in text, "not to apologise", f"reply: {text[:40]!r}")

        register_check(CheckType("no-apology", "custom", "Reply does not apologise.", _no_apology))
        ```
    """
    return registry.register(check)
