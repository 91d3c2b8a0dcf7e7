"""The `http` target: any REST agent, described by Jinja request templates and JSONPaths."""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
from jsonpath_ng.ext.parser import parse as parse_jsonpath

from proctor._jinja import LimitedSandbox, evaluate
from proctor._jinja import render as render_template
from proctor._redact import redact, redact_excerpt, redact_url, remember_header, remember_secret
from proctor.errors import ConfigError, TargetError, TargetProtocolError
from proctor.suite._targets import HttpRequestSpec, HttpTargetSpec
from proctor.targets._base import SessionContext
from proctor.targets._http_client import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_RETRY,
    NO_RETRY,
    HttpResponse,
    RetryPolicy,
    build_client,
    decode_json,
    expand_env,
    send_with_retries,
)
from proctor.targets._replies import parse_tool_calls, parse_usage
from proctor.transcript import AgentReply

__all__ = ["HttpSession", "HttpTarget"]

logger = logging.getLogger("proctor.targets")

_Render = Callable[[Mapping[str, Any]], Any]
_SINGLE_EXPRESSION = re.compile(r"\{\{-?\s*((?:(?!\{\{|\}\}).)+?)\s*-?\}\}", re.DOTALL)
_TEMPLATE_MARKERS = ("{{", "{%", "{#")


class _SecretEnvironment(Mapping[str, str]):
    """`os.environ` for templates, remembering every value a template reads as a secret.

    So a URL or an error quoting `{{ env.API_KEY }}`'s value is masked in results, logs and reports.
    """

    def __getitem__(self, name: str) -> str:
        value = os.environ[name]
        remember_secret(value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(os.environ)

    def __len__(self) -> int:
        return len(os.environ)


SECRET_ENV = _SecretEnvironment()


class _Templates:
    """Compiles template strings once; rendering is a dictionary lookup away."""

    def __init__(self) -> None:
        # Sandboxed and bounded (`proctor._jinja`): templates come from suite files, which are data (no
        # attribute walk to os.popen, no unbounded work or memory).
        self.env = LimitedSandbox(undefined=jinja2.StrictUndefined, autoescape=False)

    def compile(self, value: Any, where: str) -> _Render:
        """Compile a JSON-like value whose strings are templates into a render function."""
        if isinstance(value, str):
            return self._compile_string(value, where)
        if isinstance(value, dict):
            parts = [(key, self.compile(item, f"{where}.{key}")) for key, item in value.items()]
            return lambda variables: {key: render(variables) for key, render in parts}
        if isinstance(value, list):
            items = [self.compile(item, f"{where}[{index}]") for index, item in enumerate(value)]
            return lambda variables: [render(variables) for render in items]
        return lambda variables: value

    def _compile_string(self, source: str, where: str) -> _Render:
        source = expand_env(source, where)
        if not any(marker in source for marker in _TEMPLATE_MARKERS):
            return lambda variables: source
        try:
            single = _SINGLE_EXPRESSION.fullmatch(source)
            if single is not None:
                expression = self.env.compile_expression(single.group(1), undefined_to_none=False)
                return _guarded(lambda variables: evaluate(expression, variables), source, where)
            template = self.env.from_string(source)
        except jinja2.TemplateSyntaxError as exc:  # `${VAR}` is expanded in `source`: masked
            raise ConfigError(redact(f"bad template in {where}: {exc.message} in {source!r}")) from None
        return _guarded(lambda variables: render_template(template, variables), source, where)


def _guarded(render: Callable[..., Any], source: str, where: str) -> _Render:
    def guarded(variables: Mapping[str, Any]) -> Any:
        try:
            value = render(variables)
            if isinstance(value, jinja2.Undefined):
                str(value)  # StrictUndefined raises, naming the missing variable
                raise jinja2.UndefinedError("the value is undefined")
        except (jinja2.TemplateError, ArithmeticError, ValueError, TypeError, LookupError, RecursionError) as exc:
            raise ConfigError(redact(f"cannot render {where} ({source!r}): {exc}")) from None
        return value

    return guarded


@dataclass(frozen=True, slots=True)
class _Request:
    """A request spec with its templates compiled."""

    method: str
    url: _Render
    headers: tuple[tuple[str, _Render], ...]
    body: _Render | None

    @classmethod
    def compile(cls, spec: HttpRequestSpec, templates: _Templates, where: str) -> _Request:
        for key, value in spec.headers.items():
            if isinstance(value, str) and not any(marker in value for marker in _TEMPLATE_MARKERS):
                remember_header(key, expand_env(value, f"{where}.headers.{key}"))  # a static key: masked
        headers = tuple(
            (key, templates.compile(value, f"{where}.headers.{key}")) for key, value in spec.headers.items()
        )
        body = None if spec.body is None else templates.compile(spec.body, f"{where}.body")
        return cls(spec.method, templates.compile(spec.url, f"{where}.url"), headers, body)

    def render(self, variables: Mapping[str, Any]) -> tuple[str, dict[str, str], Any]:
        url = str(self.url(variables))
        headers = {key: str(render(variables)) for key, render in self.headers}
        body = None if self.body is None else self.body(variables)
        return url, headers, body


def _compile_path(path: str, where: str) -> Any:
    try:
        return parse_jsonpath(path)
    except Exception as exc:
        raise ConfigError(f"invalid JSONPath {path!r} in {where}: {exc}") from None


def _excerpt(data: Any) -> str:
    """A reply quoted in an error: a server may echo the credentials it got, so they are masked."""
    return redact_excerpt(json.dumps(data, default=str), 200)


class HttpTarget:
    """Talks to any REST agent through templated requests; see `HttpTargetSpec` for the variables.

    Templates and JSONPaths are compiled once, when the target is built. A body string that is exactly
    one expression (`"{{ history }}"`) is sent as the expression's value (a list, number, ...), every
    other string as rendered text. `history` includes the message being sent. Without `session.open`,
    each session gets a random `session_id` (32 hex digits); with it, the id comes from the open reply
    at `session.id_path` (an open reply with an empty body keeps the random id).
    """

    def __init__(
        self,
        spec: HttpTargetSpec,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        """Compile the templates and JSONPaths and build the connection pool.

        Args:
            spec: The validated target specification.
            max_connections: Most connections open at once to the agent.
            retry: How retryable failures are retried.

        Raises:
            proctor.errors.ConfigError: A template or JSONPath does not compile, or uses an unset
                `${VAR}`.
        """
        self.spec = spec
        self.name = f"http {spec.request.method} {redact_url(spec.request.url)}"
        templates = _Templates()
        self._request = _Request.compile(spec.request, templates, "request")
        session = spec.session
        self._open = _Request.compile(session.open, templates, "session.open") if session and session.open else None
        self._close = _Request.compile(session.close, templates, "session.close") if session and session.close else None
        self._id_path = _compile_path(session.id_path, "session.id_path") if session else None
        self._reply_path = _compile_path(spec.reply_path, "reply_path")
        self._tool_calls_path = _compile_path(spec.tool_calls_path, "tool_calls_path") if spec.tool_calls_path else None
        self._usage_path = _compile_path(spec.usage_path, "usage_path") if spec.usage_path else None
        self._trace_id_path = _compile_path(spec.trace_id_path, "trace_id_path") if spec.trace_id_path else None
        context_spec = spec.object_context
        self._object_context = (
            (
                _Request.compile(context_spec, templates, "object_context"),
                _compile_path(context_spec.path, "object_context.path"),
            )
            if context_spec is not None
            else None
        )
        self._ingest = _Request.compile(spec.ingest, templates, "ingest") if spec.ingest is not None else None
        self._retry = retry
        self._client = build_client(max_connections=max_connections)

    async def open_session(self, context: SessionContext) -> HttpSession:
        """Open a session, sending `session.open` when the spec has one.

        Args:
            context: The trial the session belongs to.

        Returns:
            A new session.

        Raises:
            proctor.errors.TargetError: The open request failed or its reply has no session id.
        """
        session = HttpSession(self, context, uuid.uuid4().hex)
        if self._open is not None:
            response, _ = await self._send(self._open, session.variables(""), context.timeout, self._retry)
            if response.content.strip():
                data = decode_json(response)
                found = self._id_path.find(data) if self._id_path is not None else []
                if not found or found[0].value is None:
                    path = self.spec.session.id_path if self.spec.session else ""
                    raise TargetProtocolError(
                        f"session reply from {redact(response.url)} has nothing at {path}: {_excerpt(data)}"
                    )
                session.session_id = str(found[0].value)
        return session

    async def ingest(self, text: str, context: SessionContext) -> int:
        """Send the `ingest` request for a text seed; returns the retries it took.

        Raises:
            proctor.errors.ConfigError: The spec has no `ingest` request.
            proctor.errors.TargetError: The request failed.
        """
        if self._ingest is None:
            raise ConfigError(f"{self.name}: text seeds need an 'ingest' request")
        variables = {
            **context.variables,
            "text": text,
            "user": self.spec.user,
            "model": context.model,
            "trial": context.trial,
            "case": context.case,
            "env": SECRET_ENV,
        }
        _, retries = await self._send(self._ingest, variables, context.timeout, self._retry)
        return retries

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _send(
        self, request: _Request, variables: Mapping[str, Any], request_timeout: float, policy: RetryPolicy
    ) -> tuple[HttpResponse, int]:
        url, headers, body = request.render(variables)
        return await send_with_retries(
            self._client,
            request.method,
            url,
            request_timeout=request_timeout,
            json_body=body,
            headers=headers,
            policy=policy,
        )

    def _parse(self, data: Any, url: str) -> AgentReply:
        found = self._reply_path.find(data)
        if not found:
            raise TargetProtocolError(
                f"reply from {redact(url)} has nothing at {self.spec.reply_path}: {_excerpt(data)}"
            )
        value = found[0].value
        text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
        tool_calls = []
        if self._tool_calls_path is not None:
            items: list[Any] = []
            for match in self._tool_calls_path.find(data):
                if isinstance(match.value, list):
                    items.extend(match.value)
                elif match.value is not None:
                    items.append(match.value)
            try:
                tool_calls = parse_tool_calls(items, f"{self.spec.tool_calls_path} of the reply from {url}")
            except TargetProtocolError as exc:  # it quotes the reply: masked
                raise TargetProtocolError(redact(str(exc))) from None
        usage = None
        if self._usage_path is not None:
            matches = self._usage_path.find(data)
            usage = parse_usage(matches[0].value) if matches else None
        trace_id = None
        if self._trace_id_path is not None:
            matches = self._trace_id_path.find(data)
            if matches and matches[0].value is not None:
                trace_id = str(matches[0].value)
        return AgentReply(text=text, tool_calls=tool_calls, usage=usage, raw=data, trace_id=trace_id)


class HttpSession:
    """One conversation with a REST agent."""

    def __init__(self, target: HttpTarget, context: SessionContext, session_id: str) -> None:
        self._target = target
        self._context = context
        self.session_id = session_id
        """The `session_id` template variable."""
        self.history: list[dict[str, str]] = []
        """The conversation so far as `{role, content}` dicts."""
        self.turns = 0
        """How many messages were answered so far (the next message's `turn`)."""

    def variables(self, message: str, history: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """Return the template variables for one request.

        Args:
            message: The `message` variable.
            history: The `history` variable; the session's history when `None`.

        Returns:
            The context's `variables` overlaid with Proctor's own.
        """
        context = self._context
        history = self.history if history is None else history
        return {
            **context.variables,
            "message": message,
            "history": history,
            "session_id": self.session_id,
            "user": self._target.spec.user,
            "model": context.model,
            "turn": self.turns,
            "trial": context.trial,
            "case": context.case,
            "env": SECRET_ENV,
        }

    async def send(self, message: str) -> AgentReply:
        """Render and send the request for `message` and extract the reply.

        Args:
            message: The user's message.

        Returns:
            The reply read through the spec's JSONPaths.

        Raises:
            proctor.errors.TargetError: The request failed or the reply has nothing at `reply_path`.
        """
        target = self._target
        history = [*self.history, {"role": "user", "content": message}]
        started = time.perf_counter()
        response, retries = await target._send(
            target._request, self.variables(message, history), self._context.timeout, target._retry
        )
        data = decode_json(response)
        latency_ms = (time.perf_counter() - started) * 1000
        reply = target._parse(data, str(response.url))
        reply.latency_ms = latency_ms
        reply.retries = retries
        history.append({"role": "assistant", "content": reply.text})
        self.history = history
        self.turns += 1
        return reply

    async def object_context(self) -> Any:
        """Fetch the agent's object context with the spec's `object_context` request (`None` without one).

        Raises:
            proctor.errors.TargetError: The request failed or its reply has nothing at the JSONPath.
        """
        target = self._target
        if target._object_context is None:
            return None
        request, path = target._object_context
        last = next((item["content"] for item in reversed(self.history) if item["role"] == "user"), "")
        response, _ = await target._send(request, self.variables(last), self._context.timeout, target._retry)
        data = decode_json(response)
        found = path.find(data)
        if not found:
            where = target.spec.object_context.path if target.spec.object_context else "$"
            raise TargetProtocolError(
                f"object context reply from {redact(response.url)} has nothing at {where}: {_excerpt(data)}"
            )
        return found[0].value

    async def aclose(self) -> None:
        """Send `session.close` when the spec has one; failures are logged at debug level only."""
        target = self._target
        if target._close is None:
            return
        last = next((item["content"] for item in reversed(self.history) if item["role"] == "user"), "")
        try:
            await target._send(target._close, self.variables(last), self._context.timeout, NO_RETRY)
        except (TargetError, ConfigError) as exc:
            logger.debug("closing http session %s failed: %s", self.session_id, exc)
