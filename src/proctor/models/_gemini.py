"""`gemini/<model>`: Google's Gemini API through the `google-genai` SDK (extra `gemini`).

`build_gemini_request` and `parse_gemini_response` are pure (the SDK accepts and returns these dict
shapes) and tested without the SDK. Structured output uses `response_json_schema`. The key comes from
the settings, `GEMINI_API_KEY` or `GOOGLE_API_KEY`; with none, the SDK's own configuration (e.g.
Vertex AI via `GOOGLE_GENAI_USE_VERTEXAI`) applies.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proctor._redact import redact_excerpt, remember_credential, remember_environment_secrets, remember_url_credentials
from proctor.errors import ModelError
from proctor.models._base import GenerateConfig, LoopLocal, ModelResponse, check_module, require_module, split_system
from proctor.models._retry import map_sdk_error
from proctor.transcript import Usage

if TYPE_CHECKING:
    from proctor.models._managed import ModelSettings

__all__ = ["GeminiProvider", "build_gemini_request", "gemini_factory", "parse_gemini_response"]


def build_gemini_request(
    model: str, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """Build the arguments of `client.aio.models.generate_content`: `model`, `contents`, `config`.

    Args:
        model: The model id, e.g. `gemini-2.5-flash`.
        messages: OpenAI-style messages; system messages become `system_instruction`, `assistant`
            becomes `model`.
        config: The call's parameters; `extra` is merged into `config`.
        response_schema: Sent as `response_json_schema` with `response_mime_type` JSON.

    Returns:
        The arguments.
    """
    system, rest = split_system(messages)
    contents = [
        {"role": "model" if m.get("role") == "assistant" else "user", "parts": [{"text": m.get("content", "")}]}
        for m in rest
    ]
    options: dict[str, Any] = {"http_options": {"timeout": int(config.timeout * 1000)}}
    if system:
        options["system_instruction"] = system
    if config.temperature is not None:
        options["temperature"] = config.temperature
    if config.max_tokens is not None:
        options["max_output_tokens"] = config.max_tokens
    if config.n != 1:
        options["candidate_count"] = config.n
    if config.seed is not None:
        options["seed"] = config.seed
    if config.logprobs:
        options["response_logprobs"] = True
        if config.top_logprobs is not None:
            options["logprobs"] = config.top_logprobs
    if response_schema is not None:
        options["response_mime_type"] = "application/json"
        options["response_json_schema"] = response_schema
    options.update(config.extra)
    return {"model": model, "contents": contents, "config": options}


def _get(data: Any, snake: str, camel: str) -> Any:
    if not isinstance(data, Mapping):
        return None
    value = data.get(snake)
    return data.get(camel) if value is None else value


def _logprobs(candidate: Mapping[str, Any]) -> list[list[tuple[str, float]]] | None:
    result = _get(candidate, "logprobs_result", "logprobsResult")
    if not isinstance(result, Mapping):
        return None
    top = _get(result, "top_candidates", "topCandidates")
    if isinstance(top, list) and top:
        steps = [_get(step, "candidates", "candidates") or [] for step in top]
    else:
        chosen = _get(result, "chosen_candidates", "chosenCandidates") or []
        steps = [[item] for item in chosen]
    return [
        [(str(alt.get("token", "")), float(_get(alt, "log_probability", "logProbability") or 0.0)) for alt in step]
        for step in steps
    ]


def parse_gemini_response(data: Any, where: str) -> ModelResponse:
    """Turn a `generate_content` answer (the SDK response's `model_dump()`) into a `ModelResponse`.

    Args:
        data: The answer as a dict (snake_case or the API's camelCase).
        where: The model's name, for error messages.

    Returns:
        The response (thought parts are left out of the text; thinking tokens count as completion).

    Raises:
        ModelError: The answer has no candidates (e.g. the prompt was blocked).
    """
    candidates = _get(data, "candidates", "candidates")
    if not isinstance(candidates, list) or not candidates:
        feedback = _get(data, "prompt_feedback", "promptFeedback")
        reason = _get(feedback, "block_reason", "blockReason")
        why = (
            f"the prompt was blocked ({reason})"
            if reason
            else f"the answer has no candidates: {redact_excerpt(data, 200)}"
        )
        raise ModelError(f"{where}: {why}")
    texts = []
    for candidate in candidates:
        content = _get(candidate, "content", "content") or {}
        parts = (content.get("parts") or []) if isinstance(content, Mapping) else []
        texts.append(
            "".join(str(p.get("text") or "") for p in parts if isinstance(p, Mapping) and not p.get("thought"))
        )
    meta = _get(data, "usage_metadata", "usageMetadata") or {}
    completion = int(_get(meta, "candidates_token_count", "candidatesTokenCount") or 0)
    completion += int(_get(meta, "thoughts_token_count", "thoughtsTokenCount") or 0)
    usage = Usage(int(_get(meta, "prompt_token_count", "promptTokenCount") or 0), completion)
    model = str(_get(data, "model_version", "modelVersion") or "")
    first = candidates[0] if isinstance(candidates[0], Mapping) else {}
    finish = _get(first, "finish_reason", "finishReason")
    return ModelResponse(
        texts[0],
        texts,
        usage,
        model,
        logprobs=_logprobs(first),
        raw=data,
        finish_reason=None if finish is None else str(getattr(finish, "value", finish)),
    )


class GeminiProvider:
    """Calls `generate_content` through `google.genai.Client(...).aio`."""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None) -> None:
        """Build the adapter (the SDK client is created on first use, once per event loop).

        Args:
            model: The model id.
            api_key: The key; `None` lets the SDK configure itself from the environment.
            base_url: A custom API root.
        """
        self.provider = "gemini"
        self.model = model
        self.name = f"gemini/{model}"
        self.endpoint = base_url or ""
        self._api_key = api_key
        # masked wherever the provider echoes it: the key given, else those the SDK reads itself
        if api_key:
            remember_credential(api_key)
        else:
            remember_environment_secrets("GEMINI_API_KEY", "GOOGLE_API_KEY")
        remember_url_credentials(self.endpoint)
        self._client: LoopLocal[Any] = LoopLocal(self._make_client)

    def _make_client(self) -> Any:
        genai = require_module("google.genai", extra="gemini", provider="gemini")
        kwargs: dict[str, Any] = {}
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.endpoint:
            kwargs["http_options"] = {"base_url": self.endpoint}
        return genai.Client(**kwargs)

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Send one request (Gemini serves `n` itself, as `candidate_count`)."""
        request = build_gemini_request(self.model, messages, config, response_schema)
        client = self._client.get()
        try:
            response = await client.aio.models.generate_content(**request)
        except Exception as exc:
            mapped = map_sdk_error(exc, self.name)
            if mapped is None:
                raise
            raise mapped from exc
        data = response.model_dump(mode="json", exclude_none=True) if hasattr(response, "model_dump") else response
        return parse_gemini_response(data, self.name)

    async def aclose(self) -> None:
        """Close the SDK's async client of the running event loop."""
        client = self._client.take()
        closer = getattr(getattr(client, "aio", None), "aclose", None)
        if closer is not None:
            await closer()


def gemini_factory(model: str, settings: ModelSettings) -> GeminiProvider:
    """Build a `gemini/<model>` adapter.

    Raises:
        proctor.errors.ModelUnavailable: `google-genai` is not installed.
    """
    check_module("google.genai", extra="gemini", provider="gemini")
    api_key = settings.api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
    return GeminiProvider(model, api_key=api_key, base_url=settings.base_url)
