"""`litellm/<anything>`: any model LiteLLM routes (extra `litellm`), e.g. `litellm/mistral/mistral-large-latest`.

The request is LiteLLM's OpenAI-style `acompletion` keywords and its answer the OpenAI shape, so the
OpenAI adapter's pure functions build and parse them. LiteLLM's own retries are off (Proctor retries),
unsupported parameters are dropped (`drop_params`), and LiteLLM's computed cost is used when
Proctor's price table does not know the model.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from proctor._redact import remember_credential, remember_environment_secrets, remember_url_credentials
from proctor.models._base import GenerateConfig, ModelResponse, check_module, require_module
from proctor.models._openai import build_chat_request, parse_chat_response
from proctor.models._retry import map_sdk_error

if TYPE_CHECKING:
    from proctor.models._managed import ModelSettings

__all__ = ["LiteLLMProvider", "build_litellm_request", "litellm_factory", "parse_litellm_response"]


def build_litellm_request(
    model: str,
    messages: list[dict[str, str]],
    config: GenerateConfig,
    response_schema: dict[str, Any] | None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """Build the keyword arguments of `litellm.acompletion`.

    Args:
        model: LiteLLM's model string, e.g. `anthropic/claude-haiku-4-5`.
        messages: OpenAI-style messages.
        config: The call's parameters (`extra` is merged in, e.g. `vertex_project`).
        response_schema: Sent as an OpenAI `response_format` `json_schema`; LiteLLM translates it.
        api_key: Passed as `api_key` when given.
        base_url: Passed as `api_base` when given.

    Returns:
        The keyword arguments.
    """
    kwargs = build_chat_request(model, messages, config, response_schema)
    kwargs.update({"timeout": config.timeout, "num_retries": 0, "drop_params": True})
    if api_key:
        kwargs["api_key"] = api_key
    if base_url:
        kwargs["api_base"] = base_url
    return kwargs


def parse_litellm_response(response: Any, where: str) -> ModelResponse:
    """Turn LiteLLM's `ModelResponse` (or its dict form) into Proctor's, keeping LiteLLM's cost as a hint.

    Args:
        response: What `acompletion` returned.
        where: The model's name, for error messages.

    Returns:
        The response; `cost_usd` is LiteLLM's `response_cost` when it computed one.
    """
    data = response.model_dump() if hasattr(response, "model_dump") else response
    parsed = parse_chat_response(data, where)
    hidden = getattr(response, "_hidden_params", None)
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    parsed.cost_usd = float(cost) if isinstance(cost, int | float) else None
    return parsed


class LiteLLMProvider:
    """Calls `litellm.acompletion` (imported on first call; it is slow to import)."""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None) -> None:
        """Build the adapter.

        Args:
            model: LiteLLM's model string.
            api_key: A key to pass through; `None` lets LiteLLM read the provider's variable.
            base_url: An API root to pass through as `api_base`.
        """
        self.provider = "litellm"
        self.model = model
        self.name = f"litellm/{model}"
        self.endpoint = base_url or ""
        self._api_key = api_key
        # masked wherever a provider echoes it: the key given, else any `*_API_KEY` LiteLLM may read itself
        if api_key:
            remember_credential(api_key)
        else:
            remember_environment_secrets()
        remember_url_credentials(self.endpoint)
        self._module: Any = None

    def _litellm(self) -> Any:
        if self._module is None:
            # LiteLLM fetches its price map from the network on import unless told to use its bundled copy.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            module: Any = require_module("litellm", extra="litellm", provider="litellm")
            module.suppress_debug_info = True
            self._module = module
        return self._module

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Send one request (LiteLLM passes `n` on, or drops it where unsupported)."""
        kwargs = build_litellm_request(
            self.model, messages, config, response_schema, api_key=self._api_key, base_url=self.endpoint or None
        )
        litellm = self._litellm()
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            mapped = map_sdk_error(exc, self.name)
            if mapped is None:
                raise
            raise mapped from exc
        return parse_litellm_response(response, self.name)

    async def aclose(self) -> None:
        """Nothing to close: LiteLLM manages its own clients."""


def litellm_factory(model: str, settings: ModelSettings) -> LiteLLMProvider:
    """Build a `litellm/<model>` adapter.

    Raises:
        proctor.errors.ModelUnavailable: `litellm` is not installed.
    """
    check_module("litellm", extra="litellm", provider="litellm")
    return LiteLLMProvider(model, api_key=settings.api_key, base_url=settings.base_url)
