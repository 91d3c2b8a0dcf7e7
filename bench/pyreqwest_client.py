"""A probe, not Proctor: its model providers' HTTP client on pyreqwest (Rust's reqwest and hyper), measured.

Issue 22, 2026-11-29, fourth session (bench/README, "Issue 22, the HTTP client and scoring"): pyreqwest does a
request's HTTP work on a Tokio thread of its own, outside the GIL, so the event loop's thread spends ~60 µs a
request where aiohttp's pool spends ~200, and the judge's calls overlap Proctor's own Python on a second
core. It was measured and **not adopted**: rustls refuses a self-signed server certificate that is its own CA
(`openssl req -x509`'s default, which OpenSSL and so aiohttp accept through `SSL_CERT_FILE`), reqwest always
trusts the system's store besides the bundle Proctor names, and the process's CPU per scored row stayed the
same. This keeps the measurement repeatable:

    .venv/bin/python bench/pyreqwest_client.py score DATA.csv ...   # `proctor score` with models on pyreqwest
    .venv/bin/python bench/score.py --model-client pyreqwest ...     # the same, from the scoring bench

`ReqwestClient` answers as `proctor._http.HttpClient` does (an `HttpResponse` whose body is read; failures
before a complete answer raise the same `HttpError` subclasses), for what a model provider sends: JSON POSTs
with default headers, no cookies, no redirects; proxies from the environment read once per client (with
their credentials, honouring `NO_PROXY`), credentials in a request URL sent as Basic `Authorization`,
per-attempt timeouts for connecting (including the wait for a free connection) and for each read, and a
connection limit. Needs `pip install pyreqwest` (0.15.1 measured).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Mapping
from datetime import timedelta
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import certifi
from multidict import CIMultiDict

import proctor.models._openai as openai_models
from proctor._http import (
    ConnectFailed,
    ConnectionLost,
    ConnectTimeout,
    HttpError,
    HttpResponse,
    ReplyTimeout,
    RequestInvalid,
    _without_userinfo,
    encode_json,
    environment_proxies,
)

if TYPE_CHECKING:
    from pyreqwest.client import Client, ClientBuilder
    from pyreqwest.exceptions import PyreqwestError

__all__ = ["ReqwestClient"]

logger = logging.getLogger("proctor.http")

_JSON_HEADERS = MappingProxyType({"Content-Type": "application/json"})


class ReqwestClient:
    """A pooled HTTP/1.1 client on pyreqwest for model providers, closed by `aclose`.

    Building it opens nothing: the pool is made on the first request (one per timeout value a caller
    gives, as reqwest's timeouts are the pool's, and per scheme; a model sends with one of each). The pool
    is not bound to an event loop: a request from another loop uses it as well.
    """

    __slots__ = ("__weakref__", "_clients", "_limit", "_proxies", "headers")

    def __init__(self, *, max_connections: int, headers: Mapping[str, str] | None = None) -> None:
        """Configure the client.

        Args:
            max_connections: Most requests in flight at once (requests beyond wait for a free connection).
            headers: Headers sent with every request (a request's own headers override them).
        """
        self._limit = max(1, max_connections)
        self.headers: CIMultiDict[str] = CIMultiDict(headers or {})
        """The default headers (case-insensitive)."""
        self._clients: dict[tuple[float, bool], Client] = {}
        self._proxies = environment_proxies()
        weakref.finalize(self, self._clients.clear)

    @property
    def max_connections(self) -> int:
        """Most connections open at once."""
        return self._limit

    def _client(self, seconds: float, tls: bool) -> Client:
        """The pool for requests with this timeout (and, for `https://` URLs, trusting the CA bundle)."""
        found = self._clients.get((seconds, tls))
        if found is None:
            from pyreqwest.client import ClientBuilder  # imported on first use: `import proctor.models` stays light

            span = timedelta(seconds=seconds)
            builder = (
                ClientBuilder()
                .max_connections(self._limit)
                .connect_timeout(span)
                .pool_timeout(span)
                .read_timeout(span)
                .follow_redirects(False)
                .referer(False)
                .default_headers(dict(self.headers))
            )
            if tls:  # parsing the bundle costs a few ms: not for plain-HTTP endpoints (a local server, a mock)
                builder = _with_ca_bundle(builder)
            found = self._clients[seconds, tls] = _with_proxies(builder, self._proxies).build()
        return found

    async def request(
        self,
        method: str,
        url: str,
        *,
        request_timeout: float,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """`proctor._http.HttpClient.request` (the same arguments, answer and errors), sent by pyreqwest."""
        from pyreqwest.exceptions import PyreqwestError

        target = url
        if "@" in url:  # credentials in the URL are sent as Basic auth (taking over Authorization), as httpx did
            target, authorization = _without_userinfo(url)
            if authorization is not None:
                headers = {**(headers or {}), "Authorization": authorization}
        try:
            builder = self._client(request_timeout, url[:6].lower() == "https:").request(method, target)
            if json_body is not None:
                builder = builder.body_bytes(encode_json(json_body))
                headers = {**_JSON_HEADERS, **headers} if headers else _JSON_HEADERS
            if headers:
                builder = builder.headers(dict(headers))
            response = await builder.build().send()
            content = bytes(await response.bytes())
        except PyreqwestError as exc:
            raise classify(exc) from exc
        except ValueError as exc:  # a malformed URL, refused before it is sent
            raise RequestInvalid(str(exc) or type(exc).__name__, exc) from exc
        if logger.isEnabledFor(logging.INFO):  # as HttpClient logs each request
            logger.info('HTTP Request: %s %s "HTTP/1.1 %d"', method, url, response.status)
        return HttpResponse(response.status, CIMultiDict(response.headers.items()), content, target)

    async def aclose(self) -> None:
        """Close the pools (a later request opens new ones)."""
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            await client.close()


def _with_ca_bundle(builder: ClientBuilder) -> ClientBuilder:
    """`builder` trusting the certificates `proctor._tls` would (besides the system's store)."""
    for certificate in _ca_certificates():
        builder = builder.add_root_certificate_pem(certificate)
    return builder


@cache
def _ca_certificates() -> tuple[bytes, ...]:
    """The PEM certificates of `SSL_CERT_FILE`, else of `SSL_CERT_DIR`'s files, else of certifi's bundle."""
    if os.environ.get("SSL_CERT_FILE"):
        paths = [Path(os.environ["SSL_CERT_FILE"])]
    elif os.environ.get("SSL_CERT_DIR"):
        paths = sorted(path for path in Path(os.environ["SSL_CERT_DIR"]).iterdir() if path.is_file())
    else:
        paths = [Path(certifi.where())]
    marker = b"-----END CERTIFICATE-----"
    found: list[bytes] = []
    for path in paths:
        try:
            text = path.read_bytes()
        except OSError:
            continue
        found += [part.strip() + b"\n" + marker + b"\n" for part in text.split(marker)[:-1]]
    return tuple(certificate for certificate in found if b"-----BEGIN CERTIFICATE-----" in certificate)


def _with_proxies(builder: ClientBuilder, proxies: Mapping[str, str]) -> ClientBuilder:
    """`builder` sending through the environment's proxies (read once, by `urllib`'s rules), or directly."""
    builder = builder.no_proxy()  # reqwest would read the environment itself, by rules of its own
    if not proxies:
        return builder
    from pyreqwest.proxy import ProxyBuilder

    bypass = os.environ.get("NO_PROXY") or os.environ.get("no_proxy")
    for scheme in ("http", "https", "all"):
        address = proxies.get(scheme)
        if address is None:
            continue
        parts = urlsplit(address if "://" in address else f"http://{address}")
        bare = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        proxy = getattr(ProxyBuilder, scheme)(bare)
        if parts.username is not None:
            proxy = proxy.basic_auth(unquote(parts.username), unquote(parts.password or ""))
        builder = builder.proxy(proxy.no_proxy(bypass))
    return builder


def classify(exc: PyreqwestError) -> HttpError:
    """Turn a pyreqwest failure into the matching `HttpError`.

    By the causes reqwest reports, not by pyreqwest's class alone: pyreqwest 0.15 raises its
    `ConnectTimeoutError` for a reply that does not come as well, and its `ConnectError` for a connection
    the server closed before answering; reqwest's `client error (Connect)` cause tells a failure to connect.

    Args:
        exc: What pyreqwest raised.

    Returns:
        `ConnectTimeout`, `ReplyTimeout`, `ConnectFailed`, `ConnectionLost` or `RequestInvalid`.
    """
    from pyreqwest import exceptions as errors

    causes = _causes(exc)
    text = ": ".join([exc.message, *causes]) if causes else exc.message
    connecting = "client error (Connect)" in causes
    if isinstance(exc, errors.PoolTimeoutError) or (isinstance(exc, errors.RequestTimeoutError) and connecting):
        return ConnectTimeout(text, exc)
    if isinstance(exc, errors.RequestTimeoutError):
        return ReplyTimeout(": ".join(["no reply", *causes]), exc)
    if connecting:
        return ConnectFailed(text, exc)
    if isinstance(exc, errors.TransportError | errors.DecodeError | errors.ClientClosedError):
        return ConnectionLost(text, exc)
    return RequestInvalid(text, exc)


def _causes(exc: PyreqwestError) -> list[str]:
    """What reqwest says caused `exc`, without its "error sending request for url (...)" (no URL is quoted)."""
    details = getattr(exc, "details", None) or {}
    causes = [str(cause.get("message", "")) for cause in details.get("causes") or ()]
    return [cause for cause in causes if cause and " for url (" not in cause]


def _model_client(
    *, max_connections: int, headers: Mapping[str, str] | None = None, follow_redirects: bool, cookies: bool
) -> ReqwestClient:
    """What `proctor.models._openai` builds in place of `HttpClient` (it asks for no cookies, no redirects)."""
    assert not follow_redirects and not cookies, "only a model provider's client is replaced"
    return ReqwestClient(max_connections=max_connections, headers=headers)


if __name__ == "__main__":
    import sys

    from proctor.cli import script

    openai_models.HttpClient = _model_client  # type: ignore[attr-defined,assignment]
    sys.argv[0] = "proctor"
    script()
