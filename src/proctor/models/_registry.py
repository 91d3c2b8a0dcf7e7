"""Model providers by name, and `get_model("provider/model")`.

Built-in providers are imported on first use. A plugin package adds one in its `pyproject.toml`:

```toml
[project.entry-points."proctor.models"]
myprovider = "my_package.models:factory"
```

A factory is called as `factory(model_id, settings)` and returns a `Provider` adapter; `get_model`
wraps it in a `ManagedModel`, so plugins get caching, limits, retries and accounting too.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import cast

from proctor.errors import ConfigError
from proctor.models._base import Provider
from proctor.models._managed import ManagedModel, ModelSettings

__all__ = ["ENTRY_POINT_GROUP", "ProviderFactory", "close_models", "get_model", "providers", "register_provider"]

ENTRY_POINT_GROUP = "proctor.models"
"""The entry point group plugins register provider factories under."""

ProviderFactory = Callable[[str, ModelSettings], Provider]
"""Builds a provider adapter from a model id (the part after `provider/`) and the settings."""

_BUILTINS: dict[str, tuple[str, str]] = {
    "openai": ("proctor.models._openai", "openai_factory"),
    "ollama": ("proctor.models._openai", "ollama_factory"),
    "anthropic": ("proctor.models._anthropic", "anthropic_factory"),
    "bedrock": ("proctor.models._bedrock", "bedrock_factory"),
    "gemini": ("proctor.models._gemini", "gemini_factory"),
    "litellm": ("proctor.models._litellm", "litellm_factory"),
    "llamacpp": ("proctor.models._llamacpp", "llamacpp_factory"),
}

_factories: dict[str, ProviderFactory] = {}
_models: dict[tuple[str, ModelSettings], ManagedModel] = {}


def register_provider(name: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Register a provider, so `get_model("name/<model>")` uses `factory`.

    Args:
        name: The provider name (the part before the first `/`).
        factory: Builds the adapter from the model id and settings.
        replace: Allow replacing an existing provider.

    Raises:
        ValueError: `name` is empty, has a `/`, or is taken and `replace` is false.
    """
    if not name or "/" in name:
        raise ValueError(f"invalid provider name {name!r}")
    if not replace and (name in _factories or name in _BUILTINS):
        raise ValueError(f"model provider {name!r} is already registered")
    _factories[name] = factory
    _BUILTINS.pop(name, None)


def providers() -> list[str]:
    """Return the known provider names, sorted (built-ins, registered ones and installed plugins)."""
    names = set(_factories) | set(_BUILTINS)
    names.update(entry.name for entry in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def _factory(name: str) -> ProviderFactory | None:
    factory = _factories.get(name)
    if factory is not None:
        return factory
    builtin = _BUILTINS.get(name)
    if builtin is not None:
        module, attribute = builtin
        factory = cast(ProviderFactory, getattr(importlib.import_module(module), attribute))
    else:
        entry = next((e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == name), None)
        if entry is None:
            return None
        try:
            factory = cast(ProviderFactory, entry.load())
        except Exception as exc:
            raise ConfigError(
                f"cannot load model provider plugin {name!r} ({entry.value}): {type(exc).__name__}: {exc}"
            ) from exc
    assert factory is not None
    _factories[name] = factory
    return factory


def get_model(name: str, *, settings: ModelSettings | None = None) -> ManagedModel:
    """Return the model called `provider/model`, e.g. `openai/gpt-4.1-mini` or `ollama/llama3.2`.

    Models are kept per `(name, settings)`, so every caller with equal settings shares one model (one
    connection pool, one set of limits). SDK-backed providers check here that their extra is installed.

    Args:
        name: `provider/model`; the model part is passed to the provider as it is (it may contain `/`).
        settings: Endpoint, key, limits, retries, cache, ledger, budget and prices.

    Returns:
        The model.

    Raises:
        ConfigError: The name has no provider, or the provider is unknown (the message lists the known
            ones and suggests the closest), or the provider rejects the settings.
        proctor.errors.ModelUnavailable: The provider's SDK is not installed.
    """
    settings = settings or ModelSettings()
    key = (name, settings)
    model = _models.get(key)
    if model is not None:
        return model
    provider, slash, model_id = name.partition("/")
    if not slash or not provider or not model_id:
        raise ConfigError(
            f"model name {name!r} must be 'provider/model', e.g. 'openai/gpt-4.1-mini'; "
            f"providers: {', '.join(providers())}"
        )
    factory = _factory(provider)
    if factory is None:
        known = providers()
        close = difflib.get_close_matches(provider, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown model provider {provider!r} in {name!r}{hint}; providers: {', '.join(known)}")
    adapter = factory(model_id, settings)
    model = _models[key] = ManagedModel(name, adapter, settings)
    return model


async def close_models() -> None:
    """Close the connections of every model `get_model` handed out (they reopen when used again)."""
    for model in list(_models.values()):
        await model.aclose()
