"""An A2A agent built with the official SDK (`a2a-sdk`): a memory agent that reports its tool use.

Per context (`context_id`) it remembers a name ("My name is Alice.") and answers "What is my name?";
every reply is a task: a `working` status update, an artifact with the reply text and a data part for
each tool it used (ADK's shape: `{"name", "args"}` with metadata `adk_type: function_call`, then the
`function_response`), and `completed`. "fail" makes the task fail.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
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

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)  # type: ignore[arg-type]
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        self.contexts[task.context_id].append(text)
        await updater.start_work()
        if text == "fail":
            await updater.failed(new_text_message("I cannot do that.", context_id=task.context_id, task_id=task.id))
            return
        parts: list[Any] = []
        if text.startswith("My name is "):
            name = text.removeprefix("My name is ").rstrip(".")
            self.names[task.context_id] = name
            reply = "Nice to meet you."
            parts.append(_tool_part("function_call", {"name": "remember", "args": {"name": name}}))
            parts.append(_tool_part("function_response", {"name": "remember", "response": {"ok": True}}))
        else:
            name = self.names.get(task.context_id)
            reply = f"Your name is {name}." if name else "I don't know your name."
            parts.append(_tool_part("function_call", {"name": "recall", "args": {}}))
        await updater.add_artifact([new_text_part(reply), *parts], name="reply")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


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
    handler = DefaultRequestHandlerV2(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes), executor
