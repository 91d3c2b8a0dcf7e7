"""The `a2a` target against an agent built with the official A2A SDK (`a2a-sdk`), on loopback."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest
from a2a.types import CancelTaskRequest, GetTaskRequest, TaskState
from starlette.applications import Starlette

from proctor.checks import registry
from proctor.errors import TargetError
from proctor.run import RunOptions, run_sync
from proctor.suite import A2ATargetSpec, load_suites
from proctor.targets import SessionContext, _a2a, build_target
from proctor.targets._a2a import A2ASession, A2ATarget
from proctor.targets._deadline import within
from servers import a2a_agent
from servers._serve import serve_built

TIMED_OUT = "A2AClientTimeoutError: Client Request timed out"


class Agent(NamedTuple):
    url: str
    executor: a2a_agent.MemoryExecutor


@contextmanager
def serve_agent(*, streaming: bool = True) -> Iterator[Agent]:
    executors: list[a2a_agent.MemoryExecutor] = []

    def build(base: str) -> Starlette:
        app, executor = a2a_agent.build_app(base, streaming=streaming)
        executors.append(executor)
        return app

    with serve_built(build) as url:
        yield Agent(url, executors[0])


@pytest.fixture(scope="module", params=[True, False], ids=["streaming", "blocking"])
def agent(request: pytest.FixtureRequest) -> Iterator[Agent]:
    with serve_agent(streaming=request.param) as served:
        yield served


@pytest.fixture(scope="module")
def streaming_agent() -> Iterator[Agent]:
    """Events name the task as it runs: an abandoned turn knows which task to cancel."""
    with serve_agent() as served:
        yield served


@pytest.fixture
def agent_url(agent: Agent) -> str:
    return agent.url


@pytest.mark.anyio
async def test_turns_share_a_context_and_tool_parts_become_calls(agent_url: str) -> None:
    target = build_target(A2ATargetSpec(url=agent_url))  # type: ignore[arg-type]
    session = await target.open_session(SessionContext(case="c", trial=1))
    first = await session.send("My name is Alice.")
    assert first.text == "Nice to meet you."
    (call,) = first.tool_calls
    assert (call.name, call.arguments, call.result) == ("remember", {"name": "Alice"}, {"ok": True})
    second = await session.send("What is my name?")
    assert second.text == "Your name is Alice." and [c.name for c in second.tool_calls] == ["recall"]
    assert second.latency_ms > 0 and second.raw  # the task's updates, as received
    other = await target.open_session(SessionContext(case="c", trial=2))
    assert (await other.send("What is my name?")).text == "I don't know your name."  # a context per trial
    with pytest.raises(TargetError, match="the agent's task failed: I cannot do that"):
        await session.send("fail")
    assert target.card is not None and target.card["name"] == "Memory agent"
    await session.aclose()
    await other.aclose()
    await target.aclose()


@pytest.mark.anyio
async def test_an_unreachable_agent_is_a_target_error(tmp_path: Path) -> None:
    target = build_target({"type": "a2a", "url": "http://127.0.0.1:9/"})
    with pytest.raises(TargetError, match="cannot read the agent card"):
        await target.open_session(SessionContext(case="c", trial=1))
    await target.aclose()


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return run_sync(load_suites([path], registry), RunOptions(write_results=False)).data


def test_an_a2a_agent_runs_a_suite(tmp_path: Path, agent_url: str) -> None:
    data = run(
        tmp_path,
        f"""\
name: memory
target: "a2a:{agent_url}"
trials: 2
turns:
  - content: "My name is Alice."
    assert: [{{type: contains, value: meet}}]
  - content: "What is my name?"
    assert: [{{type: contains, value: Alice}}]
assert:
  - {{type: tool-sequence, value: [remember, recall]}}
""",
    )
    case = data["cases"][0]
    assert case["status"] == "passed", case["trials"][0]
    assert case["trials"][0]["turns"][1]["tool_calls"][0] == {
        "name": "remember", "arguments": {"name": "Alice"}, "result": {"ok": True},
    }  # fmt: skip


async def open_session(url: str, turn_timeout: float = 5.0) -> tuple[A2ATarget, A2ASession]:
    target = A2ATarget(A2ATargetSpec(url=url))  # type: ignore[arg-type]
    return target, await target.open_session(SessionContext(case="c", trial=1, timeout=turn_timeout))


async def task_state(target: A2ATarget, task_id: str) -> int:
    task = await (await target.client()).get_task(GetTaskRequest(id=task_id))
    return int(task.status.state)


@pytest.mark.anyio
async def test_a_timed_out_turn_cancels_its_task(streaming_agent: Agent) -> None:
    target, session = await open_session(streaming_agent.url, turn_timeout=0.3)
    executor = streaming_agent.executor
    cancels = len(executor.cancels)
    with pytest.raises(TargetError) as caught:
        await session.send("slow")
    assert str(caught.value) == f"{target.name}: {TIMED_OUT}"  # the error is the same as without the cancel
    task_id = executor.slow[-1]
    assert executor.cancels[cancels:] == [task_id] and task_id in executor.stopped  # the agent stopped working
    assert await task_state(target, task_id) == TaskState.TASK_STATE_CANCELED
    assert session.task_id is None
    await target.aclose()


@pytest.mark.anyio
async def test_a_turn_cancelled_from_outside_cancels_its_task(streaming_agent: Agent) -> None:
    target, session = await open_session(streaming_agent.url)
    executor = streaming_agent.executor
    cancels = len(executor.cancels)
    with anyio.move_on_after(0.3) as scope:
        await session.send("slow")
    assert scope.cancelled_caught  # the cancellation propagated through send
    task_id = executor.slow[-1]
    assert executor.cancels[cancels:] == [task_id] and task_id in executor.stopped
    assert await task_state(target, task_id) == TaskState.TASK_STATE_CANCELED
    await target.aclose()


@pytest.mark.anyio
async def test_a_turn_past_its_deadline_cancels_its_task(streaming_agent: Agent) -> None:
    target, session = await open_session(streaming_agent.url)
    with pytest.raises(TimeoutError):
        await within(session.send("slow"), 0.3)  # how a run bounds a turn (`timeout:`)
    task_id = streaming_agent.executor.slow[-1]
    assert streaming_agent.executor.cancels[-1] == task_id
    assert await task_state(target, task_id) == TaskState.TASK_STATE_CANCELED
    await target.aclose()


@pytest.mark.anyio
async def test_a_continued_task_is_cancelled_even_before_an_event_names_it(agent: Agent) -> None:
    # Streaming: an event names the task. Blocking: none arrives before the timeout; the turn continued the task.
    target, session = await open_session(agent.url, turn_timeout=0.3)
    cancels = len(agent.executor.cancels)
    assert (await session.send("ask")).text == "What for?"
    task_id = session.task_id
    assert task_id is not None
    with pytest.raises(TargetError, match=TIMED_OUT):
        await session.send("slow")
    assert agent.executor.slow[-1] == task_id and agent.executor.cancels[cancels:] == [task_id]
    assert await task_state(target, task_id) == TaskState.TASK_STATE_CANCELED
    assert session.task_id is None  # the next turn starts a new task
    assert (await session.send("What is my name?")).text == "I don't know your name."
    await target.aclose()


@pytest.mark.anyio
async def test_a_blocking_call_that_names_no_task_cancels_nothing() -> None:
    with serve_agent(streaming=False) as agent:
        target, session = await open_session(agent.url, turn_timeout=0.3)
        with pytest.raises(TargetError, match=TIMED_OUT):
            await session.send("slow")
        assert agent.executor.cancel_requests == []
        task_id = agent.executor.slow[-1]
        assert await task_state(target, task_id) == TaskState.TASK_STATE_WORKING  # still running on the agent
        await (await target.client()).cancel_task(CancelTaskRequest(id=task_id))  # lets the server stop at once
        await target.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("message", ["My name is Alice.", "ask", "done, linger", "ask, linger"])
async def test_completed_tasks_and_tasks_waiting_for_input_are_not_cancelled(
    streaming_agent: Agent, message: str
) -> None:
    # "linger": the stream stays open after the task completed or asked for input, and the turn times out
    target, session = await open_session(streaming_agent.url, turn_timeout=0.3)
    requests = len(streaming_agent.executor.cancel_requests)
    if message.endswith("linger"):
        with pytest.raises(TargetError, match=TIMED_OUT):
            await session.send(message)
    else:
        await session.send(message)
    assert streaming_agent.executor.cancel_requests[requests:] == []  # not even asked (the SDK refuses some)
    await target.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("message", ["slow, refuse", "slow, hang"])
async def test_a_failed_cancel_changes_nothing(
    streaming_agent: Agent, message: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_a2a, "CANCEL_TIMEOUT", 0.2)  # "hang": the agent's cancel takes 1 s
    caplog.set_level(logging.DEBUG, logger="proctor.targets.a2a")
    target, session = await open_session(streaming_agent.url, turn_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(TargetError) as caught:
        await session.send(message)
    assert time.monotonic() - started < 0.9  # the turn's 0.3 s, then at most 0.2 s for the cancel
    assert str(caught.value) == f"{target.name}: {TIMED_OUT}"
    task_id = streaming_agent.executor.slow[-1]
    assert streaming_agent.executor.cancels[-1] == task_id
    assert task_id in caplog.text  # logged at debug level, not raised
    assert session.task_id is None
    await target.aclose()


@pytest.mark.anyio
async def test_a_cancel_to_an_agent_that_is_gone_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="proctor.targets.a2a")
    caught: list[TargetError] = []
    with ExitStack() as serving:
        agent = serving.enter_context(serve_agent())
        target, session = await open_session(agent.url)

        async def send() -> None:
            try:
                await session.send("slow")
            except TargetError as exc:
                caught.append(exc)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(send)
                while not agent.executor.slow:  # noqa: ASYNC110 (the agent runs in another thread)
                    await anyio.sleep(0.01)
                await anyio.to_thread.run_sync(serving.close)  # the stream breaks; then the cancel cannot connect
    (error,) = caught
    assert str(error).startswith(f"{target.name}: A2AClientError: Network communication error")
    assert f"cannot cancel task {agent.executor.slow[-1]}" in caplog.text
    await target.aclose()
