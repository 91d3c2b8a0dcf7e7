"""Model prices: the bundled table (`prices.json`, USD per million tokens) and user overrides.

A model's price is looked up by its full name (`openai/gpt-4.1-mini`), then by its model id with
dates, versions and routing prefixes removed (`gpt-4o-2024-08-06` → `gpt-4o`,
`us.anthropic.claude-sonnet-4-5-20250929-v1:0` → `claude-sonnet-4-5`), then by `provider/*`.
A model with no price costs `None`, never 0.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from proctor.errors import ConfigError
from proctor.transcript import Usage

__all__ = ["PRICES_ENV", "Price", "PriceTable", "default_prices", "load_prices"]

PRICES_ENV = "PROCTOR_PRICES"
"""Environment variable naming a JSON or YAML file whose prices override the bundled ones."""

_DATED = re.compile(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{4})$")
_BEDROCK_PREFIX = re.compile(
    r"^(?:(?:us|eu|apac|au|ca|jp|us-gov|global)\.)?(?:anthropic|meta|amazon|mistral|cohere|ai21|deepseek|openai|qwen)\."
)
_BEDROCK_VERSION = re.compile(r"(?:-v\d+(?::\d+)?|:\d+)$")


@dataclass(frozen=True, slots=True)
class Price:
    """What a model charges, in USD per million tokens."""

    input: float
    """Per million prompt tokens."""
    output: float
    """Per million completion tokens."""

    def cost(self, usage: Usage) -> float:
        """Return the cost of `usage` in USD."""
        return (usage.prompt_tokens * self.input + usage.completion_tokens * self.output) / 1_000_000


def _candidates(name: str) -> list[str]:
    provider, _, model = name.partition("/")
    seen: list[str] = []

    def add(candidate: str) -> None:
        if candidate and candidate not in seen:
            seen.append(candidate)

    add(name)
    add(model)
    bare = model.removeprefix("models/").rsplit("/", 1)[-1]
    bare = _BEDROCK_VERSION.sub("", _BEDROCK_PREFIX.sub("", bare))
    add(f"{provider}/{bare}")
    add(bare)
    undated = _DATED.sub("", bare)
    add(f"{provider}/{undated}")
    add(undated)
    add(f"{provider}/*")
    return seen


class PriceTable:
    """Prices by model name, with the lookup rules described in the module docstring."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        """Build a table.

        Args:
            prices: Price per key (`model-id`, `provider/model-id` or `provider/*`).
        """
        self._prices = dict(prices)
        self._found: dict[str, Price | None] = {}

    def __len__(self) -> int:
        return len(self._prices)

    def lookup(self, name: str) -> Price | None:
        """Find a model's price.

        Args:
            name: The model's full name, `provider/model`.

        Returns:
            The price, or `None` when the table does not know the model.
        """
        try:
            return self._found[name]
        except KeyError:
            pass
        price = next((self._prices[key] for key in _candidates(name) if key in self._prices), None)
        self._found[name] = price
        return price

    def cost(self, name: str, usage: Usage) -> float | None:
        """Return what `usage` on model `name` cost in USD, or `None` when its price is unknown."""
        price = self.lookup(name)
        return None if price is None else price.cost(usage)

    def merged(self, overrides: Mapping[str, Price]) -> PriceTable:
        """Return a new table with `overrides` replacing or adding entries."""
        return PriceTable({**self._prices, **overrides})


def _parse(data: Any, source: str) -> dict[str, Price]:
    if isinstance(data, Mapping) and isinstance(data.get("models"), Mapping):
        data = data["models"]
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a mapping of model name to {{input, output}} prices")
    prices: dict[str, Price] = {}
    for key, value in data.items():
        if str(key).startswith("_"):
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(f"{source}: {key}: expected {{input: <USD per 1M>, output: <USD per 1M>}}")
        try:
            price = Price(float(value["input"]), float(value["output"]))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"{source}: {key}: needs numeric 'input' and 'output' (USD per million tokens), got {dict(value)}"
            ) from None
        if price.input < 0 or price.output < 0:
            raise ConfigError(f"{source}: {key}: prices cannot be negative")
        prices[str(key)] = price
    return prices


def _bundled() -> dict[str, Price]:
    text = files("proctor.models").joinpath("prices.json").read_text(encoding="utf-8")
    return _parse(json.loads(text), "bundled prices.json")


def _read_file(path: str | Path) -> dict[str, Price]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read price file {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # ValueError from json, yaml.YAMLError
        raise ConfigError(f"price file {path} does not parse: {exc}") from None
    return _parse(data, str(path))


def load_prices(path: str | Path | None = None) -> PriceTable:
    """Load the bundled prices, overridden by a JSON or YAML file.

    The file maps model names to `{input: <USD per 1M tokens>, output: <USD per 1M tokens>}`
    (optionally under a top-level `models:` key), like the bundled `prices.json`.

    Args:
        path: The override file; `None` uses `$PROCTOR_PRICES` when set, else no override.

    Returns:
        The price table.

    Raises:
        ConfigError: The file cannot be read or has a bad entry.
    """
    table = PriceTable(_bundled())
    path = path if path is not None else os.environ.get(PRICES_ENV) or None
    return table if path is None else table.merged(_read_file(path))


_default: tuple[str | None, PriceTable] | None = None


def default_prices() -> PriceTable:
    """Return the bundled prices with `$PROCTOR_PRICES` applied (loaded once per value of the variable).

    Returns:
        The price table models use unless their settings name another.

    Raises:
        ConfigError: The override file cannot be read or has a bad entry.
    """
    global _default
    env = os.environ.get(PRICES_ENV) or None
    if _default is None or _default[0] != env:
        _default = (env, load_prices(env))
    return _default[1]
