"""Secrets out of everything Proctor writes: URLs' userinfo, secret query values, values read from `env.`.

Whatever names a URL (a target, a judge endpoint, Redis) or quotes one (an error message) passes through
`redact` before it reaches results, the console, logs, the history, reports or an API error body:

* the userinfo of a URL (`redis://:pw@host`, `https://user:token@host`) becomes `***`;
* a query value whose name says it is a secret (`key`, `api_key`, `token`, `password`, `secret`,
  `signature`, ...) becomes `***`;
* a value a template read from the environment (`{{ env.API_KEY }}`, `${API_KEY}`) is remembered by
  `remember_secret` and replaced by `***` wherever it appears.

Every credential Proctor sends is remembered when it is read, so a server that echoes it back (a 401 body
quoting the `Authorization` header it got, a redirect URL, a header) cannot put it in an error message:
`remember_credential` for an API key or a header value (`Bearer <token>` remembers the token, `Basic
<base64>` the base64 and the password in it), `remember_header` for a header that carries one
(`Authorization`, `X-Api-Key`, `Cookie`, ...), and `remember_url_credentials` for a URL's userinfo (the
password, and the base64 `user:password` of the Basic header it becomes) and its secret query values.
Whatever came back from a server is quoted through `redact` (or `redact_excerpt`, which masks before it
cuts, so no half of a secret survives the cut) before it becomes an exception message, a log line or a
stored reason. Values shorter than `MIN_SECRET_LENGTH` are never remembered.

`install_log_redaction()` puts the same filter on the loggers of httpx, httpcore and Proctor.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "install_log_redaction",
    "masking",
    "redact",
    "redact_excerpt",
    "redact_url",
    "remember_credential",
    "remember_environment_secrets",
    "remember_header",
    "remember_headers",
    "remember_secret",
    "remember_url_credentials",
]

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET_LENGTH = 4
"""Shorter values are not remembered (masking `1` or `ab` everywhere would garble the output)."""
SECRET_NAMES = re.compile(
    r"(?:^|[_\-.])(?:key|apikey|api[_\-]?key|token|access[_\-]?token|auth|authorization|password|passwd|pwd|"
    r"secret|client[_\-]?secret|signature|sig|credential|credentials|session[_\-]?key)$",
    re.IGNORECASE,
)
"""Query parameter names whose values are secrets (`key`, `x-api-key`, `access_token`, ...)."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-amz-security-token"})
"""Headers that carry a credential whatever their value looks like (besides names `SECRET_NAMES` matches)."""
_AUTH_VALUE = re.compile(r"\s*([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~\-]*)\s+(\S+)\s*")
"""`<scheme> <credentials>`, as in `Bearer sk-...` or `Basic dXNlcjpwdw==`."""
ENVIRONMENT_SECRET_NAMES = re.compile(
    r"(?:^|_)(?:API_?KEY|API_?TOKEN|ACCESS_?TOKEN|AUTH_?TOKEN|SECRET_?(?:ACCESS_?)?KEY|SESSION_?TOKEN|API_?SECRET)$",
    re.IGNORECASE,
)
"""Environment variables an SDK may read a credential from (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`, ...)."""
_URLS_SEEN = 256
"""URLs whose credentials were remembered, kept to skip parsing them again (a target sends to a handful)."""

_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()
_urls_seen: set[str] = set()
_scoped: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("proctor_scoped_secrets", default=())


def remember_secret(value: Any) -> None:
    """Mask `value` (a string read from the environment for a template) wherever it appears from now on."""
    global _pattern
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH or value in _secrets:
        return
    with _lock:
        _secrets.add(value)
        quoted = {quote(v, safe="") for v in _secrets} | _secrets
        _pattern = re.compile("|".join(re.escape(v) for v in sorted(quoted, key=len, reverse=True)))


def remember_credential(value: Any) -> None:
    """Mask a credential Proctor sends (an API key, a header's value) wherever it appears from now on.

    `<scheme> <credentials>` (`Bearer sk-...`, `Basic dXNlcjpwdw==`) remembers the credentials, so the
    whole value shows as `Bearer ***`; a Basic value also remembers the password (or the lone user name)
    in its base64 `user:password`. Anything else is remembered as it is.
    """
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
        return
    scheme = _AUTH_VALUE.fullmatch(value)
    if scheme is None:
        remember_secret(value.strip())
        return
    credentials = scheme.group(2)
    remember_secret(credentials)
    if scheme.group(1).lower() == "basic":
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return
        user, colon, password = decoded.partition(":")
        remember_secret(password if colon else user)


def remember_header(name: str, value: Any) -> None:
    """`remember_credential(value)` when the header `name` carries a credential (`Authorization`, `X-Api-Key`)."""
    lowered = name.lower()
    if lowered in CREDENTIAL_HEADERS or SECRET_NAMES.search(lowered):
        remember_credential(value)


def remember_headers(headers: Mapping[str, Any] | None) -> None:
    """`remember_header` for each header of `headers`."""
    if headers:
        for name, value in headers.items():
            remember_header(name, value)


def remember_environment_secrets(*names: str) -> None:
    """Mask the values of the environment variables `names` wherever they appear from now on.

    With no names, those of every variable `ENVIRONMENT_SECRET_NAMES` matches. For providers whose SDK
    reads its own credential from the environment (LiteLLM, boto3), which Proctor never sees.
    """
    if names:
        for name in names:
            remember_credential(os.environ.get(name))
        return
    for name, value in os.environ.items():
        if ENVIRONMENT_SECRET_NAMES.search(name):
            remember_credential(value)


def remember_url_credentials(url: Any) -> None:
    """Mask the credentials `url` carries wherever they appear from now on.

    Its userinfo's password (as written and unquoted) and the base64 `user:password` of the Basic
    `Authorization` it is sent as (or the user name when there is no password: a token, as in
    `https://<token>@host`), and the values of its secret query parameters (`api_key=`, `token=`, ...).
    """
    if not isinstance(url, str) or ("@" not in url and "?" not in url) or url in _urls_seen:
        return
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return
    if username is not None:
        user = unquote(username)
        if password is None:
            remember_secret(user)
            remember_secret(username)
        else:
            remember_secret(unquote(password))
            remember_secret(password)
        remember_secret(base64.b64encode(f"{user}:{unquote(password or '')}".encode()).decode("ascii"))
    if parts.query:
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if SECRET_NAMES.search(name):
                remember_secret(value)
    with _lock:
        if len(_urls_seen) >= _URLS_SEEN:
            _urls_seen.clear()
        _urls_seen.add(url)


@contextmanager
def masking(*values: str) -> Iterator[None]:
    """Mask `values` too in what `redact` returns inside the block, in this task only.

    For credentials that live for one session (a gateway's per-session token): remembering each for the
    whole run would grow the global mask with every trial.
    """
    kept = tuple(value for value in values if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH)
    token = _scoped.set(_scoped.get() + kept) if kept else None
    try:
        yield
    finally:
        if token is not None:
            _scoped.reset(token)


def redact_url(url: str) -> str:
    """The URL with its userinfo and secret query values masked (text that is no URL is returned as is)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if colon and user else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(SECRET_NAMES.search(name) for name, _ in pairs):
            query = "&".join(
                f"{quote(name, safe='')}={MASK if SECRET_NAMES.search(name) else quote(value, safe='')}"
                for name, value in pairs
            )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact(text: str) -> str:
    """`text` with every URL in it redacted and every remembered secret masked."""
    for value in _scoped.get():
        if value in text:
            text = text.replace(value, MASK)
    if "://" in text:
        text = _URL.sub(lambda match: redact_url(match.group(0)), text)
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return text


def redact_excerpt(text: Any, limit: int) -> str:
    """`redact(str(text))` cut to `limit` characters (and `...`): masked first, so a cut never halves a secret."""
    cleaned = redact(text if isinstance(text, str) else str(text))
    return cleaned if len(cleaned) <= limit else cleaned[:limit] + "..."


LOGGERS = ("httpx", "httpx2", "httpcore", "proctor", "uvicorn", "redis", "a2a", "mcp")
"""The loggers (and their children) whose records `install_log_redaction` rewrites (`httpx2`, `a2a`, `mcp`: the
A2A and MCP SDKs' transports log request and agent-card URLs with their userinfo)."""
_installed = False


def install_log_redaction() -> None:
    """Rewrite the records of `LOGGERS` through `redact` as they are made (idempotent).

    A record factory, not a logger filter: filters on a logger miss its children's records (httpx logs
    every request URL at INFO, `proctor.service` logs errors), and handlers are the application's.
    """
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name.split(".", 1)[0] in LOGGERS:
            try:
                message = record.getMessage()
            except Exception:  # a malformed record is logging's to report, as it would without us
                return record
            cleaned = redact(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return record

    logging.setLogRecordFactory(factory)
