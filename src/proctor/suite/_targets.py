"""Target specifications: how a suite (or the command line) says which agent to talk to."""

# No `from __future__ import annotations`: pydantic would compile every annotation string (a ForwardRef) at import.

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl

from proctor.suite._protocol_targets import A2ATargetSpec, McpTargetSpec

__all__ = [
    "A2ATargetSpec",
    "EmbabelTargetSpec",
    "HttpObjectContextSpec",
    "HttpRequestSpec",
    "HttpSessionSpec",
    "HttpTargetSpec",
    "LobuTargetSpec",
    "McpTargetSpec",
    "OpenAITargetSpec",
    "PythonTargetSpec",
    "TargetSpec",
    "parse_target_string",
]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # see _model.suite_file_spec


class OpenAITargetSpec(_Spec):
    """An OpenAI-compatible `/v1/chat/completions` endpoint; the whole history is sent each turn.

    Example:
        ```yaml
        target: {type: openai, base_url: http://127.0.0.1:8000/v1, model: hr-assistant}
        ```
    """

    type: Literal["openai"] = "openai"
    base_url: HttpUrl
    """Base URL up to and including `/v1` (a missing `/v1` is not added)."""
    model: str | None = None
    """The `model` sent in each request; `--model` overrides it."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Environment variable holding the bearer token; unset or empty means no Authorization header."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers; `${VAR}` is replaced from the environment."""
    system_prompt: str | None = None
    """A system message put before the conversation."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Extra body fields for every request (e.g. `temperature`)."""


class HttpRequestSpec(_Spec):
    """One templated HTTP request. Strings are Jinja templates; `${VAR}` reads the environment."""

    url: str
    """Request URL template, e.g. `http://127.0.0.1:8000/sessions/{{ session_id }}/messages`."""
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    """HTTP method."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Header templates."""
    body: Any = None
    """JSON body template: every string inside is rendered; `None` sends no body."""


class HttpObjectContextSpec(HttpRequestSpec):
    """The request that fetches the agent's object context after the conversation (for `expression` checks).

    Example (Embabel's endpoint):
        ```yaml
        object_context: {url: "http://127.0.0.1:8081/api/v1/chat/objectContexts/{{ session_id }}"}
        ```
    """

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    """HTTP method."""
    path: str = "$"
    """JSONPath of the object context in the reply (default: the whole body)."""


class HttpSessionSpec(_Spec):
    """Optional requests that open and close a session on the agent."""

    open: HttpRequestSpec | None = None
    """Request that creates a session."""
    id_path: str = "$.session_id"
    """JSONPath of the session id in the open request's reply."""
    close: HttpRequestSpec | None = None
    """Request that deletes the session after the trial."""


class HttpTargetSpec(_Spec):
    """Any REST agent, described by request templates and JSONPaths into the reply.

    Template variables: `message`, `history` (list of `{role, content}`), `session_id`, `user`, `model`,
    `turn` (0-based), `trial`, `case`, `env` (the environment), and with a state backend the trial's graph:
    `graph_uri`, `graph_name`, `graph_label` and `graph_backend`.
    """

    type: Literal["http"] = "http"
    request: HttpRequestSpec
    """The request that sends one user message."""
    reply_path: str = "$.reply"
    """JSONPath of the reply text."""
    tool_calls_path: str | None = None
    """JSONPath of the list of tool calls (`{name, arguments}` or OpenAI's `{function: {...}}`)."""
    usage_path: str | None = None
    """JSONPath of a usage object (`prompt_tokens`/`completion_tokens` or `input_tokens`/`output_tokens`)."""
    trace_id_path: str | None = None
    """JSONPath of a trace id."""
    session: HttpSessionSpec | None = None
    """Session open and close requests; without it every trial uses a fresh random `session_id`."""
    user: str = "proctor"
    """The `user` template variable."""
    object_context: HttpObjectContextSpec | None = None
    """The request that fetches the agent's object context after the conversation."""
    ingest: HttpRequestSpec | None = None
    """The request that delivers a text seed before the conversation (template variable `text`)."""


class LobuTargetSpec(_Spec):
    """A Lobu gateway: create an agent session, post messages, read the SSE stream, delete the session."""

    type: Literal["lobu"] = "lobu"
    gateway: str | None = None
    """Gateway URL; default from `--gateway`, `LOBU_GATEWAY_URL`/`GATEWAY_URL` in `.env`, or
    `http://localhost:8080`."""
    agent: str | None = None
    """Agent id; default from `--agent`, `.env` or the first agent in `lobu.toml`."""
    token_env: str | None = None
    """Environment variable holding a bearer token for the gateway."""


class PythonTargetSpec(_Spec):
    """A Python callable in this process: `module:function` (sync or async).

    The callable receives the conversation so far as a list of `{role, content}` dicts and returns a
    string, a dict `{"text", "tool_calls", "usage"}`, or an `AgentReply`.
    """

    type: Literal["python"] = "python"
    callable: str = Field(pattern=r"^[\w.]+:[\w.]+$")
    """`package.module:function`."""
    object_context: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    """`module:function` returning the agent's object context after the conversation; it gets the
    conversation (`{role, content}` dicts) and, when it has a `context` parameter, the `SessionContext`."""
    seed: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    """`module:function` (sync or async) that takes a text seed before the conversation (`text`, and the
    `SessionContext` as `context` when it has that parameter)."""


class EmbabelTargetSpec(_Spec):
    """An agent speaking Embabel's chat protocol (sessions, messages with events, object contexts).

    Example:
        ```yaml
        target: {type: embabel, base_url: http://localhost:8081, user: test-user, chatbot: my-agent}
        ```
    """

    type: Literal["embabel"] = "embabel"
    # A validated string, not `HttpUrl(...)`: building an HttpUrl at import builds pydantic's URL validator
    # (and its plugin scan) for every command that imports the suite package. The same value once validated.
    base_url: HttpUrl = Field(default="http://localhost:8081/", validate_default=True)
    """The agent service (Embabel's default `http://localhost:8081`)."""
    user: str = "proctor"
    """The user the sessions are created for (the job's `target.user`)."""
    chatbot: str = "agent"
    """The chatbot to talk to (the job's `target.chatbot`)."""
    attempts: int = Field(default=4, ge=1)
    """Attempts per agent call (Embabel: 4); every failed attempt counts in the failure penalty."""
    backoff: float = Field(default=0.1, ge=0)
    """Seconds between attempts (Embabel: 100 ms)."""
    ingest_url: str | None = None
    """Where text seeds are posted (`{text, user, chatbot}`) before a conversation; none: text seeds are a
    load error."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers; `${VAR}` is replaced from the environment."""
    model: str | None = "gpt-4.1-mini"
    """The `model` sent with each message when `--model` is not given (Embabel's client always sends one;
    its default is `gpt-4.1-mini`); `null` sends none."""
    api_key: str | None = None
    """The `X-API-KEY` header Embabel's client sends; write `${VAR}` to read it from the environment
    (the value itself is never logged nor written to results). Default: `EMBABEL_API_KEY`, if set."""


TargetSpec = Annotated[
    OpenAITargetSpec
    | HttpTargetSpec
    | LobuTargetSpec
    | PythonTargetSpec
    | EmbabelTargetSpec
    | A2ATargetSpec
    | McpTargetSpec,
    Field(discriminator="type"),
]
"""Any target specification, chosen by its `type`."""


def parse_target_string(value: str) -> dict[str, Any]:
    """Turn a short target string into a target specification dict.

    `http(s)://...` means an OpenAI-compatible server at that base URL; `python:mod:fn` a callable;
    `lobu:URL` a Lobu gateway; `embabel:URL` an Embabel-protocol agent; `a2a:URL` an A2A agent;
    `openai:URL` is explicit.

    Args:
        value: The string from `--target` or a suite's `target:`.

    Returns:
        A dict that validates as one of the target specifications.

    Raises:
        ValueError: The string is none of the forms above.
    """
    kind, _, rest = value.partition(":")
    if kind in ("http", "https"):
        return {"type": "openai", "base_url": value}
    if kind == "openai" and rest:
        return {"type": "openai", "base_url": rest}
    if kind == "python" and rest:
        return {"type": "python", "callable": rest}
    if kind == "lobu":
        return {"type": "lobu", "gateway": rest or None}
    if kind == "a2a" and rest:
        return {"type": "a2a", "url": rest}
    if kind == "embabel":
        return {"type": "embabel", **({"base_url": rest} if rest else {})}
    raise ValueError(
        f"cannot read target {value!r}: expected a base URL (http://host:port/v1), "
        "'python:module:function', 'lobu:URL', 'embabel:URL', 'a2a:URL' or a mapping with a 'type'"
    )
