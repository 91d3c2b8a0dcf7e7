"""The credentials the `a2a` and `mcp` targets send never show in their errors or Proctor's logs.

Each target gets a URL with `user:password@` (sent as a Basic `Authorization`), a `${VAR}` header and a
literal credential header; the agent then fails in a way that quotes them: the A2A SDK's card error
quoting the URL, an A2A task that fails with a text echoing the headers it got, an A2A JSON-RPC error
echoing them, an MCP tool that raises an `MCPError` or answers with an error echoing them. The raised
`TargetError` (and whatever Proctor logged) carries the mask (`***`) instead. Proctor's own HTTP client
logs each request's URL with its userinfo masked, log redaction installed or not.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from proctor._http import HttpClient
from proctor.errors import TargetError
from proctor.suite import A2ATargetSpec, McpTargetSpec
from proctor.targets import SessionContext
from proctor.targets._a2a import A2ATarget
from proctor.targets._mcp import McpTarget
from servers import a2a_agent
from servers._serve import serve_app, serve_built

pytestmark = pytest.mark.anyio

ECHOED = ("authorization", "x-api-key", "x-auth-token")
"""The credential headers the stub agents quote back."""


def _echo(headers: Any) -> str:
    return " ".join(f"{name}={headers.get(name)}" for name in ECHOED if headers and headers.get(name))


def with_userinfo(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1)


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def assert_masked(text: str, *secrets: str) -> None:
    assert [secret for secret in secrets if secret in text] == [], text
    assert "***" in text, text


def proctor_logs(caplog: pytest.LogCaptureFixture) -> str:
    """What Proctor's own loggers wrote (the SDKs' loggers are redacted by `install_log_redaction`)."""
    return "\n".join(record.getMessage() for record in caplog.records if record.name.startswith("proctor"))


def context() -> SessionContext:
    return SessionContext(case="c", trial=1, timeout=10)


# --- a2a ---------------------------------------------------------------------------------------------


class EchoExecutor(a2a_agent.MemoryExecutor):
    """The test agent, whose task for "echo" fails quoting the credential headers it got."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.get_user_input() != "echo":
            await super().execute(context, event_queue)
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)  # type: ignore[arg-type]
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        headers = context.call_context.state.get("headers")
        text = f"denied: you sent {_echo(headers)}"
        await updater.failed(new_text_message(text, context_id=task.context_id, task_id=task.id))


@pytest.fixture
def a2a_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The loopback A2A agent; its card names its endpoint with the userinfo the target is given."""
    monkeypatch.setattr(a2a_agent, "MemoryExecutor", EchoExecutor)

    def build(base: str) -> Starlette:
        app, _ = a2a_agent.build_app(with_userinfo(base, "a2a-user", "a2a-pass-0712"))
        return app

    with serve_built(build) as url:
        yield url


async def _deny(request: Request) -> Response:
    """A JSON-RPC error (A2A's and MCP's alike) echoing the credential headers of the request."""
    body = json.loads(await request.body())
    error = {"code": -32001, "message": f"unauthorized: {_echo(request.headers)}"}
    return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "error": error})


@pytest.fixture
def denying_a2a_url() -> Iterator[str]:
    """The A2A agent's card, naming an endpoint that answers every call with a JSON-RPC error echoing its headers."""

    def build(base: str) -> Starlette:
        app, _ = a2a_agent.build_app(f"{base}/deny")
        return Starlette(routes=[Route("/deny/", _deny, methods=["POST"]), Mount("/", app)])

    with serve_built(build) as url:
        yield url


async def test_a2a_card_error_masks_the_urls_userinfo(a2a_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = with_userinfo(a2a_url, "a2a-user", "a2a-pass-0711")
    target = A2ATarget(A2ATargetSpec(url=url, card_path="/no-such-card.json"))
    try:
        with pytest.raises(TargetError, match="cannot read the agent card") as caught:
            await target.open_session(context())
    finally:
        await target.aclose()
    assert_masked(str(caught.value), "a2a-pass-0711", basic("a2a-user", "a2a-pass-0711"))
    assert "a2a-pass-0711" not in proctor_logs(caplog)


async def test_a2a_failed_task_echoing_the_credentials_is_masked(
    a2a_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("A2A_ECHO_KEY", "a2a-env-key-0713")
    spec = A2ATargetSpec(
        url=with_userinfo(a2a_url, "a2a-user", "a2a-pass-0712"),
        headers={"X-Api-Key": "${A2A_ECHO_KEY}", "X-Auth-Token": "a2a-literal-0714"},
    )
    target = A2ATarget(spec)
    secrets = ("a2a-pass-0712", basic("a2a-user", "a2a-pass-0712"), "a2a-env-key-0713", "a2a-literal-0714")
    try:
        session = await target.open_session(context())
        with pytest.raises(TargetError, match="the agent's task failed: denied") as caught:
            await session.send("echo")
    finally:
        await target.aclose()
    text = str(caught.value)
    assert_masked(text, *secrets)
    assert "authorization=Basic *** x-api-key=*** x-auth-token=***" in text, text
    logs = proctor_logs(caplog)
    assert [secret for secret in secrets if secret in logs] == [], logs


async def test_a2a_jsonrpc_error_echoing_the_credentials_is_masked(
    denying_a2a_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("A2A_DENY_KEY", "a2a-env-key-0715")
    spec = A2ATargetSpec(
        url=with_userinfo(denying_a2a_url, "a2a-user", "a2a-pass-0716"),
        headers={"X-Api-Key": "${A2A_DENY_KEY}", "X-Auth-Token": "a2a-literal-0717"},
    )
    target = A2ATarget(spec)
    secrets = ("a2a-pass-0716", basic("a2a-user", "a2a-pass-0716"), "a2a-env-key-0715", "a2a-literal-0717")
    try:
        session = await target.open_session(context())
        with pytest.raises(TargetError, match="unauthorized") as caught:
            await session.send("hello")
    finally:
        await target.aclose()
    text = str(caught.value)
    assert_masked(text, *secrets)
    assert "x-api-key=*** x-auth-token=***" in text, text
    logs = proctor_logs(caplog)
    assert [secret for secret in secrets if secret in logs] == [], logs


# --- mcp ---------------------------------------------------------------------------------------------


def _echo_server() -> MCPServer:
    server = MCPServer("echo-agent", log_level="WARNING")

    @server.tool()
    async def deny(message: str, ctx: Context) -> str:
        """Refuse with a protocol error quoting the caller's credentials."""
        raise MCPError(code=-32001, message=f"unauthorized: {_echo(ctx.headers)}")

    @server.tool()
    async def refuse(message: str, ctx: Context) -> str:
        """Fail (an error result) quoting the caller's credentials."""
        raise ToolError(f"denied: you sent {_echo(ctx.headers)}")

    return server


@pytest.fixture(scope="module")
def denying_mcp_url() -> Iterator[str]:
    """An MCP endpoint answering `initialize` with a JSON-RPC error echoing the caller's credentials."""
    with serve_app(Starlette(routes=[Route("/mcp", _deny, methods=["POST"])])) as url:
        yield f"{url}/mcp"


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_app(_echo_server().streamable_http_app(), lifespan="on") as url:
        yield f"{url}/mcp"


@pytest.mark.parametrize(("tool", "expected"), [("deny", "unauthorized"), ("refuse", "answered with an error")])
async def test_mcp_errors_echoing_the_credentials_are_masked(
    mcp_url: str, tool: str, expected: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    password, env_key, literal = f"mcp-pass-{tool}-0721", f"mcp-env-key-{tool}-0722", f"mcp-literal-{tool}-0723"
    monkeypatch.setenv("MCP_ECHO_KEY", env_key)
    spec = McpTargetSpec(
        url=with_userinfo(mcp_url, "mcp-user", password),
        tool=tool,
        headers={"X-Api-Key": "${MCP_ECHO_KEY}", "X-Auth-Token": f"Bearer {literal}"},
    )
    target = McpTarget(spec)
    assert password not in target.name
    session = await target.open_session(context())
    try:
        with pytest.raises(TargetError, match=expected) as caught:
            await session.send("hi")
    finally:
        await session.aclose()
        await target.aclose()
    text = str(caught.value)
    secrets = (password, basic("mcp-user", password), env_key, literal)
    assert_masked(text, *secrets)
    assert "authorization=Basic *** x-api-key=*** x-auth-token=Bearer ***" in text, text
    logs = proctor_logs(caplog)
    assert [secret for secret in secrets if secret in logs] == [], logs


async def test_mcp_session_error_echoing_the_credentials_is_masked(
    denying_mcp_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server refusing the session: the innermost cause is named, what it quotes masked."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCP_DENY_KEY", "mcp-env-key-0725")
    spec = McpTargetSpec(
        url=with_userinfo(denying_mcp_url, "mcp-user", "mcp-pass-0724"),
        tool="ask",
        headers={"X-Api-Key": "${MCP_DENY_KEY}", "X-Auth-Token": "mcp-literal-0726"},
    )
    target = McpTarget(spec)
    with pytest.raises(TargetError, match="cannot open an MCP session") as caught:
        await target.open_session(context())
    text = str(caught.value)
    secrets = ("mcp-pass-0724", basic("mcp-user", "mcp-pass-0724"), "mcp-env-key-0725", "mcp-literal-0726")
    assert_masked(text, *secrets)
    assert "authorization=Basic *** x-api-key=*** x-auth-token=***" in text, text
    logs = proctor_logs(caplog)
    assert [secret for secret in secrets if secret in logs] == [], logs


# --- proctor's own HTTP client -----------------------------------------------------------------------


async def _ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def test_the_http_clients_request_log_masks_the_urls_userinfo(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="proctor.http")
    factory = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)  # as where `install_log_redaction` is not installed
    try:
        with serve_app(Starlette(routes=[Route("/ok", _ok)])) as base:
            client = HttpClient(max_connections=1)
            try:
                url = f"{with_userinfo(base, 'log-user', 'log-pass-0731')}/ok?token=tk-0732"
                response = await client.request("GET", url, request_timeout=10)
            finally:
                await client.aclose()
    finally:
        logging.setLogRecordFactory(factory)
    assert response.status_code == 200
    lines = [record.getMessage() for record in caplog.records if record.name == "proctor.http"]
    assert lines and all("log-pass-0731" not in line and "tk-0732" not in line for line in lines), lines
    assert "log-user:***@" in lines[0] and "token=***" in lines[0], lines
