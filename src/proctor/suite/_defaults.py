"""The default factory of the suite models' list fields."""

from typing import Any

__all__ = ["new_list"]


def new_list() -> list[Any]:
    """A new empty list: `Field(default_factory=new_list)`, where `list` itself would cost start-up time.

    Pydantic asks every default factory for its signature when it builds a validator, and the signature
    of a builtin such as `list` is parsed from its text with `tokenize` (whose pattern compiles on first
    use): ~20 M instructions of the first suite load for the models' ~20 list fields. A function's
    signature is read from its code. The fields' values are the same: a new empty list each.
    """
    return []
