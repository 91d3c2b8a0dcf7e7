"""Conversations rebuilt from spans.

What the user said, what the agent replied, which tools it called with which arguments and results, how
long each reply took, how many tokens it used.

A conversation is one trace, or the traces sharing a conversation id (`gen_ai.conversation.id`: many
agents start a trace per request). Its turns are the outermost turn spans (`invoke_agent`, or what the
mapping names), in start order; with none, the outermost model-call spans. For each turn:

- the user's message: the last user message of the span's input messages (else its input text, else
  its user events, else the first model call's input under it);
- the reply: the span's output messages (else output text, reply events, the last model call's output);
- tool calls: the tool spans under it (outermost, in start order) with arguments and results; with none,
  the tool-call parts of its output messages, with results from tool-response parts;
- latency: the span's duration; tokens: the span's usage attributes, else the sum of its model calls'.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.traces._mapping import GENAI, TraceMapping
from proctor.traces._spans import Span
from proctor.transcript import Message, ToolCall, Usage

__all__ = ["TraceConversation", "conversations"]

_USER_ROLES = ("user", "human")
_ASSISTANT_ROLES = ("assistant", "model", "ai", "bot")
_FLAT = re.compile(r"^(\d+)\.(?:message\.)?(role|content|parts|text)$")


@dataclass(slots=True)
class TraceConversation:
    """One conversation read from traces."""

    key: str
    """Its conversation id, else its trace id."""
    trace_ids: list[str]
    """The traces it came from, in order."""
    messages: list[Message]
    """User and assistant messages, with tool calls and latencies."""
    usage: Usage = field(default_factory=Usage)
    """Tokens over its turns."""
    duration_ms: float = 0.0
    """From the first turn's start to the last turn's end."""
    case: str | None = None
    """The suite case it names (the mapping's `case` attributes), if any."""
    where: str = ""
    """Where its first span was read (file and line), for messages."""
    started_ns: int = 0
    """When its first turn started."""

    @property
    def first_user_message(self) -> str | None:
        """What the user said first (cases are matched by it when no attribute names the case)."""
        return next((m.content for m in self.messages if m.role == "user" and m.content), None)


def conversations(spans: Iterable[Span], mapping: TraceMapping = GENAI) -> list[TraceConversation]:
    """The conversations in `spans` (see the module docstring), in the order they started.

    A group of spans with no turn span and no model-call span is no conversation (e.g. a trace of
    Proctor's check spans only) and is left out.
    """
    spans = list(spans)
    reader = _Reader(spans, mapping)
    found = [c for c in (reader.conversation(key, group) for key, group in reader.groups().items()) if c]
    return sorted(found, key=lambda c: c.started_ns)


class _Reader:
    def __init__(self, spans: Sequence[Span], mapping: TraceMapping) -> None:
        self.mapping = mapping
        self.spans = spans
        self.by_id = {(s.trace_id, s.span_id): s for s in spans}
        self.children: dict[tuple[str, str], list[Span]] = {}
        for span in spans:
            if span.parent_id is not None:
                self.children.setdefault((span.trace_id, span.parent_id), []).append(span)
        for kids in self.children.values():
            kids.sort(key=lambda s: s.start_ns)

    def groups(self) -> dict[str, list[Span]]:
        traces: dict[str, list[Span]] = {}
        for span in self.spans:
            traces.setdefault(span.trace_id, []).append(span)
        groups: dict[str, list[Span]] = {}
        for trace_id, members in traces.items():
            key = next((str(v) for s in members if (v := _attr(s, self.mapping.conversation_id)) is not None), trace_id)
            groups.setdefault(key, []).extend(members)
        for members in groups.values():
            members.sort(key=lambda s: (s.start_ns, s.end_ns))
        return groups

    def operation(self, span: Span) -> str | None:
        value = _attr(span, self.mapping.operation)
        return None if value is None else str(value)

    def is_turn(self, span: Span) -> bool:
        if self.operation(span) in self.mapping.turn_operations:
            return True
        return any(
            span.name.startswith(name[:-1]) if name.endswith("*") else span.name == name
            for name in self.mapping.turn_names
        )

    def is_model(self, span: Span) -> bool:
        return self.operation(span) in self.mapping.model_operations

    def is_tool(self, span: Span) -> bool:
        operation = self.operation(span)
        if operation is not None:
            return operation in self.mapping.tool_operations
        return _attr(span, self.mapping.tool_name) is not None

    def ancestors(self, span: Span) -> Iterable[Span]:
        seen = set()
        parent = span.parent_id
        while parent is not None and parent not in seen:
            seen.add(parent)
            above = self.by_id.get((span.trace_id, parent))
            if above is None:
                return
            yield above
            parent = above.parent_id

    def descendants(self, span: Span) -> list[Span]:
        found: list[Span] = []
        stack = list(reversed(self.children.get((span.trace_id, span.span_id), [])))
        while stack:
            child = stack.pop()
            found.append(child)
            stack.extend(reversed(self.children.get((child.trace_id, child.span_id), [])))
        return sorted(found, key=lambda s: s.start_ns)

    def outermost(self, spans: Sequence[Span], wanted: Any) -> list[Span]:
        return [s for s in spans if wanted(s) and not any(wanted(a) for a in self.ancestors(s))]

    def units(self, group: list[Span]) -> list[tuple[Span | None, list[Span]]]:
        """The turns: each turn span with what is under it; else model calls grouped by their parent."""
        turns = self.outermost(group, self.is_turn)
        own = [turn for turn in turns if "proctor.turn" in turn.attributes]
        if own:  # Proctor's trace of a trial: its turn spans, not the agent's beside them, are the turns
            turns = own
        if turns:
            return [(turn, self.descendants(turn)) for turn in turns]
        models = self.outermost(group, self.is_model)
        parents: dict[str, list[Span]] = {}
        for model in models:  # one agent step without a turn span: the model calls (and tools) beside each other
            parents.setdefault(model.parent_id or model.span_id, [])
        for span in group:
            if span.parent_id in parents:
                parents[span.parent_id].extend([span, *self.descendants(span)])
            elif span.parent_id is None and span.span_id in parents:
                parents[span.span_id].extend([span, *self.descendants(span)])
        return [(None, sorted(below, key=lambda s: s.start_ns)) for below in parents.values()]

    def conversation(self, key: str, group: list[Span]) -> TraceConversation | None:
        units = self.units(group)
        if not units:
            return None
        messages: list[Message] = []
        usage = Usage()
        starts, ends = [], []
        for container, below in units:
            user, reply, used = self.turn(container, below)
            if not user and not reply.content and not reply.tool_calls:
                continue  # e.g. a model call exported without its messages: nothing was said
            messages.append(Message("user", user))
            messages.append(reply)
            usage = usage + used
            spans = [container] if container is not None else below
            starts.append(min(s.start_ns for s in spans))
            ends.append(max(s.end_ns for s in spans))
        if not messages:
            return None
        case = next((str(v) for s in group if (v := _attr(s, self.mapping.case)) is not None), None)
        first = units[0][0] or units[0][1][0]
        return TraceConversation(
            key=key,
            trace_ids=list(dict.fromkeys(s.trace_id for s in group)),
            messages=messages,
            usage=usage,
            duration_ms=(max(ends) - min(starts)) / 1_000_000,
            case=case,
            where=first.where,
            started_ns=min(starts),
        )

    def turn(self, container: Span | None, below: list[Span]) -> tuple[str, Message, Usage]:
        models = self.outermost(below, self.is_model)
        user = self.user_text(container) if container is not None else None
        if user is None and models:
            user = self.user_text(models[0])
        text, calls = self.reply(container) if container is not None else (None, [])
        if models and (text is None or not calls):
            results = _tool_results([m for model in models for m in _messages(model, self.mapping.input_messages)])
            model_calls = [c for model in models for c in self.reply(model, results)[1]]
            text = (
                text if text is not None else next((t for t in (self.reply(m)[0] for m in reversed(models)) if t), None)
            )
            calls = calls or model_calls
        tools = self.outermost(below, self.is_tool)
        if tools:
            calls = [self.tool_call(t) for t in tools]
        usage = self.usage(container) if container is not None else None
        if usage is None:
            usage = sum((self.usage(m) or Usage() for m in models), Usage())
        spans = [container] if container is not None else below
        latency = (max(s.end_ns for s in spans) - min(s.start_ns for s in spans)) / 1_000_000
        return user or "", Message("assistant", text or "", calls, latency), usage

    def user_text(self, span: Span) -> str | None:
        messages = _messages(span, self.mapping.input_messages)
        users = [m for m in messages if str(m.get("role", "")).lower() in _USER_ROLES]
        if users:
            return _text(users[-1])
        text = _attr(span, self.mapping.input_text)
        if text is not None:
            return _plain(text)
        return _event_text(span, self.mapping.user_events)

    def reply(self, span: Span, results: dict[str, Any] | None = None) -> tuple[str | None, list[ToolCall]]:
        messages = _messages(span, self.mapping.output_messages)
        replies = [m for m in messages if str(m.get("role", "assistant")).lower() in _ASSISTANT_ROLES]
        if replies:
            found = _tool_results(_messages(span, self.mapping.input_messages) + messages)
            calls = [c for m in replies for c in _part_calls(m, {**found, **(results or {})})]
            return " ".join(t for t in (_text(m) for m in replies) if t), calls
        text = _attr(span, self.mapping.output_text)
        if text is not None:
            return _plain(text), []
        return _event_text(span, self.mapping.reply_events), []

    def tool_call(self, span: Span) -> ToolCall:
        name = _attr(span, self.mapping.tool_name)
        if name is None:
            name = span.name.removeprefix("execute_tool ").removeprefix("running tool ").strip() or span.name
        arguments = _json(_attr(span, self.mapping.tool_arguments))
        if not isinstance(arguments, dict):
            arguments = {} if arguments is None else {"_raw": arguments}
        call_id = _attr(span, self.mapping.tool_call_id)
        return ToolCall(
            str(name),
            arguments,
            None if call_id is None else str(call_id),
            _json(_attr(span, self.mapping.tool_result)),
        )

    def usage(self, span: Span) -> Usage | None:
        prompt = _attr(span, self.mapping.input_tokens)
        completion = _attr(span, self.mapping.output_tokens)
        if prompt is None and completion is None:
            return None
        return Usage(_int(prompt), _int(completion))


def _attr(span: Span, names: Sequence[str]) -> Any:
    for name in names:
        value = span.attributes.get(name)
        if value is not None and value != "":
            return value
    return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _json(value: Any) -> Any:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


def _plain(value: Any) -> str:
    """Text from an attribute that may hold text, or JSON of a message or of `{input|output: text}`."""
    decoded = _json(value)
    if isinstance(decoded, dict):
        for key in ("content", "text", "output", "input", "message", "value"):
            if isinstance(decoded.get(key), str):
                return str(decoded[key])
    if isinstance(decoded, str):
        return decoded
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _messages(span: Span, keys: Sequence[str]) -> list[dict[str, Any]]:
    """Messages from a JSON attribute, or flattened `KEY.N.role` / `KEY.N.message.content` attributes."""
    for key in keys:
        value = _json(span.attributes.get(key))
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            value = value["messages"]
        if isinstance(value, list):
            return [_unprefixed(m) for m in value if isinstance(m, dict)]
        flat: dict[int, dict[str, Any]] = {}
        prefix = key + "."
        for name, item in span.attributes.items():
            if name.startswith(prefix) and (match := _FLAT.match(name[len(prefix) :])):
                flat.setdefault(int(match.group(1)), {})[match.group(2)] = (
                    _json(item) if match.group(2) == "parts" else item
                )
        if flat:
            return [flat[index] for index in sorted(flat)]
    return []


def _unprefixed(message: dict[str, Any]) -> dict[str, Any]:
    """OpenInference's list form prefixes keys (`message.role`, `tool_call.function.name`): drop them."""
    if not any("." in key for key in message):
        return message
    out: dict[str, Any] = {}
    for key, value in message.items():
        name = key.removeprefix("message.").removeprefix("tool_call.")
        if isinstance(value, list):
            value = [_unprefixed(v) if isinstance(v, dict) else v for v in value]
        if name.startswith("function."):
            out.setdefault("function", {})[name.removeprefix("function.")] = value
        else:
            out[name] = value
    return out


def _text(message: dict[str, Any]) -> str:
    """A message's text: `content` as text, or its text parts (GenAI `parts`, OpenAI content parts)."""
    content = message.get("content", message.get("text"))
    if isinstance(content, str):
        return content
    parts = message.get("parts") if isinstance(message.get("parts"), list) else content
    if isinstance(parts, list):
        texts = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "text-prompt", "user-prompt"):
                value = part.get("content", part.get("text"))
                if isinstance(value, str):
                    texts.append(value)
        return "".join(texts)
    return ""


def _part_calls(message: dict[str, Any], results: dict[str, Any]) -> list[ToolCall]:
    """Tool calls in a message's parts (`{type: tool_call, id, name, arguments}`) or OpenAI `tool_calls`."""
    found = []
    items = [p for p in message.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call"]
    items += [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    for item in items:
        nested = item.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else item
        name = function.get("name")
        if not isinstance(name, str):
            continue
        arguments = _json(function.get("arguments"))
        call_id = item.get("id")
        result = results.get(str(call_id)) if call_id is not None else None
        found.append(
            ToolCall(
                name,
                arguments if isinstance(arguments, dict) else ({} if arguments is None else {"_raw": arguments}),
                None if call_id is None else str(call_id),
                result if result is not None else results.get(f"name:{name}"),
            )
        )
    return found


def _tool_results(messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Tool results by call id, from `tool_call_response` parts and `role: tool` messages."""
    results: dict[str, Any] = {}
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call_response" and part.get("id") is not None:
                results[str(part["id"])] = _json(part.get("response", part.get("result")))
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id", message.get("id"))  # pydantic-ai writes `id`
            if call_id is not None:
                results[str(call_id)] = _json(message.get("content"))
            if message.get("name") is not None:  # OpenInference names the tool, not the call
                results[f"name:{message['name']}"] = _json(message.get("content"))
    return results


def _event_text(span: Span, names: Sequence[str]) -> str | None:
    for event in span.events:
        if event.name in names:
            for key in ("content", "body", "message"):
                if key in event.attributes:
                    return _plain(event.attributes[key])
    return None
