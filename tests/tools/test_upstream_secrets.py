"""The credentials Proctor sends to a real tool server are masked wherever they show.

A proxied or recorded tool's server gets headers with `${VAR}` keys or literal keys, and a URL whose
userinfo becomes a Basic `Authorization`; a stdio server gets `env` values. All are remembered when they
are read, so a server that echoes them back cannot put them in a tool answer, a log or a report.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from proctor._redact import redact
from proctor.suite._tools import ToolServerSpec
from proctor.tools._upstream import Upstream, UpstreamError
from servers._serve import closed_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_header_env_and_userinfo_credentials_of_a_tool_server_are_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOL_ECHO_KEY", "tool-env-key-0901")
    url = f"http://tool-user:tool-pass-0902@127.0.0.1:{closed_port()}/mcp"
    headers = {"X-Api-Key": "${TOOL_ECHO_KEY}", "Authorization": "Bearer tool-literal-0903"}
    upstream = Upstream(ToolServerSpec(url=url, headers=headers), tmp_path)
    with pytest.raises(UpstreamError):
        await upstream.run()  # nothing listens: the headers were read, and remembered, all the same
    basic = base64.b64encode(b"tool-user:tool-pass-0902").decode()
    echoed = f"you sent tool-env-key-0901, Bearer tool-literal-0903 and Basic {basic}"
    assert redact(echoed) == "you sent ***, Bearer *** and Basic ***"


async def test_env_values_given_to_a_stdio_tool_server_are_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOL_ECHO_TOKEN", "tool-stdio-token-0904")
    spec = ToolServerSpec(command=["/nonexistent/tool-server"], env={"TOKEN": "${TOOL_ECHO_TOKEN}"})
    with pytest.raises(UpstreamError):
        await Upstream(spec, tmp_path).run()
    assert redact("token tool-stdio-token-0904") == "token ***"
