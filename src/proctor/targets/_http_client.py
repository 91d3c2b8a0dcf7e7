"""Shared plumbing for the HTTP targets: pooled clients, retries, error mapping, `${VAR}` expansion.

Every HTTP target owns one `httpx.AsyncClient` (built by `build_client`) and sends through
`send_with_retries`, which retries connection failures, 5xx and 429 with exponential back-off and
jitter (honouring `Retry-After`), and turns every failure into a `proctor.errors.TargetError` whose
message says what happened and where.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from proctor._redact import redact, remember_secret
from proctor._retry_after import parse_retry_after
from proctor._tls import shared_ssl_context
from proctor._trace_context import trace_headers
from proctor.errors import (
    ConfigError,
    TargetError,
    TargetHTTPError,
    TargetProtocolError,
    TargetTimeout,
    TargetUnreachable,
)
from proctor.targets._base import DEFAULT_MAX_CONNECTIONS

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_RETRY",
    "RetryPolicy",
    "build_client",
    "decode_json",
    "expand_env",
    "map_http_error",
    "send_with_retries",
]

logger = logging.getLogger("proctor.targets")

_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How retryable failures (connection errors, 5xx, 429) are retried."""

    max_retries: int = 3
    """Re-sends after the first attempt; 0 disables retrying."""
    initial_wait: float = 0.2
    """First back-off in seconds; it doubles on each retry, plus up to this much random jitter."""
    max_wait: float = 5.0
    """Longest exponential back-off in seconds."""
    max_retry_after: float = 30.0
    """Longest wait honoured from a `Retry-After` header, in seconds."""


DEFAULT_RETRY = RetryPolicy()
"""The retry policy targets use unless told otherwise."""

NO_RETRY = RetryPolicy(max_retries=0)
"""Send once (used for best-effort requests such as closing a session)."""


def build_client(
    *, max_connections: int = DEFAULT_MAX_CONNECTIONS, headers: Mapping[str, str] | None = None
) -> httpx.AsyncClient:
    """Build the pooled client a target uses for its whole run.

    Args:
        max_connections: Most connections open at once to the agent.
        headers: Headers sent with every request.

    Returns:
        A client; the target closes it in its `aclose`.
    """
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.AsyncClient(
        limits=limits, headers=dict(headers or {}), follow_redirects=True, verify=shared_ssl_context()
    )


def expand_env(value: str, where: str) -> str:
    """Replace every `${VAR}` in `value` with the environment variable's value.

    Args:
        value: A header value or template.
        where: Where the value is used, for the error message (e.g. `headers.Authorization`).

    Returns:
        The value with variables replaced.

    Raises:
        ConfigError: A referenced variable is not set.
    """
    if "${" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            raise ConfigError(f"environment variable {name} is not set (used in {where})")
        remember_secret(found)  # read from the environment for a request: masked wherever it shows
        return found

    return _ENV_VAR.sub(replace, value)


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _cause(exc: BaseException) -> str:
    """Describe the OS-level cause of a connection failure, e.g. `connection refused`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            if current.errno == errno.ECONNREFUSED:
                return "connection refused"
            return os.strerror(current.errno).lower()
        current = current.__cause__ or current.__context__
    text = redact(str(exc).strip())
    return text[0].lower() + text[1:] if text else type(exc).__name__


def map_http_error(exc: httpx.HTTPError, method: str, url: str, timeout: float, retries: int = 0) -> TargetError:
    """Turn an httpx failure into the matching Proctor error.

    Args:
        exc: What httpx raised.
        method: The request method.
        url: The request URL.
        timeout: The timeout the request ran with, in seconds.
        retries: How many retries were made before this failure (mentioned in the message).

    Returns:
        `TargetTimeout`, `TargetUnreachable` or a plain `TargetError`, with a message naming the URL.
    """
    after = _after(retries)
    url = redact(url)  # the URL may carry a password or a key: messages land in results and logs
    if isinstance(exc, httpx.ConnectTimeout):
        return TargetTimeout(f"cannot connect to {url} within {_seconds(timeout)}{after}")
    if isinstance(exc, httpx.PoolTimeout):
        return TargetTimeout(f"no free connection to {url} within {_seconds(timeout)}")
    if isinstance(exc, httpx.TimeoutException):
        return TargetTimeout(f"no reply from {url} within {_seconds(timeout)}{after}")
    if isinstance(exc, httpx.ConnectError):
        return TargetUnreachable(f"cannot connect to {url}{after}: {_cause(exc)}")
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return TargetUnreachable(f"connection to {url} failed{after}: {_cause(exc)}")
    return TargetError(f"{method} {url} failed{after}: {_cause(exc)}")


def _after(retries: int) -> str:
    return f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class _Retryable(Exception):
    """An attempt failed in a way worth retrying: a connection error or a 5xx/429 response."""

    def __init__(
        self,
        error: httpx.HTTPError | None = None,
        response: httpx.Response | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(str(error or response))
        self.error = error
        self.response = response
        self.retry_after = retry_after


class _Wait:
    """Exponential back-off with jitter, unless the server said how long to wait."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy

    def __call__(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        if isinstance(failure, _Retryable) and failure.retry_after is not None:
            return min(failure.retry_after, self._policy.max_retry_after)
        policy = self._policy
        backoff = min(policy.max_wait, policy.initial_wait * 2.0 ** (state.attempt_number - 1))
        return backoff + random.uniform(0, policy.initial_wait)


async def _attempt(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    json_body: Any,
    headers: Mapping[str, str] | None,
    request_timeout: float,
) -> httpx.Response:
    traced = trace_headers()  # W3C traceparent/tracestate of the trial, when the run exports traces
    if traced:
        headers = {**traced, **(headers or {})}
    try:
        response = await client.request(
            method,
            url,
            json=json_body,
            headers=headers,
            timeout=httpx.Timeout(request_timeout),
        )
    except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
        raise _Retryable(exc) from exc
    except httpx.HTTPError as exc:
        raise map_http_error(exc, method, url, request_timeout) from exc
    status = response.status_code
    if status >= 500 or status == 429:
        raise _Retryable(None, response, parse_retry_after(response.headers) if status in (429, 503) else None)
    return response


async def send_with_retries(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    request_timeout: float,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
    policy: RetryPolicy = DEFAULT_RETRY,
) -> tuple[httpx.Response, int]:
    """Send a request, retrying connection errors, 5xx and 429.

    Args:
        client: The target's pooled client.
        method: HTTP method.
        url: Full request URL.
        request_timeout: Timeout for each attempt, in seconds.
        json_body: JSON body; `None` sends no body.
        headers: Extra headers for this request.
        policy: How often and how long to retry.

    Returns:
        The successful (2xx or 3xx) response, with its body read, and the number of retries it took.

    Raises:
        TargetUnreachable: The connection failed on every attempt.
        TargetHTTPError: The agent answered with a 4xx, or with 5xx/429 on every attempt.
        TargetTimeout: An attempt got no reply within `request_timeout`.
    """
    retrying = AsyncRetrying(
        sleep=anyio.sleep,
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=_Wait(policy),
        retry=retry_if_exception_type(_Retryable),
        before_sleep=_log_retry,
        reraise=True,
    )
    retries = 0
    last: httpx.Response | None = None
    try:
        async for attempt in retrying:
            with attempt:
                retries = attempt.retry_state.attempt_number - 1
                last = await _attempt(
                    client, method, url, json_body=json_body, headers=headers, request_timeout=request_timeout
                )
    except _Retryable as failure:
        if failure.error is not None:
            raise map_http_error(failure.error, method, url, request_timeout, retries) from failure.error
        response = failure.response
        assert response is not None
        status = response.status_code
        body = _excerpt(response.text, 200)
        raise TargetHTTPError(f"{method} {redact(url)} returned {status}{_after(retries)}: {body}", status) from None
    if last is None:  # pragma: no cover - AsyncRetrying always makes at least one attempt
        raise TargetError(f"{method} {redact(url)} was not sent")
    if last.status_code >= 400:
        raise TargetHTTPError(
            f"{method} {redact(url)} returned {last.status_code}: {_excerpt(last.text, 200)}", last.status_code
        )
    return last, retries


def _log_retry(state: RetryCallState) -> None:
    failure = state.outcome.exception() if state.outcome is not None else None
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    logger.debug("retrying in %.2f s after attempt %d: %s", wait, state.attempt_number, failure)


def decode_json(response: httpx.Response) -> Any:
    """Decode a response body as JSON.

    Args:
        response: A successful response.

    Returns:
        The decoded body.

    Raises:
        TargetProtocolError: The body is not JSON.
    """
    try:
        return json.loads(response.content)
    except ValueError:
        text = _excerpt(response.text, 100)
        raise TargetProtocolError(f"reply from {redact(str(response.request.url))} is not JSON: {text!r}") from None
