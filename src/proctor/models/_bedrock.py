"""`bedrock/<model-id>`: Amazon Bedrock's Converse API through `boto3` (extra `bedrock`).

`build_converse_request` and `parse_converse_response` are pure and tested without boto3. The blocking
boto3 call runs in a worker thread. Credentials and region come from boto3's usual chain
(`AWS_REGION`, `AWS_PROFILE`, `AWS_BEARER_TOKEN_BEDROCK`, ...). Structured output uses a forced tool
call for Anthropic models and a prompt instruction for the others.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from proctor._redact import redact_excerpt, remember_environment_secrets, remember_url_credentials
from proctor.errors import ModelError
from proctor.models._anthropic import DEFAULT_MAX_TOKENS, accepts_temperature
from proctor.models._base import (
    GenerateConfig,
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

__all__ = ["BedrockProvider", "bedrock_factory", "build_converse_request", "parse_converse_response"]


def _is_anthropic(model_id: str) -> bool:
    return "anthropic." in model_id or model_id.startswith("claude")


def build_converse_request(
    model_id: str, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """Build the keyword arguments of `bedrock-runtime` `converse`.

    Args:
        model_id: The Bedrock model or inference profile id.
        messages: OpenAI-style messages; system messages become `system`.
        config: The call's parameters (`n` is served by separate requests; `seed` and log probabilities
            are not offered). `extra` is merged in last (e.g. `additionalModelRequestFields`).
        response_schema: For Anthropic models a forced tool call; otherwise a prompt instruction.

    Returns:
        The request.
    """
    tool = response_schema is not None and _is_anthropic(model_id) and response_schema.get("type") == "object"
    if response_schema is not None and not tool:
        messages = with_schema_instruction(messages, response_schema)
    system, rest = split_system(messages)
    request: dict[str, Any] = {
        "modelId": model_id,
        "messages": [{"role": m.get("role", "user"), "content": [{"text": m.get("content", "")}]} for m in rest],
    }
    if system:
        request["system"] = [{"text": system}]
    inference: dict[str, Any] = {}
    if config.max_tokens is not None or _is_anthropic(model_id):
        inference["maxTokens"] = config.max_tokens or DEFAULT_MAX_TOKENS
    if config.temperature is not None and (not _is_anthropic(model_id) or accepts_temperature(model_id)):
        inference["temperature"] = config.temperature
    if inference:
        request["inferenceConfig"] = inference
    if tool and response_schema is not None:
        name = schema_name(response_schema)
        spec = {
            "name": name,
            "description": "Give your answer as this tool's input.",
            "inputSchema": {"json": response_schema},
        }
        request["toolConfig"] = {"tools": [{"toolSpec": spec}], "toolChoice": {"tool": {"name": name}}}
    request.update(config.extra)
    return request


def parse_converse_response(data: Any, where: str) -> ModelResponse:
    """Turn a `converse` answer into a `ModelResponse` (a tool call's input becomes the text).

    Args:
        data: What `converse` returned.
        where: The model's name, for error messages.

    Returns:
        The response.

    Raises:
        ModelError: The answer has no output message.
    """
    output = data.get("output") if isinstance(data, Mapping) else None
    message = output.get("message") if isinstance(output, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        raise ModelError(f"{where}: the answer has no output message: {redact_excerpt(data, 200)}")
    tool_inputs = [b["toolUse"].get("input") for b in content if isinstance(b, Mapping) and "toolUse" in b]
    if tool_inputs:
        text = json.dumps(tool_inputs[0], ensure_ascii=False)
    else:
        text = "".join(str(b["text"]) for b in content if isinstance(b, Mapping) and "text" in b)
    usage_data = data.get("usage") or {}
    prompt = sum(
        int(usage_data.get(key) or 0) for key in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    )
    usage = Usage(prompt, int(usage_data.get("outputTokens") or 0))
    raw = {key: value for key, value in data.items() if key != "ResponseMetadata"}
    stop = data.get("stopReason")
    return ModelResponse(
        text=text, choices=[text], usage=usage, model="", raw=raw, finish_reason=None if stop is None else str(stop)
    )


class BedrockProvider:
    """Calls Converse with a boto3 `bedrock-runtime` client (its own retries off: Proctor retries)."""

    def __init__(
        self, model_id: str, *, region: str | None = None, endpoint_url: str | None = None, max_connections: int = 8
    ) -> None:
        """Build the adapter (the boto3 client is created on first use, in a worker thread).

        Args:
            model_id: The Bedrock model or inference profile id.
            region: The AWS region; `None` lets boto3 decide.
            endpoint_url: A custom endpoint (e.g. a VPC endpoint).
            max_connections: The connection pool size.
        """
        self.provider = "bedrock"
        self.model = model_id
        self.name = f"bedrock/{model_id}"
        self.endpoint = endpoint_url or region or ""
        self._region = region
        self._endpoint_url = endpoint_url
        self._max_connections = max_connections
        # boto3 reads the credentials itself: masked wherever the service echoes them
        remember_environment_secrets("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK")
        if endpoint_url:
            remember_url_credentials(endpoint_url)
        self._client: Any = None

    def _make_client(self) -> Any:
        boto3 = require_module("boto3", extra="bedrock", provider="bedrock")
        config_module = require_module("botocore.config", extra="bedrock", provider="bedrock")
        config = config_module.Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=10,
            read_timeout=300,
            max_pool_connections=self._max_connections,
        )
        return boto3.client("bedrock-runtime", region_name=self._region, endpoint_url=self._endpoint_url, config=config)

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Send the request, `config.n` times when more than one choice is wanted."""
        request = build_converse_request(self.model, messages, config, response_schema)
        if self._client is None:
            self._client = await anyio.to_thread.run_sync(self._make_client)
        return await gather_choices(config.n, lambda: self._send(request))

    async def _send(self, request: dict[str, Any]) -> ModelResponse:
        call = functools.partial(self._client.converse, **request)
        try:
            data = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except Exception as exc:
            mapped = map_sdk_error(exc, self.name)
            if mapped is None:
                raise
            raise mapped from exc
        return parse_converse_response(data, self.name)

    async def aclose(self) -> None:
        """Close the boto3 client."""
        client, self._client = self._client, None
        if client is not None and hasattr(client, "close"):
            client.close()


def bedrock_factory(model_id: str, settings: ModelSettings) -> BedrockProvider:
    """Build a `bedrock/<model-id>` adapter (region from `AWS_REGION` / `AWS_DEFAULT_REGION`).

    Raises:
        proctor.errors.ModelUnavailable: `boto3` is not installed.
    """
    check_module("boto3", extra="bedrock", provider="bedrock")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return BedrockProvider(
        model_id, region=region, endpoint_url=settings.base_url, max_connections=settings.concurrency
    )
