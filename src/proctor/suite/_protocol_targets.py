"""Targets that speak an agent protocol: A2A agents and agents exposed as MCP tools."""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, model_validator

__all__ = ["A2ATargetSpec", "McpTargetSpec"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # see _model.suite_file_spec


class A2ATargetSpec(_Spec):
    """An agent speaking the A2A protocol (the `a2a` extra): its card is read, each turn is one message.

    The turns of a trial share one A2A context (`context_id`), so the agent sees one conversation; a
    task left `input-required` is continued by the next turn. The reply is the text of the task's
    artifacts (and of the agent's messages); data parts shaped as tool calls (`{name, args}` marked
    `function_call`/`tool_call`, ADK's `adk_type` included) become the turn's tool calls, with results
    from the matching `function_response`. A failed, rejected or cancelled task is the turn's error.

    Example:
        ```yaml
        target: {type: a2a, url: http://127.0.0.1:9999}
        ```
    """

    type: Literal["a2a"] = "a2a"
    url: HttpUrl
    """The agent's base URL; its card is read from `card_path` below it."""
    card_path: str | None = None
    """Where the agent card is, relative to `url` (default `/.well-known/agent-card.json`)."""
    streaming: bool = True
    """Stream the task's updates when the agent's card says it can (else one blocking call)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers; `${VAR}` is replaced from the environment."""


class McpTargetSpec(_Spec):
    """An agent exposed as an MCP tool (the `tools` extra): each turn is one call to `tool`.

    The call's arguments are `{<message_arg>: message}` plus `arguments`, plus `{<session_arg>: id}` (a
    fresh id per trial) and `{<history_arg>: [{role, content}, ...]}` when those are named. The reply is
    the result's text (its structured content's `reply_key`, when given); an error result is the turn's
    error. A `command` is started once per trial (a fresh agent process, with `PROCTOR_TOOLS_URL` and
    the trial's graph variables as `PROCTOR_GRAPH_URI`, ... in its environment).

    Example:
        ```yaml
        target: {type: mcp, url: http://127.0.0.1:8000/mcp, tool: ask, session_arg: session_id}
        ```
    """

    type: Literal["mcp"] = "mcp"
    url: str | None = Field(default=None, pattern=r"^https?://")
    """The agent's streamable HTTP endpoint, e.g. `http://127.0.0.1:8000/mcp`."""
    command: list[str] | None = Field(default=None, min_length=1)
    """The agent's command line (stdio), started for each trial; runs code, so the suite must be trusted."""
    tool: str = Field(min_length=1)
    """The tool that answers a user message."""
    message_arg: str = "message"
    """The argument that carries the user's message."""
    session_arg: str | None = None
    """An argument that carries the trial's session id (multi-turn agents keep their state by it)."""
    history_arg: str | None = None
    """An argument that carries the conversation so far (`[{role, content}]`, the new message last)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Fixed extra arguments for every call."""
    reply_key: str | None = None
    """Read the reply from this key of the result's structured content (default: the text content)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the `command` (`${VAR}` is read from Proctor's environment)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers for the `url` (`${VAR}` is read from the environment)."""

    @model_validator(mode="after")
    def _one_transport(self) -> "McpTargetSpec":
        if (self.command is None) == (self.url is None):
            raise ValueError("an mcp target needs exactly one of 'url' (streamable HTTP) or 'command' (stdio)")
        return self
