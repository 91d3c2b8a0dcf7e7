"""Who may read the viewer: a constant-time token check, and on loopback a `Host` check.

Bound to 127.0.0.1 the viewer needs no token, but a web page elsewhere could still reach it through DNS
rebinding (its own name resolving to 127.0.0.1): requests whose `Host` is not a loopback name are refused.
Shared on another address, every request needs the token, given once as `?token=` (the viewer then keeps
it in a cookie for the links of the page), or as `Authorization: Bearer`.
"""

from __future__ import annotations

import hmac
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "LOOPBACK_NAMES", "Gate", "is_loopback"]

COOKIE = "proctor_view_token"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether a bind address or `Host` name is the local machine only."""
    return host in LOOPBACK_NAMES or host.startswith("127.")


def _host_name(value: str) -> str:
    """The name of a `Host` header, without its port (`[::1]:80` -> `[::1]`)."""
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0]


class Gate:
    """Pure ASGI middleware: refuse requests without the token (when set) or with a foreign `Host` (loopback).

    Args:
        app: The viewer.
        token: The token every request must carry; `None` on loopback without one.
        check_host: Refuse a `Host` that is not a loopback name (on by default when bound to loopback).
    """

    def __init__(self, app: ASGIApp, token: str | None, *, check_host: bool) -> None:
        self.app = app
        self.token = None if token is None else token.encode()
        self.check_host = check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.check_host and not is_loopback(_host_name(headers.get("host", ""))):
            await _refuse(send, 421, "this viewer only answers requests addressed to 127.0.0.1 or localhost")
            return
        if self.token is None:
            await self.app(scope, receive, send)
            return
        from_query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[-1]
        scheme, _, bearer = headers.get("authorization", "").partition(" ")
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed Cookie header carries no token
            cookie = SimpleCookie()
        candidates = [from_query, bearer.strip() if scheme.lower() == "bearer" else ""]
        candidates.append(cookie[COOKIE].value if COOKIE in cookie else "")
        if not any(c and hmac.compare_digest(c.encode(), self.token) for c in candidates):
            await _refuse(send, 401, "a token is needed: open the address `proctor view` printed (it ends in ?token=)")
            return
        if not (from_query and hmac.compare_digest(from_query.encode(), self.token)):
            await self.app(scope, receive, send)
            return
        value = from_query

        async def remember(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict".encode("latin-1")
                message["headers"] = [*message.get("headers", []), (b"set-cookie", extra)]
            await send(message)

        await self.app(scope, receive, remember)


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
