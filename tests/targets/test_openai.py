from __future__ import annotations

import time

import anyio
import pytest

from proctor.errors import (
    ConfigError,
    TargetHTTPError,
    TargetProtocolError,
    TargetTimeout,
    TargetUnreachable,
)
from proctor.suite import OpenAITargetSpec
from proctor.targets import DEFAULT_RETRY, OpenAITarget, SessionContext
from proctor.transcript import AgentReply
from servers._serve import FAST_RETRY, closed_port, hang_up_server
from servers.chat import ChatServer

pytestmark = pytest.mark.anyio


def make_target(base_url: str, **fields: object) -> OpenAITarget:
    spec = OpenAITargetSpec.model_validate({"base_url": base_url, **fields})
    return OpenAITarget(spec, retry=FAST_RETRY)


async def converse(target: OpenAITarget, *messages: str, context: SessionContext | None = None) -> list[AgentReply]:
    session = await target.open_session(context or SessionContext(case="c", trial=1, timeout=5))
    try:
        return [await session.send(message) for message in messages]
    finally:
        await session.aclose()


async def test_sends_whole_history_model_params_and_headers(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_TEST_KEY", "sk-test")
    monkeypatch.setenv("PROCTOR_TEST_TEAM", "blue")
    base = chat_server.script(
        {
            "content": "Hi, how can I help?",
            "id": "chatcmpl-1",
            "usage": {"prompt_tokens": 21, "completion_tokens": 6},
        },
        {"content": "You have 12 days left.", "usage": {"prompt_tokens": 40, "completion_tokens": 7}},
    )
    target = make_target(
        base,
        model="hr-assistant",
        system_prompt="You are an HR assistant.",
        api_key_env="PROCTOR_TEST_KEY",
        headers={"X-Team": "team-${PROCTOR_TEST_TEAM}"},
        params={"temperature": 0},
    )
    try:
        first, second = await converse(target, "hello", "how many vacation days do I have?")
    finally:
        await target.aclose()

    assert target.name == f"openai {base}"
    assert first.text == "Hi, how can I help?"
    assert first.trace_id == "chatcmpl-1"
    assert first.usage is not None and (first.usage.prompt_tokens, first.usage.completion_tokens) == (21, 6)
    assert second.usage is not None and second.usage.total_tokens == 47
    assert first.retries == second.retries == 0
    assert first.latency_ms > 0 and second.latency_ms > 0
    assert first.raw["choices"][0]["message"]["content"] == "Hi, how can I help?"

    requests = chat_server.requests[ChatServer.token_of(base)]
    assert len(requests) == 2
    assert requests[0].body == {
        "model": "hr-assistant",
        "messages": [
            {"role": "system", "content": "You are an HR assistant."},
            {"role": "user", "content": "hello"},
        ],
        "temperature": 0,
    }
    assert requests[1].body["messages"] == [
        {"role": "system", "content": "You are an HR assistant."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hi, how can I help?"},
        {"role": "user", "content": "how many vacation days do I have?"},
    ]
    for request in requests:
        assert request.headers["authorization"] == "Bearer sk-test"
        assert request.headers["x-team"] == "team-blue"
        assert request.headers["content-type"] == "application/json"


async def test_model_precedence_and_no_auth_without_key(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    base = chat_server.script({}, {})
    target = make_target(base, model="from-spec")
    try:
        await converse(target, "a", context=SessionContext(case="c", trial=1, model="from-cli"))
        await converse(target, "b")
    finally:
        await target.aclose()
    bare = chat_server.script({})
    target = make_target(bare)
    try:
        (reply,) = await converse(target, "c")
    finally:
        await target.aclose()

    requests = chat_server.requests[ChatServer.token_of(base)]
    assert [r.body["model"] for r in requests] == ["from-cli", "from-spec"]
    assert all("authorization" not in r.headers for r in requests)
    assert chat_server.requests[ChatServer.token_of(bare)][0].body["model"] == "default"
    assert reply.text == "you said: c"


async def test_tool_calls_are_decoded_and_history_keeps_text_only(chat_server: ChatServer) -> None:
    tool_calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_balance", "arguments": '{"user": "ann"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}},
    ]
    base = chat_server.script(
        {"content": None, "tool_calls": tool_calls, "headers": {"x-request-id": "req-77"}},
        {"content": "done"},
    )
    target = make_target(base)
    try:
        first, second = await converse(target, "balance?", "thanks")
    finally:
        await target.aclose()

    assert first.text == ""
    assert first.trace_id == "req-77"
    assert first.usage is None
    assert [call.to_dict() for call in first.tool_calls] == [
        {"name": "get_balance", "arguments": {"user": "ann"}, "id": "call_1"},
        {"name": "broken", "arguments": {"_raw": "{not json"}, "id": "call_2"},
    ]
    assert second.tool_calls == []
    history = chat_server.requests[ChatServer.token_of(base)][1].body["messages"]
    assert history[1] == {"role": "assistant", "content": ""}


async def test_unset_header_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROCTOR_NOT_SET", raising=False)
    with pytest.raises(ConfigError, match=r"PROCTOR_NOT_SET is not set \(used in headers.X-Key\)"):
        make_target("http://127.0.0.1:1/v1", headers={"X-Key": "${PROCTOR_NOT_SET}"})


async def test_retries_server_errors_then_succeeds(chat_server: ChatServer) -> None:
    base, token = chat_server.url("fail/2")
    target = make_target(base)
    try:
        (reply,) = await converse(target, "hello")
    finally:
        await target.aclose()
    assert reply.text == "you said: hello"
    assert reply.retries == 2
    assert len(chat_server.requests[token]) == 3


async def test_default_policy_backs_off_at_least_initial_wait(chat_server: ChatServer) -> None:
    base, token = chat_server.url("fail/1")
    target = OpenAITarget(OpenAITargetSpec.model_validate({"base_url": base}), retry=DEFAULT_RETRY)
    try:
        (reply,) = await converse(target, "hello")
    finally:
        await target.aclose()
    first, second = chat_server.requests[token]
    assert reply.retries == 1
    assert 0.2 <= second.at - first.at < 1.0
    assert reply.latency_ms >= 200


async def test_persistent_500_raises_http_error_after_retries(chat_server: ChatServer) -> None:
    base, token = chat_server.url("status/500")
    target = make_target(base)
    try:
        with pytest.raises(TargetHTTPError) as caught:
            await converse(target, "hello")
    finally:
        await target.aclose()
    error = caught.value
    assert error.status_code == 500
    assert error.retryable
    body = "status 500 " + "x" * 189
    assert str(error) == f"POST {base}/chat/completions returned 500 after 3 retries: {body}..."
    assert len(chat_server.requests[token]) == 4


async def test_client_error_is_not_retried(chat_server: ChatServer) -> None:
    base, token = chat_server.url("status/404")
    target = make_target(base)
    try:
        with pytest.raises(TargetHTTPError, match=r"returned 404: status 404 x+") as caught:
            await converse(target, "hello")
    finally:
        await target.aclose()
    assert caught.value.status_code == 404
    assert not caught.value.retryable
    assert len(chat_server.requests[token]) == 1


async def test_honours_retry_after_on_429(chat_server: ChatServer) -> None:
    base, token = chat_server.url("ratelimit/1")
    target = make_target(base)
    try:
        (reply,) = await converse(target, "hello")
    finally:
        await target.aclose()
    first, second = chat_server.requests[token]
    assert reply.retries == 1
    assert second.at - first.at >= 0.95
    assert reply.latency_ms >= 950


async def test_slow_reply_times_out(chat_server: ChatServer) -> None:
    base, token = chat_server.url("slow/3")
    target = make_target(base)
    started = time.perf_counter()
    try:
        with pytest.raises(TargetTimeout) as caught:
            await converse(target, "hello", context=SessionContext(case="c", trial=1, timeout=0.3))
    finally:
        await target.aclose()
    assert str(caught.value) == f"no reply from {base}/chat/completions within 0.3 s"
    assert time.perf_counter() - started < 2
    assert len(chat_server.requests[token]) == 1


async def test_non_json_reply_is_a_protocol_error(chat_server: ChatServer) -> None:
    base, _ = chat_server.url("garbage")
    target = make_target(base)
    try:
        with pytest.raises(TargetProtocolError) as caught:
            await converse(target, "hello")
    finally:
        await target.aclose()
    assert str(caught.value) == (
        f"reply from {base}/chat/completions is not JSON: '<html><body>Bad Gateway, but with a 200</body></html>'"
    )


async def test_reply_without_choices_is_a_protocol_error(chat_server: ChatServer) -> None:
    base, _ = chat_server.url("shape")
    target = make_target(base)
    try:
        with pytest.raises(TargetProtocolError, match=r"has no choices\[0\]\.message: .*no choices here"):
            await converse(target, "hello")
    finally:
        await target.aclose()


async def test_closed_port_is_unreachable() -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    target = make_target(base)
    try:
        with pytest.raises(TargetUnreachable) as caught:
            await converse(target, "hello")
    finally:
        await target.aclose()
    assert str(caught.value) == (f"cannot connect to {base}/chat/completions after 3 retries: connection refused")
    assert caught.value.retryable


async def test_dropped_connections_are_retried_then_unreachable() -> None:
    with hang_up_server() as (base_url, accepted):
        target = make_target(f"{base_url}/v1")
        try:
            with pytest.raises(
                TargetUnreachable, match=r"connection to .* failed after 3 retries: server disconnected"
            ):
                await converse(target, "hello")
        finally:
            await target.aclose()
    assert accepted[0] == 4


async def test_connection_pool_limits_concurrency(chat_server: ChatServer) -> None:
    base, token = chat_server.url("slow/0.3")
    spec = OpenAITargetSpec.model_validate({"base_url": base})
    target = OpenAITarget(spec, max_connections=2, retry=FAST_RETRY)
    started = time.perf_counter()
    try:
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(converse, target, "hello")
    finally:
        await target.aclose()
    elapsed = time.perf_counter() - started
    assert len(chat_server.requests[token]) == 4
    assert 0.6 <= elapsed < 2.5


async def test_a_trials_graph_is_sent_as_headers(chat_server: ChatServer) -> None:
    base = chat_server.script({}, {})
    target = make_target(base)
    variables = {"graph_backend": "falkordb", "graph_uri": "falkordb://127.0.0.1:7", "graph_label": "T1", "seed": 1}
    try:
        await converse(target, "a", context=SessionContext(case="c", trial=1, variables=variables))
        await converse(target, "b", context=SessionContext(case="c", trial=2, variables={"seed": 2}))
    finally:
        await target.aclose()
    with_graph, without = chat_server.requests[ChatServer.token_of(base)]
    assert with_graph.headers["x-proctor-graph-uri"] == "falkordb://127.0.0.1:7"
    assert with_graph.headers["x-proctor-graph-label"] == "T1" and "x-proctor-graph-name" not in with_graph.headers
    assert not any(key.startswith("x-proctor-graph") for key in without.headers)
