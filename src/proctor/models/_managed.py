"""`ManagedModel` and `ModelSettings`: the one wrapper around every provider adapter.

The order is cache → budget check → limits → retries → accounting; providers only translate requests
and responses.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from proctor._trace_context import note_model_call
from proctor.errors import ConfigError, ModelError, ModelTimeout
from proctor.models._base import GenerateConfig, ModelResponse, Provider
from proctor.models._cache import ModelCache, cache_key
from proctor.models._cost import PriceTable, default_prices
from proctor.models._ledger import Budget, UsageLedger
from proctor.models._limits import ModelLimits, shared_limits
from proctor.models._retry import RetryPolicy, call_with_retries

__all__ = ["ManagedModel", "ModelSettings"]


@dataclass(frozen=True)
class ModelSettings:
    """How a model is reached, limited, cached and accounted. Equal settings share one model object.

    The cache, ledger, budget and price table compare by identity (the cache by value), so pass the
    same objects to share them.
    """

    base_url: str | None = None
    """The endpoint, overriding the provider's default and environment (e.g. `OPENAI_BASE_URL`)."""
    api_key: str | None = field(default=None, repr=False)
    """The API key, overriding the provider's environment variable."""
    concurrency: int = 8
    """Most requests to this model in flight at once."""
    rpm: int | None = None
    """Most requests to this model started per minute; `None` for no limit."""
    max_retries: int = 3
    """Re-sends after a 429, 5xx, timeout or connection failure; 0 disables retrying."""
    retry_initial_wait: float = 0.5
    """First back-off in seconds (doubling each retry, plus jitter), unless `Retry-After` says otherwise."""
    retry_max_wait: float = 20.0
    """Longest exponential back-off in seconds."""
    cache: ModelCache | None = field(default_factory=ModelCache)
    """The on-disk cache (default: `.proctor/cache`, judge calls at temperature 0); `None` disables it."""
    ledger: UsageLedger | None = None
    """Where each call's tokens and cost are recorded, by role."""
    budget: Budget | None = None
    """The spending limit each call is checked against and charged to."""
    prices: PriceTable | None = None
    """Prices for cost accounting; `None` uses the bundled table with `$PROCTOR_PRICES` applied."""
    limit_group: str | None = None
    """Share the concurrency and rpm limits with every model naming the same group."""
    timeout: float | None = None
    """Seconds one attempt of a call may take, overriding the call's own `GenerateConfig.timeout` (each
    retry gets the same again; `--judge-timeout`); `None` keeps the call's."""

    def __post_init__(self) -> None:
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(f"model timeout must be > 0 seconds, got {self.timeout}")


class ManagedModel:
    """A `Model`: a provider adapter wrapped with caching, budget checks, limits, retries and accounting.

    Can be used as an async context manager, which closes its connections on exit.
    """

    def __init__(self, name: str, adapter: Provider, settings: ModelSettings) -> None:
        """Wrap an adapter.

        Args:
            name: The full name, `provider/model`.
            adapter: Makes the requests.
            settings: Limits, retries, cache, ledger, budget and prices.

        Raises:
            proctor.errors.ConfigError: A limit is invalid, or the limit group exists with other values.
        """
        self.name = name
        self.provider = name.partition("/")[0]
        self.adapter = adapter
        """The provider adapter (for inspection)."""
        self.settings = settings
        if settings.limit_group:
            self.limits = shared_limits(settings.limit_group, concurrency=settings.concurrency, rpm=settings.rpm)
        else:
            self.limits = ModelLimits(name, concurrency=settings.concurrency, rpm=settings.rpm)
        self._retry = RetryPolicy(
            max_retries=max(0, settings.max_retries),
            initial_wait=settings.retry_initial_wait,
            max_wait=settings.retry_max_wait,
        )

    def __repr__(self) -> str:
        return f"ManagedModel({self.name!r})"

    @property
    def prices(self) -> PriceTable:
        """The price table costs are computed with."""
        return self.settings.prices or default_prices()

    async def generate(
        self,
        messages: list[dict[str, str]],
        config: GenerateConfig | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
        role: str = "judge",
    ) -> ModelResponse:
        """Answer a conversation (see `Model.generate`).

        Args:
            messages: OpenAI-style messages.
            config: Sampling and timeout; defaults to `GenerateConfig()`.
            response_schema: A JSON Schema the answer should match.
            role: Who is calling, for usage accounting and cache rules.

        Returns:
            The response, from the cache when it has one.

        Raises:
            proctor.errors.BudgetExceeded: The budget is spent (checked before a real call).
            proctor.errors.ModelError: The call failed after retries.
        """
        config = config or GenerateConfig()
        settings = self.settings
        if settings.timeout is not None and settings.timeout != config.timeout:
            config = replace(config, timeout=settings.timeout)
        cache = settings.cache
        key: str | None = None
        if cache is not None and cache.applies(role, config):
            adapter = self.adapter
            key = cache_key(
                provider=adapter.provider,
                model=adapter.model,
                endpoint=adapter.endpoint,
                messages=messages,
                config=config,
                response_schema=response_schema,
            )
            hit = cache.get(key)
            if hit is not None:
                hit.model = self.name
                if settings.ledger is not None:
                    settings.ledger.record(role, self.name, hit.usage, 0.0, cached=True)
                note_model_call(role, self.name, 0.0, hit.usage, cached=True)
                return hit
        if settings.budget is not None:
            settings.budget.check(f"another call to {self.name}")

        # the first attempt awaited in place: no closure and no retry loop's coroutine per call (issue 22);
        # a failure goes to the retry loop, which decides whether to retry it (outside the `except`: no chained
        # context)
        failed: ModelError | None = None
        try:
            response, retries = await self._attempt(messages, config, response_schema), 0
        except ModelError as exc:
            failed = exc
        if failed is not None:
            response, retries = await call_with_retries(
                lambda: self._attempt(messages, config, response_schema), self._retry, failed=failed
            )
        response.model = self.name
        response.retries = retries
        cost = self.prices.cost(self.name, response.usage)
        response.cost_usd = cost if cost is not None else response.cost_usd
        if key is not None and cache is not None:
            cache.put(key, response, request={"model": self.name, "role": role})
        if settings.ledger is not None:
            settings.ledger.record(role, self.name, response.usage, response.cost_usd)
        note_model_call(role, self.name, response.latency_ms, response.usage)  # a span, when traced
        if settings.budget is not None:
            settings.budget.charge(response.cost_usd)
        return response

    async def _attempt(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """One attempt: a request slot, then the adapter's call within the timeout."""
        async with self.limits.slot():
            started = time.perf_counter()
            try:
                async with asyncio.timeout(config.timeout):  # cheaper than anyio's cancel scope
                    response = await self.adapter.complete(messages, config, response_schema)
            except TimeoutError:
                raise ModelTimeout(f"{self.name}: no reply within {config.timeout:g} s") from None
            response.latency_ms = (time.perf_counter() - started) * 1000
            return response

    async def aclose(self) -> None:
        """Close the adapter's connections (they reopen if the model is used again)."""
        await self.adapter.aclose()

    async def __aenter__(self) -> ManagedModel:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
