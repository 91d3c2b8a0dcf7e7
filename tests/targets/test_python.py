from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from proctor.errors import ConfigError, TargetError, TargetProtocolError
from proctor.suite import PythonTargetSpec
from proctor.targets import PythonTarget, SessionContext
from proctor.targets._python import _never_suspends
from proctor.transcript import AgentReply, ToolCall, Usage
from servers import pyagents

pytestmark = pytest.mark.anyio


def make_target(reference: str) -> PythonTarget:
    return PythonTarget(PythonTargetSpec(callable=reference))


async def converse(reference: str, *messages: str, context: SessionContext | None = None) -> list[AgentReply]:
    target = make_target(reference)
    session = await target.open_session(context or SessionContext(case="c", trial=1))
    try:
        return [await session.send(message) for message in messages]
    finally:
        await session.aclose()
        await target.aclose()


async def test_sync_callable_gets_history_in_a_worker_thread() -> None:
    pyagents.calls.clear()
    first, second = await converse("servers.pyagents:echo", "hi", "again")
    assert first.text == "1 messages; last: hi"
    assert second.text == "3 messages; last: again"
    assert pyagents.calls[1]["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "1 messages; last: hi"},
        {"role": "user", "content": "again"},
    ]
    assert all(call["thread"] != threading.current_thread().name for call in pyagents.calls)
    assert first.latency_ms > 0 and first.retries == 0 and first.raw == "1 messages; last: hi"


async def test_async_callable_runs_on_the_event_loop() -> None:
    pyagents.calls.clear()
    (reply,) = await converse("servers.pyagents:async_echo", "hello")
    assert reply.text == "async 1: hello"
    assert pyagents.calls[0]["thread"] == threading.current_thread().name
    (reply,) = await converse("servers.pyagents:async_object", "hello")
    assert reply.text == "called"
    assert pyagents.calls[1]["thread"] == threading.current_thread().name


async def test_context_is_passed_when_accepted() -> None:
    context = SessionContext(case="greet", trial=3, model="m-1")
    (reply,) = await converse("servers.pyagents:with_context", "hi", context=context)
    assert reply.text == "greet#3 model=m-1"


async def test_dict_reply() -> None:
    (reply,) = await converse("servers.pyagents:as_dict", "book")
    assert reply.text == "booked"
    assert reply.tool_calls == [
        ToolCall("book_room", {"room": "4B", "hours": 2}),
        ToolCall("notify", {"_raw": "not json"}, id="n1"),
    ]
    assert reply.usage == Usage(12, 3)
    assert reply.trace_id == "42"
    assert reply.raw["content"] == "booked"


async def test_agent_reply_passes_through_with_latency() -> None:
    (reply,) = await converse("servers.pyagents:as_reply", "x")
    assert reply.text == "done"
    assert reply.tool_calls == [ToolCall("lookup", {"id": 7})]
    assert reply.usage == Usage(5, 6) and reply.trace_id == "t-1"
    assert reply.latency_ms > 0


async def test_dotted_attribute() -> None:
    (reply,) = await converse("servers.pyagents:Agent.reply", "x")
    assert reply.text == "agent: x"


async def test_exception_becomes_target_error() -> None:
    with pytest.raises(TargetError) as caught:
        await converse("servers.pyagents:boom", "the request")
    assert type(caught.value) is TargetError
    assert str(caught.value) == "servers.pyagents:boom raised ValueError: cannot handle 'the request'"
    assert not caught.value.retryable
    assert isinstance(caught.value.__cause__, ValueError)


async def test_unsupported_return_is_a_protocol_error() -> None:
    with pytest.raises(TargetProtocolError, match=r"returned a int; expected a str, a dict or an AgentReply"):
        await converse("servers.pyagents:bad_return", "x")


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("servers.nope:fn", r"cannot import module 'servers\.nope': No module named 'servers\.nope'"),
        ("servers.pyagents:missing", r"'servers\.pyagents' has no attribute 'missing'"),
        ("servers.pyagents:Agent.nope", r"'servers\.pyagents\.Agent' has no attribute 'nope'"),
        ("servers.pyagents:not_callable", r"servers\.pyagents\.not_callable is a int, not a callable"),
    ],
)
def test_import_problems_are_config_errors(reference: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_target(reference)


async def test_current_directory_is_importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proctor_cwd_agent.py").write_text("def reply(messages):\n    return 'from cwd'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "proctor_cwd_agent", raising=False)
    try:
        (reply,) = await converse("proctor_cwd_agent:reply", "x")
    finally:
        sys.modules.pop("proctor_cwd_agent", None)
    assert reply.text == "from cwd"
    assert sys.path[0] == str(tmp_path)


async def test_sync_callable_does_not_hold_up_a_callers_timeout() -> None:
    target = make_target("servers.pyagents:sleepy")
    session = await target.open_session(SessionContext(case="c", trial=1))
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.1):
            await session.send("x")
    assert time.perf_counter() - started < 0.5


async def _answers(messages: list[dict[str, str]]) -> str:
    return messages[-1]["content"]


async def _awaits(messages: list[dict[str, str]]) -> str:
    await anyio.sleep(0.001)
    return "x"


async def _async_with(messages: list[dict[str, str]]) -> str:
    async with anyio.Lock():
        return "x"


async def _async_for(messages: list[dict[str, str]]) -> str:
    async def items() -> AsyncIterator[str]:
        yield "x"

    return "".join([item async for item in items()])


async def _awaits_in_a_comprehension(messages: list[dict[str, str]]) -> list[str]:
    return [await _answers(messages) for _ in range(1)]


def _sync(messages: list[dict[str, str]]) -> str:
    return "x"


@pytest.mark.parametrize(
    ("function", "instant"),
    [
        (_answers, True),
        (_awaits, False),
        (_async_with, False),
        (_async_for, False),
        (_awaits_in_a_comprehension, False),
        (_sync, False),  # runs in a worker thread: it waits for it
        (functools.partial(_answers), False),  # not looked into: timed, as before
    ],
    ids=["no-await", "await", "async-with", "async-for", "await-in-comprehension", "sync", "partial"],
)
def test_only_an_async_def_that_never_awaits_replies_instantly(function: Any, instant: bool) -> None:
    assert _never_suspends(function) is instant


def test_a_sync_function_returning_an_awaitable_is_not_instant_even_marked_as_a_coroutine_function() -> None:
    def marked(messages: list[dict[str, str]]) -> Any:
        return _awaits(messages)  # an awaitable that waits, from code that has no await of its own

    mark = getattr(inspect, "markcoroutinefunction", None)  # 3.12+: inspect then calls it a coroutine function
    if mark is not None:
        assert inspect.iscoroutinefunction(mark(marked))
    assert not _never_suspends(marked)


async def test_sessions_say_whether_their_replies_can_wait() -> None:
    for reference, instant in [
        ("servers.pyagents:async_echo", True),
        ("servers.pyagents:awaits_then_answers", False),
        ("servers.pyagents:echo", False),
        ("servers.pyagents:async_object", False),  # an object's async __call__: not looked into
    ]:
        target = make_target(reference)
        session = await target.open_session(SessionContext(case="c", trial=1))
        assert session.replies_instantly is instant, reference
    (reply,) = await converse("servers.pyagents:awaits_then_answers", "hi")
    assert reply.text == "waited: hi"
