"""Request building and response parsing per provider, and each SDK layer against a fake SDK module."""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import BaseModel

from proctor.errors import ModelError, ModelHTTPError
from proctor.models import GenerateConfig, ModelResponse, ModelSettings, generate_structured, get_model, schema_for
from proctor.models._anthropic import accepts_temperature, build_messages_request, parse_messages_response
from proctor.models._base import is_truncation
from proctor.models._bedrock import build_converse_request, parse_converse_response
from proctor.models._gemini import build_gemini_request, parse_gemini_response
from proctor.models._litellm import build_litellm_request, parse_litellm_response
from proctor.models._openai import build_chat_request, parse_chat_response
from servers.model_server import ModelServer, Reply


class Verdict(BaseModel):
    score: int
    reason: str


SCHEMA = schema_for(Verdict)
CHAT = [
    {"role": "system", "content": "Be strict."},
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Grade this."},
    {"role": "assistant", "content": "Which answer?"},
    {"role": "user", "content": "The second."},
]
SETTINGS = ModelSettings(api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02)


# --- OpenAI-compatible -------------------------------------------------------------------------


def test_openai_request_fields() -> None:
    config = GenerateConfig(max_tokens=50, n=3, seed=7, logprobs=True, top_logprobs=5, extra={"top_p": 0.9})
    body = build_chat_request("m", CHAT, config, None)
    assert body == {
        "model": "m",
        "messages": CHAT,
        "temperature": 0.0,
        "max_tokens": 50,
        "n": 3,
        "seed": 7,
        "logprobs": True,
        "top_logprobs": 5,
        "top_p": 0.9,
    }
    official = build_chat_request("gpt-5-mini", CHAT, GenerateConfig(max_tokens=50), None, official=True)
    assert "temperature" not in official  # reasoning models reject it
    assert official["max_completion_tokens"] == 50 and "max_tokens" not in official
    assert build_chat_request("gpt-4.1", CHAT, GenerateConfig(temperature=None), None).keys() == {"model", "messages"}


@pytest.mark.anyio
async def test_openai_logprobs_and_choices_parsed(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    steps = [[("Yes", -0.1), ("No", -2.4)], [(".", -0.01), ("!", -4.0)]]
    script = model_server.script(Reply(choices=["Yes.", "No."], logprobs=steps))
    config = GenerateConfig(logprobs=True, top_logprobs=2, n=2)
    async with get_model("openai/m", settings=make_settings(script)) as model:
        response = await model.generate(CHAT, config)
    assert response.text == "Yes." and response.choices == ["Yes.", "No."]
    assert response.logprobs == steps
    assert response.raw["model"] == "served"
    assert script.bodies[0]["logprobs"] is True and script.bodies[0]["top_logprobs"] == 2
    assert script.requests[0].headers["authorization"] == "Bearer test-key"


def test_openai_parse_variants() -> None:
    data = {
        "choices": [
            {
                "message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                "logprobs": {"content": [{"token": "a", "logprob": -0.5}]},
            }
        ]
    }
    response = parse_chat_response(data, "x")
    assert (response.text, response.usage.total_tokens, response.logprobs) == ("ab", 0, [[("a", -0.5)]])
    assert parse_chat_response({"choices": [{"message": {"content": None}}]}, "x").text == ""
    with pytest.raises(ModelError, match="x: the answer has no choices"):
        parse_chat_response({"error": "boom"}, "x")
    # any Mapping is read as a dict is (a decoded body is made of dicts; the check takes them first)
    wrapped = MappingProxyType({"choices": [MappingProxyType({"message": {"content": "m"}, "finish_reason": "stop"})]})
    assert parse_chat_response(wrapped, "x").text == "m"
    assert parse_chat_response({"choices": [{"message": {"content": "n"}, "logprobs": None}]}, "x").logprobs is None


# --- Anthropic ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "accepts"),
    [
        ("claude-3-5-sonnet-20241022", True),
        ("claude-3-haiku-20240307", True),
        ("claude-sonnet-4-20250514", True),
        ("claude-sonnet-4-5", True),
        ("claude-opus-4-6", True),
        ("claude-opus-4-7", False),
        ("claude-sonnet-5", False),
        ("claude-fable-5", False),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("something-else", False),
    ],
)
def test_anthropic_temperature_rule(model: str, accepts: bool) -> None:
    assert accepts_temperature(model) is accepts


def test_anthropic_request() -> None:
    body = build_messages_request("claude-sonnet-4-5", CHAT, GenerateConfig(extra={"top_k": 5}), SCHEMA)
    assert body["system"] == "Be strict.\n\nAnswer briefly."
    assert body["messages"] == CHAT[2:]
    assert body["max_tokens"] == 4096 and body["temperature"] == 0.0 and body["top_k"] == 5
    assert body["tools"][0]["name"] == "Verdict" and body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "Verdict"}
    newer = build_messages_request("claude-opus-4-7", CHAT, GenerateConfig(max_tokens=10), schema_for(list[int]))
    assert "temperature" not in newer and "tools" not in newer and newer["max_tokens"] == 10
    assert "Reply with only a JSON value" in newer["system"]


def test_anthropic_response() -> None:
    data = {
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Here:"}, {"type": "tool_use", "name": "Verdict", "input": {"score": 3}}],
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 7},
    }
    response = parse_messages_response(data, "anthropic/x")
    assert json.loads(response.text) == {"score": 3}
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (15, 7)
    plain = parse_messages_response({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "x")
    assert plain.text == "ab"
    with pytest.raises(ModelError, match="has no content"):
        parse_messages_response({"type": "error"}, "x")


class _Dumpable:
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self._hidden_params = {"response_cost": 0.0123}

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self._data


class _Headers(dict[str, str]):
    pass


class RateLimitError(Exception):
    def __init__(self) -> None:
        super().__init__("rate limited")
        self.status_code = 429
        self.response = types.SimpleNamespace(status_code=429, headers=_Headers({"retry-after": "0"}))


def fake_anthropic(outcomes: list[Any], calls: list[dict[str, Any]]) -> types.ModuleType:
    class Messages:
        async def create(self, **kwargs: Any) -> Any:
            calls.append(kwargs)
            outcome = outcomes.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return _Dumpable(outcome)

    class AsyncAnthropic:
        closed = 0

        def __init__(self, **kwargs: Any) -> None:
            calls.append({"client": kwargs})
            self.messages = Messages()

        async def close(self) -> None:
            AsyncAnthropic.closed += 1

    module = types.ModuleType("anthropic")
    module.AsyncAnthropic = AsyncAnthropic  # type: ignore[attr-defined]
    return module


@pytest.mark.anyio
async def test_anthropic_sdk_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "input": {"score": 5, "reason": "good"}}],
        "usage": {"input_tokens": 1000, "output_tokens": 100},
    }
    calls: list[dict[str, Any]] = []
    module = fake_anthropic([RateLimitError(), answer], calls)
    monkeypatch.setitem(sys.modules, "anthropic", module)
    async with get_model("anthropic/claude-sonnet-4-5", settings=SETTINGS) as model:
        result = await generate_structured(model, CHAT, Verdict)
    assert result.value == Verdict(score=5, reason="good")
    assert result.response.retries == 1  # the 429 was retried
    assert result.response.cost_usd == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    client, _first, second = calls
    assert client == {"client": {"max_retries": 0, "api_key": "k"}}
    assert second["model"] == "claude-sonnet-4-5" and second["max_tokens"] == 4096
    assert second["extra_body"]["tool_choice"] == {"type": "tool", "name": "Verdict"}
    assert second["extra_body"]["system"] == "Be strict.\n\nAnswer briefly."
    assert second["timeout"] == 60.0
    assert module.AsyncAnthropic.closed == 1  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_anthropic_n_makes_separate_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = {"content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": 2, "output_tokens": 1}}
    calls: list[dict[str, Any]] = []
    monkeypatch.setitem(sys.modules, "anthropic", fake_anthropic([reply, dict(reply)], calls))
    async with get_model("anthropic/claude-haiku-4-5", settings=SETTINGS) as model:
        response = await model.generate(CHAT, GenerateConfig(n=2))
    assert response.choices == ["x", "x"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (4, 2)


# --- Bedrock -----------------------------------------------------------------------------------


def test_bedrock_request() -> None:
    anthropic_id = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    request = build_converse_request(anthropic_id, CHAT, GenerateConfig(), SCHEMA)
    assert request["modelId"] == anthropic_id
    assert request["system"] == [{"text": "Be strict.\n\nAnswer briefly."}]
    assert request["messages"][0] == {"role": "user", "content": [{"text": "Grade this."}]}
    assert request["inferenceConfig"] == {"maxTokens": 4096, "temperature": 0.0}
    tool = request["toolConfig"]
    assert tool["toolChoice"] == {"tool": {"name": "Verdict"}}
    assert tool["tools"][0]["toolSpec"]["inputSchema"] == {"json": SCHEMA}
    llama = build_converse_request("meta.llama3-70b-instruct-v1:0", CHAT, GenerateConfig(temperature=0.2), SCHEMA)
    assert "toolConfig" not in llama and llama["inferenceConfig"] == {"temperature": 0.2}
    assert "Reply with only a JSON value" in llama["system"][0]["text"]


def test_bedrock_response() -> None:
    data = {
        "output": {"message": {"role": "assistant", "content": [{"toolUse": {"name": "Verdict", "input": {"a": 1}}}]}},
        "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
        "ResponseMetadata": {"HTTPStatusCode": 200},
    }
    response = parse_converse_response(data, "bedrock/x")
    assert json.loads(response.text) == {"a": 1} and response.usage.total_tokens == 15
    assert "ResponseMetadata" not in response.raw
    text = parse_converse_response({"output": {"message": {"content": [{"text": "hi"}]}}}, "x")
    assert text.text == "hi"
    with pytest.raises(ModelError, match="no output message"):
        parse_converse_response({}, "x")


@pytest.mark.anyio
async def test_bedrock_sdk_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class ClientError(Exception):
        def __init__(self) -> None:
            super().__init__("ValidationException: bad model id")
            self.response = {"Error": {"Code": "ValidationException"}, "ResponseMetadata": {"HTTPStatusCode": 400}}

    class Client:
        def converse(self, **kwargs: Any) -> dict[str, Any]:
            calls.append(kwargs)
            if kwargs["modelId"] == "bad":
                raise ClientError()
            return {"output": {"message": {"content": [{"text": "pong"}]}}, "usage": {"inputTokens": 1}}

        def close(self) -> None:
            calls.append({"closed": True})

    boto3 = types.ModuleType("boto3")
    boto3.client = lambda service, **kwargs: calls.append({"service": service, **kwargs}) or Client()  # type: ignore[attr-defined]
    config = types.ModuleType("botocore.config")
    config.Config = lambda **kwargs: kwargs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "boto3", boto3)
    monkeypatch.setitem(sys.modules, "botocore.config", config)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    async with get_model("bedrock/amazon.nova-lite-v1:0", settings=SETTINGS) as model:
        assert (await model.generate(CHAT)).text == "pong"
    assert calls[0]["service"] == "bedrock-runtime" and calls[0]["region_name"] == "eu-west-1"
    assert calls[0]["config"]["retries"] == {"total_max_attempts": 1, "mode": "standard"}
    assert calls[1]["modelId"] == "amazon.nova-lite-v1:0" and calls[-1] == {"closed": True}
    async with get_model("bedrock/bad", settings=SETTINGS) as bad:
        with pytest.raises(ModelHTTPError, match="400") as info:
            await bad.generate(CHAT)
    assert not info.value.retryable


# --- Gemini ------------------------------------------------------------------------------------


def test_gemini_request() -> None:
    config = GenerateConfig(max_tokens=20, n=2, seed=1, logprobs=True, top_logprobs=3, timeout=30)
    request = build_gemini_request("gemini-2.5-flash", CHAT, config, SCHEMA)
    assert request["model"] == "gemini-2.5-flash"
    assert [c["role"] for c in request["contents"]] == ["user", "model", "user"]
    assert request["contents"][1]["parts"] == [{"text": "Which answer?"}]
    assert request["config"] == {
        "http_options": {"timeout": 30000},
        "system_instruction": "Be strict.\n\nAnswer briefly.",
        "temperature": 0.0,
        "max_output_tokens": 20,
        "candidate_count": 2,
        "seed": 1,
        "response_logprobs": True,
        "logprobs": 3,
        "response_mime_type": "application/json",
        "response_json_schema": SCHEMA,
    }


def test_gemini_response() -> None:
    data = {
        "candidates": [
            {
                "content": {"parts": [{"text": "thinking...", "thought": True}, {"text": "Yes"}]},
                "logprobs_result": {
                    "top_candidates": [{"candidates": [{"token": "Yes", "log_probability": -0.2}, {"token": "No"}]}],
                    "chosen_candidates": [{"token": "Yes", "log_probability": -0.2}],
                },
            },
            {"content": {"parts": [{"text": "No"}]}},
        ],
        "usage_metadata": {"prompt_token_count": 9, "candidates_token_count": 2, "thoughts_token_count": 5},
        "model_version": "gemini-2.5-flash-001",
    }
    response = parse_gemini_response(data, "gemini/x")
    assert response.text == "Yes" and response.choices == ["Yes", "No"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (9, 7)
    assert response.logprobs == [[("Yes", -0.2), ("No", 0.0)]]
    camel = parse_gemini_response(
        {"candidates": [{"content": {"parts": [{"text": "hi"}]}}], "usageMetadata": {"promptTokenCount": 4}}, "x"
    )
    assert camel.text == "hi" and camel.usage.prompt_tokens == 4
    with pytest.raises(ModelError, match=r"the prompt was blocked \(SAFETY\)"):
        parse_gemini_response({"prompt_feedback": {"block_reason": "SAFETY"}}, "x")


@pytest.mark.anyio
async def test_gemini_sdk_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class Models:
        async def generate_content(self, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return _Dumpable({"candidates": [{"content": {"parts": [{"text": '{"score": 1, "reason": "r"}'}]}}]})

    class Aio:
        models = Models()

        async def aclose(self) -> None:
            calls.append({"closed": True})

    class Client:
        def __init__(self, **kwargs: Any) -> None:
            calls.append({"client": kwargs})
            self.aio = Aio()

    genai = types.ModuleType("google.genai")
    genai.Client = Client  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google.genai", genai)
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key")
    async with get_model("gemini/gemini-2.5-flash", settings=ModelSettings(cache=None)) as model:
        result = await generate_structured(model, CHAT, Verdict)
    assert result.value.score == 1
    assert calls[0] == {"client": {"api_key": "gem-key"}}
    assert calls[1]["config"]["response_json_schema"] == SCHEMA
    assert calls[-1] == {"closed": True}


# --- LiteLLM -----------------------------------------------------------------------------------


def test_litellm_request_and_response() -> None:
    kwargs = build_litellm_request(
        "anthropic/claude-haiku-4-5", CHAT, GenerateConfig(max_tokens=9), SCHEMA, api_key="k", base_url="http://gw"
    )
    assert kwargs["model"] == "anthropic/claude-haiku-4-5"
    assert kwargs["response_format"]["json_schema"]["schema"] == SCHEMA
    assert (kwargs["num_retries"], kwargs["drop_params"], kwargs["timeout"]) == (0, True, 60.0)
    assert (kwargs["api_key"], kwargs["api_base"], kwargs["max_tokens"]) == ("k", "http://gw", 9)
    data = {"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    response = parse_litellm_response(_Dumpable(data), "litellm/x")
    assert response.text == "hi" and response.cost_usd == 0.0123


@pytest.mark.anyio
async def test_litellm_sdk_layer_uses_its_cost_for_unpriced_models(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    async def acompletion(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return _Dumpable({"choices": [{"message": {"content": "routed"}}], "usage": {"prompt_tokens": 5}})

    litellm = types.ModuleType("litellm")
    litellm.acompletion = acompletion  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "litellm", litellm)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "unset below")  # recorded, so restored afterwards
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP")
    async with get_model("litellm/mistral/some-new-model", settings=ModelSettings(cache=None)) as model:
        response = await model.generate(CHAT)
    assert response.text == "routed" and response.cost_usd == 0.0123
    assert calls[0]["model"] == "mistral/some-new-model"
    assert litellm.suppress_debug_info is True  # type: ignore[attr-defined]
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # no price-map download on import


def test_every_provider_reports_an_answer_cut_off_at_its_token_limit() -> None:
    openai = {"choices": [{"message": {"content": '{"score": 0.'}, "finish_reason": "length"}]}
    assert parse_chat_response(openai, "openai/x").truncated
    assert not parse_chat_response({"choices": [{"message": {"content": "a"}, "finish_reason": "stop"}]}, "x").truncated
    anthropic = {"content": [{"type": "text", "text": "{"}], "stop_reason": "max_tokens"}
    assert parse_messages_response(anthropic, "anthropic/x").finish_reason == "max_tokens"
    assert parse_messages_response(anthropic, "anthropic/x").truncated
    assert not parse_messages_response({**anthropic, "stop_reason": "end_turn"}, "x").truncated
    bedrock = {"output": {"message": {"content": [{"text": "{"}]}}, "stopReason": "max_tokens"}
    assert parse_converse_response(bedrock, "bedrock/x").truncated
    assert not parse_converse_response({**bedrock, "stopReason": "end_turn"}, "x").truncated
    gemini = {"candidates": [{"content": {"parts": [{"text": "{"}]}, "finish_reason": "MAX_TOKENS"}]}
    assert parse_gemini_response(gemini, "gemini/x").truncated
    camel = {"candidates": [{"content": {"parts": [{"text": "{"}]}, "finishReason": "STOP"}]}
    assert not parse_gemini_response(camel, "gemini/x").truncated
    assert is_truncation("FinishReason.MAX_TOKENS") and not is_truncation(None)
    for _ in range(2):  # a text's answer is remembered: the second lookup gives the same
        assert is_truncation(" Length ") and not is_truncation("stop") and not is_truncation("")
    stored = ModelResponse.from_dict(parse_chat_response(openai, "x").to_dict())
    assert stored.truncated  # the cache keeps it: a cached cut-off answer stays an error
