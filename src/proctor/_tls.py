"""One TLS context for every HTTP client Proctor builds (agent targets and model providers).

Made the way httpx makes its default (`SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's CA bundle),
once per process: loading a CA bundle costs ~18 ms, and a run builds several clients. Built on first use
by an `https://` request, so runs against `http://` endpoints never load one.
"""

from __future__ import annotations

import os
import ssl
from functools import cache

import certifi

__all__ = ["shared_ssl_context"]


@cache
def shared_ssl_context() -> ssl.SSLContext:
    """The process-wide default TLS context (certificate verification on)."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    return ssl.create_default_context(cafile=certifi.where())
