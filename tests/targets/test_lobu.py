from __future__ import annotations

import re
from pathlib import Path

import pytest

from proctor.errors import ConfigError, TargetHTTPError, TargetProtocolError, TargetTimeout
from proctor.suite import LobuTargetSpec
from proctor.targets import LobuTarget, SessionContext
from proctor.targets._lobu import resolve_agent, resolve_gateway, resolve_token
from proctor.transcript import ToolCall
from servers._serve import FAST_RETRY
from servers.lobu import ADMIN_TOKEN, TRACE_ID, LobuGateway

pytestmark = pytest.mark.anyio

LOBU_ENV = (
    "LOBU_GATEWAY_URL",
    "GATEWAY_URL",
    "GATEWAY_PORT",
    "LOBU_AGENT",
    "LOBU_API_TOKEN",
    "ADMIN_PASSWORD",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LOBU_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ADMIN_PASSWORD", ADMIN_TOKEN)


def make_target(gateway: LobuGateway, **fields: object) -> LobuTarget:
    spec = LobuTargetSpec.model_validate({"gateway": gateway.base_url + "/", "agent": "hr-bot", **fields})
    return LobuTarget(spec, retry=FAST_RETRY)


async def test_conversation_over_sse(lobu_gateway: LobuGateway, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_LOBU_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("ADMIN_PASSWORD", "not-this-one")
    target = make_target(lobu_gateway, token_env="PROCTOR_LOBU_TOKEN")
    context = SessionContext(case="c", trial=1, model="claude/sonnet", timeout=5)
    try:
        session = await target.open_session(context)
        first = await session.send("hello")
        second = await session.send("second, with usage")
        await session.aclose()
    finally:
        await target.aclose()

    assert target.name == f"lobu {lobu_gateway.base_url} agent=hr-bot"
    body = lobu_gateway.creates[-1]
    thread = body.pop("thread")
    assert re.fullmatch(r"proctor-[0-9a-f]{32}", thread)
    assert body == {
        "forceNew": True,
        "dryRun": True,
        "agentId": "hr-bot",
        "provider": "claude",
        "model": "sonnet",
    }
    assert lobu_gateway.create_auth[-1] == f"Bearer {ADMIN_TOKEN}"
    sid = f"hr-bot_hr-bot_{thread}"
    gateway_session = lobu_gateway.sessions[sid]
    assert gateway_session.contents == ["hello", "second, with usage"]
    assert gateway_session.streams == 2
    assert gateway_session.deleted and lobu_gateway.deletes.count(sid) == 1

    assert first.text == "echo: hello"
    assert first.usage is None
    assert first.trace_id == TRACE_ID
    assert first.latency_ms > 0 and first.retries == 0
    assert [event["event"] for event in first.raw["events"]] == [
        "status",
        "output",
        "output",
        "output",
        "complete",
    ]
    # The replayed backlog holds turn 1's events too; only this message's deltas count.
    assert second.text == "echo: second, with usage"
    assert second.usage is not None
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (11, 5)
    assert first.tool_calls == second.tool_calls == []


async def test_tool_call_events_are_captured(lobu_gateway: LobuGateway) -> None:
    target = make_target(lobu_gateway)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, model="sonnet"))
        reply = await session.send("use a tool")
        await session.aclose()
    finally:
        await target.aclose()
    assert reply.text == "echo: use a tool"
    assert reply.tool_calls == [ToolCall("search", {"q": "policy"}, id="t1")]
    body = lobu_gateway.creates[-1]
    assert body["model"] == "sonnet" and "provider" not in body


async def test_error_event_fails_the_turn(lobu_gateway: LobuGateway) -> None:
    target = make_target(lobu_gateway)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        with pytest.raises(TargetProtocolError) as caught:
            await session.send("please fail")
        await session.aclose()
    finally:
        await target.aclose()
    assert str(caught.value) == "Lobu agent hr-bot reported an error: model overloaded"
    assert "provider" not in lobu_gateway.creates[-1] and "model" not in lobu_gateway.creates[-1]


async def test_no_complete_times_out(lobu_gateway: LobuGateway) -> None:
    target = make_target(lobu_gateway)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, timeout=0.5))
        with pytest.raises(
            TargetTimeout, match=r"no complete event for message [0-9a-f]{32} from .*/events within 0.5 s"
        ):
            await session.send("hang on")
        await session.aclose()
    finally:
        await target.aclose()


async def test_stream_ending_early_is_a_protocol_error(lobu_gateway: LobuGateway) -> None:
    target = make_target(lobu_gateway)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, timeout=5))
        with pytest.raises(TargetProtocolError, match=r"ended before the complete event .* \(12 characters received\)"):
            await session.send("hangup")
        await session.aclose()
    finally:
        await target.aclose()


async def test_bad_admin_token_is_an_http_error(lobu_gateway: LobuGateway, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOBU_API_TOKEN", "wrong")
    target = make_target(lobu_gateway)
    count = len(lobu_gateway.create_auth)
    try:
        with pytest.raises(TargetHTTPError, match=r"POST .*/api/v1/agents returned 401: .*Unauthorized") as caught:
            await target.open_session(SessionContext(case="c", trial=1))
    finally:
        await target.aclose()
    assert caught.value.status_code == 401
    assert lobu_gateway.create_auth[count:] == ["Bearer wrong"]


async def test_unsupported_provider_is_reported(lobu_gateway: LobuGateway) -> None:
    target = make_target(lobu_gateway)
    try:
        with pytest.raises(TargetHTTPError, match=r"returned 400: .*Invalid provider"):
            await target.open_session(SessionContext(case="c", trial=1, model="openai/gpt-4.1"))
    finally:
        await target.aclose()


def test_gateway_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = LobuTargetSpec()
    assert resolve_gateway(spec) == "http://localhost:8080"
    monkeypatch.setenv("GATEWAY_PORT", "9000")
    assert resolve_gateway(spec) == "http://localhost:9000"
    monkeypatch.setenv("GATEWAY_URL", "http://gw.test:1/")
    assert resolve_gateway(spec) == "http://gw.test:1"
    monkeypatch.setenv("LOBU_GATEWAY_URL", "http://lobu.test:2")
    assert resolve_gateway(spec) == "http://lobu.test:2"
    assert resolve_gateway(LobuTargetSpec(gateway="http://spec.test:3/")) == "http://spec.test:3"


def test_agent_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"no Lobu agent given: .*lobu\.toml"):
        resolve_agent(LobuTargetSpec())
    (tmp_path / "lobu.toml").write_text(
        '[agents.zeta]\nname = "Z"\ndir = "agents/z"\n\n[agents.alpha]\nname = "A"\ndir = "agents/a"\n'
    )
    assert resolve_agent(LobuTargetSpec()) == "zeta"
    assert LobuTarget(LobuTargetSpec()).agent == "zeta"
    monkeypatch.setenv("LOBU_AGENT", "from-env")
    assert resolve_agent(LobuTargetSpec()) == "from-env"
    assert resolve_agent(LobuTargetSpec(agent="from-spec")) == "from-spec"
    monkeypatch.delenv("LOBU_AGENT")
    (tmp_path / "lobu.toml").write_text("[agents.zeta\n")
    with pytest.raises(ConfigError, match=r"cannot read .*lobu\.toml"):
        resolve_agent(LobuTargetSpec())


def test_token_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = LobuTargetSpec(token_env="MY_LOBU_TOKEN")
    monkeypatch.delenv("MY_LOBU_TOKEN", raising=False)
    assert resolve_token(spec) == ADMIN_TOKEN
    monkeypatch.setenv("LOBU_API_TOKEN", "api-token")
    assert resolve_token(spec) == "api-token"
    monkeypatch.setenv("MY_LOBU_TOKEN", "mine")
    assert resolve_token(spec) == "mine"
    monkeypatch.delenv("LOBU_API_TOKEN")
    monkeypatch.delenv("ADMIN_PASSWORD")
    assert resolve_token(LobuTargetSpec()) is None


async def test_a_trials_graph_is_sent_when_the_agent_is_created(lobu_gateway: LobuGateway) -> None:
    target = make_target(lobu_gateway)
    variables = {"graph_backend": "falkordb", "graph_uri": "falkordb://127.0.0.1:7", "graph_name": "g"}
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, timeout=5, variables=variables))
        reply = await session.send("hello")
        await session.aclose()
    finally:
        await target.aclose()
    assert lobu_gateway.create_graphs[-1] == "falkordb://127.0.0.1:7" and reply.text == "echo: hello"
