"""Typer's help renderer, imported without the two rich modules Proctor's help never uses.

`typer.rich_utils` imports `rich.markdown` (for `rich_markup_mode="markdown"`: markdown-it and pygments
come with it) and `rich.traceback` (for pretty exceptions) at its top: about a quarter of `proctor --help`
(callgrind). Proctor's help is in rich markup mode and its exceptions are not prettified, so neither
runs. `import_help_renderer` imports `typer.rich_utils` with stand-ins for the two classes it takes from
them: each is a class whose instances and class attributes are the real class's, imported on first use.
The stand-in modules are gone from `sys.modules` once Typer's module has loaded (a later
`import rich.markdown` imports the real one), and a Typer that wants more from them is imported as it is.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["import_help_renderer"]

RENDERER = "typer.rich_utils"
"""Typer's rich help and error renderer."""
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}
"""The modules `RENDERER` imports at its top without using them for Proctor, and the class it takes from each."""


class _Deferred(type):
    """The type of a stand-in: class attributes (`Traceback.from_exception`) are the real class's."""

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls.real(), name)


def _stand_in(module: str, name: str) -> type:
    """A class standing for `module.name`: calling it builds the real class's instance."""

    def real() -> Any:
        return getattr(importlib.import_module(module), name)

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        return real()(*args, **kwargs)

    return _Deferred(name, (), {"__new__": new, "real": staticmethod(real), "__module__": module})


def import_help_renderer() -> None:
    """Import `typer.rich_utils` (once) without importing `rich.markdown` and `rich.traceback` now."""
    if RENDERER in sys.modules:
        return
    placed: dict[str, types.ModuleType] = {}
    for module, name in DEFERRED.items():
        if module not in sys.modules:
            stand_in = types.ModuleType(module)
            setattr(stand_in, name, _stand_in(module, name))
            placed[module] = sys.modules[module] = stand_in
    try:
        importlib.import_module(RENDERER)
    except ImportError:  # a Typer that imports more from these modules: load them and it as they are
        sys.modules.pop(RENDERER, None)
    finally:
        for module, stand_in in placed.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]
    importlib.import_module(RENDERER)
