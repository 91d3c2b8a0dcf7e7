from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from proctor.errors import ConfigError, ModelUnavailable
from proctor.models import (
    GenerateConfig,
    Model,
    ModelCache,
    ModelResponse,
    ModelSettings,
    UsageLedger,
    close_models,
    get_model,
    providers,
    register_provider,
)
from proctor.models import _registry as registry
from proctor.models._openai import OpenAICompatibleProvider, ollama_base_url
from proctor.transcript import Usage
from servers.model_server import ModelServer, Reply

HELLO = [{"role": "user", "content": "hello"}]


def test_builtin_providers_are_listed() -> None:
    assert {"openai", "ollama", "anthropic", "bedrock", "gemini", "litellm"} <= set(providers())


def test_unknown_provider_lists_providers_and_suggests() -> None:
    with pytest.raises(ConfigError) as info:
        get_model("opena/gpt-4.1-mini")
    message = str(info.value)
    assert "unknown model provider 'opena'" in message
    assert "did you mean 'openai'?" in message
    assert "anthropic, bedrock, gemini, litellm, llamacpp, ollama, openai" in message


@pytest.mark.parametrize("name", ["gpt-4.1-mini", "/gpt", "openai/"])
def test_name_needs_provider_and_model(name: str) -> None:
    with pytest.raises(ConfigError, match="must be 'provider/model'"):
        get_model(name)


def test_models_are_shared_per_name_and_settings(model_server: ModelServer) -> None:
    script = model_server.script()
    settings = ModelSettings(base_url=script.base_url)
    same = ModelSettings(base_url=script.base_url)
    model = get_model("openai/m", settings=settings)
    assert isinstance(model, Model)
    assert get_model("openai/m", settings=same) is model  # equal settings, one pool
    assert get_model("openai/m", settings=ModelSettings(base_url=script.base_url, concurrency=2)) is not model
    assert get_model("openai/n", settings=settings) is not model
    assert "test-key" not in repr(ModelSettings(api_key="test-key"))


@pytest.mark.parametrize(
    ("provider", "module", "extra"),
    [
        ("anthropic", "anthropic", "anthropic"),
        ("bedrock", "boto3", "bedrock"),
        ("gemini", "google.genai", "gemini"),
        ("litellm", "litellm", "litellm"),
    ],
)
def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, provider: str, module: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ModelUnavailable) as info:
        get_model(f"{provider}/some-model")
    assert f"pip install 'proctor-eval[{extra}]'" in str(info.value)
    assert info.value.exit_code == 2


def test_openai_needs_a_key_only_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        get_model("openai/gpt-4.1-mini", settings=ModelSettings(cache=None))
    local = get_model("openai/qwen", settings=ModelSettings(base_url="http://127.0.0.1:8000/v1", cache=None))
    assert isinstance(local.adapter, OpenAICompatibleProvider)
    assert local.adapter.url == "http://127.0.0.1:8000/v1/chat/completions"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    from_env = get_model("openai/qwen", settings=ModelSettings(cache=None, concurrency=3))
    assert from_env.adapter.endpoint == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434/v1"),
        ("gpu-box", "http://gpu-box:11434/v1"),
        ("https://ollama.example/", "https://ollama.example/v1"),
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
    ],
)
def test_ollama_host_forms(host: str, url: str) -> None:
    assert ollama_base_url(host) == url


@pytest.mark.anyio
async def test_ollama_shortcut_uses_ollama_host(model_server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    script = model_server.script(Reply("hi from ollama"))
    monkeypatch.setenv("OLLAMA_HOST", script.base_url.removesuffix("/v1"))
    async with get_model("ollama/llama3.2", settings=ModelSettings(cache=None)) as model:
        response = await model.generate(HELLO)
    assert response.text == "hi from ollama"
    assert response.model == "ollama/llama3.2" and response.cost_usd == 0.0
    assert script.bodies[0]["model"] == "llama3.2"
    assert "authorization" not in script.requests[0].headers


class EchoAdapter:
    provider = "echo"
    endpoint = ""

    def __init__(self, model: str, settings: ModelSettings) -> None:
        self.model = model
        self.calls = 0

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        self.calls += 1
        text = messages[-1]["content"].upper()
        return ModelResponse(text, [text], Usage(3, 1), "")

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_registered_provider_gets_cache_and_accounting(cache: ModelCache) -> None:
    register_provider("echo-test", EchoAdapter)
    with pytest.raises(ValueError, match="already registered"):
        register_provider("echo-test", EchoAdapter)
    with pytest.raises(ValueError, match="invalid provider name"):
        register_provider("a/b", EchoAdapter)
    ledger = UsageLedger()
    model = get_model("echo-test/shout", settings=ModelSettings(cache=cache, ledger=ledger))
    assert (await model.generate(HELLO)).text == "HELLO"
    assert (await model.generate(HELLO)).cached
    assert isinstance(model.adapter, EchoAdapter) and model.adapter.calls == 1
    assert ledger.total().calls == 2 and ledger.total().cost_usd is None  # no price for echo models


class _EntryPoint:
    name = "plugin-test"
    value = "somewhere:factory"

    def load(self) -> Callable[[str, ModelSettings], EchoAdapter]:
        return EchoAdapter


class _BrokenEntryPoint:
    name = "broken-test"
    value = "missing.module:factory"

    def load(self) -> Any:
        raise ImportError("No module named 'missing'")


def test_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_entry_points(group: str) -> list[Any]:
        assert group == "proctor.models"
        return [_EntryPoint(), _BrokenEntryPoint()]

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    assert "plugin-test" in providers()
    model = get_model("plugin-test/x", settings=ModelSettings(cache=None))
    assert isinstance(model.adapter, EchoAdapter)
    with pytest.raises(ConfigError, match="cannot load model provider plugin 'broken-test'"):
        get_model("broken-test/x")


@pytest.mark.anyio
async def test_close_models_and_reuse(model_server: ModelServer, make_settings: Callable[..., ModelSettings]) -> None:
    script = model_server.script()
    model = get_model("openai/reuse", settings=make_settings(script))
    await model.generate(HELLO)
    await close_models()
    await model.generate(HELLO)  # the pool reopens
    await model.aclose()
    assert len(script.requests) == 2
