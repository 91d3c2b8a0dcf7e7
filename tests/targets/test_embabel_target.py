"""The `embabel` target against an agent that accepts only what Embabel's real client sends."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor.errors import TargetHTTPError
from proctor.targets import SessionContext, build_target
from proctor.targets._embabel import EmbabelTarget, tool_calls_from_events
from proctor.transcript import ToolCall
from servers._serve import serve_app
from servers.embabel import SYSTEM_PROMPT, EmbabelAgent, build_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def agent() -> Iterator[EmbabelAgent]:
    server = EmbabelAgent(api_key="k-secret-42")
    with serve_app(build_app(server)) as url:
        server.base_url = url
        yield server


def _target(agent: EmbabelAgent, **spec: Any) -> EmbabelTarget:
    target = build_target({"type": "embabel", "base_url": agent.base_url, "user": "alice", "chatbot": "hr", **spec})
    assert isinstance(target, EmbabelTarget)
    return target


async def test_speaks_put_with_the_api_key_model_and_reads_embabels_events(
    agent: EmbabelAgent, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("EMBABEL_API_KEY", "k-secret-42")
    caplog.set_level(logging.DEBUG)
    target = _target(agent)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, model="gpt-4.1"))
        hello = await session.send("Hi")
        reminder = await session.send("Remind me to submit my timesheet on Friday")
        capital = await session.send("What is the capital of France?")
        context = await session.object_context()  # type: ignore[attr-defined]
    finally:
        await target.aclose()
    assert agent.rejected == []
    methods = [(method, path) for method, path, _, _ in agent.requests]
    assert methods == [
        ("PUT", "/api/v1/chat/sessions"),
        *[("PUT", "/api/v1/chat/messages")] * 3,
        ("GET", f"/api/v1/chat/objectContexts/{session.session_id}"),  # type: ignore[attr-defined]
    ]
    assert agent.requests[0][3] == {"user": "alice", "chatbot": "hr"}
    assert agent.requests[1][3] == {"sessionId": "s1", "message": {"role": "user", "content": "Hi"}, "model": "gpt-4.1"}
    assert hello.tool_calls == [] and hello.raw["events"] == [{"systemPrompt": SYSTEM_PROMPT}]
    assert reminder.tool_calls == [
        ToolCall("createReminder", {"text": "submit timesheet", "day": "Friday"}, None, '{"id": "r1", "created": true}')
    ]
    assert capital.tool_calls == [ToolCall("lookup", {"q": "France"}, None, "Paris")]  # the graph request is no call
    assert [r["labels"] for r in context["resources"]] == [["Reminder", "DomainNode"]]
    assert "k-secret-42" not in caplog.text and "k-secret-42" not in target.name


async def test_the_targets_api_key_reads_the_environment_and_a_missing_key_says_how_to_give_one(
    agent: EmbabelAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EMBABEL_API_KEY", raising=False)
    monkeypatch.setenv("MY_AGENT_KEY", "k-secret-42")
    target = _target(agent, api_key="${MY_AGENT_KEY}", model=None)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        with pytest.raises(TargetHTTPError, match="returned 400"):  # no --model and none in the spec
            await session.send("Hi")
    finally:
        await target.aclose()
    assert agent.rejected[-1][2] == 400 and "'model'" not in str(agent.requests[-1][3])
    target = _target(agent)
    try:
        with pytest.raises(TargetHTTPError, match=r"returned 401.*no X-API-KEY was sent: set EMBABEL_API_KEY") as e:
            await target.open_session(SessionContext(case="c", trial=1))
    finally:
        await target.aclose()
    assert e.value.status_code == 401


async def test_embabels_default_model_is_sent_without_model(
    agent: EmbabelAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBABEL_API_KEY", "k-secret-42")
    target = _target(agent)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        await session.send("Hi")
    finally:
        await target.aclose()
    assert agent.requests[-1][3]["model"] == "gpt-4.1-mini"


async def test_a_trials_graph_goes_with_every_request(agent: EmbabelAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBABEL_API_KEY", "k-secret-42")
    variables = {"graph_backend": "falkordb", "graph_uri": "falkordb://127.0.0.1:1", "graph_name": "g-1"}
    target = _target(agent)
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, variables={**variables, "seed": 3}))
        await session.send("Hi")
        await session.object_context()  # type: ignore[attr-defined]
    finally:
        await target.aclose()
    for _, _, headers, _ in agent.requests:
        assert headers["x-proctor-graph-uri"] == "falkordb://127.0.0.1:1"
        assert headers["x-proctor-graph-name"] == "g-1" and headers["x-proctor-graph-backend"] == "falkordb"
        assert "x-proctor-graph-label" not in headers


class PostOnlyAgent:
    """An agent of the older Proctor protocol: POST only (PUT is 405)."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def app(self) -> Starlette:
        async def sessions(request: Request) -> Response:
            self.methods.append(request.method)
            return JSONResponse({"sessionId": "p1"})

        async def messages(request: Request) -> Response:
            self.methods.append(request.method)
            return JSONResponse({"sessionId": "p1", "message": {"role": "assistant", "content": "ok"}, "events": []})

        return Starlette(
            routes=[
                Route("/api/v1/chat/sessions", sessions, methods=["POST"]),
                Route("/api/v1/chat/messages", messages, methods=["POST"]),
            ]
        )


async def test_post_only_after_a_405_and_then_for_the_rest_of_the_run() -> None:
    agent = PostOnlyAgent()
    with serve_app(agent.app()) as url:
        target = build_target({"type": "embabel", "base_url": url})
        try:
            first = await target.open_session(SessionContext(case="c", trial=1))
            await first.send("Hi")
            second = await target.open_session(SessionContext(case="c", trial=2))
            reply = await second.send("Hi again")
        finally:
            await target.aclose()
    assert reply.text == "ok" and reply.retries == 0
    assert agent.methods == ["POST", "POST", "POST", "POST"]  # the 405s never reached the handlers
    assert isinstance(target, EmbabelTarget) and target.methods == {"sessions": "POST", "messages": "POST"}


def test_events_in_every_shape_embabel_and_proctor_send() -> None:
    events: list[Any] = [
        {"systemPrompt": "be nice"},
        {"request": {"function": {"name": "a"}, "arguments": {"x": 1}, "context": "c"}},
        {"request": {"function": {"name": "b"}, "arguments": '{"y": 2}', "context": "c"}},
        {"content": "who is Dave's manager", "summaryDirection": "up"},
        {"output": "A done"},  # responses answer the earliest call still without a result
        {"output": "B done"},
        {"output": "nobody waits for this"},
        {"request": {"function": {}, "arguments": {}}},  # no name: not a call
        {"type": "function_call", "id": "7", "name": "c", "arguments": '{"z": 3}'},
        {"type": "function_response", "id": "7", "result": "C done"},
        {"type": "tool_call", "name": "d", "arguments": "not json"},
        {"type": "tool_result", "name": "d", "content": "D done"},
        "not an event",
    ]
    assert tool_calls_from_events(events) == [
        ToolCall("a", {"x": 1}, None, "A done"),
        ToolCall("b", {"y": 2}, None, "B done"),
        ToolCall("c", {"z": 3}, "7", "C done"),
        ToolCall("d", {"_raw": "not json"}, None, "D done"),
    ]
