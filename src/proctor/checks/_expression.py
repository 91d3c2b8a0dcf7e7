"""Object-context assertions: a boolean expression over the agent's object context and the trial.

Embabel's `{expression: "objectContext.resources.size == 1"}` runs here as written: Kotlin collection
idioms are translated (`proctor.checks._kotlin`), then the expression is evaluated by `simpleeval` with
Proctor's restrictions on top:

* names: `objectContext` (alias `object_context`) and `evaluation` (`transcript`, `toolCalls` alias
  `functionCalls`, `lastReply`, `case`), plus the functions `len any all sum min max abs round sorted
  str int float bool list`;
* attribute access reads dict keys (`it.type`) and a few collection properties and methods (`size`,
  `length`, `isEmpty()`, `isNotEmpty()`, `first()`, `last()`, `contains(x)`, `lowercase()`, ...); no name
  starting with `_`, no other attribute of any object, no imports, no lambdas, no f-strings, no `%`
  formatting of strings;
* bounded: 10,000 characters of expression, 10,000 comprehension steps, strings and lists of at most
  100,000 items, 2,000,000 items built in all, exponents up to 1,000, and one second of evaluation;
* and, as a check, evaluated in a worker process with hard CPU-time and memory limits
  (`proctor.checks._sandbox`), off the event loop: the bounds above are checked between operations,
  the process limits also inside one (`round(1, -10**8)` is a single C call).
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as _dt
import functools
import itertools
import operator
import time
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import simpleeval
from pydantic import AfterValidator, BaseModel, TypeAdapter

from proctor.checks._kotlin import KotlinSyntaxError, Translation, translate
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.checks._sandbox import ExpressionError, NotBool, evaluate_off_loop
from proctor.suite import AssertionSpec
from proctor.transcript import Message

__all__ = ["ExpressionError", "compile_expression", "evaluate_expression"]

MAX_LENGTH = 10_000
"""Longest expression accepted, in characters."""
TIME_LIMIT = 1.0
"""Seconds one evaluation may take."""
MAX_EXPONENT = 1_000
"""Largest exponent `**` accepts."""
MAX_DIGITS = 1_000
"""Most digits `round()` may round to (either side of the point)."""
MAX_BUILT = 2_000_000
"""Most items (characters, elements) an evaluation may build in all, so that memory stays bounded."""
_BUILDING = (ast.BinOp, ast.Call, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.GeneratorExp, ast.DictComp)
_UNAVAILABLE = object()


@dataclasses.dataclass(frozen=True, slots=True)
class _Compiled:
    translation: Translation
    tree: ast.expr


@functools.lru_cache(maxsize=512)
def compile_expression(expression: str) -> _Compiled:
    """Translate and parse an expression once (cached), checking what can be checked before it runs.

    Raises:
        ExpressionError: It is too long, malformed, or uses syntax the sandbox does not allow.
    """
    if not expression.strip():
        raise ExpressionError(expression, None, "the expression is empty")
    if len(expression) > MAX_LENGTH:
        raise ExpressionError(expression[:60] + "...", None, f"longer than {MAX_LENGTH} characters")
    try:
        translation = translate(expression)
    except KotlinSyntaxError as exc:
        raise ExpressionError(expression, exc.position + 1, exc.reason) from None
    try:
        tree = ast.parse(translation.python.strip(), mode="eval").body
    except SyntaxError as exc:
        stripped = translation.python.strip()
        if not exc.offset or exc.offset > len(stripped):  # Python reports an early end at offset 0
            column, reason = len(expression.rstrip()) + 1, "invalid syntax: the expression ends too early"
        else:
            offset = exc.offset - 1 + len(translation.python) - len(translation.python.lstrip())
            column = translation.source_offset(offset) + 1
            reason = "invalid syntax" if exc.msg == "invalid syntax" else f"invalid syntax: {exc.msg}"
        raise ExpressionError(expression, column, reason) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExpressionError(expression, None, f"cannot be parsed: {type(exc).__name__}") from None
    for node in ast.walk(tree):
        problem = _forbidden(node)
        if problem is not None:
            column = translation.source_offset(getattr(node, "col_offset", 0)) + 1
            raise ExpressionError(expression, column, problem)
    return _Compiled(translation, tree)


def _forbidden(node: ast.AST) -> str | None:
    if isinstance(node, ast.Lambda):
        return "lambda is not allowed (use Kotlin's { ... } after any/all/count/filter/map, or a comprehension)"
    if isinstance(node, ast.JoinedStr | ast.FormattedValue):
        return "f-strings are not allowed"
    if isinstance(node, ast.NamedExpr):
        return "assignment (:=) is not allowed"
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        return f"names starting with '_' are not allowed ({node.attr})"
    if isinstance(node, ast.Name) and node.id.startswith("_"):
        return f"names starting with '_' are not allowed ({node.id})"
    if isinstance(node, ast.Await | ast.Yield | ast.YieldFrom | ast.Starred):
        return f"{type(node).__name__} is not allowed"
    return None


class _Method:
    """A whitelisted method bound to a value (what `xs.isEmpty` evaluates to before the call)."""

    __slots__ = ("function", "name")

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name = name
        self.function = function

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)


def _first(items: Any) -> Any:
    if not items:
        raise ValueError("first() of an empty collection")
    return next(iter(items))


def _last(items: Any) -> Any:
    if not items:
        raise ValueError("last() of an empty collection")
    return list(items)[-1]


_COLLECTION_METHODS: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "isEmpty": lambda v: lambda: len(v) == 0,
    "isNotEmpty": lambda v: lambda: len(v) > 0,
    "any": lambda v: lambda: len(v) > 0,
    "none": lambda v: lambda: len(v) == 0,
    "count": lambda v: lambda *x: v.count(*x) if x else len(v),
    "contains": lambda v: lambda x: x in v,
    "first": lambda v: lambda: _first(v),
    "last": lambda v: lambda: _last(v),
    "firstOrNull": lambda v: lambda: next(iter(v), None),
    "lastOrNull": lambda v: lambda: list(v)[-1] if v else None,
    "distinct": lambda v: lambda: list(dict.fromkeys(v)),
    "sorted": lambda v: lambda: sorted(v),
    "sum": lambda v: lambda: sum(v),
    "max": lambda v: lambda: max(v),
    "min": lambda v: lambda: min(v),
}
_MAP_METHODS: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "keys": lambda v: lambda: list(v.keys()),
    "values": lambda v: lambda: list(v.values()),
    "get": lambda v: lambda key, default=None: v.get(key, default),
    "containsKey": lambda v: lambda key: key in v,
    "isEmpty": lambda v: lambda: len(v) == 0,
    "isNotEmpty": lambda v: lambda: len(v) > 0,
}
_STRING_METHODS: dict[str, Callable[[str], Callable[..., Any]]] = {
    "lower": lambda v: v.lower,
    "upper": lambda v: v.upper,
    "lowercase": lambda v: v.lower,
    "uppercase": lambda v: v.upper,
    "strip": lambda v: v.strip,
    "trim": lambda v: v.strip,
    "startswith": lambda v: v.startswith,
    "startsWith": lambda v: v.startswith,
    "endswith": lambda v: v.endswith,
    "endsWith": lambda v: v.endswith,
    "contains": lambda v: lambda x: x in v,
    "isEmpty": lambda v: lambda: v == "",
    "isNotEmpty": lambda v: lambda: v != "",
    "isBlank": lambda v: lambda: not v.strip(),
    "isNotBlank": lambda v: lambda: bool(v.strip()),
    "split": lambda v: v.split,
    "count": lambda v: v.count,
}


def _round(number: Any, digits: Any = None) -> Any:
    if isinstance(digits, int) and abs(digits) > MAX_DIGITS:
        raise simpleeval.NumberTooHigh(f"round() to more than {MAX_DIGITS} digits is not allowed")
    return round(number) if digits is None else round(number, digits)


def _sum(items: Any, start: Any = 0) -> Any:
    if isinstance(start, list | tuple | str):  # joining sequences: linear, and bounded before it is built
        parts = list(items)
        size = len(start) + sum(len(part) if isinstance(part, list | tuple | str) else 1 for part in parts)
        if size > MAX_BUILT:
            raise simpleeval.IterableTooLong(f"sum() would build {size:,} items (at most {MAX_BUILT:,})")
        if isinstance(start, str):
            raise simpleeval.FeatureNotAvailable("sum() of strings is not allowed (use a comprehension)")
        joined = [*start, *itertools.chain.from_iterable(parts)]
        return tuple(joined) if isinstance(start, tuple) else joined
    return sum(items, start)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "any": any,
    "all": all,
    "sum": _sum,
    "min": min,
    "max": max,
    "abs": abs,
    "round": _round,
    "sorted": sorted,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
}


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(exponent, int | float) and abs(exponent) > MAX_EXPONENT:
        raise simpleeval.NumberTooHigh(f"exponents above {MAX_EXPONENT} are not allowed")
    if isinstance(base, int | float) and abs(base) > 10**100:
        raise simpleeval.NumberTooHigh("the base of ** is too large")
    return operator.pow(base, exponent)


def _modulo(left: Any, right: Any) -> Any:
    if isinstance(left, str | bytes):
        raise simpleeval.FeatureNotAvailable("'%' formatting of strings is not allowed")
    return operator.mod(left, right)


_OPERATORS = {**simpleeval.DEFAULT_OPERATORS, ast.Pow: _power, ast.Mod: _modulo}


class _Evaluator(simpleeval.EvalWithCompoundTypes):  # type: ignore[misc]
    """simpleeval with data-only attribute access, whitelisted calls and a deadline."""

    def __init__(self, names: dict[str, Any], deadline: float, missing: str = "") -> None:
        super().__init__(operators=dict(_OPERATORS), functions=dict(_FUNCTIONS), names=names)
        for kind in (ast.JoinedStr, ast.FormattedValue):
            self.nodes.pop(kind, None)
        self.deadline = deadline
        self.missing = missing
        self.built = 0
        self.failed_at: ast.AST | None = None

    def _eval(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise TimeoutError(f"took longer than {TIME_LIMIT:g} s")
        try:
            result = super()._eval(node)
            if isinstance(node, _BUILDING) and isinstance(result, str | bytes | list | tuple | dict | set):
                self.built += _deep_len(result, MAX_BUILT - self.built)
                if self.built > MAX_BUILT:
                    raise simpleeval.IterableTooLong(
                        f"builds more than {MAX_BUILT:,} items in all (a list repeated n times counts n times)"
                    )
            return result
        except Exception:
            if self.failed_at is None and hasattr(node, "col_offset"):
                self.failed_at = node
            raise

    def _check_disallowed_items(self, item: Any) -> None:
        """Scan call arguments and results for modules and banned functions (simpleeval's check), shallowly.

        simpleeval walks containers recursively, again for every reference to the same list, so
        `len([[1] * 100000] * 100000)` cost 10**10 steps. Here no container can hold a module or a
        function: the names are plain data (`to_data` copies), and only whitelisted functions and
        methods run, which return data. So the value itself is checked, not its contents.
        """
        if isinstance(item, types.ModuleType):
            raise simpleeval.FeatureNotAvailable("Sorry, modules are not allowed")
        if callable(item) and not isinstance(item, _Method) and item in simpleeval.DISALLOW_FUNCTIONS:
            raise simpleeval.FeatureNotAvailable("This function is forbidden")

    def _eval_name(self, node: ast.Name) -> Any:
        value = self.names.get(node.id, _UNAVAILABLE)
        if value is _UNAVAILABLE:
            if node.id in self.functions:
                raise simpleeval.FeatureNotAvailable(f"{node.id} can only be called")
            known = ", ".join(sorted(self.names))
            raise simpleeval.NameNotDefined(node.id, f"unknown name {node.id!r}; names: {known}")
        if self.missing and node.id in ("objectContext", "object_context"):
            raise LookupError(self.missing)
        return value

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        name = node.attr
        if name.startswith("_"):
            raise simpleeval.FeatureNotAvailable(f"names starting with '_' are not allowed ({name})")
        value = self._eval(node.value)
        if isinstance(value, Mapping):
            if name in value:
                return value[name]
            if name == "size":
                return len(value)
            if name in _MAP_METHODS:
                return _Method(name, _MAP_METHODS[name](value))
            keys = ", ".join(sorted(map(str, value))[:20]) or "none"
            raise LookupError(f"no key {name!r} (keys: {keys})")
        if isinstance(value, str):
            if name in ("size", "length"):
                return len(value)
            if name in _STRING_METHODS:
                return _Method(name, _STRING_METHODS[name](value))
        elif isinstance(value, list | tuple | set | frozenset):
            if name in ("size", "length"):
                return len(value)
            if name in _COLLECTION_METHODS:
                return _Method(name, _COLLECTION_METHODS[name](value))
        kind = "null" if value is None else type(value).__name__
        raise LookupError(f"a {kind} value has no property {name!r}")

    def _eval_call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Attribute):
            function = self._eval(node.func)
            if not isinstance(function, _Method):
                raise simpleeval.FeatureNotAvailable(f"{node.func.attr} is a value, not a method")
        elif isinstance(node.func, ast.Name):
            function = self.functions.get(node.func.id)
            if function is None:
                known = ", ".join(sorted(self.functions))
                message = f"unknown function {node.func.id!r}; functions: {known}"
                raise simpleeval.FunctionNotDefined(node.func.id, message)
        else:
            raise simpleeval.FeatureNotAvailable("only named functions and methods can be called")
        args = [self._eval(arg) for arg in node.args]
        keywords = {keyword.arg: self._eval(keyword.value) for keyword in node.keywords if keyword.arg}
        if len(keywords) != len(node.keywords):
            raise simpleeval.FeatureNotAvailable("**keywords are not allowed")
        return function(*args, **keywords)

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        container = self._eval(node.value)
        key = self._eval(node.slice)
        if not isinstance(container, Mapping | list | tuple | str):
            kind = "null" if container is None else type(container).__name__
            raise LookupError(f"a {kind} value cannot be indexed")
        if isinstance(key, str) and key.startswith("_") and not isinstance(container, Mapping):
            raise simpleeval.FeatureNotAvailable("names starting with '_' are not allowed")
        try:
            return container[key]
        except (KeyError, IndexError) as exc:
            raise LookupError(f"no item {key!r} ({type(exc).__name__})") from None


def _deep_len(value: Any, budget: int) -> int:
    """Items in `value` and everything it holds, a container referenced n times counted n times.

    `[[1] * 100000] * 100000` is 200,000 references but 10**10 items to anything that walks it
    (`str()`, `sum()`, a comparison); this counts the latter, visiting each container once, and stops
    counting past `budget`.
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        current, expanded = stack.pop()
        key = id(current)
        if key in sizes:
            continue
        children = list(current.values()) if isinstance(current, dict) else current
        if isinstance(current, str | bytes):
            sizes[key] = len(current)
        elif not expanded:
            stack.append((current, True))
            stack.extend((child, False) for child in children if isinstance(child, _CONTAINERS))
        else:
            total = len(children)
            for child in children:
                if isinstance(child, _CONTAINERS) and not isinstance(child, str | bytes):
                    total += sizes.get(id(child), 0)
                    if total > budget:
                        break
            sizes[key] = total
    return sizes.get(id(value), 0)


_CONTAINERS = (list, tuple, set, frozenset, dict, str, bytes)


def to_data(value: Any, depth: int = 0) -> Any:
    """Copy a value into plain data (dicts, lists, scalars); objects become dicts of their public fields."""
    if depth > 50:
        raise ValueError("the object context is nested more than 50 levels deep")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): to_data(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_data(item, depth + 1) for item in value]
    if isinstance(value, BaseModel):
        return to_data(value.model_dump(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return {key: to_data(item, depth + 1) for key, item in fields.items() if not key.startswith("_")}
    return str(value)


def evaluation_data(transcript: list[Message], case: str) -> dict[str, Any]:
    """The `evaluation` name: the trial so far (transcript, tool calls as `toolCalls`/`functionCalls`)."""
    calls = [call.to_dict() for message in transcript for call in message.tool_calls]
    replies = [message.content for message in transcript if message.role == "assistant"]
    return {
        "case": case,
        "transcript": [
            {"role": m.role, "content": m.content, "toolCalls": [c.to_dict() for c in m.tool_calls]} for m in transcript
        ],
        "toolCalls": calls,
        "functionCalls": calls,
        "tool_calls": calls,
        "replies": replies,
        "lastReply": replies[-1] if replies else None,
        "turns": len(replies),
    }


def evaluate_expression(
    expression: str,
    object_context: Any = None,
    evaluation: Mapping[str, Any] | None = None,
    *,
    missing: str = "",
    names: Mapping[str, Any] | None = None,
) -> Any:
    """Evaluate `expression` in the sandbox.

    Args:
        expression: Python, or Kotlin with the collection idioms `proctor.checks._kotlin` translates.
        object_context: The agent's object context (any JSON-like value or object; copied to plain data).
        evaluation: The trial's data (`evaluation_data`).
        missing: When set, using `objectContext` fails with this reason (no object context was fetched).
        names: More names the expression may use (plain data; e.g. the `python` check's `reply`).

    Returns:
        What the expression evaluates to.

    Raises:
        ExpressionError: It is invalid, breaks a sandbox rule, fails or takes too long.
    """
    compiled = compile_expression(expression)
    context = to_data(object_context)
    scope = {
        **{key: to_data(value) for key, value in (names or {}).items()},
        "objectContext": context,
        "object_context": context,
        "evaluation": dict(evaluation or {}),
    }
    evaluator = _Evaluator(scope, time.monotonic() + TIME_LIMIT, missing if object_context is None else "")
    evaluator.expr = expression
    try:
        return evaluator.eval(expression, previously_parsed=compiled.tree)
    except RecursionError:
        raise ExpressionError(expression, None, "nested too deeply") from None
    except MemoryError:
        raise  # the worker process reports its memory limit
    except Exception as exc:
        node = evaluator.failed_at
        column = compiled.translation.source_offset(getattr(node, "col_offset", 0)) + 1 if node else None
        raise ExpressionError(expression, column, _reason(exc)) from None


def _reason(exc: Exception) -> str:
    if isinstance(exc, simpleeval.NameNotDefined | simpleeval.FunctionNotDefined):
        return str(exc.expression) if isinstance(getattr(exc, "expression", None), str) else str(exc)
    if isinstance(exc, LookupError | TimeoutError):
        return str(exc.args[0]) if exc.args else type(exc).__name__
    if isinstance(exc, simpleeval.InvalidExpression):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _valid(expression: str) -> str:
    compile_expression(expression)  # ExpressionError is a ValueError: a located load-time error
    return expression


_VALUE = TypeAdapter(Annotated[str, AfterValidator(_valid)])


async def _check_expression(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    expression = spec.value
    if not isinstance(expression, str):
        raise TypeError(f"an expression check needs a string; found {type(expression).__name__}")
    missing = (
        ""
        if context.object_context is not None
        else (
            "no object context: the target did not provide one (give the http target an 'object_context' request "
            "or the python target an 'object_context' callable)"
        )
    )
    compile_expression(expression)  # a malformed one fails here, without a process round trip
    result = await evaluate_off_loop(
        expression, to_data(context.object_context), evaluation_data(context.transcript, context.case), missing
    )
    if isinstance(result, NotBool):
        raise ExpressionError(expression, None, f"gave {result.text} ({result.type_name}), not true or false")
    return CheckResult(
        name=spec.display_name(),
        type=spec.type,
        status="passed" if result else "failed",
        score=1.0 if result else 0.0,
        weight=spec.weight,
        reason=f"expected {expression} to be true; it is {'true' if result else 'false'}",
        turn=None,
        details={"expression": expression},
    )


registry.register(
    CheckType(
        "expression",
        "state",
        "A boolean expression over the agent's object context and the trial (Python, or Kotlin idioms "
        'as in Embabel: objectContext.entities.any { it.type == "Reminder" }).',
        _check_expression,
        value=_VALUE,
        negatable=False,
        scope="conversation",
    )
)
