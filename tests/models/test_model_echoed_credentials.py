"""A model provider's key never shows in its errors, even when the provider echoes it back.

The OpenAI-compatible adapter runs against a loopback stub that answers 401 quoting the credentials it
got; the SDK-based adapters (Anthropic, Gemini, LiteLLM, Bedrock) remember the key they are built with or
that their SDK reads, and `map_sdk_error` masks an SDK error's message before cutting it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor._redact import redact
from proctor.errors import ModelHTTPError
from proctor.models import GenerateConfig, ModelSettings
from proctor.models._anthropic import AnthropicProvider
from proctor.models._bedrock import BedrockProvider
from proctor.models._gemini import GeminiProvider
from proctor.models._litellm import LiteLLMProvider
from proctor.models._openai import OpenAICompatibleProvider, openai_factory
from proctor.models._retry import map_sdk_error
from servers._serve import serve_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _refuse(request: Request) -> Response:
    echoed = " ".join(request.headers.get(name, "") for name in ("authorization", "api-key")).strip()
    return JSONResponse({"error": {"message": f"invalid credentials: {echoed}"}}, status_code=401)


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with serve_app(Starlette(routes=[Route("/{path:path}", _refuse, methods=["POST"])])) as url:
        yield url


async def _complete_error(provider: OpenAICompatibleProvider) -> ModelHTTPError:
    try:
        with pytest.raises(ModelHTTPError) as caught:
            await provider.complete([{"role": "user", "content": "hi"}], GenerateConfig(timeout=10), None)
    finally:
        await provider.aclose()
    return caught.value


async def test_a_judges_key_from_the_environment_is_masked_in_its_401(
    echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{echo_url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-echo-0501")
    error = await _complete_error(openai_factory("j", ModelSettings(cache=None)))
    assert error.status == 401
    assert "sk-judge-echo-0501" not in str(error)
    assert str(error).endswith("returned 401: invalid credentials: Bearer ***"), str(error)


async def test_userinfo_and_an_azure_key_are_masked_in_a_401(echo_url: str) -> None:
    host = echo_url.removeprefix("http://")
    basic = base64.b64encode(b"judge-user:judge-pass-0502").decode()
    provider = OpenAICompatibleProvider("j", base_url=f"http://judge-user:judge-pass-0502@{host}/v1", api_key="k-0503")
    text = str(await _complete_error(provider))
    assert basic not in text and "judge-pass-0502" not in text and "k-0503" not in text
    assert text.endswith("invalid credentials: Basic ***"), text
    assert "http://judge-user:***@" in text


@pytest.mark.parametrize(
    ("build", "key"),
    [
        (lambda: AnthropicProvider("m", api_key="sk-ant-echo-0601"), "sk-ant-echo-0601"),
        (lambda: GeminiProvider("m", api_key="gem-echo-key-0602"), "gem-echo-key-0602"),
        (lambda: LiteLLMProvider("m", api_key="sk-lite-echo-0603"), "sk-lite-echo-0603"),
    ],
)
def test_sdk_providers_mask_the_key_they_are_given(build: Callable[[], object], key: str) -> None:
    build()
    assert _sdk_error_text(key) == "m: the provider answered 401: Error code: 401 - invalid x-api-key: ***"


def test_sdk_providers_mask_the_keys_their_sdk_reads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-echo-0701")
    monkeypatch.setenv("GOOGLE_API_KEY", "goog-env-echo-0702")
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-env-echo-0703")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-echo-0704")
    AnthropicProvider("m")
    GeminiProvider("m")
    LiteLLMProvider("mistral/m")
    BedrockProvider("m", region="us-east-1")
    for key in ("sk-ant-env-echo-0701", "goog-env-echo-0702", "mistral-env-echo-0703", "aws-secret-echo-0704"):
        assert redact(f"got {key}") == "got ***"


def _sdk_error_text(key: str) -> str:
    class AuthenticationError(Exception):
        status_code = 401

    mapped = map_sdk_error(AuthenticationError(f"Error code: 401 - invalid x-api-key: {key}"), "m")
    assert mapped is not None
    return str(mapped)


def test_an_sdk_error_is_masked_before_it_is_cut() -> None:
    AnthropicProvider("m", api_key="sk-ant-cut-echo-0801")

    class APIStatusError(Exception):
        status_code = 403

    mapped = map_sdk_error(APIStatusError("x" * 290 + "sk-ant-cut-echo-0801" + "y" * 50), "m")
    assert mapped is not None
    assert str(mapped) == "m: the provider answered 403: " + "x" * 290 + "***" + "y" * 7 + "..."


def test_a_judges_proxy_credentials_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://judge-proxy:judge-proxy-pass-1101@127.0.0.1:3128")
    OpenAICompatibleProvider("j", base_url="https://judge.example/v1", api_key=None)
    basic = base64.b64encode(b"judge-proxy:judge-proxy-pass-1101").decode()
    assert redact(f"407 {basic} judge-proxy-pass-1101") == "407 *** ***"
