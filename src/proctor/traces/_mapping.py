"""Which span attributes hold what (`--from-traces`).

The GenAI semantic conventions by default, presets for frameworks that name things their own way, or a file.

Every field lists attribute names tried in order (the first one present wins). A mapping file is YAML
or JSON; `base:` names the preset it changes (default `genai`), and each field given replaces the
preset's list:

```yaml
base: openinference
turn_operations: [AGENT, CHAIN]     # spans with these operation values are the agent's turns
output_text: [output.value, response.text]
case: [app.eval_case]               # the attribute naming the suite case a conversation is for
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from proctor.traces._spans import TraceError

__all__ = ["PRESETS", "TraceMapping", "load_mapping"]


class TraceMapping(BaseModel):
    """Where a conversation's parts are in spans (each field: attribute names, tried in order)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operation: list[str] = ["gen_ai.operation.name"]
    """The attribute telling what a span is (an agent turn, a model call, a tool call)."""
    turn_operations: list[str] = ["invoke_agent"]
    """Operation values of a turn: one request to the agent, its reply (the outermost such span)."""
    turn_names: list[str] = []
    """Span names (or name prefixes ending in `*`) that mark a turn when no operation attribute does."""
    model_operations: list[str] = ["chat", "text_completion", "generate_content"]
    """Operation values of a model call (its messages stand in when a turn span has none)."""
    tool_operations: list[str] = ["execute_tool"]
    """Operation values of a tool call."""
    input_messages: list[str] = ["gen_ai.input.messages"]
    """Messages sent (JSON: the conventions' `[{role, parts}]`, or `[{role, content}]`; or flattened
    `KEY.N.role`/`KEY.N.content` or `KEY.N.message.role`/`.content`)."""
    output_messages: list[str] = ["gen_ai.output.messages"]
    """Messages produced (same forms)."""
    input_text: list[str] = []
    """Attributes holding the user's text as it is."""
    output_text: list[str] = []
    """Attributes holding the reply's text as it is."""
    user_events: list[str] = ["gen_ai.user.message"]
    """Span events carrying the user's message (older conventions), content in `content` or `body`."""
    reply_events: list[str] = ["gen_ai.choice", "gen_ai.assistant.message"]
    """Span events carrying the reply."""
    tool_name: list[str] = ["gen_ai.tool.name"]
    tool_arguments: list[str] = ["gen_ai.tool.call.arguments"]
    tool_result: list[str] = ["gen_ai.tool.call.result"]
    tool_call_id: list[str] = ["gen_ai.tool.call.id"]
    input_tokens: list[str] = ["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"]
    output_tokens: list[str] = ["gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"]
    conversation_id: list[str] = ["gen_ai.conversation.id", "session.id"]
    """Attributes grouping the turns of several traces into one conversation (else: one per trace)."""
    case: list[str] = ["proctor.case"]
    """Attributes naming the suite case a conversation is for (else: by its first message, or `--case`)."""


GENAI = TraceMapping()
"""The OpenTelemetry GenAI semantic conventions (and Proctor's own exported traces)."""

OPENINFERENCE = TraceMapping(
    operation=["openinference.span.kind"],
    turn_operations=["AGENT"],
    model_operations=["LLM"],
    tool_operations=["TOOL"],
    input_messages=["llm.input_messages"],
    output_messages=["llm.output_messages"],
    input_text=["input.value"],
    output_text=["output.value"],
    tool_name=["tool.name"],
    tool_arguments=["tool.parameters", "input.value"],
    tool_result=["output.value"],
    tool_call_id=["tool_call.id"],
    input_tokens=["llm.token_count.prompt"],
    output_tokens=["llm.token_count.completion"],
    conversation_id=["session.id"],
)
"""Arize OpenInference (Phoenix; LlamaIndex, LangChain, CrewAI instrumentations)."""

LOGFIRE = TraceMapping(
    turn_names=["agent run", "invoke_agent *"],
    input_messages=["pydantic_ai.all_messages", "all_messages_events", "gen_ai.input.messages"],
    output_text=["final_result"],
    tool_arguments=["gen_ai.tool.call.arguments", "tool_arguments"],
    tool_result=["gen_ai.tool.call.result", "tool_response"],
    conversation_id=["gen_ai.conversation.id", "session.id", "logfire.session_id"],
)
"""Pydantic Logfire (pydantic-ai's instrumentation: `agent run`, `running tool`, `chat <model>` spans)."""

PRESETS = {"genai": GENAI, "openinference": OPENINFERENCE, "logfire": LOGFIRE}
"""The named mappings `--from-traces` accepts."""


def load_mapping(value: str | Path | None) -> TraceMapping:
    """A preset by name (`genai`, `openinference`, `logfire`) or a mapping file; `None` is `genai`.

    Raises:
        TraceError: An unknown preset, an unreadable file, or a field that is not a mapping field
            (the message names the file and field).
    """
    if value is None:
        return GENAI
    name = str(value)
    if name.lower() in PRESETS:
        return PRESETS[name.lower()]
    path = Path(name)
    if not path.is_file():
        raise TraceError(f"--from-traces {name!r}: neither a preset ({', '.join(PRESETS)}) nor a mapping file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise TraceError(f"{path}{line}: not valid YAML or JSON: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise TraceError(f"{path}: expected a mapping of fields to attribute names")
    return _merged(path, data)


def _merged(path: Path, data: dict[str, Any]) -> TraceMapping:
    base_name = str(data.pop("base", "genai")).lower()
    if base_name not in PRESETS:
        raise TraceError(f"{path}: base: {base_name!r} is not a preset; presets: {', '.join(PRESETS)}")
    changes = {key: [value] if isinstance(value, str) else value for key, value in data.items()}
    try:
        return TraceMapping.model_validate({**PRESETS[base_name].model_dump(), **changes})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors(include_url=False)
        )
        fields = ", ".join(TraceMapping.model_fields)
        raise TraceError(f"{path}: {problems} (fields: {fields})") from None
