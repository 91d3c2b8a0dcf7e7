"""`anthropic/<model>`: the Messages API through the official `anthropic` SDK (extra `anthropic`).

`build_messages_request` and `parse_messages_response` are pure (the API's JSON shapes) and tested
without the SDK; the SDK is imported on first call. Structured output uses a forced tool call whose
input schema is the response schema, which every Claude 3+ model supports.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proctor._redact import redact_excerpt, remember_credential, remember_environment_secrets, remember_url_credentials
from proctor.errors import ModelError
from proctor.models._base import (
    GenerateConfig,
    LoopLocal,
    ModelResponse,
    check_module,
    gather_choices,
    require_module,
    split_system,
)
from proctor.models._openai import schema_name
from proctor.models._retry import map_sdk_error
from proctor.models._structured import with_schema_instruction
from proctor.transcript import Usage

if TYPE_CHECKING:
    from proctor.models._managed import ModelSettings

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "AnthropicProvider",
    "accepts_temperature",
    "anthropic_factory",
    "build_messages_request",
    "parse_messages_response",
]

DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` sent when the call does not set one (the API requires it)."""

_OLD_NAMING = re.compile(r"claude-\d(?:-\d)?-(?:opus|sonnet|haiku)")
_NEW_NAMING = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2})(?!\d))?")
_TOOL_DESCRIPTION = "Give your answer by calling this tool: its input is your answer."


def accepts_temperature(model: str) -> bool:
    """Whether a Claude model accepts `temperature` (models from Opus 4.7 on reject it with a 400).

    Args:
        model: A model id, including Bedrock forms such as `us.anthropic.claude-sonnet-4-5-...-v1:0`.

    Returns:
        True for Claude 3.x and 4.0-4.6 models; False for later or unrecognised ones (the parameter is
        then left out, which every model accepts).
    """
    if _OLD_NAMING.search(model):
        return True
    match = _NEW_NAMING.search(model)
    if match is None:
        return False
    version = (int(match.group(1)), int(match.group(2) or 0))
    return version < (4, 7)


def _object_schema(schema: Mapping[str, Any] | None) -> bool:
    return schema is not None and schema.get("type") == "object"


def build_messages_request(
    model: str, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """Build a Messages API request body.

    Args:
        model: The model id, e.g. `claude-sonnet-4-5`.
        messages: OpenAI-style messages; system messages become `system`.
        config: The call's parameters (`n`, `seed` and log probabilities have no Anthropic equivalent;
            `n` is served by separate requests). `extra` is merged in last.
        response_schema: An object JSON Schema becomes a forced tool call; any other schema is
            described in the system prompt.

    Returns:
        The JSON body.
    """
    if response_schema is not None and not _object_schema(response_schema):
        messages = with_schema_instruction(messages, response_schema)
    system, rest = split_system(messages)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": config.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": [{"role": m.get("role", "user"), "content": m.get("content", "")} for m in rest],
    }
    if system:
        body["system"] = system
    if config.temperature is not None and accepts_temperature(model):
        body["temperature"] = config.temperature
    if response_schema is not None and _object_schema(response_schema):
        name = schema_name(response_schema)
        body["tools"] = [{"name": name, "description": _TOOL_DESCRIPTION, "input_schema": response_schema}]
        body["tool_choice"] = {"type": "tool", "name": name}
    body.update(config.extra)
    return body


def parse_messages_response(data: Any, where: str) -> ModelResponse:
    """Turn a Messages API answer into a `ModelResponse` (a forced tool call's input becomes the text).

    Args:
        data: The answer as JSON (the SDK's `Message.model_dump()`).
        where: The model's name, for error messages.

    Returns:
        The response.

    Raises:
        ModelError: The answer has no content list.
    """
    content = data.get("content") if isinstance(data, Mapping) else None
    if not isinstance(content, list):
        raise ModelError(f"{where}: the answer has no content: {redact_excerpt(data, 200)}")
    tool_inputs = [b.get("input") for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
    if tool_inputs:
        text = json.dumps(tool_inputs[0], ensure_ascii=False)
    else:
        text = "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text")
    usage_data = data.get("usage") or {}
    prompt = sum(
        int(usage_data.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    usage = Usage(prompt, int(usage_data.get("output_tokens") or 0))
    stop = data.get("stop_reason")
    return ModelResponse(
        text=text,
        choices=[text],
        usage=usage,
        model=str(data.get("model") or ""),
        raw=data,
        finish_reason=None if stop is None else str(stop),
    )


class AnthropicProvider:
    """Calls the Messages API through `anthropic.AsyncAnthropic` (its own retries off: Proctor retries)."""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None) -> None:
        """Build the adapter (the SDK client is created on first use, once per event loop).

        Args:
            model: The model id.
            api_key: The key; `None` lets the SDK read `ANTHROPIC_API_KEY`.
            base_url: The API root; `None` lets the SDK decide (`ANTHROPIC_BASE_URL` or its default).
        """
        self.provider = "anthropic"
        self.model = model
        self.name = f"anthropic/{model}"
        self.endpoint = base_url or ""
        self._api_key = api_key
        # masked wherever the provider echoes it: the key given, else those the SDK reads itself
        if api_key:
            remember_credential(api_key)
        else:
            remember_environment_secrets("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
        remember_url_credentials(self.endpoint)
        self._client: LoopLocal[Any] = LoopLocal(self._make_client)

    def _make_client(self) -> Any:
        sdk = require_module("anthropic", extra="anthropic", provider="anthropic")
        kwargs: dict[str, Any] = {"max_retries": 0}
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.endpoint:
            kwargs["base_url"] = self.endpoint
        return sdk.AsyncAnthropic(**kwargs)

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Send the request, `config.n` times when more than one choice is wanted."""
        body = build_messages_request(self.model, messages, config, response_schema)
        client = self._client.get()
        return await gather_choices(config.n, lambda: self._send(client, body, config))

    async def _send(self, client: Any, body: dict[str, Any], config: GenerateConfig) -> ModelResponse:
        rest = dict(body)
        fixed = {key: rest.pop(key) for key in ("model", "max_tokens", "messages")}
        try:
            message = await client.messages.create(**fixed, extra_body=rest, timeout=config.timeout)
        except Exception as exc:
            mapped = map_sdk_error(exc, self.name)
            if mapped is None:
                raise
            raise mapped from exc
        data = message.model_dump(mode="json") if hasattr(message, "model_dump") else message
        return parse_messages_response(data, self.name)

    async def aclose(self) -> None:
        """Close the SDK client of the running event loop."""
        client = self._client.take()
        if client is not None:
            await client.close()


def anthropic_factory(model: str, settings: ModelSettings) -> AnthropicProvider:
    """Build an `anthropic/<model>` adapter (`ANTHROPIC_API_KEY`, unless the settings give a key).

    Raises:
        proctor.errors.ModelUnavailable: The `anthropic` SDK is not installed.
    """
    check_module("anthropic", extra="anthropic", provider="anthropic")
    api_key = settings.api_key or os.environ.get("ANTHROPIC_API_KEY")
    return AnthropicProvider(model, api_key=api_key, base_url=settings.base_url)
