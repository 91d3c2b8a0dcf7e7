"""Proctor's HTTP client for agent targets and model providers: aiohttp's pool behind a small API.

Measured (`bench/http_clients.py`, issue 22): per request, httpx spends client CPU that grows with the
number of pooled connections (httpcore scans every connection on each request and response), while
aiohttp's connector stays flat and costs a third to a sixth of httpx's at 16-64 connections. So targets
and model providers send through `HttpClient`, which keeps one `aiohttp.ClientSession` per event loop
(sessions are bound to the loop they were made in) and answers with an `HttpResponse` whose body is
read. Failures before a complete answer raise an `HttpError` subclass saying what kind of failure it
was, so callers map them to their own errors without knowing aiohttp.

What carries over from the httpx clients: the shared TLS context (`proctor._tls`), HTTP proxies from
the environment (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, honouring `NO_PROXY`; credentials in the
proxy URL are sent as proxy authorisation), per-attempt timeouts for connecting (including the wait for
a free connection) and for each read, a connection limit, default headers, and redirects when asked.
The environment is read once per client, not per request: aiohttp's own `trust_env` looks proxies and
`.netrc` up in a worker thread on every request (two thread hand-offs per call), and httpx reads no
`.netrc` either.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import urllib.request
import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson
from multidict import CIMultiDict
from yarl import URL

from proctor import _json
from proctor._redact import redact_url
from proctor._tls import shared_ssl_context

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "ConnectFailed",
    "ConnectTimeout",
    "ConnectionLost",
    "HttpClient",
    "HttpError",
    "HttpResponse",
    "ReplyTimeout",
    "RequestInvalid",
    "decode_json",
    "encode_json",
]

_JSON_HEADERS = MappingProxyType({"Content-Type": "application/json"})
_URL_CACHE = 64
"""URLs parsed once per client (a model or a target sends to a handful; more are parsed per request)."""


def _aiohttp() -> Any:
    """The aiohttp module, imported on first use (by the first request, not by `import proctor._http`).

    Its import builds two TLS contexts: 60-140 ms, and most of `proctor score`'s start-up instructions that
    are not Proctor's own (issue 22).
    """
    import aiohttp

    return aiohttp


logger = logging.getLogger("proctor.http")


class HttpError(Exception):
    """A request failed before a complete response arrived."""

    retryable = False
    """Whether sending the request again may succeed (the connection failed, not the request)."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        """The underlying exception (an `OSError` for connection failures, when there is one)."""


class ConnectFailed(HttpError):
    """No connection could be made (refused, unresolvable host, TLS handshake failed)."""

    retryable = True


class ConnectionLost(HttpError):
    """The connection broke, or the server answered something that is not HTTP."""

    retryable = True


class ConnectTimeout(HttpError):
    """No connection (or no free connection in the pool) within the timeout."""


class ReplyTimeout(HttpError):
    """The server sent nothing for longer than the timeout."""


class RequestInvalid(HttpError):
    """The request cannot be sent as given (bad URL, unsupported scheme, too many redirects)."""


class HttpResponse:
    """A complete HTTP response: status, headers (case-insensitive), body and the URL that answered."""

    __slots__ = ("_url", "content", "headers", "status_code")

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes, url: str | URL) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self._url = url

    @property
    def url(self) -> str:
        """The URL that answered (after redirects), as text (made on first use: most answers never show it)."""
        url = self._url
        if not isinstance(url, str):
            url = self._url = str(url)
        return url

    @property
    def text(self) -> str:
        """The body decoded with the charset the `Content-Type` names, else UTF-8 (bad bytes replaced)."""
        charset = "utf-8"
        content_type = self.headers.get("Content-Type", "")
        for part in content_type.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def __repr__(self) -> str:
        return f"<HttpResponse [{self.status_code}] {self.url}>"


_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
"""orjson leaves dataclasses, dates and subclasses of the JSON types to the standard library's rules."""


def encode_json(value: Any) -> bytes:
    """Encode a request body as compact UTF-8 JSON (NaN and infinities are refused, as JSON has none).

    By orjson: ~30x less CPU than `json.dumps` on a judge's request (`_json.encode_basestring` goes
    character by character; issue 22). The bytes are those of `json.dumps(value, ensure_ascii=False,
    separators=(",", ":"))` but for the spelling of some floats (`1e-5` for `1e-05`, the same number).
    What orjson would write differently is written by the standard library instead, as before: a body
    with a `null` in it (orjson writes NaN and infinities as `null`; the standard library refuses them),
    and one orjson refuses (a dataclass, a date, a subclass of a JSON type, an integer beyond 64 bits, a
    lone surrogate, a key that is not a string), which the standard library encodes or refuses. An `Enum`
    member or a `UUID` is written as its value (the standard library refuses them).

    Raises:
        TypeError: A value is not JSON.
        ValueError: A float is NaN or infinite, or the value contains itself.
    """
    try:
        data = orjson.dumps(value, option=_ORJSON_STRICT)
    except TypeError:  # orjson.JSONEncodeError: the standard library encodes it or says why not
        return _encode_standard(value)
    return _encode_standard(value) if b"null" in data else data  # a `null` may have been a NaN


def _encode_standard(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def decode_json(content: bytes) -> Any:
    """Decode a JSON body: by orjson, or by the standard library where orjson would read it otherwise.

    orjson reads UTF-8 only and no `NaN` or `Infinity`, and reads integers beyond 64 bits as floats; the
    standard library decodes those bodies (and UTF-16 and UTF-32), so the value is the one `json.loads`
    gives, at a fraction of its CPU (`proctor._json`).

    Raises:
        ValueError: The body is not JSON (`json.JSONDecodeError`).
    """
    return _json.loads(content)


class HttpClient:
    """A pooled HTTP/1.1 client (aiohttp), one session per event loop, closed by `aclose`.

    Building it opens nothing: the session is made on the first request in the running loop, and made
    again if a later request runs in another loop.
    """

    __slots__ = (
        "__weakref__",
        "_cookies",
        "_follow_redirects",
        "_limit",
        "_open",
        "_proxies",
        "_proxy_for",
        "_timeouts",
        "_urls",
        "headers",
    )

    def __init__(
        self,
        *,
        max_connections: int,
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = True,
        cookies: bool = True,
    ) -> None:
        """Configure the client.

        Args:
            max_connections: Most connections open at once (requests beyond wait for a free one).
            headers: Headers sent with every request (a request's own headers override them).
            follow_redirects: Follow 3xx redirects (at most 10).
            cookies: Keep the cookies servers set and send them back (`False`: none are kept, as a model
                API needs none; aiohttp then skips its cookie jar's per-request work).
        """
        self._cookies = cookies
        self._limit = max(1, max_connections)
        self.headers: CIMultiDict[str] = CIMultiDict(headers or {})
        """The default headers (case-insensitive)."""
        self._follow_redirects = follow_redirects
        self._open = _Open()
        # A client still open when the process ends (a cached model, a service's judge) is dropped quietly at
        # exit: aiohttp would otherwise report "Unclosed client session" when its loop is already gone.
        weakref.finalize(self, self._open.drop)
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        self._urls: dict[str, URL] = {}
        self._proxies = environment_proxies()
        self._proxy_for: dict[tuple[str, str], tuple[URL | None, str | None]] = {}

    @property
    def max_connections(self) -> int:
        """Most connections open at once."""
        return self._limit

    def _current(self) -> aiohttp.ClientSession:
        aiohttp = _aiohttp()
        loop = asyncio.get_running_loop()
        current = self._open
        session = current.session
        if session is None or current.loop is not loop or session.closed:
            current.drop()
            connector = aiohttp.TCPConnector(limit=self._limit, limit_per_host=0)
            # unsafe: keep cookies from IP-address hosts too (an agent on 127.0.0.1), as httpx did
            jar = aiohttp.CookieJar(unsafe=True) if self._cookies else aiohttp.DummyCookieJar()
            session = aiohttp.ClientSession(connector=connector, headers=self.headers, cookie_jar=jar)
            current.session, current.loop = session, loop
        return session

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        found = self._timeouts.get(seconds)
        if found is None:
            found = self._timeouts[seconds] = _aiohttp().ClientTimeout(
                total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
            )
        return found

    def _url(self, url: str) -> URL:
        """`url` parsed, once per client for the first `_URL_CACHE` URLs (a model client sends to one).

        The same `URL` object each time also keeps the parts yarl and aiohttp compute from it (host, port,
        origin) from being computed again on every request.

        Raises:
            ValueError: The URL is malformed.
        """
        found = self._urls.get(url)
        if found is None:
            found = URL(url)
            if len(self._urls) < _URL_CACHE:
                self._urls[url] = found
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
        """Send one request and read the whole answer.

        Args:
            method: The HTTP method.
            url: The full URL.
            request_timeout: Seconds allowed to connect (including waiting for a free connection), and between
                any two reads of the answer.
            json_body: A value sent as a JSON body; `None` sends no body.
            headers: Headers for this request only.

        Returns:
            The response, whatever its status.

        Raises:
            HttpError: The request failed before a complete answer (see the subclasses).
        """
        session = self._current()
        target = url
        if "@" in url:  # credentials in the URL are sent as Basic auth (taking over Authorization), as httpx did
            target, authorization = _without_userinfo(url)
            if authorization is not None:
                headers = {**(headers or {}), "Authorization": authorization}
        data = None
        if json_body is not None:
            data = encode_json(json_body)
            headers = {**_JSON_HEADERS, **headers} if headers else _JSON_HEADERS
        tls = url[:6].lower() == "https:"
        proxy, proxy_authorization = self._proxy(url) if self._proxies else (None, None)
        proxy_headers = None
        if proxy_authorization is not None:  # to the proxy: on the CONNECT for TLS, else on the request itself
            if tls:
                proxy_headers = {"Proxy-Authorization": proxy_authorization}
            else:
                headers = {**(headers or {}), "Proxy-Authorization": proxy_authorization}
        try:
            async with session.request(
                method,
                self._url(target),
                data=data,
                headers=headers,
                timeout=self._timeout(request_timeout),
                allow_redirects=self._follow_redirects,
                ssl=shared_ssl_context() if tls else True,
                proxy=proxy,
                proxy_headers=proxy_headers,
            ) as response:
                content = await response.read()
                if logger.isEnabledFor(logging.INFO):  # as httpx logged each request, userinfo and keys masked
                    shown = redact_url(url)
                    logger.info('HTTP Request: %s %s "HTTP/1.1 %d %s"', method, shown, response.status, response.reason)
                return HttpResponse(response.status, response.headers, content, response.url)
        except _aiohttp().ClientError as exc:
            raise classify(exc) from exc
        except ValueError as exc:  # yarl rejects a malformed URL before aiohttp sees it
            raise RequestInvalid(str(exc) or type(exc).__name__, exc) from exc

    def _proxy(self, url: str) -> tuple[URL | None, str | None]:
        """The proxy for `url` from the environment (`None`: go direct), and its `Proxy-Authorization` value."""
        parts = urlsplit(url)
        key = (parts.scheme.lower(), parts.hostname or "")
        found = self._proxy_for.get(key)
        if found is None:
            proxy = self._proxies.get(key[0]) or self._proxies.get("all")
            if proxy is None or (key[1] and urllib.request.proxy_bypass(key[1])):
                found = (None, None)
            else:
                address = URL(proxy if "://" in proxy else f"http://{proxy}")
                auth = basic_auth(address.user, address.password or "") if address.user is not None else None
                found = (address.with_user(None), auth)
            self._proxy_for[key] = found
        return found

    async def aclose(self) -> None:
        """Close the pool of the running loop's session (a later request opens a new one)."""
        current = self._open
        session, loop = current.session, current.loop
        current.session = current.loop = None
        if session is None or session.closed:
            return
        if loop is asyncio.get_running_loop():
            await session.close()
        else:  # made in another loop, which its close() would need
            _abandon(session)


class _Open:
    """The session a client has open and the loop it belongs to."""

    __slots__ = ("loop", "session")

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def drop(self) -> None:
        """Forget the session, marking it closed without its loop (which may be gone)."""
        session, self.session, self.loop = self.session, None, None
        if session is not None and not session.closed:
            _abandon(session)


def _abandon(session: aiohttp.ClientSession) -> None:
    """Drop a session whose event loop is gone (its `close()` would need that loop): mark it closed."""
    connector = session.connector
    session.detach()
    if connector is not None:
        connector._close()  # the public close() schedules on the session's (ended) loop


def _without_userinfo(url: str) -> tuple[str, str | None]:
    """`url` without its `user:password@`, and those credentials as a Basic `Authorization` value."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return bare, basic_auth(unquote(parts.username), unquote(parts.password or ""))


def basic_auth(user: str, password: str) -> str:
    """A Basic `Authorization` (or `Proxy-Authorization`) value (UTF-8, as httpx encodes it)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def environment_proxies() -> dict[str, str]:
    """The proxies the environment names, by scheme (`http`, `https`, `all`), as `urllib` reads them."""
    return {
        scheme: address
        for scheme, address in urllib.request.getproxies().items()
        if scheme in ("http", "https", "all") and address
    }


def classify(exc: aiohttp.ClientError) -> HttpError:
    """Turn an aiohttp failure into the matching `HttpError`.

    Args:
        exc: What aiohttp raised.

    Returns:
        `ConnectTimeout`, `ReplyTimeout`, `ConnectFailed`, `ConnectionLost` or `RequestInvalid`.
    """
    aiohttp = _aiohttp()
    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ConnectTimeout(text, exc)
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return ReplyTimeout(text, exc)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ConnectFailed(text, exc.os_error)
    if isinstance(exc, aiohttp.TooManyRedirects | aiohttp.InvalidURL):
        return RequestInvalid(text, exc)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return ConnectionLost("server disconnected", exc)
    if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError | aiohttp.ClientResponseError):
        return ConnectionLost(text, exc)
    return RequestInvalid(text, exc)
