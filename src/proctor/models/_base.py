"""The shapes every provider shares: call configuration, the response, the `Model` protocol.

A provider adapter (`Provider`) only translates one request into the provider's API and the answer
back into a `ModelResponse`; caching, limits, retries, budgets and accounting are applied once, by
`ManagedModel`, around every adapter.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import anyio
import anyio.lowlevel

from proctor.errors import ModelUnavailable
from proctor.transcript import Usage

__all__ = [
    "ROLES",
    "GenerateConfig",
    "LoopLocal",
    "Model",
    "ModelResponse",
    "Provider",
    "check_module",
    "gather_choices",
    "is_truncation",
    "prompt_hash",
    "require_module",
    "split_system",
]

ROLES = ("agent", "judge", "simulator", "embedding")
"""The roles usage is accounted under (any other string is accepted too)."""

T = TypeVar("T")

TRUNCATION_REASONS = frozenset(
    {"length", "max_tokens", "max_output_tokens", "model_length", "model_context_window_exceeded"}
)
"""Finish reasons, lower-cased, meaning the answer hit a token limit: OpenAI-compatible servers and LiteLLM
(`length`), Anthropic and Bedrock (`max_tokens`), Gemini (`MAX_TOKENS`), vLLM and others."""


def is_truncation(finish_reason: object) -> bool:
    """Whether a provider's finish reason says the answer was cut off at a token limit.

    Args:
        finish_reason: As the provider gave it: a string, or an SDK enum such as `FinishReason.MAX_TOKENS`.
    """
    if finish_reason is None:
        return False
    if type(finish_reason) is str:  # the usual case, looked up once per text (every call says `stop`)
        found = _TRUNCATION_BY_TEXT.get(finish_reason)
        if found is None:
            found = _truncation(finish_reason)
            if len(_TRUNCATION_BY_TEXT) < 256:
                _TRUNCATION_BY_TEXT[finish_reason] = found
        return found
    return _truncation(finish_reason)


_TRUNCATION_BY_TEXT: dict[str, bool] = {}


def _truncation(finish_reason: object) -> bool:
    text = str(getattr(finish_reason, "value", finish_reason)).rsplit(".", 1)[-1].strip().lower()
    return text in TRUNCATION_REASONS


@dataclass(slots=True)
class GenerateConfig:
    """How one model call is made. Parameters a provider does not support are left out of its request."""

    temperature: float | None = 0.0
    """Sampling temperature; `None` leaves it to the provider (some newer models accept no other)."""
    max_tokens: int | None = None
    """Most tokens to generate; `None` is the provider's default (Anthropic and Bedrock need one: 4096)."""
    n: int = 1
    """How many choices to generate (providers without `n` get `n` separate requests)."""
    logprobs: bool = False
    """Return log probabilities of the generated tokens, where the provider offers them."""
    top_logprobs: int | None = None
    """With `logprobs`: how many alternatives to return for each generated token."""
    seed: int | None = None
    """Sampling seed, where the provider accepts one."""
    timeout: float = 60.0
    """Seconds one attempt may take (each retry gets the same again)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific request fields, merged into the request as they are."""

    def cache_params(self) -> dict[str, Any]:
        """Return the parameters that change the answer (everything but the timeout), for cache keys."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "n": self.n,
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
            "seed": self.seed,
            "extra": self.extra,
        }


@dataclass(slots=True)
class ModelResponse:
    """What a model answered to one call."""

    text: str
    """The first choice's text."""
    choices: list[str]
    """Every choice's text (one unless `n` > 1)."""
    usage: Usage
    """Tokens used by this call (zero for a cache hit)."""
    model: str
    """The model that answered, as `provider/model`."""
    latency_ms: float = 0.0
    """Wall time of the successful attempt, in milliseconds (0 for a cache hit)."""
    cached: bool = False
    """Whether the answer came from the on-disk cache (then it cost nothing)."""
    cost_usd: float | None = None
    """What the call cost in USD; `None` when the model has no known price."""
    logprobs: list[list[tuple[str, float]]] | None = None
    """For the first choice, per generated token: the top alternatives as `(token, logprob)`."""
    raw: Any = None
    """The provider's answer as decoded JSON (not kept in the cache)."""
    retries: int = 0
    """How many times the request was re-sent after a retryable failure."""
    finish_reason: str | None = None
    """Why the provider stopped generating the first choice, as it said it (`stop`, `length`, `end_turn`,
    `max_tokens`, `MAX_TOKENS`, ...); `None` when it did not say."""

    @property
    def truncated(self) -> bool:
        """Whether the provider cut the answer off at its token limit (the text is incomplete)."""
        return is_truncation(self.finish_reason)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form stored in the cache (without `raw`)."""
        return {
            "text": self.text,
            "choices": self.choices,
            "usage": {"prompt_tokens": self.usage.prompt_tokens, "completion_tokens": self.usage.completion_tokens},
            "model": self.model,
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "logprobs": self.logprobs,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelResponse:
        """Rebuild a response from `to_dict`'s form.

        Args:
            data: The stored form.

        Returns:
            The response (not marked cached; the cache does that).
        """
        usage = data.get("usage") or {}
        logprobs = data.get("logprobs")
        return cls(
            text=data["text"],
            choices=list(data.get("choices") or [data["text"]]),
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            model=data.get("model", ""),
            latency_ms=float(data.get("latency_ms", 0.0)),
            cost_usd=data.get("cost_usd"),
            logprobs=None if logprobs is None else [[(str(t), float(p)) for t, p in step] for step in logprobs],
            finish_reason=data.get("finish_reason"),
        )


@runtime_checkable
class Model(Protocol):
    """An LLM Proctor uses, named `provider/model` (e.g. `openai/gpt-4.1-mini`)."""

    name: str
    """The full name, `provider/model`."""
    provider: str
    """The provider part of the name, e.g. `openai`."""

    async def generate(
        self,
        messages: list[dict[str, str]],
        config: GenerateConfig | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
        role: str = "judge",
    ) -> ModelResponse:
        """Answer a conversation.

        Args:
            messages: OpenAI-style messages (`role` is `system`, `user` or `assistant`; `content` text).
            config: Sampling and timeout; defaults to `GenerateConfig()` (temperature 0).
            response_schema: A JSON Schema the answer should match (structured output).
            role: Who is calling, for usage accounting: `agent`, `judge`, `simulator` or `embedding`.

        Returns:
            The response.

        Raises:
            proctor.errors.ModelError: The call failed after retries, or the budget is spent.
        """
        ...

    async def aclose(self) -> None:
        """Release connections (the model stays usable; they reopen on the next call)."""
        ...


class Provider(Protocol):
    """A provider adapter: translates one call to the provider's API and the answer back.

    It does not retry, cache, limit or account: `ManagedModel` does that around it. It raises
    `ModelHTTPError` (with `retry_after` when the provider gives one), `ModelTimeout`, or a
    `ModelError` with `retryable = True` for connection failures.
    """

    provider: str
    """The provider name, e.g. `openai`."""
    model: str
    """The model id the provider knows, e.g. `gpt-4.1-mini`."""
    endpoint: str
    """Where requests go (a base URL or region), part of the cache key; empty for the SDK's default."""

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Make one request and return its response (`model`, `latency_ms`, `cost_usd` may be left unset)."""
        ...

    async def aclose(self) -> None:
        """Release the adapter's clients."""
        ...


def prompt_hash(text: str) -> str:
    """Hash a prompt template's text, to store with judged results (first 12 hex digits of sha256).

    Args:
        text: The template text.

    Returns:
        12 lowercase hex digits.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def split_system(messages: list[dict[str, str]]) -> tuple[str, list[dict[str, str]]]:
    """Separate system messages (joined by blank lines) from the conversation, for APIs that want that.

    Args:
        messages: OpenAI-style messages.

    Returns:
        The system text (empty when there is none) and the other messages, in order.
    """
    system = [m.get("content", "") for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return "\n\n".join(system), rest


def require_module(module: str, *, extra: str, provider: str) -> ModuleType:
    """Import a provider SDK, or explain which extra installs it.

    Args:
        module: The module to import, e.g. `anthropic`.
        extra: The `proctor-eval` extra that installs it.
        provider: The provider name, for the message.

    Returns:
        The module.

    Raises:
        ModelUnavailable: The module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailable(_missing(module, extra, provider, exc)) from exc


def check_module(module: str, *, extra: str, provider: str) -> None:
    """Check, without importing it, that a provider SDK is installed.

    Args:
        module: The module, e.g. `google.genai`.
        extra: The `proctor-eval` extra that installs it.
        provider: The provider name, for the message.

    Raises:
        ModelUnavailable: The module is not installed.
    """
    if module in sys.modules:
        if sys.modules[module] is None:
            raise ModelUnavailable(_missing(module, extra, provider, None))
        return
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ModelUnavailable(_missing(module, extra, provider, None))


def _missing(module: str, extra: str, provider: str, exc: BaseException | None) -> str:
    why = f" ({exc})" if exc is not None and str(exc) else ""
    return (
        f"the {provider!r} model provider needs the {module} package, which is not installed{why}: "
        f"pip install 'proctor-eval[{extra}]'"
    )


class LoopLocal(Generic[T]):
    """A value (a client, a semaphore) built lazily once per event loop.

    Async clients are bound to the loop they were made in; a model object may outlive one loop (tests,
    a library user calling `anyio.run` twice), so the value is rebuilt when the loop changes.
    """

    __slots__ = ("_factory", "_loop", "_value")

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._loop: object = None
        self._value: T | None = None

    def get(self) -> T:
        """Return the value for the running loop, building it if needed."""
        # asyncio's running loop is anyio's native token there, at a tenth of the cost (once per model call)
        loop = asyncio._get_running_loop() or anyio.lowlevel.current_token().native_token
        if self._value is None or self._loop is not loop:
            self._value = self._factory()
            self._loop = loop
        return self._value

    def take(self) -> T | None:
        """Forget the value and return it if it belongs to the running loop (to close it), else `None`."""
        value, loop = self._value, self._loop
        self._value, self._loop = None, None
        if value is None:
            return None
        try:
            current = anyio.lowlevel.current_token().native_token
        except RuntimeError:
            return None
        return value if loop is current else None


async def gather_choices(n: int, call: Callable[[], Awaitable[ModelResponse]]) -> ModelResponse:
    """Make `n` requests at once and merge them into one response with `n` choices.

    For providers whose API has no `n`: the first response gives the text, raw body and log
    probabilities; usage is summed.

    Args:
        n: How many choices are wanted.
        call: Makes one request.

    Returns:
        The merged response.
    """
    if n <= 1:
        return await call()
    results: list[ModelResponse] = []

    async def one() -> None:
        results.append(await call())

    try:
        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(one)
    except BaseExceptionGroup as failures:
        first: BaseException = failures
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    usage = Usage()
    for result in results:
        usage = usage + result.usage
    head = results[0]
    choices = [result.text for result in results]
    return ModelResponse(
        head.text, choices, usage, head.model, logprobs=head.logprobs, raw=head.raw, finish_reason=head.finish_reason
    )
