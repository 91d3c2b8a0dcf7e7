"""The demo agent's A2A front (`proctor.demo._a2a`): cancelling a task, through the SDK's client on loopback."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest
from a2a.client.client import Client
from a2a.server.agent_execution import RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)

from proctor.demo._a2a import HRExecutor
from proctor.demo._agent import HRAgent, Reply
from proctor.demo._server import create_app
from proctor.suite import A2ATargetSpec
from proctor.targets._a2a import A2ATarget
from servers._serve import serve_app


class WaitingAgent(HRAgent):
    """The HR agent, but "wait" is answered only once released (5 s at most); records the histories it got."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()
        self.histories: list[list[dict[str, Any]]] = []

    def respond(self, history: Sequence[Mapping[str, Any]], user: str | None = None, tools: Any = None) -> Reply:
        self.histories.append([dict(message) for message in history])
        if history[-1]["content"] != "wait":
            return super().respond(history, user, tools)
        self.started.set()
        self.release.wait(5)
        try:
            return super().respond(history, user, tools)
        finally:
            self.returned.set()


def message(text: str, context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)], context_id=context_id
        )
    )


async def collect(
    client: Client, request: SendMessageRequest, events: list[StreamResponse], first: anyio.Event | None = None
) -> None:
    async for event in client.send_message(request):
        events.append(event)
        if first is not None:
            first.set()


@pytest.mark.anyio
async def test_cancelling_a_task_in_progress_ends_it_canceled_and_drops_the_reply() -> None:
    agent = WaitingAgent()
    with serve_app(create_app(agent=agent)) as url:
        target = A2ATarget(A2ATargetSpec(url=f"{url}/a2a"))  # type: ignore[arg-type]
        client = await target.client()
        events: list[StreamResponse] = []
        first = anyio.Event()
        with anyio.fail_after(3):  # the cancel does not wait for the agent's thread
            async with anyio.create_task_group() as group:
                group.start_soon(collect, client, message("wait"), events, first)
                await first.wait()
                await anyio.to_thread.run_sync(agent.started.wait)  # the agent is answering
                task_id = events[0].task.id
                cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED  # the stream says so too
        agent.release.set()
        assert await anyio.to_thread.run_sync(agent.returned.wait, 3)
        await anyio.sleep(0.1)  # time for the late reply to be published, were it published
        task = await client.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_CANCELED and not task.artifacts
        await collect(client, message("Who is Alice?", task.context_id), events)
        assert agent.histories[-1] == [{"role": "user", "content": "Who is Alice?"}]  # the cancelled turn is gone
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED  # and the context goes on
        await target.aclose()


@pytest.mark.anyio
async def test_a_cancelled_reply_does_not_wait_for_the_agents_thread() -> None:
    # anyio cancellation (e.g. a server's task group), not only the SDK's asyncio cancel: the wait is not shielded
    agent, queue = WaitingAgent(), EventQueueSource()
    executor = HRExecutor(agent)
    context = RequestContext(ServerCallContext(), message("wait"))
    started = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        await executor.execute(context, queue)
    assert scope.cancelled_caught and time.monotonic() - started < 1  # "wait" holds the thread for 5 s
    agent.release.set()
    assert await anyio.to_thread.run_sync(agent.returned.wait, 3)
    assert executor.histories[context.context_id or ""] == []  # the late reply is dropped
    await queue.close(immediate=True)
