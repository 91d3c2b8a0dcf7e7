"""`openai/<model>` (any OpenAI-compatible server) and `ollama/<model>` (a local Ollama's `/v1` API).

Plain JSON over one pooled `proctor._http.HttpClient` per model (aiohttp's pool: its CPU per request
stays flat as connections grow, where httpx's grew); the `openai` SDK is not used (importing it alone
costs ~0.8 s). `build_chat_request` and `parse_chat_response` are pure functions,
shared with the LiteLLM adapter, which returns the same shapes.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from proctor._http import (
    ConnectTimeout,
    HttpClient,
    HttpError,
    HttpResponse,
    ReplyTimeout,
    decode_json,
    environment_proxies,
)
from proctor._redact import redact, redact_excerpt, redact_url, remember_credential, remember_url_credentials
from proctor.errors import ConfigError, ModelError, ModelHTTPError, ModelTimeout
from proctor.models._base import GenerateConfig, ModelResponse
from proctor.models._retry import parse_retry_after
from proctor.transcript import Usage

if TYPE_CHECKING:
    from proctor.models._managed import ModelSettings

__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "DEFAULT_OPENAI_BASE_URL",
    "OpenAICompatibleProvider",
    "build_chat_request",
    "ollama_factory",
    "openai_factory",
    "parse_chat_response",
    "parse_openai_logprobs",
    "schema_name",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where `openai/...` models go unless `OPENAI_BASE_URL` or the settings say otherwise."""
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
"""Where `ollama/...` models go unless `OLLAMA_HOST` or the settings say otherwise."""

_NO_TEMPERATURE = re.compile(r"^(?:o\d|gpt-5)(?!.*chat)")
"""OpenAI reasoning models, which reject any temperature but the default."""
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def schema_name(schema: Mapping[str, Any]) -> str:
    """Return a name for a response schema (its title, made safe), as the providers' APIs want one."""
    return _safe_name(str(schema.get("title") or "response"))


@functools.lru_cache(maxsize=256)
def _safe_name(title: str) -> str:
    """A schema title made safe (once per title: every judge call of a scorer sends the same one)."""
    name = _SCHEMA_NAME.sub("_", title).strip("_")
    return (name or "response")[:64]


@functools.lru_cache(maxsize=256)
def _takes_temperature(model: str) -> bool:
    """Whether a model id accepts a temperature (OpenAI's reasoning models do not); once per model."""
    return not _NO_TEMPERATURE.match(model.rsplit("/", 1)[-1])


def build_chat_request(
    model: str,
    messages: list[dict[str, str]],
    config: GenerateConfig,
    response_schema: dict[str, Any] | None,
    *,
    official: bool = False,
) -> dict[str, Any]:
    """Build a `/chat/completions` request body.

    Args:
        model: The model id.
        messages: OpenAI-style messages.
        config: The call's parameters (`extra` is merged in last).
        response_schema: A JSON Schema, sent as `response_format` `json_schema` with `strict: false`.
        official: Whether the endpoint is OpenAI's own (it wants `max_completion_tokens`).

    Returns:
        The JSON body.
    """
    body: dict[str, Any] = {"model": model, "messages": messages}
    if config.temperature is not None and _takes_temperature(model):
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_completion_tokens" if official else "max_tokens"] = config.max_tokens
    if config.n != 1:
        body["n"] = config.n
    if config.seed is not None:
        body["seed"] = config.seed
    if config.logprobs:
        body["logprobs"] = True
        if config.top_logprobs is not None:
            body["top_logprobs"] = config.top_logprobs
    if response_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name(response_schema), "schema": response_schema, "strict": False},
        }
    body.update(config.extra)
    return body


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def parse_openai_logprobs(choice: Mapping[str, Any]) -> list[list[tuple[str, float]]] | None:
    """Read a choice's log probabilities: per generated token, its top alternatives (or itself alone).

    Args:
        choice: One element of `choices`.

    Returns:
        The log probabilities, or `None` when the choice has none.
    """
    logprobs = choice.get("logprobs")
    if logprobs is None:  # the usual answer: none asked for (saves the ABC's isinstance)
        return None
    content = logprobs.get("content") if _mapping(logprobs) else None
    if not isinstance(content, list):
        return None
    steps: list[list[tuple[str, float]]] = []
    for item in content:
        if not isinstance(item, Mapping):
            continue
        top = item.get("top_logprobs")
        if isinstance(top, list) and top:
            steps.append([(str(alt.get("token", "")), float(alt.get("logprob", 0.0))) for alt in top])
        else:
            steps.append([(str(item.get("token", "")), float(item.get("logprob", 0.0)))])
    return steps


def parse_chat_response(data: Any, where: str) -> ModelResponse:
    """Turn a `/chat/completions` answer into a `ModelResponse`.

    Args:
        data: The decoded JSON body.
        where: The model's name, for error messages.

    Returns:
        The response (`model` is left as the id the server reported).

    Raises:
        ModelError: The body has no choices.
    """
    # `type(x) is dict or`: a decoded body is made of dicts, and an ABC's isinstance costs ~10x a type test
    choices = data.get("choices") if type(data) is dict or isinstance(data, Mapping) else None
    if not isinstance(choices, list) or not choices or not _mapping(choices[0]):
        raise ModelError(f"{where}: the answer has no choices: {redact_excerpt(data, 200)}")
    texts = [_content_text(choice.get("message", {}).get("content")) if _mapping(choice) else "" for choice in choices]
    usage_data = data.get("usage") or {}
    usage = Usage(int(usage_data.get("prompt_tokens") or 0), int(usage_data.get("completion_tokens") or 0))
    return ModelResponse(
        text=texts[0],
        choices=texts,
        usage=usage,
        model=str(data.get("model") or ""),
        logprobs=parse_openai_logprobs(choices[0]),
        raw=data,
        finish_reason=_finish_reason(choices[0].get("finish_reason")),
    )


def _mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)`, a dict first (see `parse_chat_response`)."""
    return type(value) is dict or isinstance(value, Mapping)


def _finish_reason(value: Any) -> str | None:
    return None if value is None else str(value)


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def _error_message(response: HttpResponse) -> str:
    """The error an answer gives, masked (a server may echo the key it got) and cut to 300 characters."""
    try:
        data = json.loads(response.content)
    except ValueError:
        text = response.text
    else:
        error = data.get("error") if isinstance(data, Mapping) else None
        text = str(error.get("message") if isinstance(error, Mapping) else error or data)
    return redact_excerpt(text, 300)


class OpenAICompatibleProvider:
    """Talks to an OpenAI-compatible `/chat/completions` endpoint with plain JSON."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        provider: str = "openai",
        max_connections: int = 8,
    ) -> None:
        """Build the adapter (its connections open on first use, once per event loop).

        Args:
            model: The model id the server knows.
            base_url: The API root, e.g. `https://api.openai.com/v1`.
            api_key: Sent as `Authorization: Bearer` (and as `api-key` for Azure hosts).
            provider: The provider name (`openai` or `ollama`).
            max_connections: The connection pool size.
        """
        self.provider = provider
        self.model = model
        self.endpoint = base_url.rstrip("/")
        self.url = f"{self.endpoint}/chat/completions"
        remember_url_credentials(self.url)  # userinfo (sent as Basic auth) and secret query values: masked
        for proxy in environment_proxies().values():  # the client sends their userinfo as Proxy-Authorization
            remember_url_credentials(proxy if "://" in proxy else f"http://{proxy}")
        self.shown_url = redact_url(self.url)  # issue 16: errors quote the endpoint without its userinfo
        self.name = f"{provider}/{model}"
        host = _host(self.endpoint)
        self._official = host == "api.openai.com"
        headers = {"Accept": "application/json"}
        if api_key:
            remember_credential(api_key)  # masked wherever a server echoes it (a 401 body, a judge's reason)
            headers["Authorization"] = f"Bearer {api_key}"
            if host.endswith(".azure.com"):
                headers["api-key"] = api_key
        # no cookies or redirects: a model API needs neither
        self._client = HttpClient(
            max_connections=max_connections, headers=headers, follow_redirects=False, cookies=False
        )

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Send one request (see `Provider.complete`)."""
        body = build_chat_request(self.model, messages, config, response_schema, official=self._official)
        try:
            response = await self._client.request("POST", self.url, json_body=body, request_timeout=config.timeout)
        except (ConnectTimeout, ReplyTimeout):
            raise ModelTimeout(f"{self.name}: no reply from {self.shown_url} within {config.timeout:g} s") from None
        except HttpError as exc:
            if exc.retryable:  # the connection failed: sending again may work
                error = ModelError(redact(f"{self.name}: cannot reach {self.shown_url}: {exc}"))
                error.retryable = True
                raise error from exc
            raise ModelError(redact(f"{self.name}: POST {self.shown_url} failed: {exc}")) from exc
        status = response.status_code
        if status >= 400:
            retry_after = parse_retry_after(response.headers) if status == 429 or status >= 500 else None
            raise ModelHTTPError(
                f"{self.name}: POST {self.shown_url} returned {status}: {_error_message(response)}",
                status,
                retry_after=retry_after,
            )
        try:
            data = decode_json(response.content)
        except ValueError:
            raise ModelError(
                f"{self.name}: the answer from {self.shown_url} is not JSON: {redact_excerpt(response.text, 100)!r}"
            ) from None
        return parse_chat_response(data, self.name)

    async def aclose(self) -> None:
        """Close the connection pool (it reopens on the next call)."""
        await self._client.aclose()


def openai_factory(model: str, settings: ModelSettings) -> OpenAICompatibleProvider:
    """Build an `openai/<model>` adapter: `OPENAI_BASE_URL` and `OPENAI_API_KEY`, unless settings override.

    Raises:
        ConfigError: The endpoint is OpenAI's own and no API key is set.
    """
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    api_key = settings.api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key and _host(base_url) == "api.openai.com":
        raise ConfigError(
            f"openai/{model}: OPENAI_API_KEY is not set (set it, or point OPENAI_BASE_URL at an "
            "OpenAI-compatible server such as vLLM, llama.cpp or LM Studio)"
        )
    return OpenAICompatibleProvider(model, base_url=base_url, api_key=api_key, max_connections=settings.concurrency)


def ollama_base_url(host: str) -> str:
    """Turn an `OLLAMA_HOST` value (`0.0.0.0:11434`, `http://gpu:11434`) into its `/v1` API root."""
    host = host.strip().rstrip("/")
    if "://" not in host:
        host = f"http://{host}"
    parts = urlsplit(host)
    name = parts.hostname or ""
    if name in ("0.0.0.0", ""):  # a listen address: connect to loopback
        name = "127.0.0.1"
    if ":" in name:  # IPv6
        name = f"[{name}]"
    port = parts.port
    if port is None and parts.scheme == "http":
        port = 11434
    userinfo, at, _ = parts.netloc.rpartition("@")
    netloc = f"{userinfo}{at}{name}" + ("" if port is None else f":{port}")
    text = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)).rstrip("/")
    return text if text.endswith("/v1") else f"{text}/v1"


def ollama_factory(model: str, settings: ModelSettings) -> OpenAICompatibleProvider:
    """Build an `ollama/<model>` adapter for a local Ollama (`OLLAMA_HOST`, default `127.0.0.1:11434`)."""
    host = settings.base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
    return OpenAICompatibleProvider(
        model,
        base_url=ollama_base_url(host),
        api_key=settings.api_key,
        provider="ollama",
        max_connections=settings.concurrency,
    )
