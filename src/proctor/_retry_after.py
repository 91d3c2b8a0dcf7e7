"""How long a server asked a client to wait (`Retry-After`), shared by agent targets and model providers.

It sits at the bottom of the package (no Proctor imports) because both `targets` and `models` use it.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

__all__ = ["parse_retry_after"]


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Read how long a provider asked to wait, from `retry-after-ms` or `Retry-After` (seconds or a date).

    Args:
        headers: Response headers (case-insensitive mapping, or a plain dict with lowercase keys).

    Returns:
        Seconds to wait, or `None` when the headers do not say.
    """
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
