"""Retries for model calls: exponential back-off with jitter, honouring `Retry-After`.

The same idea as the targets' retries, kept separate because `models/` may not import `targets/`.
Also maps SDK exceptions (Anthropic, Gemini, botocore, LiteLLM) to Proctor's `ModelError`s by duck
typing, so no SDK has to be imported to classify its errors.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import anyio

from proctor._redact import redact_excerpt
from proctor._retry_after import parse_retry_after
from proctor.errors import ModelError, ModelHTTPError, ModelTimeout

__all__ = ["RetryPolicy", "call_with_retries", "map_sdk_error", "parse_retry_after"]

logger = logging.getLogger("proctor.models")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How retryable failures (429, 5xx, timeouts, connection errors) are retried."""

    max_retries: int = 3
    """Re-sends after the first attempt; 0 disables retrying."""
    initial_wait: float = 0.5
    """First back-off in seconds; it doubles on each retry, plus up to this much random jitter."""
    max_wait: float = 20.0
    """Longest exponential back-off in seconds."""
    max_retry_after: float = 120.0
    """Longest wait honoured from a `Retry-After` header, in seconds."""


def _wait(policy: RetryPolicy, failure: ModelError, attempts: int) -> float:
    """Seconds to wait after `attempts` failed attempts: the provider's `Retry-After`, else exponential + jitter."""
    if isinstance(failure, ModelHTTPError) and failure.retry_after is not None:
        return min(failure.retry_after, policy.max_retry_after)
    return min(policy.max_wait, policy.initial_wait * 2.0 ** (attempts - 1)) + random.uniform(0, policy.initial_wait)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]], policy: RetryPolicy, *, failed: ModelError | None = None
) -> tuple[T, int]:
    """Run `attempt` until it succeeds, retrying retryable `ModelError`s.

    A plain loop: nothing is allocated for retrying unless an attempt fails.

    Args:
        attempt: Makes one attempt.
        policy: How often and how long to retry.
        failed: The failure of a first attempt the caller already made itself: the loop starts by
            retrying it (as if `attempt` had raised it), so the first attempt is not made again.

    Returns:
        The result and how many retries it took.

    Raises:
        ModelError: A non-retryable failure, or the last failure once retries are used up (its message
            then says how many retries were made).
    """
    retries = 0
    while True:
        if failed is None:
            try:
                return await attempt(), retries
            except ModelError as exc:
                failed = exc
        failure, failed = failed, None
        if not failure.retryable or retries >= policy.max_retries:
            if retries and failure.retryable:
                failure.args = (f"{failure} (after {retries} retr{'y' if retries == 1 else 'ies'})",)
            raise failure
        wait = _wait(policy, failure, retries + 1)
        logger.debug("model call: retrying in %.2f s after attempt %d: %s", wait, retries + 1, failure)
        await anyio.sleep(wait)
        retries += 1


def _status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):  # botocore ClientError
        meta = response.get("ResponseMetadata") or {}
        status = meta.get("HTTPStatusCode")
        if isinstance(status, int):
            return status
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _headers_of(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        meta = response.get("ResponseMetadata") or {}
        headers = meta.get("HTTPHeaders")
        return headers if isinstance(headers, Mapping) else None
    headers = getattr(response, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _throttled(exc: BaseException) -> bool:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        code = (response.get("Error") or {}).get("Code", "")
        return code in ("ThrottlingException", "TooManyRequestsException", "ServiceQuotaExceededException")
    return False


def map_sdk_error(exc: BaseException, where: str) -> ModelError | None:
    """Turn an SDK exception into the matching `ModelError`, judged by its class name and attributes.

    Args:
        exc: What the SDK raised.
        where: The model's name, for the message.

    Returns:
        `ModelTimeout`, `ModelHTTPError`, a retryable `ModelError` for connection failures, or `None`
        when `exc` does not look like a transport or API failure (a bug: let it propagate).
    """
    names = [cls.__name__ for cls in type(exc).__mro__]
    # an SDK's message quotes the provider's answer, which may echo the key it got: masked, then cut
    text = redact_excerpt(str(exc).strip() or type(exc).__name__, 300)
    if any("Timeout" in name for name in names):
        return ModelTimeout(f"{where}: no reply in time: {text}")
    status = 429 if _throttled(exc) else _status_of(exc)
    if status is not None:
        error = ModelHTTPError(
            f"{where}: the provider answered {status}: {text}", status, retry_after=parse_retry_after(_headers_of(exc))
        )
        return error
    if any("Connection" in name or "Connect" in name for name in names) or isinstance(exc, OSError):
        error_ = ModelError(f"{where}: connection failed: {text}")
        error_.retryable = True
        return error_
    return None
