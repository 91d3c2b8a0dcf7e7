"""Secrets out of everything Proctor writes: URLs' userinfo, secret query values, values read from `env.`.

Whatever names a URL (a target, a judge endpoint, Redis) or quotes one (an error message) passes through
`redact` before it reaches results, the console, logs, the history, reports or an API error body:

* the userinfo of a URL (`redis://:pw@host`, `https://user:token@host`) becomes `***`;
* a query value whose name says it is a secret (`key`, `api_key`, `token`, `password`, `secret`,
  `signature`, ...) becomes `***`;
* a value a template read from the environment (`{{ env.API_KEY }}`, `${API_KEY}`) is remembered by
  `remember_secret` and replaced by `***` wherever it appears.

`install_log_redaction()` puts the same filter on the loggers of httpx, httpcore and Proctor.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

__all__ = ["MASK", "install_log_redaction", "redact", "redact_url", "remember_secret"]

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

_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()


def remember_secret(value: Any) -> None:
    """Mask `value` (a string read from the environment for a template) wherever it appears from now on."""
    global _pattern
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH or value in _secrets:
        return
    with _lock:
        _secrets.add(value)
        quoted = {quote(v, safe="") for v in _secrets} | _secrets
        _pattern = re.compile("|".join(re.escape(v) for v in sorted(quoted, key=len, reverse=True)))


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
    if "://" in text:
        text = _URL.sub(lambda match: redact_url(match.group(0)), text)
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return text


LOGGERS = ("httpx", "httpcore", "proctor", "uvicorn", "redis")
"""The loggers (and their children) whose records `install_log_redaction` rewrites."""
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
