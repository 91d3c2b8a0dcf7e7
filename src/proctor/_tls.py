"""One TLS context for every HTTP client Proctor builds (agent targets and model providers).

Each `httpx.AsyncClient` otherwise loads certifi's CA bundle into a context of its own (~18 ms per
client, even for `http://` URLs); a run builds several clients, so they share this one.
"""

from __future__ import annotations

import ssl
from functools import cache

__all__ = ["shared_ssl_context"]


@cache
def shared_ssl_context() -> ssl.SSLContext:
    """The process-wide default TLS context (certificate verification on)."""
    import httpx

    return httpx.create_ssl_context()
