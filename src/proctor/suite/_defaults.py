"""The default factory of the suite models' list fields."""

import functools
import inspect
from typing import Any

__all__ = ["new_list"]

new_list: "functools.partial[list[Any]]" = functools.partial(list)
"""A new empty list: `Field(default_factory=new_list)`, where `list` itself would cost start-up time.

Pydantic asks every default factory for its signature when it builds a validator, and the signature of a
builtin such as `list` is parsed from its text with `tokenize` (whose pattern compiles on first use): ~20 M
instructions of the first suite load, for the models' ~20 list fields. `inspect.signature` returns a
callable's `__signature__` when it has one (no parameters: pydantic passes the factory no data), and a
`partial` of `list` is called in C: ~70 instructions a call more than `list`, where a Python function
costs ~160 (a 5,000-case suite calls it ~5 times a case). The value is the same: a new empty list.
"""
new_list.__signature__ = inspect.Signature()  # type: ignore[attr-defined]  # honoured by inspect.signature
