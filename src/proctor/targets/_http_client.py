"""Shared plumbing for the HTTP targets: pooled clients, retries, error mapping, `${VAR}` expansion.

Every HTTP target owns one `proctor._http.HttpClient` (built by `build_client`; aiohttp's pool, whose
CPU per request does not grow with the number of connections) and sends through `send_with_retries`,
which retries connection failures, 5xx and 429 with exponential back-off and jitter (honouring
`Retry-After`), and turns every failure into a `proctor.errors.TargetError` whose message says what
happened and where.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from proctor._http import (
    ConnectFailed,
    ConnectionLost,
    ConnectTimeout,
    HttpClient,
    HttpError,
    HttpResponse,
    ReplyTimeout,
    environment_proxies,
)
from proctor._http import decode_json as decode_body  # orjson, with the standard library's fallback
from proctor._redact import redact, redact_excerpt, remember_headers, remember_secret, remember_url_credentials
from proctor._retry_after import parse_retry_after
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
    "HttpClient",
    "HttpError",
    "HttpResponse",
    "RetryPolicy",
    "build_client",
    "decode_json",
    "expand_env",
    "failure_cause",
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
) -> HttpClient:
    """Build the pooled client a target uses for its whole run.

    Args:
        max_connections: Most connections open at once to the agent.
        headers: Headers sent with every request.

    Returns:
        A client that follows redirects; the target closes it in its `aclose`.
    """
    remember_headers(headers)  # an API key sent on every request: masked wherever a server echoes it
    for proxy in environment_proxies().values():  # the client sends their userinfo as Proxy-Authorization
        remember_url_credentials(proxy if "://" in proxy else f"http://{proxy}")
    return HttpClient(max_connections=max_connections, headers=headers, follow_redirects=True)


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


def failure_cause(exc: BaseException) -> str:
    """Describe the OS-level cause of a connection failure, e.g. `connection refused`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            if current.errno == errno.ECONNREFUSED:
                return "connection refused"
            return os.strerror(current.errno).lower()
        cause = current.cause if isinstance(current, HttpError) else None
        current = cause or current.__cause__ or current.__context__
    text = redact(str(exc).strip())
    return text[0].lower() + text[1:] if text else type(exc).__name__


def map_http_error(exc: HttpError, method: str, url: str, timeout: float, retries: int = 0) -> TargetError:
    """Turn a failed request into the matching Proctor error.

    Args:
        exc: What the client raised.
        method: The request method.
        url: The request URL.
        timeout: The timeout the request ran with, in seconds.
        retries: How many retries were made before this failure (mentioned in the message).

    Returns:
        `TargetTimeout`, `TargetUnreachable` or a plain `TargetError`, with a message naming the URL.
    """
    after = _after(retries)
    url = redact(url)  # the URL may carry a password or a key: messages land in results and logs
    if isinstance(exc, ConnectTimeout):
        return TargetTimeout(f"cannot connect to {url} within {_seconds(timeout)}{after}")
    if isinstance(exc, ReplyTimeout):
        return TargetTimeout(f"no reply from {url} within {_seconds(timeout)}{after}")
    if isinstance(exc, ConnectFailed):
        return TargetUnreachable(f"cannot connect to {url}{after}: {failure_cause(exc)}")
    if isinstance(exc, ConnectionLost):
        return TargetUnreachable(f"connection to {url} failed{after}: {failure_cause(exc)}")
    return TargetError(f"{method} {url} failed{after}: {failure_cause(exc)}")


def _after(retries: int) -> str:
    return f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""


def _backoff(policy: RetryPolicy, attempts: int, retry_after: float | None) -> float:
    """Seconds to wait after `attempts` failed attempts: the server's `Retry-After`, else exponential + jitter."""
    if retry_after is not None:
        return min(retry_after, policy.max_retry_after)
    return min(policy.max_wait, policy.initial_wait * 2.0 ** (attempts - 1)) + random.uniform(0, policy.initial_wait)


async def send_with_retries(
    client: HttpClient,
    method: str,
    url: str,
    *,
    request_timeout: float,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
    policy: RetryPolicy = DEFAULT_RETRY,
) -> tuple[HttpResponse, int]:
    """Send a request, retrying connection errors, 5xx and 429.

    A plain loop: nothing is allocated for retrying unless an attempt fails.

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
    remember_url_credentials(url)  # its userinfo is sent as Basic auth: masked wherever a server echoes it
    traced = trace_headers()  # W3C traceparent/tracestate of the trial, when the run exports traces
    if traced:
        headers = {**traced, **(headers or {})}
    retries = 0
    while True:
        try:
            response = await client.request(
                method, url, json_body=json_body, headers=headers, request_timeout=request_timeout
            )
        except HttpError as exc:
            if not exc.retryable:
                raise map_http_error(exc, method, url, request_timeout) from exc
            if retries >= policy.max_retries:
                raise map_http_error(exc, method, url, request_timeout, retries) from exc
            failure: object = exc
            wait = _backoff(policy, retries + 1, None)
        else:
            status = response.status_code
            if status < 400:
                return response, retries
            if (status < 500 and status != 429) or retries >= policy.max_retries:
                body = redact_excerpt(response.text, 200)  # a server may echo the credentials it got
                after = _after(retries) if status >= 500 or status == 429 else ""
                raise TargetHTTPError(f"{method} {redact(url)} returned {status}{after}: {body}", status)
            failure = response
            wait = _backoff(policy, retries + 1, parse_retry_after(response.headers) if status in (429, 503) else None)
        if logger.isEnabledFor(logging.DEBUG):  # the failure quotes the URL: its userinfo and keys masked
            logger.debug("retrying in %.2f s after attempt %d: %s", wait, retries + 1, redact(str(failure)))
        await anyio.sleep(wait)
        retries += 1


def decode_json(response: HttpResponse) -> Any:
    """Decode a response body as JSON.

    Args:
        response: A successful response.

    Returns:
        The decoded body.

    Raises:
        TargetProtocolError: The body is not JSON.
    """
    try:
        return decode_body(response.content)
    except ValueError:
        text = redact_excerpt(response.text, 100)
        raise TargetProtocolError(f"reply from {redact(response.url)} is not JSON: {text!r}") from None
