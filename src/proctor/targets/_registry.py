"""Target factories by type name: the built-ins and plugins from the `proctor.targets` entry points.

A plugin package declares, in its `pyproject.toml`:

```toml
[project.entry-points."proctor.targets"]
mytype = "my_package.target:MyTarget"
```

The entry point is loaded the first time a spec with `type: mytype` is built. Its value is a factory
called with the spec, plus `max_connections=` when the factory accepts that keyword (or `**kwargs`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from proctor.errors import ConfigError
from proctor.suite._targets import TargetSpec
from proctor.targets._base import DEFAULT_MAX_CONNECTIONS, Target, TargetFactory

__all__ = ["ENTRY_POINT_GROUP", "build_target", "register_target", "target_types"]

ENTRY_POINT_GROUP = "proctor.targets"
"""The entry point group plugins register target factories under."""

_factories: dict[str, TargetFactory] = {}
_builtin_spec: TypeAdapter[Any] | None = None


def register_target(name: str, factory: TargetFactory, *, replace: bool = False) -> None:
    """Register a factory for specs whose `type` is `name`.

    Args:
        name: The target type, e.g. `openai`.
        factory: Builds a target from its spec; it also gets `max_connections=` if it accepts it.
        replace: Allow replacing an existing registration.

    Raises:
        ValueError: `name` is already registered and `replace` is false.
    """
    if name in _factories and not replace:
        raise ValueError(f"target type {name!r} is already registered")
    _factories[name] = factory


def target_types() -> list[str]:
    """Return the registered target types, sorted (plugins appear once loaded).

    Returns:
        The type names.
    """
    return sorted(_factories)


def _spec_type(spec: Any) -> str:
    kind = spec.get("type") if isinstance(spec, Mapping) else getattr(spec, "type", None)
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"target specification has no 'type': {spec!r}")
    return kind


def _load_plugin(name: str) -> TargetFactory | None:
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            try:
                factory = entry.load()
            except Exception as exc:
                raise ConfigError(
                    f"cannot load target plugin {name!r} ({entry.value}): {type(exc).__name__}: {exc}"
                ) from exc
            register_target(name, factory, replace=True)
            return factory  # type: ignore[no-any-return]
    return None


def _accepts_max_connections(factory: TargetFactory) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        parameter.name == "max_connections" or parameter.kind is inspect.Parameter.VAR_KEYWORD
        for parameter in parameters
    )


def build_target(spec: Any, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> Target:
    """Build the target a spec describes.

    Args:
        spec: A validated spec (one of `proctor.suite.TargetSpec`'s members), a plugin's spec object, or
            a mapping with a `type` (validated here for built-in types).
        max_connections: Most connections the target may open at once.

    Returns:
        The target; the caller closes it with `aclose()`.

    Raises:
        ConfigError: The type is unknown, the mapping does not validate, or the factory rejects the spec.
    """
    global _builtin_spec
    name = _spec_type(spec)
    factory = _factories.get(name) or _load_plugin(name)
    if factory is None:
        raise ConfigError(f"unknown target type {name!r}; known types: {', '.join(target_types())}")
    if isinstance(spec, Mapping) and name in _BUILTINS:
        if _builtin_spec is None:
            _builtin_spec = TypeAdapter(TargetSpec)
        try:
            spec = _builtin_spec.validate_python(dict(spec))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc'][1:]) or 'target'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ConfigError(f"invalid {name} target: {problems}") from None
    if _accepts_max_connections(factory):
        return factory(spec, max_connections=max_connections)  # type: ignore[call-arg]
    return factory(spec)


def _builtin(module: str, attribute: str, extra: str | None = None) -> TargetFactory:
    """A factory that imports its module on first use: the `python` target never loads httpx or Jinja.

    A target whose SDK is an optional `extra` says which one to install when it is missing.
    """

    def factory(spec: Any, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> Target:
        try:
            loaded = importlib.import_module(module)
        except ImportError as exc:
            if extra is None:
                raise
            raise ConfigError(
                f"the {spec.type} target needs the '{extra}' extra: pip install 'proctor-eval[{extra}]' ({exc})"
            ) from None
        cls = getattr(loaded, attribute)
        return cls(spec, max_connections=max_connections)  # type: ignore[no-any-return]

    factory.__qualname__ = factory.__name__ = attribute
    return factory


_BUILTINS: dict[str, TargetFactory] = {
    "openai": _builtin("proctor.targets._openai", "OpenAITarget"),
    "http": _builtin("proctor.targets._http", "HttpTarget"),
    "lobu": _builtin("proctor.targets._lobu", "LobuTarget"),
    "python": _builtin("proctor.targets._python", "PythonTarget"),
    "embabel": _builtin("proctor.targets._embabel", "EmbabelTarget"),
    "a2a": _builtin("proctor.targets._a2a", "A2ATarget", extra="a2a"),
    "mcp": _builtin("proctor.targets._mcp", "McpTarget", extra="tools"),
}
for _name, _factory in _BUILTINS.items():
    register_target(_name, _factory)
