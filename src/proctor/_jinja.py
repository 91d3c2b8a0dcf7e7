"""Jinja's sandbox with limits: templates in suite files are data, and data must not exhaust the machine.

Jinja's `SandboxedEnvironment` stops a template from reaching Python's internals (`__class__`, `os`) and
caps `range()` at 100,000 items, but a template can still ask for any amount of work or memory:
`{{ 10 ** 10000000 }}` computes for seconds, `{{ 'a' * 4000000000 }}` allocates 4 GB, nested loops or a
recursive macro run for hours. `LimitedSandbox` refuses those with a `SecurityError` (which the callers
report, located, as for any template that is not allowed):

- work: every loop iteration and every call a render makes (functions, methods, macros, filters' own
  calls excluded) counts against `MAX_STEPS` per render; loops are counted by wrapping each `{% for %}`'s
  iterable when the template is compiled (`from_string` does it for every template it compiles);
- memory: `**`, `*` and `+` refuse results beyond `MAX_INT_BITS` / `MAX_SIZE`; `%` and `.format()` refuse
  field widths or precisions beyond `MAX_SIZE`; the padding methods and filters (`ljust`, `rjust`,
  `center`, `zfill`, `expandtabs`, `|center`, `|indent`) refuse widths beyond it; a statement template's
  output stops at `MAX_OUTPUT` characters (`render`).

The step budget applies inside `render`, `evaluate` and `budget` (a `ContextVar`: the budget of the render in
progress); outside them, only the memory limits apply.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["MAX_INT_BITS", "MAX_OUTPUT", "MAX_SIZE", "MAX_STEPS", "LimitedSandbox", "budget", "evaluate", "render"]

MAX_STEPS = 100_000
"""Loop iterations plus calls one render may make (~0.05 s of loop iterations, ~0.6 s of macro calls)."""
MAX_INT_BITS = 100_000
"""Largest integer a `**` or `*` may produce (~30,000 digits)."""
MAX_SIZE = 10_000_000
"""Largest string or sequence a `*` or `+` may build, and largest width or precision a format may ask for."""
MAX_OUTPUT = 10_000_000
"""Characters a statement template may produce."""

_PADDING = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs"})
"""`str` methods whose integer argument is the length of the string they build."""
_PERCENT_WIDTH = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d+|\*)?(?:\.(\d+|\*))?")
_BRACE_WIDTH = re.compile(r"\{[^{}]*:[^{}]*?(\d+)[^{}]*\}")
_steps: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("proctor_template_steps", default=None)


class LimitedSandbox(SandboxedEnvironment):
    """A `SandboxedEnvironment` that bounds the work and the memory a template may ask for."""

    intercepted_binops = frozenset({"**", "*", "+", "%"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Build the environment (the arguments are `jinja2.Environment`'s)."""
        super().__init__(*args, **kwargs)
        self.filters["center"] = _bounded_width(self.filters["center"])
        self.filters["indent"] = _bounded_width(self.filters["indent"])
        self.filters["format"] = _bounded_format(self.filters["format"])

    def from_string(
        self,
        source: str | nodes.Template,
        globals: MutableMapping[str, Any] | None = None,
        template_class: type[jinja2.Template] | None = None,
    ) -> jinja2.Template:
        """Compile a template whose loops count against the render's step budget."""
        tree = self.parse(source) if isinstance(source, str) else source
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.EnvironmentAttribute("counted"), [loop.iter], [], None, None)
        return super().from_string(tree, globals, template_class)

    def counted(self, items: Iterable[Any]) -> Iterator[Any]:
        """A loop's items, each counted as a step."""
        for item in items:
            _step()
            yield item

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """`**`, `*`, `+` and `%` with their results bounded."""
        if operator == "**":
            _check_power(left, right)
        elif operator == "*":
            _check_product(left, right)
        elif operator == "+":
            _check_sum(left, right)
        elif operator == "%" and isinstance(left, str):
            _check_percent(left)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """A call from the template: counted, and padding to a huge width refused."""
        _step()
        method = getattr(__obj, "__wrapped__", __obj)  # the sandbox's wrapper of `str.format` names it
        text = getattr(method, "__self__", None)
        if isinstance(text, str):
            name = getattr(method, "__name__", "")
            if name in _PADDING:
                _check_widths(args, kwargs)
            elif name in {"format", "format_map"}:
                _check_braces(text)
        return super().call(__context, __obj, *args, **kwargs)


def render(template: jinja2.Template, variables: Mapping[str, Any]) -> str:
    """Render a statement template within the step budget, its output bounded by `MAX_OUTPUT`.

    Raises:
        jinja2.exceptions.SecurityError: A limit was reached.
    """
    with budget():
        out: list[str] = []
        size = 0
        for chunk in template.generate(variables):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise SecurityError(f"the template's output is longer than {MAX_OUTPUT:,} characters")
            out.append(chunk)
        return "".join(out)


def evaluate(expression: Callable[..., Any], variables: Mapping[str, Any]) -> Any:
    """Evaluate a compiled expression (`Environment.compile_expression`'s) within the step budget.

    Raises:
        jinja2.exceptions.SecurityError: A limit was reached.
    """
    with budget():
        return expression(**variables)


@contextmanager
def budget() -> Iterator[None]:
    """Give the renders inside the block a fresh step budget (`render` and `evaluate` do it themselves)."""
    token = _steps.set([MAX_STEPS])
    try:
        yield
    finally:
        _steps.reset(token)


def _step() -> None:
    budget = _steps.get()
    if budget is None:
        return
    budget[0] -= 1
    if budget[0] < 0:
        raise SecurityError(f"the template takes more than {MAX_STEPS:,} steps (loop iterations and calls)")


def _check_power(base: Any, exponent: Any) -> None:
    too_big = isinstance(base, int) and isinstance(exponent, int) and exponent > 0
    if too_big and max(abs(base).bit_length() - 1, 0) * exponent > MAX_INT_BITS:
        raise SecurityError(f"{base} ** {exponent} is larger than {MAX_INT_BITS:,} bits")


def _check_product(left: Any, right: Any) -> None:
    if isinstance(left, int) and isinstance(right, int):
        if abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS:
            raise SecurityError(f"a product larger than {MAX_INT_BITS:,} bits")
        return
    times, sized = (left, right) if isinstance(left, int) else (right, left)
    if isinstance(times, int) and hasattr(sized, "__len__") and len(sized) * times > MAX_SIZE:
        raise SecurityError(f"repeating {len(sized):,} items {times:,} times is more than {MAX_SIZE:,}")


def _check_sum(left: Any, right: Any) -> None:
    sequences = isinstance(left, str | list | tuple | bytes) and isinstance(right, str | list | tuple | bytes)
    if sequences and len(left) + len(right) > MAX_SIZE:
        raise SecurityError(f"a concatenation longer than {MAX_SIZE:,}")


def _check_percent(template: str) -> None:
    for width, precision in _PERCENT_WIDTH.findall(template):
        for number in (width, precision):
            if number.isdigit() and int(number) > MAX_SIZE:
                raise SecurityError(f"a %-format width or precision over {MAX_SIZE:,}")


def _check_braces(template: str) -> None:
    for number in _BRACE_WIDTH.findall(template):
        if int(number) > MAX_SIZE:
            raise SecurityError(f"a format width or precision over {MAX_SIZE:,}")


def _check_widths(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and value > MAX_SIZE:
            raise SecurityError(f"a width over {MAX_SIZE:,}")


def _bounded_width(filter_: Callable[..., Any]) -> Callable[..., Any]:
    """A filter whose integer arguments (widths) are bounded by `MAX_SIZE`."""

    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        _check_widths(args, kwargs)
        return filter_(value, *args, **kwargs)

    return bounded


def _bounded_format(filter_: Callable[..., Any]) -> Callable[..., Any]:
    """The `format` filter (`%`-formatting) with its widths and precisions bounded."""

    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        _check_percent(str(value))
        return filter_(value, *args, **kwargs)

    return bounded
