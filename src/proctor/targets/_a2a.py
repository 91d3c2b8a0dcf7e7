"""The `a2a` target: an agent speaking the A2A protocol, through the official SDK's client (`a2a-sdk`).

The agent card is read once per run (`/.well-known/agent-card.json` below the URL); a trial's turns
share one `context_id` (the agent sees one conversation). See `proctor.suite.A2ATargetSpec` for how
replies, tool-use parts and failed tasks map into the transcript.

A turn abandoned while its task runs (the call timed out or failed, or the turn was cancelled: its
deadline, Ctrl-C, a stopped run) sends the agent `CancelTask` for that task, so it stops working; best
effort, bounded by `CANCEL_TIMEOUT`. Only a task whose id Proctor has seen can be cancelled: one named
by a streamed event, or the `input-required` task the turn continued (a blocking call that times out
before answering names none).
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import anyio
import httpx
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, create_client
from a2a.client.client import Client
from a2a.types import CancelTaskRequest, Message, Part, Role, SendMessageRequest, StreamResponse, TaskState
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from proctor._redact import redact, redact_url, remember_headers, remember_url_credentials
from proctor.errors import TargetError, TargetProtocolError
from proctor.suite._protocol_targets import A2ATargetSpec
from proctor.targets._base import DEFAULT_MAX_CONNECTIONS, SessionContext
from proctor.targets._graph import graph_headers
from proctor.targets._http_client import expand_env
from proctor.transcript import AgentReply, ToolCall

__all__ = ["CANCEL_TIMEOUT", "A2ASession", "A2ATarget"]

logger = logging.getLogger("proctor.targets.a2a")

CANCEL_TIMEOUT = 5.0
"""Seconds allowed for cancelling an abandoned task on the agent (best effort)."""

_FAILED: dict[int, str] = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "was rejected",
    TaskState.TASK_STATE_CANCELED: "was cancelled",
    TaskState.TASK_STATE_AUTH_REQUIRED: "needs authorisation",
}
_SETTLED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
    }
)
"""States in which an abandoned task is left alone: it ended, or it waits for the user."""
_CALL_KINDS = {"function_call", "tool_call", "tool_use"}
_RESULT_KINDS = {"function_response", "tool_result", "tool_response"}


class A2ATarget:
    """Talks to an A2A agent; one SDK client per run, one A2A context per trial."""

    def __init__(self, spec: A2ATargetSpec, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        """Prepare the HTTP pool (the card is read when the first session opens).

        Raises:
            proctor.errors.ConfigError: A header uses an unset `${VAR}`.
        """
        self.spec = spec
        self.url = str(spec.url).rstrip("/")
        self.name = f"a2a {redact_url(self.url)}"
        remember_url_credentials(self.url)  # userinfo (sent as Basic auth) and secret query values: masked
        headers = {key: expand_env(value, f"headers.{key}") for key, value in spec.headers.items()}
        remember_headers(headers)  # a literal key too (`${VAR}` values are remembered as they are read)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._http = httpx.AsyncClient(headers=headers, limits=limits, timeout=httpx.Timeout(120.0))
        self._client: Client | None = None
        self._lock = anyio.Lock()
        self.card: dict[str, Any] | None = None
        """The agent card as read (JSON), once a session opened."""

    async def client(self) -> Client:
        """The SDK client, made (and the card read) on first use.

        Raises:
            TargetError: The card cannot be read.
        """
        async with self._lock:
            if self._client is None:
                config = ClientConfig(streaming=self.spec.streaming, httpx_client=self._http)
                resolver = A2ACardResolver(self._http, self.url)
                try:
                    card = await resolver.get_agent_card(self.spec.card_path)
                except Exception as exc:  # the SDK raises its own errors and httpx's alike
                    problem = redact(f"{type(exc).__name__}: {exc}")  # it quotes the URL, maybe what came back
                    raise TargetError(f"cannot read the agent card of {self.name}: {problem}") from exc
                for interface in card.supported_interfaces:  # the SDK sends to these: their userinfo masked
                    remember_url_credentials(interface.url)
                self.card = MessageToDict(card)
                self._client = await create_client(card, client_config=config)
        return self._client

    async def open_session(self, context: SessionContext) -> A2ASession:
        """Start a conversation (a new A2A context on the agent's first reply).

        Raises:
            TargetError: The agent card cannot be read.
        """
        return A2ASession(self, await self.client(), context)

    async def aclose(self) -> None:
        """Close the SDK client and the connection pool."""
        if self._client is not None:
            await self._client.close()
        await self._http.aclose()


class A2ASession:
    """One conversation: one `context_id`, a task continued while it asks for input."""

    def __init__(self, target: A2ATarget, client: Client, context: SessionContext) -> None:
        self._target = target
        self._client = client
        self._context = context
        self.context_id: str | None = None
        """The A2A context of this conversation, once the agent named it."""
        self.task_id: str | None = None
        """A task waiting for the user's input (continued by the next message)."""

    async def send(self, message: str) -> AgentReply:
        """Send one message and collect the task's updates into a reply.

        A turn that ends by a timeout, an SDK or transport error, or a cancellation while its task
        still runs asks the agent to cancel the task first (see `_cancel_abandoned`); the error or the
        cancellation then propagates unchanged.

        Raises:
            TargetError: The agent could not be reached or timed out, or its task failed, was rejected
                or cancelled.
        """
        request = SendMessageRequest(
            message=Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                parts=[Part(text=message)],
                context_id=self.context_id or "",
                task_id=self.task_id or "",
            )
        )
        headers = graph_headers(self._context.variables)  # the trial's graph and tools, when Proctor has them
        call = ClientCallContext(service_parameters=headers, timeout=self._context.timeout)
        reply = _Reply()
        started = time.perf_counter()
        try:
            async for event in self._client.send_message(request, context=call):
                reply.add(event)
        except Exception as exc:  # transport and protocol errors of the SDK (a timeout too)
            await self._cancel_abandoned(reply, headers)
            problem = redact(f"{type(exc).__name__}: {exc}")  # the SDK quotes URLs and the agent's error texts
            raise TargetError(f"{self._target.name}: {problem}") from exc
        except anyio.get_cancelled_exc_class():  # the turn's deadline, Ctrl-C, a stopped run
            await self._cancel_abandoned(reply, headers)
            raise
        self.context_id = reply.context_id or self.context_id
        self.task_id = reply.task_id if reply.state == TaskState.TASK_STATE_INPUT_REQUIRED else None
        if reply.state in _FAILED:
            why = f": {redact(reply.text())}" if reply.text() else ""  # the agent may echo what it was sent
            raise TargetError(f"the agent's task {_FAILED[reply.state]}{why}")
        if not reply.seen:
            raise TargetProtocolError(f"{self._target.name} answered with no task or message")
        return AgentReply(
            text=reply.text(),
            tool_calls=reply.calls,
            latency_ms=(time.perf_counter() - started) * 1000,
            raw=reply.raw,
        )

    async def _cancel_abandoned(self, reply: _Reply, headers: dict[str, str]) -> None:
        """Ask the agent to cancel the task of an abandoned turn, unless it ended or waits for input.

        Shielded from a cancellation in progress, bounded by `CANCEL_TIMEOUT`, and never raising: a
        cancel that fails or takes too long is logged (debug) and forgotten. The session then starts
        a new task with its next message.
        """
        task_id = reply.task_id or self.task_id  # the task the turn continued, before any event named it
        if task_id is None or reply.state in _SETTLED:
            return
        self.task_id = None
        call = ClientCallContext(service_parameters=headers, timeout=CANCEL_TIMEOUT)
        with anyio.move_on_after(CANCEL_TIMEOUT, shield=True) as scope:
            try:
                await self._client.cancel_task(CancelTaskRequest(id=task_id), context=call)
            except Exception as exc:  # best effort: the agent may not cancel, or be gone
                if logger.isEnabledFor(logging.DEBUG):  # the SDK's error may quote a URL or the agent's text
                    problem = redact(f"{type(exc).__name__}: {exc}")
                    logger.debug("%s: cannot cancel task %s: %s", self._target.name, task_id, problem)
        if scope.cancelled_caught:
            logger.debug("%s: cancelling task %s took over %ss", self._target.name, task_id, CANCEL_TIMEOUT)

    async def aclose(self) -> None:
        """Forget the conversation (A2A has no call to end a context)."""
        self.context_id = self.task_id = None


class _Reply:
    """The events of one message's task, folded: texts by artifact, tool calls, the last state."""

    def __init__(self) -> None:
        self.artifacts: dict[str, list[str]] = {}
        self.messages: list[str] = []
        self.calls: list[ToolCall] = []
        self.state: int | None = None
        self.context_id: str | None = None
        self.task_id: str | None = None
        self.raw: list[dict[str, Any]] = []
        self.seen = False

    def add(self, event: StreamResponse) -> None:
        self.seen = True
        self.raw.append(MessageToDict(event))
        kind = event.WhichOneof("payload")
        if kind == "task":
            task = event.task
            self._ids(task.context_id, task.id)
            for artifact in task.artifacts:
                self._artifact(artifact.artifact_id, artifact.parts, append=False)
            self._status(task.status)
        elif kind == "message":
            self._ids(event.message.context_id, event.message.task_id or None)
            self._message(event.message)
        elif kind == "status_update":
            self._ids(event.status_update.context_id, event.status_update.task_id)
            self._status(event.status_update.status)
        elif kind == "artifact_update":
            update = event.artifact_update
            self._ids(update.context_id, update.task_id)
            self._artifact(update.artifact.artifact_id, update.artifact.parts, append=update.append)

    def _ids(self, context_id: str, task_id: str | None) -> None:
        self.context_id = context_id or self.context_id
        self.task_id = task_id or self.task_id

    def _status(self, status: Any) -> None:
        self.state = status.state
        if status.HasField("message") and status.message.role == Role.ROLE_AGENT:
            self._message(status.message)

    def _message(self, message: Message) -> None:
        text = self._parts(message.parts)
        if text:
            self.messages.append(text)

    def _artifact(self, artifact_id: str, parts: Any, *, append: bool) -> None:
        text = self._parts(parts)
        chunks = self.artifacts.setdefault(artifact_id, [])
        if not append:
            chunks.clear()
        if text:
            chunks.append(text)

    def _parts(self, parts: Any) -> str:
        texts = []
        for part in parts:
            kind = part.WhichOneof("content")
            if kind == "text":
                texts.append(part.text)
            elif kind == "data":
                self._data(MessageToDict(part.data), MessageToDict(part.metadata))
        return "".join(texts)

    def _data(self, data: Any, metadata: dict[str, Any]) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return
        marker = metadata.get("adk_type") or metadata.get("type") or data.get("type")
        if marker in _CALL_KINDS or (marker is None and ("args" in data or "arguments" in data)):
            arguments = data.get("args", data.get("arguments")) or {}
            arguments = dict(arguments) if isinstance(arguments, dict) else {}
            self.calls.append(ToolCall(data["name"], arguments, data.get("id")))
        elif marker in _RESULT_KINDS:
            for call in reversed(self.calls):
                if call.name == data["name"] and call.result is None:
                    call.result = data.get("response", data.get("result"))
                    break

    def text(self) -> str:
        artifacts = ["".join(chunks) for chunks in self.artifacts.values() if chunks]
        return "\n".join(artifacts) if artifacts else "\n".join(self.messages)
