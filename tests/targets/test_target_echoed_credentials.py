"""Credentials a target sends never show in its errors, even when the agent echoes them back.

A loopback stub answers 401 with a body quoting the credential headers it got (the `Authorization` a URL's
userinfo becomes, `X-Api-Key`, a bearer token), or redirects to a URL quoting them: every target's error
message carries the mask (`***`) instead, whether the credential came from `${VAR}`, `{{ env.X }}`, a
literal header, an environment variable the target reads itself, or a gateway's per-session token.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from proctor._redact import redact
from proctor.errors import TargetHTTPError, TargetProtocolError
from proctor.suite import HttpTargetSpec, LobuTargetSpec
from proctor.targets import HttpTarget, LobuTarget, SessionContext, build_target
from proctor.targets._embabel import EmbabelTarget
from proctor.targets._openai import OpenAITarget
from servers._serve import FAST_RETRY, serve_app

pytestmark = pytest.mark.anyio

SESSION_TOKEN = "sess-tok-echo-5150"


def _echoed(request: Request) -> str:
    names = ("authorization", "x-api-key", "api-key")
    return " ".join(request.headers[name] for name in names if name in request.headers)


async def _refuse(request: Request) -> Response:
    return JSONResponse({"error": f"invalid credentials: {_echoed(request)}"}, status_code=401)


async def _overloaded(request: Request) -> Response:
    return PlainTextResponse(f"busy, and you sent {_echoed(request)}", status_code=503)


async def _redirect(request: Request) -> Response:
    return RedirectResponse(f"/landing?seen={request.headers.get('x-api-key', '')}", status_code=302)


async def _landing(request: Request) -> Response:
    return PlainTextResponse(f"not JSON; you sent {request.headers.get('x-api-key', '')}")


async def _lobu_open(request: Request) -> Response:
    return JSONResponse({"agentId": "a1", "token": SESSION_TOKEN})


async def _lobu_message(request: Request) -> Response:
    return JSONResponse({"messageId": "m1"})


async def _lobu_no_agent(request: Request) -> Response:
    return JSONResponse({"token": SESSION_TOKEN, "detail": "no agent"})


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    app = Starlette(
        routes=[
            Route("/redirect", _redirect, methods=["POST"]),
            Route("/landing", _landing, methods=["GET", "POST"]),
            Route("/busy", _overloaded, methods=["POST"]),
            Route("/lobu/api/v1/agents", _lobu_open, methods=["POST"]),
            Route("/lobu/api/v1/agents/a1/messages", _lobu_message, methods=["POST"]),
            Route("/lobu/api/v1/agents/a1/events", _refuse, methods=["GET"]),
            Route("/lobu/api/v1/agents/a1", _refuse, methods=["DELETE"]),
            Route("/lobu-half/api/v1/agents", _lobu_no_agent, methods=["POST"]),
            Route("/{path:path}", _refuse, methods=["GET", "POST", "PUT", "DELETE"]),
        ]
    )
    with serve_app(app) as url:
        yield url


def context() -> SessionContext:
    return SessionContext(case="c", trial=1, timeout=10)


def assert_masked(error: BaseException, *secrets: str) -> str:
    text = str(error)
    assert [secret for secret in secrets if secret in text] == [], text
    assert "***" in text, text
    return text


async def test_http_target_masks_userinfo_literal_and_env_keys_echoed_in_a_401(
    echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_HTTP_KEY", "sk-echo-http-env-0101")
    host = echo_url.removeprefix("http://")
    spec = {
        "request": {
            "url": f"http://echo-user:echo-pass-0102@{host}/chat",
            "headers": {"X-Api-Key": "{{ env.ECHO_HTTP_KEY }}", "Api-Key": "literal-echo-key-0103"},
            "body": {"text": "{{ message }}"},
        },
        "reply_path": "$.reply",
    }
    target = HttpTarget(HttpTargetSpec.model_validate(spec), retry=FAST_RETRY)
    basic = base64.b64encode(b"echo-user:echo-pass-0102").decode()
    try:
        session = await target.open_session(context())
        with pytest.raises(TargetHTTPError) as caught:
            await session.send("hi")
    finally:
        await target.aclose()
    assert caught.value.status_code == 401
    text = assert_masked(caught.value, basic, "echo-pass-0102", "sk-echo-http-env-0101", "literal-echo-key-0103")
    assert 'invalid credentials: Basic *** *** ***"}' in text


async def test_http_target_masks_keys_a_5xx_body_and_a_redirect_url_echo(
    echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_REDIRECT_KEY", "sk-echo-redirect-0104")
    for path, error in (("/busy", TargetHTTPError), ("/redirect", TargetProtocolError)):
        spec = {
            "request": {"url": echo_url + path, "headers": {"X-Api-Key": "${ECHO_REDIRECT_KEY}"}},
            "reply_path": "$.reply",
        }
        target = HttpTarget(HttpTargetSpec.model_validate(spec), retry=FAST_RETRY)
        try:
            session = await target.open_session(context())
            with pytest.raises(error) as caught:
                await session.send("hi")
        finally:
            await target.aclose()
        text = assert_masked(caught.value, "sk-echo-redirect-0104")
        if path == "/busy":
            assert "returned 503 after 3 retries: busy, and you sent ***" in text
        else:
            assert "/landing?seen=*** is not JSON: 'not JSON; you sent ***'" in text


async def test_openai_target_masks_its_bearer_key_header_and_userinfo(
    echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_OPENAI_BEARER", "sk-echo-bearer-0201")
    monkeypatch.setenv("ECHO_OPENAI_KEY", "sk-echo-header-0202")
    spec: dict[str, Any] = {
        "type": "openai",
        "base_url": f"{echo_url}/v1",
        "api_key_env": "ECHO_OPENAI_BEARER",
        "headers": {"X-Api-Key": "${ECHO_OPENAI_KEY}"},
    }
    target = build_target(spec)
    assert isinstance(target, OpenAITarget)
    try:
        session = await target.open_session(context())
        with pytest.raises(TargetHTTPError) as caught:
            await session.send("hi")
    finally:
        await target.aclose()
    text = assert_masked(caught.value, "sk-echo-bearer-0201", "sk-echo-header-0202")
    assert 'invalid credentials: Bearer *** ***"}' in text

    host = echo_url.removeprefix("http://")
    basic = base64.b64encode(b"oa-user:oa-pass-0203").decode()
    with_userinfo = build_target({**spec, "base_url": f"http://oa-user:oa-pass-0203@{host}/v1"})
    try:
        session = await with_userinfo.open_session(context())
        with pytest.raises(TargetHTTPError) as caught:
            await session.send("hi")
    finally:
        await with_userinfo.aclose()
    assert_masked(caught.value, basic, "oa-pass-0203", "sk-echo-header-0202")


async def test_embabel_target_masks_the_api_key_it_reads_from_the_environment(
    echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBABEL_API_KEY", "emb-echo-key-0301")
    target = build_target({"type": "embabel", "base_url": f"{echo_url}/embabel", "user": "u", "chatbot": "c"})
    assert isinstance(target, EmbabelTarget)
    try:
        with pytest.raises(TargetHTTPError) as caught:
            await target.open_session(context())
    finally:
        await target.aclose()
    text = assert_masked(caught.value, "emb-echo-key-0301")
    assert 'invalid credentials: ***"}' in text


async def test_lobu_target_masks_the_gateway_token_and_the_session_token(
    echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LOBU_GATEWAY_URL", "GATEWAY_URL", "LOBU_AGENT", "ADMIN_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOBU_API_TOKEN", "lobu-admin-echo-0401")
    refusing = LobuTarget(LobuTargetSpec(gateway=f"{echo_url}/refuse", agent="a"), retry=FAST_RETRY)
    try:
        with pytest.raises(TargetHTTPError) as caught:
            await refusing.open_session(context())
    finally:
        await refusing.aclose()
    assert 'invalid credentials: Bearer ***"}' in assert_masked(caught.value, "lobu-admin-echo-0401")

    half = LobuTarget(LobuTargetSpec(gateway=f"{echo_url}/lobu-half", agent="a"), retry=FAST_RETRY)
    try:
        with pytest.raises(TargetProtocolError) as caught:
            await half.open_session(context())
    finally:
        await half.aclose()
    assert "no agentId and token" in assert_masked(caught.value, SESSION_TOKEN)

    target = LobuTarget(LobuTargetSpec(gateway=f"{echo_url}/lobu", agent="a"), retry=FAST_RETRY)
    try:
        session = await target.open_session(context())
        with pytest.raises(TargetHTTPError) as caught:
            await session.send("hi")
        await session.aclose()  # the DELETE is refused too: logged, never raised
    finally:
        await target.aclose()
    assert "returned 401" in assert_masked(caught.value, SESSION_TOKEN)
    # the session's token is masked in its own errors, not remembered for the whole run
    assert redact(f"x {SESSION_TOKEN}") == f"x {SESSION_TOKEN}"


def test_proxy_credentials_from_the_environment_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy-user:proxy-pass-1001@127.0.0.1:3128")
    monkeypatch.setenv("HTTP_PROXY", "proxy-token-1002@127.0.0.1:3129")
    target = build_target({"type": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None})
    assert isinstance(target, OpenAITarget)
    basic = base64.b64encode(b"proxy-user:proxy-pass-1001").decode()
    echoed = f"407: got Basic {basic} (proxy-pass-1001) and proxy-token-1002"
    assert redact(echoed) == "407: got Basic *** (***) and ***"
