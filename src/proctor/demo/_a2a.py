"""The demo agent over the A2A protocol (the official `a2a-sdk` server), under `/a2a` of the demo server.

Each A2A context is one conversation (the history is kept per `context_id`); every reply is a task
with an artifact holding the reply text and, as data parts, the tool calls the agent made (ADK's shape:
`{"name", "args"}` marked `adk_type: function_call`, then its `function_response`). The agent card
(`/a2a/.well-known/agent-card.json`) names the address it was fetched from. A task in progress can be
cancelled (`CancelTask`): it ends `canceled` and its reply is dropped. Needs the `a2a` extra; the demo
server mounts it only when the SDK is installed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import anyio.to_thread
from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from proctor.demo._agent import AGENT_NAME, HRAgent

__all__ = ["a2a_routes"]


def _tool_part(kind: str, data: dict[str, Any]) -> Part:
    part = new_data_part(data)
    part.metadata.update({"adk_type": kind})
    return part


class HRExecutor(AgentExecutor):
    """Answers each message with the HR agent, one conversation per A2A context.

    A task can be cancelled while the agent works on it: the task ends `canceled` and the reply in
    progress is dropped (neither published nor added to the conversation). The agent answers in a
    worker thread, which Python cannot interrupt: the thread runs to its end in the background (the
    demo agent answers quickly), but nothing waits for it.
    """

    def __init__(self, agent: HRAgent) -> None:
        self.agent = agent
        self.histories: dict[str, list[dict[str, str]]] = defaultdict(list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answer the message: a task with the reply and the tool calls as an artifact, then `completed`."""
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        history = self.histories[task.context_id]
        message = {"role": "user", "content": context.get_user_input()}
        # A cancelled task stops waiting here at once; the thread's late reply is dropped.
        reply = await anyio.to_thread.run_sync(self.agent.respond, [*history, message], abandon_on_cancel=True)
        history += [message, {"role": "assistant", "content": reply.text}]
        parts = [new_text_part(reply.text)]
        for call in reply.tool_calls:
            parts.append(_tool_part("function_call", {"id": call.id, "name": call.name, "args": call.arguments}))
            parts.append(_tool_part("function_response", {"name": call.name, "response": call.result}))
        await updater.add_artifact(parts, name="reply")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """End the task `canceled` (the SDK then cancels `execute`, dropping the reply in progress).

        The SDK's request handler answers an unknown or finished task itself (not found, not
        cancelable) and calls this only for a task it still runs.
        """
        assert context.task_id is not None and context.context_id is not None  # set for a task the SDK holds
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def _card(url: str) -> AgentCard:
    return AgentCard(
        name=AGENT_NAME,
        description="The Acme HR assistant (Proctor's demo agent): colleagues, managers, teams, time off.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="hr", name="HR directory", description="Who is who, time off", tags=["hr"])],
    )


def a2a_routes(agent: HRAgent) -> list[Route | Mount]:
    """The A2A routes, to mount under `/a2a`: the agent card and the JSON-RPC endpoint."""
    handler = DefaultRequestHandlerV2(
        agent_executor=HRExecutor(agent), task_store=InMemoryTaskStore(), agent_card=_card("http://127.0.0.1/a2a/")
    )

    async def card(request: Request) -> Response:
        # The card names the address it was fetched from (the demo does not know its own until asked).
        return JSONResponse(MessageToDict(_card(f"{str(request.base_url).rstrip('/')}/a2a/")))

    rpc = create_jsonrpc_routes(handler, rpc_url="/")
    return [Route("/.well-known/agent-card.json", card, methods=["GET"]), *rpc]
