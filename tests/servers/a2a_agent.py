"""An A2A agent built with the official SDK (`a2a-sdk`): a memory agent that reports its tool use.

Per context (`context_id`) it remembers a name ("My name is Alice.") and answers "What is my name?";
every reply is a task: a `working` status update, an artifact with the reply text and a data part for
each tool it used (ADK's shape: `{"name", "args"}` with metadata `adk_type: function_call`, then the
`function_response`), and `completed`. "fail" makes the task fail; "ask" asks for input (the next
message continues the task).

For the cancellation tests: "slow" works (`working`) until cancelled (10 s at most); "slow, refuse"
likewise, but its `cancel` raises; "slow, hang" likewise, but its `cancel` takes 1 s; "done, linger"
and "ask, linger" keep the stream open for 1 s after `completed` / `input-required`. The executor
records the slow tasks it started (`slow`), those whose work a cancel stopped (`stopped`), the
cancels it ran (`cancels`) and every `CancelTask` the server received (`cancel_requests`).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import anyio
from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, CancelTaskRequest, Part, Task
from starlette.applications import Starlette


def _tool_part(kind: str, data: dict[str, Any]) -> Part:
    part = new_data_part(data)
    part.metadata.update({"adk_type": kind})
    return part


class MemoryExecutor(AgentExecutor):
    """Remembers names per context and says which tools it used."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.contexts: dict[str, list[str]] = defaultdict(list)
        self.slow: list[str] = []
        self.stopped: list[str] = []
        self.cancels: list[str] = []
        self.cancel_requests: list[str] = []
        self.refuse: set[str] = set()
        self.hang: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)  # type: ignore[arg-type]
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        self.contexts[task.context_id].append(text)
        await updater.start_work()
        if text.startswith("slow"):
            await self._slow(task.id, text)
        elif text.startswith("ask"):
            await updater.requires_input(new_text_message("What for?", context_id=task.context_id, task_id=task.id))
        elif text == "fail":
            await updater.failed(new_text_message("I cannot do that.", context_id=task.context_id, task_id=task.id))
        else:
            await updater.add_artifact(self._reply(task.context_id, text), name="reply")
            await updater.complete()
        if text.endswith("linger"):
            await anyio.sleep(1)

    async def _slow(self, task_id: str, text: str) -> None:
        self.slow.append(task_id)
        if text.endswith("refuse"):
            self.refuse.add(task_id)
        elif text.endswith("hang"):
            self.hang.add(task_id)
        try:
            await anyio.sleep(10)
        except asyncio.CancelledError:
            self.stopped.append(task_id)
            raise

    def _reply(self, context_id: str, text: str) -> list[Part]:
        parts: list[Any] = []
        if text.startswith("My name is "):
            name = text.removeprefix("My name is ").rstrip(".")
            self.names[context_id] = name
            reply = "Nice to meet you."
            parts.append(_tool_part("function_call", {"name": "remember", "args": {"name": name}}))
            parts.append(_tool_part("function_response", {"name": "remember", "response": {"ok": True}}))
        else:
            name = self.names.get(context_id)
            reply = f"Your name is {name}." if name else "I don't know your name."
            parts.append(_tool_part("function_call", {"name": "recall", "args": {}}))
        return [new_text_part(reply), *parts]

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        self.cancels.append(task_id)
        if task_id in self.refuse:
            raise RuntimeError("this task cannot be stopped")
        if task_id in self.hang:
            await anyio.sleep(1)
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()


class _Handler(DefaultRequestHandlerV2):
    """The SDK's handler, recording every `CancelTask` request (the SDK refuses some before the executor)."""

    def __init__(self, executor: MemoryExecutor, **kwargs: Any) -> None:
        super().__init__(agent_executor=executor, **kwargs)
        self.executor = executor

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        self.executor.cancel_requests.append(params.id)
        return await super().on_cancel_task(params, context)


def build_app(base_url: str = "http://127.0.0.1", *, streaming: bool = True) -> tuple[Starlette, MemoryExecutor]:
    """The agent's Starlette app (card at `/.well-known/agent-card.json`, JSON-RPC at `/`) and its executor."""
    card = AgentCard(
        name="Memory agent",
        description="Remembers your name",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=f"{base_url}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="memory", name="memory", description="Remembers names", tags=["memory"])],
    )
    executor = MemoryExecutor()
    handler = _Handler(executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes), executor
