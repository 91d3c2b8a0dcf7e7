"""A real tool server's credentials never show in its name, its failures or the error answers it gives.

The server's display name (in every error and answer) shows its URL with the userinfo masked; a failure
to connect (the server refusing `initialize` with an error that echoes the credentials it got, a header
naming an unset variable) and a failed call (an `MCPError` echoing them) are quoted with the URL's
password, its Basic form, `${VAR}` values and literal credential headers masked.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor.suite._tools import ToolServerSpec
from proctor.tools._upstream import Upstream, UpstreamError
from servers._serve import serve_app

pytestmark = pytest.mark.anyio

ECHOED = ("authorization", "x-api-key", "x-auth-token")
"""The credential headers the stub servers quote back."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _echo(headers: Any) -> str:
    return " ".join(f"{name}={headers.get(name)}" for name in ECHOED if headers and headers.get(name))


def with_userinfo(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1)


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def assert_masked(text: str, *secrets: str) -> None:
    assert [secret for secret in secrets if secret in text] == [], text
    assert "***" in text, text


async def _deny(request: Request) -> Response:
    body = json.loads(await request.body())
    error = {"code": -32001, "message": f"unauthorized: {_echo(request.headers)}"}
    return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "error": error})


@pytest.fixture(scope="module")
def denying_url() -> Iterator[str]:
    """An MCP endpoint answering `initialize` with a JSON-RPC error echoing the caller's credentials."""
    with serve_app(Starlette(routes=[Route("/mcp", _deny, methods=["POST"])])) as url:
        yield f"{url}/mcp"


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    """A tool server whose `deny` tool fails with a protocol error echoing the caller's credentials."""
    server = MCPServer("echo-tools", log_level="WARNING")

    @server.tool()
    async def deny(ctx: Context) -> str:
        """Refuse with a protocol error quoting the caller's credentials."""
        raise MCPError(code=-32001, message=f"unauthorized: {_echo(ctx.headers)}")

    with serve_app(server.streamable_http_app(), lifespan="on") as url:
        yield f"{url}/mcp"


def test_the_display_name_masks_the_urls_userinfo(tmp_path: Path) -> None:
    url = "http://tool-user:tool-pass-0801@127.0.0.1:9/mcp?api_key=tool-query-0802"
    upstream = Upstream(ToolServerSpec(url=url), tmp_path)
    assert upstream.name == "http://tool-user:***@127.0.0.1:9/mcp?api_key=***"


async def test_a_refused_session_is_reported_with_the_credentials_masked(
    denying_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOL_DENY_KEY", "tool-env-key-0803")
    spec = ToolServerSpec(
        url=with_userinfo(denying_url, "tool-user", "tool-pass-0804"),
        headers={"X-Api-Key": "${TOOL_DENY_KEY}", "X-Auth-Token": "tool-literal-0805"},
    )
    with pytest.raises(UpstreamError) as caught:
        await Upstream(spec, tmp_path).run()
    text = str(caught.value)
    assert_masked(
        text, "tool-pass-0804", basic("tool-user", "tool-pass-0804"), "tool-env-key-0803", "tool-literal-0805"
    )
    assert "unauthorized: authorization=Basic *** x-api-key=*** x-auth-token=***" in text, text


async def test_an_unset_header_variable_is_reported_without_the_urls_password(tmp_path: Path) -> None:
    spec = ToolServerSpec(
        url="http://tool-user:tool-pass-0806@127.0.0.1:9/mcp", headers={"X-Api-Key": "${NO_SUCH_0807}"}
    )
    with pytest.raises(UpstreamError, match="NO_SUCH_0807 is not set") as caught:
        await Upstream(spec, tmp_path).run()
    assert_masked(str(caught.value), "tool-pass-0806")


async def test_a_failed_call_answers_with_the_credentials_masked(
    echo_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOL_CALL_KEY", "tool-env-key-0808")
    spec = ToolServerSpec(
        url=with_userinfo(echo_url, "tool-user", "tool-pass-0809"),
        headers={"X-Api-Key": "${TOOL_CALL_KEY}", "X-Auth-Token": "Bearer tool-literal-0810"},
    )
    upstream = Upstream(spec, tmp_path)
    async with anyio.create_task_group() as group:
        await group.start(upstream.run)
        try:
            answer = await upstream.call("deny", {}, seconds=10)
        finally:
            upstream.close()
    assert answer.is_error
    text = json.dumps(answer.content)
    assert_masked(
        text, "tool-pass-0809", basic("tool-user", "tool-pass-0809"), "tool-env-key-0808", "tool-literal-0810"
    )
    assert "unauthorized: authorization=Basic *** x-api-key=*** x-auth-token=Bearer ***" in text, text
