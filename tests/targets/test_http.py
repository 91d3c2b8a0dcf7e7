from __future__ import annotations

import re
from typing import Any

import pytest

from proctor._redact import redact
from proctor.errors import ConfigError, TargetHTTPError, TargetProtocolError, TargetUnreachable
from proctor.suite import HttpTargetSpec
from proctor.targets import HttpTarget, SessionContext
from servers._serve import FAST_RETRY, closed_port
from servers.rest import RestServer

pytestmark = pytest.mark.anyio


def make_target(**fields: Any) -> HttpTarget:
    return HttpTarget(HttpTargetSpec.model_validate(fields), retry=FAST_RETRY)


def session_spec(base: str) -> dict[str, Any]:
    return {
        "request": {
            "url": base + "/sessions/{{ session_id }}/messages",
            "headers": {"X-Trace": "{{ case }}-{{ trial }}"},
            "body": {
                "text": "{{ message }}",
                "meta": {
                    "turn": "{{ turn }}",
                    "history": "{{ history }}",
                    "label": "turn {{ turn }} of {{ case }}",
                    "model": "{{ model }}",
                    "state": "{{ state_url }}",
                },
                "static": [1, True, None],
            },
        },
        "reply_path": "$.output.text",
        "tool_calls_path": "$.calls",
        "usage_path": "$.usage",
        "trace_id_path": "$.trace",
        "user": "tester",
        "session": {
            "open": {
                "url": "${PROCTOR_REST_BASE}/sessions",
                "headers": {"X-Api-Key": "${PROCTOR_REST_KEY}"},
                "body": {"user": "{{ user }}", "case": "{{ case }}", "trial": "{{ trial }}"},
            },
            "id_path": "$.data.session.id",
            "close": {"url": base + "/sessions/{{ session_id }}", "method": "DELETE"},
        },
    }


@pytest.fixture
def rest_env(rest_server: RestServer, monkeypatch: pytest.MonkeyPatch) -> RestServer:
    monkeypatch.setenv("PROCTOR_REST_BASE", rest_server.base_url)
    monkeypatch.setenv("PROCTOR_REST_KEY", "k-123")
    return rest_server


async def test_session_lifecycle_templates_and_extraction(rest_env: RestServer) -> None:
    server = rest_env
    target = make_target(**session_spec(server.base_url))
    context = SessionContext(case="greet", trial=2, model="m1", timeout=5, variables={"state_url": "http://state.test"})
    try:
        session = await target.open_session(context)
        sid = session.session_id  # type: ignore[attr-defined]
        first = await session.send("42")
        second = await session.send("second")
        await session.aclose()
    finally:
        await target.aclose()

    assert re.fullmatch(r"s\d+", sid)
    assert {"id": sid, "body": {"user": "tester", "case": "greet", "trial": 2}} in server.opens
    sent = server.messages[sid]
    assert sent[0]["text"] == "42"  # a single-expression string stays a string
    assert sent[1] == {
        "text": "second",
        "meta": {
            "turn": 1,
            "history": [
                {"role": "user", "content": "42"},
                {"role": "assistant", "content": f"[{sid}] turn 0: 42"},
                {"role": "user", "content": "second"},
            ],
            "label": "turn 1 of greet",
            "model": "m1",
            "state": "http://state.test",
        },
        "static": [1, True, None],
    }
    assert [h["x-trace"] for h in server.message_headers[sid]] == ["greet-2", "greet-2"]
    assert server.closes.count(sid) == 1

    assert first.text == f"[{sid}] turn 0: 42"
    assert second.text == f"[{sid}] turn 1: second"
    assert [call.to_dict() for call in second.tool_calls] == [
        {"name": "lookup", "arguments": {"q": "second"}},
        {"name": "notify", "arguments": {"to": "hr"}, "id": "c2"},
    ]
    assert second.usage is not None
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (6, 7)
    assert second.trace_id == f"trace-{sid}-1"
    assert second.latency_ms > 0 and second.retries == 0
    assert second.raw["trace"] == f"trace-{sid}-1"


async def test_stateless_history_as_native_list(rest_server: RestServer) -> None:
    target = make_target(
        request={"url": rest_server.base_url + "/chat", "body": {"messages": "{{ history }}"}},
        reply_path="$.reply",
        usage_path="$.usage",
    )
    try:
        one = await target.open_session(SessionContext(case="c", trial=1))
        two = await target.open_session(SessionContext(case="c", trial=2))
        replies = [await one.send("hi"), await one.send("again")]
        await one.aclose()
        await two.aclose()
    finally:
        await target.aclose()

    ids = [one.session_id, two.session_id]  # type: ignore[attr-defined]
    assert all(re.fullmatch(r"[0-9a-f]{32}", value) for value in ids) and ids[0] != ids[1]
    assert [r.text for r in replies] == ["1 messages; last: hi", "3 messages; last: again"]
    assert rest_server.chats[-1]["messages"][1] == {"role": "assistant", "content": "1 messages; last: hi"}
    assert replies[1].usage is not None and replies[1].usage.to_dict() == {
        "prompt": 3,
        "completion": 4,
        "total": 7,
    }
    assert replies[1].tool_calls == [] and replies[1].trace_id is None


async def test_missing_reply_path_names_path_and_body(rest_server: RestServer) -> None:
    target = make_target(
        request={"url": rest_server.base_url + "/chat", "body": {"messages": "{{ history }}"}},
        reply_path="$.answer.text",
    )
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        with pytest.raises(TargetProtocolError) as caught:
            await session.send("hi")
    finally:
        await target.aclose()
    # the URL as errors quote it: masked, when an earlier test read this base URL from the environment
    assert str(caught.value) == (
        f"reply from {redact(rest_server.base_url)}/chat has nothing at $.answer.text: "
        '{"reply": "1 messages; last: hi", "usage": {"inputTokens": 3, "outputTokens": 4}}'
    )


async def test_open_with_wrong_key_fails(rest_env: RestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_REST_KEY", "wrong")
    target = make_target(**session_spec(rest_env.base_url))
    try:
        with pytest.raises(TargetHTTPError, match=r"POST .*/sessions returned 401: bad api key") as caught:
            await target.open_session(SessionContext(case="c", trial=1))
    finally:
        await target.aclose()
    assert caught.value.status_code == 401


async def test_close_failure_is_swallowed(rest_env: RestServer) -> None:
    target = make_target(**session_spec(rest_env.base_url))
    try:
        session = await target.open_session(SessionContext(case="c", trial=1, variables={"state_url": ""}))
        sid = session.session_id  # type: ignore[attr-defined]
        rest_env.fail_close.add(sid)
        await session.send("hello")
        await session.aclose()
    finally:
        await target.aclose()
    assert rest_env.closes.count(sid) == 1  # sent once, not retried


def test_bad_template_and_jsonpath_fail_at_build() -> None:
    with pytest.raises(ConfigError, match=r"bad template in request\.body\.text: .*'\{\{ message '"):
        make_target(request={"url": "http://x/", "body": {"text": "{{ message "}})
    with pytest.raises(ConfigError, match=r"invalid JSONPath '\$\.\[' in reply_path"):
        make_target(request={"url": "http://x/"}, reply_path="$.[")


async def test_undefined_variable_is_a_config_error(rest_server: RestServer) -> None:
    target = make_target(request={"url": rest_server.base_url + "/chat", "body": {"x": ["{{ nope }}"]}})
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        with pytest.raises(ConfigError, match=r"cannot render request\.body\.x\[0\] .*'nope' is undefined"):
            await session.send("hi")
    finally:
        await target.aclose()


@pytest.mark.parametrize(
    "body",
    [
        "{{ message }}{{ 10 ** 5000000 }}",  # QA: folded while compiling: a traceback, exit 1
        "{{ message * 100000000 }}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    ],
)
async def test_a_body_template_asking_for_unbounded_work_is_a_config_error(rest_server: RestServer, body: str) -> None:
    target = make_target(request={"url": rest_server.base_url + "/chat", "body": {"x": body}})
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        with pytest.raises(ConfigError, match=r"cannot render request\.body\.x .*(bits|repeating|steps)"):
            await session.send("hi")
    finally:
        await target.aclose()


async def test_closed_port_is_unreachable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/chat"
    target = make_target(request={"url": url, "body": {"m": "{{ message }}"}})
    try:
        session = await target.open_session(SessionContext(case="c", trial=1))
        with pytest.raises(TargetUnreachable, match=f"cannot connect to {url} after 3 retries: connection refused"):
            await session.send("hi")
    finally:
        await target.aclose()
