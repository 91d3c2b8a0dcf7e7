"""Imports put off until needed.

Names of a package resolved on first access (PEP 562), so importing the package costs nothing; and modules
imported ahead of their first use in a background thread.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["import_in_background", "lazy_attributes"]

_background: set[str] = set()
_background_lock = threading.Lock()


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


def import_in_background(module: str) -> None:
    """Start importing `module` in a daemon thread, unless it is imported or being imported already.

    For a module that will be needed soon but not yet: aiohttp from the moment an HTTP client is built to its
    first request. The part of its import that runs without the GIL (aiohttp builds two TLS contexts at
    import, and OpenSSL's loading of the CA certificates releases the GIL) then overlaps with what the main
    thread does meanwhile, instead of stalling the event loop at the first request (issue 22: 60-140 ms).
    The first real `import` of the module waits for this one to finish (Python's per-module import lock);
    an import that fails here is left for that first real import to raise where it is needed.

    Args:
        module: The module's absolute name.
    """
    if module in sys.modules:
        return
    with _background_lock:
        if module in _background:
            return
        _background.add(module)
    threading.Thread(target=_import_quietly, args=(module,), name=f"import {module}", daemon=True).start()


def _import_quietly(module: str) -> None:
    with contextlib.suppress(Exception):  # raised again by the import that needs the module, and reported there
        importlib.import_module(module)
