"""Names of a package resolved on first access (PEP 562), so importing the package costs nothing."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each name of `table` from its module on first use.

    Args:
        package: The package's `__name__`.
        table: Public name -> the module defining it (absolute, or relative to `package` without a dot).
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module if "." in module else f"{package}.{module}"), name)
        namespace[name] = value  # the next access is a plain attribute lookup
        return value

    return __getattr__
